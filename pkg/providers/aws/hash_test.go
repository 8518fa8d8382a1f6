package aws

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

func boolp(b bool) *bool { return &b }

// TestStaticDrift: the EC2NodeClass's hash is written on it and on each claim it launches, and a
// change of any static field drifts the claims launched before it (Karpenter's NodeClassDrift);
// a dynamically resolved field drifts them when what it resolves to changes (another image,
// other security groups), and not when it resolves to the same thing.
func TestStaticDrift(t *testing.T) {
	f := newFixture(t)
	nc, np := f.seed004()
	if nc.Annotations[awsv1.AnnotationEC2NodeClassHash] != NodeClassHash(nc) || nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != NodeClassHashVersion {
		t.Fatalf("nodeclass annotations %v", nc.Annotations)
	}
	launched, err := f.provider.Create(f.ctx, claimFor(np, "static-drift", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}))
	if err != nil {
		t.Fatal(err)
	}
	if launched.Annotations[awsv1.AnnotationEC2NodeClassHash] != NodeClassHash(nc) || launched.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != NodeClassHashVersion {
		t.Fatalf("claim annotations %v", launched.Annotations)
	}
	if reason, err := f.provider.IsDrifted(f.ctx, launched); err != nil || reason != "" {
		t.Fatalf("drift before any change: %q %v", reason, err)
	}
	for _, tc := range []struct {
		name   string
		change func(*awsv1.EC2NodeClass)
		want   cloudprovider.DriftReason
	}{
		{"userData", func(nc *awsv1.EC2NodeClass) { nc.Spec.UserData = strp("echo hello") }, cloudprovider.DriftReasonNodeClass},
		{"tags", func(nc *awsv1.EC2NodeClass) { nc.Spec.Tags = map[string]string{"team": "payments"} }, cloudprovider.DriftReasonNodeClass},
		{"metadataOptions", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.MetadataOptions = &awsv1.MetadataOptions{HTTPTokens: strp("optional")}
		}, cloudprovider.DriftReasonNodeClass},
		{"blockDeviceMappings", func(nc *awsv1.EC2NodeClass) {
			size := resource.MustParse("100Gi")
			nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: strp("/dev/xvda"), RootVolume: true, EBS: &awsv1.BlockDevice{VolumeSize: &size}}}
		}, cloudprovider.DriftReasonNodeClass},
		{"kubelet", func(nc *awsv1.EC2NodeClass) {
			maxPods := int32(42)
			nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: &maxPods}
		}, cloudprovider.DriftReasonNodeClass},
		{"associatePublicIPAddress", func(nc *awsv1.EC2NodeClass) { nc.Spec.AssociatePublicIPAddress = boolp(true) }, cloudprovider.DriftReasonNodeClass},
		{"detailedMonitoring", func(nc *awsv1.EC2NodeClass) { nc.Spec.DetailedMonitoring = boolp(true) }, cloudprovider.DriftReasonNodeClass},
		{"connectionTracking", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: int32p(40)}
		}, cloudprovider.DriftReasonNodeClass},
		{"networkInterfaces", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.NetworkInterfaces = []*awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}}
		}, cloudprovider.DriftReasonNodeClass},
		{"cpuOptions", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: strp("disabled")}
		}, cloudprovider.DriftReasonNodeClass},
		{"enclaveOptions", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: false}
		}, cloudprovider.DriftReasonNodeClass},
		{"a kubelet field Karpenter does not read", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: int32p(42), Other: map[string]apiextensionsv1.JSON{"containerLogMaxSize": {Raw: []byte(`"50Mi"`)}}}
		}, cloudprovider.DriftReasonNodeClass},
		// As Karpenter (hash:"ignore"): a new prefix count reaches new nodes only.
		{"ipPrefixCount", func(nc *awsv1.EC2NodeClass) { nc.Spec.IPPrefixCount = int32p(4) }, ""},
		{"another image", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMIFamily = strp(awsv1.AMIFamilyAL2023)
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0a2023a00d6400000"}}
		}, cloudprovider.DriftReasonAMI},
		{"other security groups", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{ID: "sg-0b00000000000000b"}}
		}, cloudprovider.DriftReasonSecurityGroup},
		{"subnet selector resolving to the same subnets", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = append(nc.Spec.SubnetSelectorTerms, awsv1.SubnetSelectorTerm{ID: "subnet-0a000000000000000"})
		}, ""},
		{"the same image by ID instead of the alias", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMIFamily = strp(awsv1.AMIFamilyAL2023)
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: launched.Status.ImageID}}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			current := &awsv1.EC2NodeClass{}
			if err := env.Client.Get(f.ctx, client.ObjectKey{Name: nc.Name}, current); err != nil {
				t.Fatal(err)
			}
			original := current.DeepCopy()
			tc.change(current)
			if err := env.Client.Update(f.ctx, current); err != nil {
				t.Fatal(err)
			}
			changed := f.reconcile(nc.Name)
			if changed.Annotations[awsv1.AnnotationEC2NodeClassHash] != NodeClassHash(changed) {
				t.Errorf("nodeclass hash annotation not updated")
			}
			if reason, err := f.provider.IsDrifted(f.ctx, launched); err != nil || reason != tc.want {
				t.Errorf("drift %q %v, want %q", reason, err, tc.want)
			}
			// Put it back for the next change.
			changed.Spec = original.Spec
			if err := env.Client.Update(f.ctx, changed); err != nil {
				t.Fatal(err)
			}
			f.reconcile(nc.Name)
		})
	}
}

