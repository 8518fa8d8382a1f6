package nodeclaim

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

func TestGarbageCollectorTerminatesOrphanedInstances(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.createClaim("kept", claimOptions{})
	f.mustReconcile("kept")
	// An instance launched for a claim that no longer exists (say, force-deleted).
	orphan := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan"},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.large"}}},
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	launched, err := f.cloud.Create(f.ctx, orphan)
	if err != nil {
		t.Fatal(err)
	}
	f.stepKubelet() // its node registers too

	if err := f.gc.Step(f.ctx); err != nil {
		t.Fatal(err)
	}
	if f.liveInstances() != 2 {
		t.Fatalf("%d instances within the grace period, want 2", f.liveInstances())
	}

	f.clock.Step(DefaultOrphanGracePeriod + time.Second)
	if err := f.gc.Step(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cloud.Get(f.ctx, launched.Status.ProviderID); err == nil {
		t.Error("the orphaned instance is still running")
	}
	if f.liveInstances() != 1 {
		t.Errorf("%d instances, want the claimed one only", f.liveInstances())
	}
	nodes, err := NodesByProviderID(f.ctx, env.Client, launched.Status.ProviderID)
	if err != nil || len(nodes) != 0 {
		t.Errorf("orphan's nodes: %d, %v", len(nodes), err)
	}
	if c := f.claim("kept"); c == nil || c.DeletionTimestamp != nil {
		t.Error("the claimed instance's claim was deleted")
	}
}

func TestGarbageCollectorDeletesClaimsWhoseInstanceVanished(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.createClaim("vanished", claimOptions{})
	f.mustReconcile("vanished")
	claim := f.claim("vanished")
	if err := f.cloud.Delete(f.ctx, claim); err != nil { // terminated behind Karpenter's back
		t.Fatal(err)
	}
	if err := f.gc.Step(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.expectDeleting("vanished")
	f.expectEvent("Warning", EventReasonInstanceGone)
	f.finish("vanished")
}

func TestGarbageCollectorRun(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.createClaim("run", claimOptions{})
	f.mustReconcile("run")
	if err := f.cloud.Delete(f.ctx, f.claim("run")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() { f.gc.Run(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for f.claim("run").DeletionTimestamp == nil {
		if time.Now().After(deadline) {
			t.Fatal("Run did not collect the claim")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop")
	}
}
