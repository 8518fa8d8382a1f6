package nodeclaim

import (
	"context"
	"fmt"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
)

func TestLaunchWritesStatusAndLabels(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.createClaim("launch", claimOptions{labels: map[string]string{"team": "a"}})

	res := f.mustReconcile("launch")
	claim := f.claim("launch")
	if !controllerutil.ContainsFinalizer(claim, karpv1.TerminationFinalizer) {
		t.Error("no termination finalizer")
	}
	if !strings.HasPrefix(claim.Status.ProviderID, sim.ProviderIDPrefix) || claim.Status.ImageID == "" {
		t.Errorf("status providerID %q imageID %q", claim.Status.ProviderID, claim.Status.ImageID)
	}
	if claim.Status.Capacity.Cpu().Value() != 2 || claim.Status.Allocatable.Memory().IsZero() {
		t.Errorf("capacity %v allocatable %v", claim.Status.Capacity, claim.Status.Allocatable)
	}
	for k, v := range map[string]string{
		corev1.LabelInstanceTypeStable: "m5.large",
		karpv1.CapacityTypeLabelKey:    karpv1.CapacityTypeOnDemand,
		corev1.LabelArchStable:         "amd64",
		karpv1.NodePoolLabelKey:        "default",
		"team":                         "a",
	} {
		if claim.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, claim.Labels[k], v)
		}
	}
	if claim.Labels[corev1.LabelTopologyZone] == "" {
		t.Error("no zone label")
	}
	expectCondition(t, claim, karpv1.ConditionTypeLaunched, metav1.ConditionTrue, ReasonLaunched)
	expectCondition(t, claim, karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, ReasonNodeNotFound)
	expectCondition(t, claim, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, ReasonAwaitingReconciliation)
	// As Karpenter's root condition: Unknown while its dependents are, naming them.
	expectCondition(t, claim, karpv1.ConditionTypeReady, metav1.ConditionUnknown, ReasonReconcilingDependents)
	if cond := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeReady); cond.Message != "Registered=Unknown, Initialized=Unknown" {
		t.Errorf("Ready message %q, want Registered=Unknown, Initialized=Unknown", cond.Message)
	}
	f.expectEvent("Normal", EventReasonLaunched)
	if res.RequeueAfter <= 0 || res.RequeueAfter > DefaultRegistrationTTL {
		t.Errorf("RequeueAfter %s, want within the registration ttl", res.RequeueAfter)
	}

	// Transition times come from the injected clock, and a reconcile that changes nothing
	// writes nothing.
	launched := claim.Status.Conditions[0].LastTransitionTime
	rv := claim.ResourceVersion
	f.clock.Step(time.Minute)
	f.mustReconcile("launch")
	claim = f.claim("launch")
	if claim.ResourceVersion != rv {
		t.Errorf("an idle reconcile wrote the claim (resourceVersion %s → %s)", rv, claim.ResourceVersion)
	}
	if got := claim.Status.Conditions[0].LastTransitionTime; !got.Equal(&launched) {
		t.Errorf("lastTransitionTime moved from %s to %s", launched, got)
	}
	if n := f.creates.n.Load(); n != 1 || f.liveInstances() != 1 {
		t.Errorf("%d Create calls, %d instances; want 1 and 1", n, f.liveInstances())
	}
}

