package nodeclaim

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// withRegistrationHealth creates the "default" NodePool and gives the fixture's lifecycle
// controller a RegistrationHealth for it, reconciled once (its condition Unknown).
func (f *fixture) withRegistrationHealth() (*karpv1.NodePool, *nodepool.RegistrationHealth) {
	f.t.Helper()
	np := builders.NodePool(builders.NodePoolOptions{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
		builders.Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
	}})
	if err := env.Client.Create(f.ctx, np); err != nil {
		f.t.Fatalf("creating nodepool: %v", err)
	}
	f.t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), np); err != nil && !apierrors.IsNotFound(err) {
			f.t.Errorf("deleting nodepool: %v", err)
		}
	})
	health := nodepool.NewRegistrationHealth(env.Client, f.clock)
	if _, err := health.Reconcile(f.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: np.Name}}); err != nil {
		f.t.Fatal(err)
	}
	f.opts.RegistrationHealth = health
	f.lifecycle = f.newLifecycle()
	return np, health
}

// expectPoolHealth checks the NodePool's NodeRegistrationHealthy condition.
func (f *fixture) expectPoolHealth(status metav1.ConditionStatus, reason, message string) {
	f.t.Helper()
	np := &karpv1.NodePool{}
	if err := env.Client.Get(f.ctx, client.ObjectKey{Name: "default"}, np); err != nil {
		f.t.Fatal(err)
	}
	cond := meta.FindStatusCondition(np.Status.Conditions, karpv1.ConditionTypeNodeRegistrationHealthy)
	if cond == nil || cond.Status != status || cond.Reason != reason || cond.Message != message {
		f.t.Errorf("NodeRegistrationHealthy = %+v, want %s/%s %q", cond, status, reason, message)
	}
}

func TestRegistrationsMakeTheNodePoolHealthy(t *testing.T) {
	f := newFixture(t, fixtureOptions{opts: LifecycleOptions{RegistrationTTL: 10 * time.Minute}})
	np, _ := f.withRegistrationHealth()
	f.expectPoolHealth(metav1.ConditionUnknown, nodepool.ReasonAwaitingReconciliation, "object is awaiting reconciliation")

	// A claim registers: True.
	f.createClaim("joins", claimOptions{owner: np})
	f.mustReconcile("joins")
	f.stepKubelet()
	f.mustReconcile("joins")
	expectCondition(t, f.claim("joins"), karpv1.ConditionTypeRegistered, metav1.ConditionTrue, ReasonRegistered)
	f.expectPoolHealth(metav1.ConditionTrue, nodepool.ReasonNodeRegistrationHealthy, "")

	// Two launched claims whose Nodes never join run out of time: False. One whose NodeClass
	// is not ready is deleted at once and not counted, as Karpenter.
	for _, name := range []string{"lost-1", "lost-2"} {
		f.createClaim(name, claimOptions{owner: np})
		f.mustReconcile(name)
	}
	f.createClaim("waiting", claimOptions{owner: np, nodeClass: "never"})
	f.mustReconcile("waiting")
	f.expectDeleting("waiting")
	f.expectPoolHealth(metav1.ConditionTrue, nodepool.ReasonNodeRegistrationHealthy, "")
	f.clock.Step(10*time.Minute + time.Second)
	f.mustReconcile("lost-1")
	f.expectDeleting("lost-1")
	f.expectPoolHealth(metav1.ConditionTrue, nodepool.ReasonNodeRegistrationHealthy, "")
	f.mustReconcile("lost-2")
	f.expectDeleting("lost-2")
	f.expectPoolHealth(metav1.ConditionFalse, nodepool.ReasonRegistrationFailed, "Failed to register node")
}

func TestTerminalLaunchErrorsMakeTheNodePoolUnhealthy(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	np, _ := f.withRegistrationHealth()
	for _, name := range []string{"terminal-1", "terminal-2"} {
		f.createClaim(name, claimOptions{owner: np, instanceType: "x9.huge"})
		f.mustReconcile(name)
		f.expectDeleting(name)
	}
	np = &karpv1.NodePool{}
	if err := env.Client.Get(f.ctx, client.ObjectKey{Name: "default"}, np); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(np.Status.Conditions, karpv1.ConditionTypeNodeRegistrationHealthy)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason == nodepool.ReasonRegistrationFailed || cond.Message == "" {
		t.Errorf("NodeRegistrationHealthy = %+v, want False with the launch error's reason and message", cond)
	}
}
