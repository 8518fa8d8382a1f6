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
