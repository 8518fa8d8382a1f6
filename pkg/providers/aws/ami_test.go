package aws

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

// amiKey names a resolved image by what it is for: its architecture and, for an alias's
// accelerated variants, the accelerator key it requires ("amd64", "amd64+instance-gpu-count").
func amiKey(a awsv1.AMI) string {
	key := ""
	for _, r := range a.Requirements {
		switch {
		case r.Key == corev1.LabelArchStable:
			key = r.Values[0] + key
		case r.Operator == corev1.NodeSelectorOpExists:
			key += "+" + strings.TrimPrefix(r.Key, awsv1.Group+"/")
		}
	}
	return key
}

// TestAliasResolvesAcceleratedImages: al2023@latest resolves the standard, NVIDIA and Neuron
// images from their SSM parameters, each with its requirements, and every launch takes the
// image its instance type needs: a g5 the NVIDIA image, an inf2 the Neuron image, an m5 the
// standard one (before, every type got the standard image, without GPU drivers).
func TestAliasResolvesAcceleratedImages(t *testing.T) {
	f := newFixture(t)
	nc, np := f.seed004()
	got := map[string]string{}
	for _, a := range nc.Status.AMIs {
		got[amiKey(a)] = a.ID
	}
	want := map[string]string{
		"amd64": "ami-0a2023a00d6400001", "arm64": "ami-0a2023a00a6400001",
		"amd64+instance-gpu-count": "ami-0a2023a0096400001", "arm64+instance-gpu-count": "ami-0a2023a0096a00001",
		"amd64+instance-accelerator-count": "ami-0a2023a00e0400001",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("status.amis %v, want %v", got, want)
	}
	for _, tc := range []struct{ instanceType, image string }{
		{"g5.xlarge", "ami-0a2023a0096400001"},
		{"inf2.xlarge", "ami-0a2023a00e0400001"},
		{"m5.large", "ami-0a2023a00d6400001"},
		{"g5g.xlarge", "ami-0a2023a0096a00001"},
	} {
		t.Run(tc.instanceType, func(t *testing.T) {
			claim := claimFor(np, "accelerated-"+strings.ReplaceAll(tc.instanceType, ".", "-"), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
			claim.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
				req(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, np.Name),
				req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, tc.instanceType),
				req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand),
			}
			launched, err := f.provider.Create(f.ctx, claim)
			if err != nil {
				t.Fatal(err)
			}
			if launched.Status.ImageID != tc.image {
				t.Errorf("%s launched with %s, want %s", tc.instanceType, launched.Status.ImageID, tc.image)
			}
			for _, in := range f.aws.Instances() {
				if in.Type == tc.instanceType && in.ImageID != tc.image {
					t.Errorf("instance %s of %s booted %s, want %s", in.ID, in.Type, in.ImageID, tc.image)
				}
			}
		})
	}
}

// TestAMINameSearchesSelfAndAmazonOnly: a name term without an owner finds only the account's
// own images and Amazon's, as Karpenter does; a stranger's newer public image of the same name
// is never chosen. Naming the owner finds it.
func TestAMINameSearchesSelfAndAmazonOnly(t *testing.T) {
	f := newFixture(t)
	ncs, _ := readManifests(t, "seed-004-nodepool.yaml")
	nc := ncs[0]
	nc.Name = "by-name"
	nc.Spec.AMIFamily = strp(awsv1.AMIFamilyAL2023)
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Name: "amazon-eks-node-al2023-x86_64-standard-1.35-v20261101"}}
	got := f.applyNodeClass(nc)
	if len(got.Status.AMIs) != 1 || got.Status.AMIs[0].ID != "ami-0a2023a00d6400001" {
		t.Errorf("status.amis %+v, want only Amazon's ami-0a2023a00d6400001", got.Status.AMIs)
	}
	stranger := ncs[0].DeepCopy()
	stranger.ResourceVersion = ""
	stranger.Name = "by-name-and-owner"
	stranger.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Name: "amazon-eks-node-al2023-x86_64-standard-1.35-v20261101", Owner: "444455556666"}}
	if got := f.applyNodeClass(stranger); len(got.Status.AMIs) != 1 || got.Status.AMIs[0].ID != "ami-0ba0ba0ba0ba00000" {
		t.Errorf("status.amis %+v, want the named owner's ami-0ba0ba0ba0ba00000", got.Status.AMIs)
	}
}

// TestDeprecatedImages: current images are preferred; when a term selects only deprecated
// ones, the newest is used (launches go on) and reported deprecated in status.amis, as
// Karpenter does, instead of the NodeClass stopping all launches.
func TestDeprecatedImages(t *testing.T) {
	f := newFixture(t)
	past := f.clock.Now().Add(-time.Hour)
	f.aws.AddImage(fake.Image{ID: "ami-0c0c0c0c0c0c00001", Name: "team-node-v1", Architecture: "x86_64", CreationDate: f.clock.Now().Add(-48 * time.Hour), DeprecationTime: &past})
	f.aws.AddImage(fake.Image{ID: "ami-0c0c0c0c0c0c00002", Name: "team-node-v2", Architecture: "x86_64", CreationDate: f.clock.Now().Add(-72 * time.Hour)})
	ncs, np := readManifests(t, "seed-004-nodepool.yaml")
	for _, tc := range []struct {
		name       string
		terms      []awsv1.AMISelectorTerm
		image      string
		deprecated bool
	}{
		{"current before deprecated", []awsv1.AMISelectorTerm{{Name: "team-node-*"}}, "ami-0c0c0c0c0c0c00002", false},
		{"only deprecated", []awsv1.AMISelectorTerm{{ID: "ami-0de0de0de0de00000"}}, "ami-0de0de0de0de00000", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := ncs[0].DeepCopy()
			nc.Name = strings.ReplaceAll(tc.name, " ", "-")
			nc.Spec.AMIFamily = strp(awsv1.AMIFamilyAL2023)
			nc.Spec.AMISelectorTerms = tc.terms
			got := f.applyNodeClass(nc)
			if s, msg := condition(got, awsv1.ConditionTypeReady); s != metav1.ConditionTrue {
				t.Fatalf("Ready %s: %s", s, msg)
			}
			if len(got.Status.AMIs) != 1 || got.Status.AMIs[0].ID != tc.image || got.Status.AMIs[0].Deprecated != tc.deprecated {
				t.Fatalf("status.amis %+v, want %s (deprecated %v)", got.Status.AMIs, tc.image, tc.deprecated)
			}
			pool := np[0].DeepCopy()
			pool.Spec.Template.Spec.NodeClassRef.Name = nc.Name
			launched, err := f.provider.Create(f.ctx, claimFor(pool, "dep-"+nc.Name, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}))
			if err != nil || launched.Status.ImageID != tc.image {
				t.Errorf("launch: %v, image %s, want %s", err, launched.Status.ImageID, tc.image)
			}
		})
	}
}