func TestRestartDoesNotLaunchTwice(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.createClaim("restart", claimOptions{})
	f.mustReconcile("restart")
	first := f.claim("restart").Status.ProviderID

	// A fresh controller, as after a restart, sees the provider ID and launches nothing.
	f.lifecycle = f.newLifecycle()
	f.mustReconcile("restart")
	if n := f.creates.n.Load(); n != 1 {
		t.Errorf("%d Create calls after a restart, want 1", n)
	}

	// The status write was lost (the claim lost its provider ID) before the restart: the cloud's
	// idempotency by claim name returns the same instance.
	claim := f.claim("restart")
	claim.Status = karpv1.NodeClaimStatus{}
	if err := env.Client.Status().Update(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	f.lifecycle = f.newLifecycle()
	f.mustReconcile("restart")
	if got := f.claim("restart").Status.ProviderID; got != first {
		t.Errorf("provider id %q after relaunch, want %q", got, first)
	}
	if f.liveInstances() != 1 {
		t.Errorf("%d instances, want 1", f.liveInstances())
	}

	// The same controller whose read missed its own status write uses what it launched,
	// without calling Create.
	claim = f.claim("restart")
	claim.Status = karpv1.NodeClaimStatus{}
	if err := env.Client.Status().Update(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	before := f.creates.n.Load()
	f.mustReconcile("restart")
	if f.creates.n.Load() != before {
		t.Error("Create called again by the controller that launched the claim")
	}
	if got := f.claim("restart").Status.ProviderID; got != first {
		t.Errorf("provider id %q, want %q", got, first)
	}
}

func TestRegistrationSyncsNode(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	taint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	startup := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoExecute}
	f.createClaim("register", claimOptions{
		labels: map[string]string{"team": "a"}, taints: []corev1.Taint{taint}, startupTaints: []corev1.Taint{startup},
	})
	f.mustReconcile("register")
	claim := f.claim("register")

	// A node that registered without the claim's taints (a kubelet configured otherwise) and
	// with labels of its own.
	f.stepKubelet()
	node := f.nodeOf(claim)
	if !hasTaint(node.Spec.Taints, corev1.Taint{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}) {
		t.Fatalf("the kubelet registered %s without the unregistered taint: %v", node.Name, node.Spec.Taints)
	}
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == taint.Key })
	delete(node.Labels, "team")
	if err := env.Client.Update(f.ctx, node); err != nil {
		t.Fatal(err)
	}

	f.mustReconcile("register")
	claim = f.claim("register")
	node = f.node(node.Name)
	expectCondition(t, claim, karpv1.ConditionTypeRegistered, metav1.ConditionTrue, ReasonRegistered)
	if claim.Status.NodeName != node.Name {
		t.Errorf("status.nodeName %q, want %q", claim.Status.NodeName, node.Name)
	}
	for k, v := range claim.Labels {
		if node.Labels[k] != v {
			t.Errorf("node label %s=%q, want %q", k, node.Labels[k], v)
		}
	}
	if node.Labels[karpv1.NodeRegisteredLabelKey] != "true" {
		t.Error("node not labelled registered")
	}
	for _, want := range []corev1.Taint{taint, startup} {
		if !hasTaint(node.Spec.Taints, want) {
			t.Errorf("node lacks taint %s: %v", want.ToString(), node.Spec.Taints)
		}
	}
	for _, got := range node.Spec.Taints {
		if got.Key == karpv1.UnregisteredTaintKey {
			t.Errorf("node kept the unregistered taint: %v", node.Spec.Taints)
		}
	}
	if !controllerutil.ContainsFinalizer(node, karpv1.TerminationFinalizer) {
		t.Error("node has no termination finalizer")
	}
	if len(node.OwnerReferences) != 1 || node.OwnerReferences[0].UID != claim.UID || node.OwnerReferences[0].Kind != "NodeClaim" ||
		(node.OwnerReferences[0].Controller != nil && *node.OwnerReferences[0].Controller) {
		t.Errorf("owner references %+v, want one non-controller reference to the claim", node.OwnerReferences)
	}
	f.expectEvent("Normal", EventReasonRegistered)
}

func TestInitializationWaitsForReadyAndStartupTaints(t *testing.T) {
	// The simulated agent lifts startup taints only after an hour: here another agent does.
	f := newFixture(t, fixtureOptions{kubelet: sim.KubeletOptions{ReadyDelay: time.Minute, StartupTaintDelay: time.Hour}})
	startup := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoExecute}
	f.createClaim("init", claimOptions{startupTaints: []corev1.Taint{startup}})
	f.mustReconcile("init")
	f.stepKubelet()
	f.mustReconcile("init")

	claim := f.claim("init")
	expectCondition(t, claim, karpv1.ConditionTypeRegistered, metav1.ConditionTrue, "")
	expectCondition(t, claim, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, ReasonNodeNotReady)
	expectCondition(t, claim, karpv1.ConditionTypeReady, metav1.ConditionUnknown, ReasonReconcilingDependents)

	f.clock.Step(time.Minute)
	f.stepKubelet()
	f.mustReconcile("init")
	claim = f.claim("init")
	expectCondition(t, claim, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, ReasonStartupTaintsExist)

	// Another agent removes the startup taint.
	node := f.nodeOf(claim)
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == startup.Key })
	if err := env.Client.Update(f.ctx, node); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile("init")
	claim = f.claim("init")
	expectCondition(t, claim, karpv1.ConditionTypeInitialized, metav1.ConditionTrue, ReasonInitialized)
	expectCondition(t, claim, karpv1.ConditionTypeReady, metav1.ConditionTrue, ReasonReady)
	if f.nodeOf(claim).Labels[karpv1.NodeInitializedLabelKey] != "true" {
		t.Error("node not labelled initialized")
	}
	f.expectEvent("Normal", EventReasonInitialized)
	ready := claim.Status.Conditions
	if got := conditionTime(ready, karpv1.ConditionTypeReady); !got.Equal(f.clock.Now().Truncate(time.Second)) {
		t.Errorf("Ready transitioned at %s, want the fake clock's %s", got, f.clock.Now())
	}
}