// TestHashVersionTakeover: NodeClaims Karpenter launched carry its own hash version (v6), which
// hashes differently. Taking over, the NodeClass controller stamps them with our hash instead of
// drifting them all; a claim Karpenter had already found drifted keeps its old hash.
func TestHashVersionTakeover(t *testing.T) {
	f := newFixture(t)
	nc, np := f.seed004()
	launched, err := f.provider.Create(f.ctx, claimFor(np, "from-karpenter", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}))
	if err != nil {
		t.Fatal(err)
	}
	claim := launched.DeepCopy()
	claim.Annotations = map[string]string{awsv1.AnnotationEC2NodeClassHash: "12345678901234567890", awsv1.AnnotationEC2NodeClassHashVersion: "v6"}
	claim.Status = karpv1.NodeClaimStatus{}
	if err := env.Client.Create(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	claim.Status = launched.Status
	if err := env.Client.Status().Update(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	// The NodeClass as Karpenter left it: its hash under v6.
	current := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(f.ctx, client.ObjectKey{Name: nc.Name}, current); err != nil {
		t.Fatal(err)
	}
	current.Annotations[awsv1.AnnotationEC2NodeClassHash] = "12345678901234567890"
	current.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = "v6"
	if err := env.Client.Update(f.ctx, current); err != nil {
		t.Fatal(err)
	}
	f.reconcile(nc.Name)
	got := &karpv1.NodeClaim{}
	if err := env.Client.Get(f.ctx, client.ObjectKey{Name: claim.Name}, got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != NodeClassHashVersion || got.Annotations[awsv1.AnnotationEC2NodeClassHash] != NodeClassHash(nc) {
		t.Fatalf("claim annotations %v, want it stamped with our hash", got.Annotations)
	}
	if reason, err := f.provider.IsDrifted(f.ctx, got); err != nil || reason != "" {
		t.Errorf("drift %q %v after the takeover, want none", reason, err)
	}
	if err := env.Client.Delete(f.ctx, got); err != nil {
		t.Fatal(err)
	}
}

// TestNodeClassHashKeepsExistingHashes: the fields Karpenter v1.14 and v1.15 added (ipPrefixCount,
// networkInterfaces, connectionTracking, cpuOptions, placementGroupSelector, enclaveOptions, the
// kubelet fields Karpenter does not read) marshal to nothing
// when unset, so a NodeClass that sets none of them hashes as it did before they existed: the
// hash version stays, and nodes launched before them do not drift. The pinned value is the seed
// 004 NodeClass's hash as the API server defaults it.
func TestNodeClassHashKeepsExistingHashes(t *testing.T) {
	f := newFixture(t)
	nc, _ := f.seed004()
	const before = "cb5088ed3065d532"
	if got := NodeClassHash(nc); got != before || NodeClassHashVersion != "openkarpenter-v1" {
		t.Fatalf("seed 004 hash %s version %s, want %s under openkarpenter-v1 as before the new fields", got, NodeClassHashVersion, before)
	}
	withPrefixes := nc.DeepCopy()
	withPrefixes.Spec.IPPrefixCount = int32p(2)
	if NodeClassHash(withPrefixes) != before {
		t.Errorf("ipPrefixCount changed the hash; Karpenter leaves it out")
	}
	// v1.15: enclaveOptions and kubelet fields Karpenter does not read.
	enclaves := nc.DeepCopy()
	enclaves.Spec.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: true}
	if NodeClassHash(enclaves) == before {
		t.Errorf("enclaveOptions left the hash as it was; Karpenter hashes it")
	}
	placed := nc.DeepCopy()
	placed.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: strp("training")}
	if NodeClassHash(placed) == before {
		t.Errorf("placementGroupSelector left the hash as it was; Karpenter hashes it")
	}
}
