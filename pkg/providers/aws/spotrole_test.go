package aws

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// TestSpotWithoutServiceLinkedRole: in an account without the EC2 Spot service-linked role
// (and no permission to create it), a spot launch fails with
// AuthFailure.ServiceLinkedRoleCreationNotPermitted. As Karpenter does, spot is marked
// unavailable (every type, every zone) so the scheduler stops planning it, the claim launches
// on-demand at once, and a Warning on the claim says what to create.
func TestSpotWithoutServiceLinkedRole(t *testing.T) {
	events := record.NewFakeRecorder(10)
	f := newFixture(t, func(o *Options) { o.Recorder = events })
	_, np := f.seed004()
	f.aws.SetSpotServiceLinkedRole(false)
	np.Spec.Template.Spec.Requirements = slices.DeleteFunc(np.Spec.Template.Spec.Requirements, func(r karpv1.NodeSelectorRequirementWithMinValues) bool {
		return r.Key == karpv1.CapacityTypeLabelKey
	})
	claim := claimFor(np, "no-spot-role", nil, req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand"))
	launched, err := f.provider.Create(f.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if ct := launched.Labels[karpv1.CapacityTypeLabelKey]; ct != karpv1.CapacityTypeOnDemand {
		t.Errorf("launched %s, want on-demand", ct)
	}
	if fleets := f.aws.Fleets(); len(fleets) != 2 || fleets[0].CapacityType != "spot" || fleets[1].CapacityType != "on-demand" {
		t.Errorf("fleets %+v, want a spot one refused, then an on-demand one", fleets)
	}
	select {
	case e := <-events.Events:
		if !strings.HasPrefix(e, "Warning "+string(EventReasonSpotServiceLinkedRole)) || !strings.Contains(e, "create-service-linked-role --aws-service-name spot.amazonaws.com") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event")
	}
	its, err := f.provider.GetInstanceTypes(f.ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		for _, o := range it.Offerings {
			if o.CapacityType == karpv1.CapacityTypeSpot && o.Available {
				t.Fatalf("%s spot in %s still offered", it.Name, o.Zone)
			}
		}
	}
	// The next claim goes straight to on-demand: no spot fleet is tried while spot is marked.
	if _, err := f.provider.Create(f.ctx, claimFor(np, "no-spot-role-2", nil, req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand"))); err != nil {
		t.Fatal(err)
	}
	if fleets := f.aws.Fleets(); len(fleets) != 3 || fleets[2].CapacityType != "on-demand" {
		t.Errorf("%d fleets, the last %s: want a third, on-demand", len(fleets), fleets[len(fleets)-1].CapacityType)
	}
}