func conditionTime(conds []metav1.Condition, condType string) time.Time {
	for _, c := range conds {
		if c.Type == condType {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// An instance type out of capacity: the offerings are marked unavailable, the claim is deleted,
// and the claim and the pending pods planned for it get Karpenter's InsufficientCapacityError
// Events (a pod already bound gets none).
func TestInsufficientCapacityMarksOfferingsAndDeletes(t *testing.T) {
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ice-pending", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	bound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ice-bound", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "elsewhere", Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	for _, pod := range []*corev1.Pod{pending, bound} {
		if err := env.Client.Create(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	}
	var asked []string
	f := newFixture(t, fixtureOptions{sim: sim.Options{Faults: sim.FaultPlan{
		Unavailable: []cloudprovider.OfferingID{{InstanceType: "m5.large"}},
	}}, opts: LifecycleOptions{Nominees: func(claim string) map[types.UID]types.NamespacedName {
		asked = append(asked, claim)
		return map[types.UID]types.NamespacedName{pending.UID: client.ObjectKeyFromObject(pending), bound.UID: client.ObjectKeyFromObject(bound)}
	}}})
	f.createClaim("ice", claimOptions{})
	f.mustReconcile("ice")
	f.expectDeleting("ice")
	f.expectEvent("Warning", EventReasonInsufficientCapacityError+" NodeClaim ice event: ")
	f.expectEvent("Warning", EventReasonInsufficientCapacityError+" NodeClaim ice nominated for this pod failed to launch: ")
	if len(asked) != 1 || asked[0] != "ice" {
		t.Errorf("nominees asked for %q, want the claim", asked)
	}
	for len(f.events.Events) > 0 {
		if e := <-f.events.Events; strings.Contains(e, "nominated for this pod") {
			t.Errorf("a second pod event (the bound pod's): %q", e)
		}
	}
	for _, zone := range f.cloud.Zones() {
		id := cloudprovider.OfferingID{InstanceType: "m5.large", Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand}
		if !f.unavailable.IsUnavailable(id) {
			t.Errorf("%s not marked unavailable", id)
		}
	}
	f.finish("ice")
	if f.liveInstances() != 0 {
		t.Errorf("%d instances, want 0", f.liveInstances())
	}
}

// TestNodeClassNotReadyDeletesClaim: a claim whose NodeClass is missing or not ready is deleted
// at once, as Karpenter v1.15.0's lifecycle deletes it (launch.go launchNodeClaim:
// IsNodeClassNotReadyError), and counted as nodeclass_not_ready; before, it waited up to the
// registration TTL.
func TestNodeClassNotReadyDeletesClaim(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	disrupted := metrics.NodeClaimsDisruptedTotal.WithLabelValues(metrics.ReasonNodeClassNotReady, "default", "", "", metrics.TerminationModeGraceful)
	before := testutil.ToFloat64(disrupted)
	f.createClaim("nodeclass", claimOptions{nodeClass: "missing"})
	f.mustReconcile("nodeclass")
	f.expectDeleting("nodeclass")
	f.expectEvent("Warning", EventReasonNodeClassNotReady)
	if got := testutil.ToFloat64(disrupted) - before; got != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=nodeclass_not_ready} rose by %v, want 1", got)
	}
	f.finish("nodeclass")
}

func TestCreateErrors(t *testing.T) {
	t.Run("terminal errors delete the claim", func(t *testing.T) {
		f := newFixture(t, fixtureOptions{})
		f.createClaim("terminal", claimOptions{instanceType: "x9.huge"})
		f.mustReconcile("terminal")
		f.expectDeleting("terminal")
		f.expectEvent("Warning", EventReasonLaunchFailed)
		f.finish("terminal")
	})
	t.Run("other errors are retried", func(t *testing.T) {
		f := newFixture(t, fixtureOptions{sim: sim.Options{Faults: sim.FaultPlan{CreateErrorRate: 1}}})
		f.createClaim("transient", claimOptions{})
		if _, err := f.reconcile("transient"); err == nil || !cloudprovider.IsCreateError(err) {
			t.Fatalf("reconcile error %v, want the CreateError", err)
		}
		claim := f.claim("transient")
		if claim.DeletionTimestamp != nil {
			t.Fatal("a retryable error deleted the claim")
		}
		// Unknown, as Karpenter's: False would say the launch is not tried again.
		expectCondition(t, claim, karpv1.ConditionTypeLaunched, metav1.ConditionUnknown, sim.ReasonInternalError)
		expectCondition(t, claim, karpv1.ConditionTypeReady, metav1.ConditionUnknown, ReasonReconcilingDependents)
	})
}

func TestLivenessDeletesUnregisteredClaim(t *testing.T) {
	f := newFixture(t, fixtureOptions{opts: LifecycleOptions{RegistrationTTL: 10 * time.Minute}})
	f.createClaim("liveness", claimOptions{})
	res := f.mustReconcile("liveness")
	if res.RequeueAfter <= 9*time.Minute || res.RequeueAfter > 10*time.Minute {
		t.Errorf("RequeueAfter %s, want about the ttl", res.RequeueAfter)
	}

	f.clock.Step(9 * time.Minute)
	f.mustReconcile("liveness")
	if f.claim("liveness").DeletionTimestamp != nil {
		t.Fatal("deleted before the ttl")
	}

	f.clock.Step(time.Minute + time.Second)
	f.mustReconcile("liveness")
	f.expectDeleting("liveness")
	f.expectEvent("Warning", EventReasonLivenessExpired)

	// Deleting a launched claim terminates its instance.
	f.finish("liveness")
	if f.liveInstances() != 0 {
		t.Errorf("%d instances, want 0", f.liveInstances())
	}
}

// TestLaunchTimeout: a claim that cannot launch (every Create fails, retryably) is deleted five
// minutes after its creation, as Karpenter v1.15.0's Liveness (LaunchTimeout), and counted as
// launch_timeout; before, it was retried for the whole registration TTL.
func TestLaunchTimeout(t *testing.T) {
	f := newFixture(t, fixtureOptions{sim: sim.Options{Faults: sim.FaultPlan{CreateErrorRate: 1}}})
	disrupted := metrics.NodeClaimsDisruptedTotal.WithLabelValues(metrics.ReasonLaunchTimeout, "default", "", "", metrics.TerminationModeGraceful)
	before := testutil.ToFloat64(disrupted)
	f.createClaim("stuck", claimOptions{})
	_, _ = f.reconcile("stuck")
	f.clock.Step(LaunchTimeout - time.Second)
	_, _ = f.reconcile("stuck")
	if f.claim("stuck").DeletionTimestamp != nil {
		t.Fatal("deleted before the launch timeout")
	}
	f.clock.Step(2 * time.Second)
	_, _ = f.reconcile("stuck")
	f.expectDeleting("stuck")
	if got := testutil.ToFloat64(disrupted) - before; got != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=launch_timeout} rose by %v, want 1", got)
	}
}

