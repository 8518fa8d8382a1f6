package aws

import (
	"slices"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// TestLeakedInstanceProfilesAreCollected: an EC2NodeClass deleted without its finalizer running
// leaves the instance profile the provider made for it. The collector's pass deletes it, and
// leaves alone the profile of a NodeClass that still exists and a profile the user made.
func TestLeakedInstanceProfilesAreCollected(t *testing.T) {
	f := newFixture(t)
	ncs, _ := readManifests(t, "seed-004-nodepool.yaml")
	kept := f.applyNodeClass(ncs[0])
	leaked := ncs[0].DeepCopy()
	leaked.ResourceVersion, leaked.Name = "", "leaked"
	leaked = f.applyNodeClass(leaked)
	f.aws.AddInstanceProfile("users-own-profile", testRole)
	if n := len(f.aws.InstanceProfiles()); n != 3 {
		t.Fatalf("%d instance profiles, want 3", n)
	}
	// The NodeClass goes without its finalizer (a forced delete, or no controller running).
	controllerutil.RemoveFinalizer(leaked, awsv1.TerminationFinalizer)
	if err := env.Client.Update(f.ctx, leaked); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(f.ctx, leaked); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(leaked), &awsv1.EC2NodeClass{}); err == nil {
		t.Fatal("the nodeclass is still there")
	}
	NewLaunchTemplateGC(f.provider).pass(f.ctx)
	var names []string
	for _, p := range f.aws.InstanceProfiles() {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	want := []string{kept.Status.InstanceProfile, "users-own-profile"}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("instance profiles %v, want %v (the leaked one, %s, deleted)", names, want, leaked.Status.InstanceProfile)
	}
}
