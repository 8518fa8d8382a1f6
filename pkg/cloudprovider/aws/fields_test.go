package aws

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// TestNodeClassFieldsReachEC2: spec.context goes with the fleet request, and a block device's
// volumeInitializationRate with its launch template, as Karpenter sends them.
func TestNodeClassFieldsReachEC2(t *testing.T) {
	f := newFixture(t)
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	nc := ncs[0]
	nc.Spec.Context = strp("cr-0123456789abcdef0")
	size := resource.MustParse("100Gi")
	rate := int32(200)
	nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: strp("/dev/xvda"), RootVolume: true,
		EBS: &awsv1.BlockDevice{VolumeSize: &size, SnapshotID: strp("snap-0123456789abcdef0"), VolumeInitializationRate: &rate}}}
	f.applyNodeClass(nc)
	if _, err := f.provider.Create(f.ctx, claimFor(nps[0], "fields", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})); err != nil {
		t.Fatal(err)
	}
	if fl := f.aws.Fleets(); len(fl) != 1 || fl[0].Context != "cr-0123456789abcdef0" {
		t.Errorf("fleets %+v, want the context cr-0123456789abcdef0", fl)
	}
	lt := f.aws.LaunchTemplates()[0]
	if len(lt.BlockDeviceMappings) != 1 || lt.BlockDeviceMappings[0].EBS.VolumeInitializationRate == nil || *lt.BlockDeviceMappings[0].EBS.VolumeInitializationRate != 200 {
		t.Errorf("block devices %+v, want a volume initialization rate of 200", lt.BlockDeviceMappings)
	}
}

// TestUnsupportedFieldsAreRefused: capacityReservationSelectorTerms and the Windows AMI families
// are not supported yet, so the NodeClass says so and is not Ready, rather than launching
// without the reservations or failing every launch.
func TestUnsupportedFieldsAreRefused(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, reason, message string
		mutate                func(*awsv1.EC2NodeClass)
	}{
		{"capacity-reservations", "CapacityReservationsNotSupported", "spec.capacityReservationSelectorTerms", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0123456789abcdef0"}}
		}},
		{"windows", "AMIFamilyNotSupported", "spec.amiFamily Windows2022", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMIFamily = strp("Windows2022")
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0a2023a00d6400001"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ncs, _ := readManifests(t, "seed-004-nodepool.yaml")
			nc := ncs[0]
			nc.Name = tc.name
			tc.mutate(nc)
			got := f.applyNodeClass(nc)
			if s, msg := condition(got, awsv1.ConditionTypeValidationSucceeded); s != metav1.ConditionFalse || !strings.Contains(msg, tc.message) {
				t.Errorf("ValidationSucceeded %s %q, want False naming %s", s, msg, tc.message)
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == awsv1.ConditionTypeValidationSucceeded && cond.Reason != tc.reason {
					t.Errorf("reason %s, want %s", cond.Reason, tc.reason)
				}
			}
			if s, _ := condition(got, awsv1.ConditionTypeReady); s != metav1.ConditionFalse {
				t.Errorf("Ready %s", s)
			}
		})
	}
}

// TestEFAInterfacesAttached: a claim whose pods request vpc.amazonaws.com/efa launches with an
// EFA interface on each of its type's network cards, the first the primary, as Karpenter
// attaches them; a claim that requests none gets no EFA interface.
func TestEFAInterfacesAttached(t *testing.T) {
	f := newFixture(t)
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	f.applyNodeClass(ncs[0])
	np := nps[0]
	claim := claimFor(np, "efa", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "vpc.amazonaws.com/efa": resource.MustParse("1")},
		req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5n.18xlarge"))
	if _, err := f.provider.Create(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	lt := f.aws.LaunchTemplates()[0]
	if len(lt.NetworkInterfaces) != 1 || lt.NetworkInterfaces[0].InterfaceType != "efa" || *lt.NetworkInterfaces[0].DeviceIndex != 0 || *lt.NetworkInterfaces[0].NetworkCardIndex != 0 ||
		len(lt.NetworkInterfaces[0].SecurityGroupIDs) == 0 || len(lt.SecurityGroupIDs) != 0 {
		t.Errorf("network interfaces %+v, security groups %v: want one EFA interface on card 0 holding the groups", lt.NetworkInterfaces, lt.SecurityGroupIDs)
	}
	plain := claimFor(np, "no-efa", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5n.18xlarge"))
	if _, err := f.provider.Create(f.ctx, plain); err != nil {
		t.Fatal(err)
	}
	for _, lt := range f.aws.LaunchTemplates()[1:] {
		if len(lt.NetworkInterfaces) != 0 {
			t.Errorf("a claim without EFA got interfaces %+v", lt.NetworkInterfaces)
		}
	}
	if n := len(f.aws.LaunchTemplates()); n != 2 {
		t.Errorf("%d launch templates, want one with EFA and one without", n)
	}
	// Two network cards: an EFA interface on each, the second a secondary device.
	two := claimFor(np, "efa-two", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "vpc.amazonaws.com/efa": resource.MustParse("2")},
		req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c6in.32xlarge"))
	if _, err := f.provider.Create(f.ctx, two); err != nil {
		t.Fatal(err)
	}
	lts := f.aws.LaunchTemplates()
	nis := lts[len(lts)-1].NetworkInterfaces
	if len(nis) != 2 || *nis[1].NetworkCardIndex != 1 || *nis[1].DeviceIndex != 1 || nis[1].InterfaceType != "efa" {
		t.Errorf("network interfaces %+v, want EFA on cards 0 and 1", nis)
	}
}