func TestDeletionTerminatesInstanceAndRemovesFinalizers(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.createClaim("delete", claimOptions{})
	f.mustReconcile("delete")
	f.stepKubelet()
	f.mustReconcile("delete")
	claim := f.claim("delete")
	node := f.nodeOf(claim)
	expectCondition(t, claim, karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "")

	if err := env.Client.Delete(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	res, err := f.lifecycle.Finalize(f.ctx, f.claim("delete"))
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != InstanceTerminatingRequeue {
		t.Errorf("RequeueAfter %s, want %s", res.RequeueAfter, InstanceTerminatingRequeue)
	}
	claim = f.claim("delete")
	expectCondition(t, claim, karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, ReasonInstanceTerminating)
	if n := f.node(node.Name); n == nil || n.DeletionTimestamp == nil {
		t.Error("the node is not being deleted")
	}
	if f.liveInstances() != 0 {
		t.Errorf("%d instances, want 0", f.liveInstances())
	}

	if _, err := f.lifecycle.Finalize(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	if f.claim("delete") != nil {
		t.Error("the claim still exists")
	}
	if f.node(node.Name) != nil {
		t.Error("the node still exists")
	}
	f.expectEvent("Normal", EventReasonFinalized)
}

// TestReconcileLeavesDeletingClaimsToTermination: a deleting claim is finalized only when the
// termination controller, once it has drained the node, calls Finalize.
func TestReconcileLeavesDeletingClaimsToTermination(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.createClaim("external", claimOptions{})
	f.mustReconcile("external")
	claim := f.claim("external")
	if err := env.Client.Delete(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile("external")
	if f.liveInstances() != 1 {
		t.Fatal("Reconcile finalized a deleting claim: termination owns that")
	}
	f.finish("external")
	if f.liveInstances() != 0 {
		t.Error("Finalize did not terminate the instance")
	}
}

// TestDeletedNodeIsLeftToTermination: a registered claim whose Node a user deletes is not
// deleted by the lifecycle controller (termination does it, after draining); the Node still
// maps to the claim, so the lifecycle hears of it.
func TestDeletedNodeIsLeftToTermination(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.createClaim("userdelete", claimOptions{})
	f.mustReconcile("userdelete")
	f.stepKubelet()
	f.mustReconcile("userdelete")
	node := f.nodeOf(f.claim("userdelete"))

	// A user deletes the node; its finalizer holds it.
	if err := env.Client.Delete(f.ctx, node); err != nil {
		t.Fatal(err)
	}
	if reqs := claimsForNode(env.Client)(f.ctx, f.node(node.Name)); len(reqs) != 1 || reqs[0].Name != "userdelete" {
		t.Errorf("node maps to %v, want the claim", reqs)
	}
	f.mustReconcile("userdelete")
	if claim := f.claim("userdelete"); claim == nil || claim.DeletionTimestamp != nil {
		t.Error("the lifecycle controller deleted the claim of a deleted node: termination owns that")
	}
}

// TestBeforeRegisterRunsWhileTheNodeIsTainted: the BeforeRegister hook sees the claim's Node
// while it still has the karpenter.sh/unregistered taint (so nothing can schedule there yet),
// once, and registration then lifts the taint.
func TestBeforeRegisterRunsWhileTheNodeIsTainted(t *testing.T) {
	unregistered := corev1.Taint{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
	var calls []string
	f := newFixture(t, fixtureOptions{opts: LifecycleOptions{BeforeRegister: func(ctx context.Context, claim *karpv1.NodeClaim, node *corev1.Node) {
		onServer := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), onServer); err != nil {
			t.Errorf("reading node %s: %v", node.Name, err)
			return
		}
		calls = append(calls, fmt.Sprintf("%s/%s tainted=%v", claim.Name, node.Name, hasTaint(onServer.Spec.Taints, unregistered)))
	}}})
	f.createClaim("hooked", claimOptions{})
	f.mustReconcile("hooked")
	if len(calls) != 0 {
		t.Fatalf("hook called before the node existed: %v", calls)
	}
	f.stepKubelet()
	f.mustReconcile("hooked")
	f.mustReconcile("hooked")
	node := f.nodeOf(f.claim("hooked"))
	if want := []string{"hooked/" + node.Name + " tainted=true"}; !slices.Equal(calls, want) {
		t.Errorf("hook calls %v, want %v", calls, want)
	}
	if hasTaint(node.Spec.Taints, unregistered) {
		t.Error("registration left the unregistered taint")
	}
}

// TestHoldRegistration: a claim the hook holds keeps its joined Node unregistered (tainted, so
// no pod lands there) with the reason AwaitingBatch, and registers it once the hook lets go or
// MaxRegistrationHold after the Node joined, whichever comes first.
func TestHoldRegistration(t *testing.T) {
	unregistered := corev1.Taint{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
	held := map[string]bool{"released": true, "capped": true}
	f := newFixture(t, fixtureOptions{opts: LifecycleOptions{HoldRegistration: func(claim string) bool { return held[claim] }}})
	for _, name := range []string{"released", "capped"} {
		f.createClaim(name, claimOptions{})
		f.mustReconcile(name)
	}
	f.stepKubelet()
	for _, name := range []string{"released", "capped"} {
		if res := f.mustReconcile(name); res.RequeueAfter <= 0 || res.RequeueAfter > time.Second {
			t.Errorf("%s: a held claim looks again after %s, want within a second", name, res.RequeueAfter)
		}
		claim := f.claim(name)
		cond := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeRegistered)
		if cond == nil || cond.Status != metav1.ConditionUnknown || cond.Reason != ReasonAwaitingBatch {
			t.Fatalf("%s: Registered = %+v, want Unknown/%s", name, cond, ReasonAwaitingBatch)
		}
		nodes, err := NodesByProviderID(f.ctx, env.Client, claim.Status.ProviderID)
		if err != nil || len(nodes) != 1 || !hasTaint(nodes[0].Spec.Taints, unregistered) {
			t.Fatalf("%s: the held node (%d, %v) must keep the unregistered taint", name, len(nodes), err)
		}
	}
	held["released"] = false
	f.mustReconcile("released")
	if !isTrue(f.claim("released"), karpv1.ConditionTypeRegistered) {
		t.Error("released: not registered once the hook let go")
	}
	// The fake clock started before the node joined (on the API server's clock).
	f.clock.Step(MaxRegistrationHold + time.Second)
	f.mustReconcile("capped")
	if claim := f.claim("capped"); !isTrue(claim, karpv1.ConditionTypeRegistered) || hasTaint(f.nodeOf(claim).Spec.Taints, unregistered) {
		t.Error("capped: still not registered MaxRegistrationHold after its node joined")
	}
}
