package repair

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// TestRepairsANodePastItsToleration: a node whose KernelReady has been False for longer than
// EC2's 30 minutes loses its NodeClaim, forcefully (the termination timestamp is now), and the
// repair is counted and announced.
func TestRepairsANodePastItsToleration(t *testing.T) {
	f := newFixture(t)
	n := f.launch("sick", "default")
	imageID := f.claim(n.claim).Status.ImageID
	unhealthy := metrics.NodeClaimsUnhealthyDisruptedTotal.WithLabelValues("kernel_ready", "default", karpv1.CapacityTypeOnDemand, imageID, metrics.TerminationModeGraceful)
	disrupted := metrics.NodeClaimsDisruptedTotal.WithLabelValues(metrics.ReasonUnhealthy, "default", karpv1.CapacityTypeOnDemand, "", metrics.TerminationModeGraceful)
	beforeUnhealthy, beforeDisrupted := testutil.ToFloat64(unhealthy), testutil.ToFloat64(disrupted)

	f.sicken(n, "KernelReady", corev1.ConditionFalse, 31*time.Minute)
	if res := f.reconcile(n); res.RequeueAfter != 0 {
		t.Errorf("requeued after %s once repaired", res.RequeueAfter)
	}
	claim := f.claim(n.claim)
	if claim == nil || claim.DeletionTimestamp == nil {
		t.Fatalf("nodeclaim %s not deleted: %+v", n.claim, claim)
	}
	if got, want := claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey], f.clock.Now().UTC().Format(time.RFC3339); got != want {
		t.Errorf("termination timestamp %q, want now (%s): repair is forceful", got, want)
	}
	if got := testutil.ToFloat64(unhealthy) - beforeUnhealthy; got != 1 {
		t.Errorf("karpenter_nodeclaims_unhealthy_disrupted_total{condition=kernel_ready} rose by %v, want 1", got)
	}
	if got := testutil.ToFloat64(disrupted) - beforeDisrupted; got != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=unhealthy} rose by %v, want 1", got)
	}
	for _, want := range []string{"Node/" + n.node + " Normal DisruptionTerminating Disrupting Node: Unhealthy", "NodeClaim/" + n.claim + " Normal DisruptionTerminating Disrupting NodeClaim: Unhealthy"} {
		if len(f.events.Find(EventReasonDisruptionTerminating, want)) != 1 {
			t.Errorf("no Event %q among %v", want, f.events.Events())
		}
	}
	if len(f.repairs) != 1 || f.repairs[0].Condition.Type != "KernelReady" || f.repairs[0].Toleration != 30*time.Minute || f.repairs[0].Blocked != "" {
		t.Errorf("observed %+v, want one KernelReady repair after 30m", f.repairs)
	}
	// Once its claim is deleting the node is not repaired twice.
	f.reconcile(n)
	if got := testutil.ToFloat64(unhealthy) - beforeUnhealthy; got != 1 {
		t.Errorf("a second reconcile counted the repair again (%v)", got)
	}
	f.terminate(n.claim)
}

// TestWaitsOutTheToleration: within its toleration a node is left alone until the earliest
// deadline of the policies it matches, and repaired then; a healthy node is left alone for good.
func TestWaitsOutTheToleration(t *testing.T) {
	f := newFixture(t)
	sick := f.launch("waiting", "default")
	healthy := f.launch("healthy", "default")
	for i := range 3 { // three more healthy nodes: two unhealthy of five are within 20% rounded up
		f.launch("healthy-"+string(rune('a'+i)), "default")
	}
	// KernelReady's 30 minutes end in 5, AcceleratedHardwareReady's 10 in 9: 5 minutes.
	f.sicken(sick, "KernelReady", corev1.ConditionFalse, 25*time.Minute)
	f.sicken(sick, "AcceleratedHardwareReady", corev1.ConditionFalse, time.Minute)
	// Statuses no policy calls unhealthy.
	f.sicken(healthy, "KernelReady", corev1.ConditionTrue, time.Hour)
	f.sicken(healthy, "DiskPressure", corev1.ConditionTrue, time.Hour)

	if res := f.reconcile(sick); res.RequeueAfter != 5*time.Minute {
		t.Errorf("requeue after %s, want 5m (KernelReady's toleration ends first)", res.RequeueAfter)
	}
	if res := f.reconcile(healthy); res.RequeueAfter != 0 {
		t.Errorf("a healthy node asked to be looked at again after %s", res.RequeueAfter)
	}
	if f.deleting(sick.claim) || f.deleting(healthy.claim) {
		t.Fatal("a node was repaired within its toleration")
	}
	f.clock.Step(5*time.Minute - time.Second)
	if res := f.reconcile(sick); res.RequeueAfter != time.Second || f.deleting(sick.claim) {
		t.Fatalf("a second before the toleration ends: requeue %s, deleting %t", res.RequeueAfter, f.deleting(sick.claim))
	}
	f.clock.Step(time.Second)
	f.reconcile(sick)
	if !f.deleting(sick.claim) {
		t.Fatal("not repaired when the toleration ended")
	}
	if len(f.repairs) != 1 || f.repairs[0].Condition.Type != "KernelReady" {
		t.Errorf("observed %+v, want the KernelReady repair", f.repairs)
	}
	f.reconcile(healthy)
	if f.deleting(healthy.claim) {
		t.Error("a healthy node was repaired")
	}
}

// TestSafetyValveBlocks: with more than 20% of a NodePool's nodes unhealthy nothing is repaired,
// and NodeRepairBlocked says so on the Node, the NodeClaim and the NodePool; with at most 20%
// (rounded up) repair goes on.
func TestSafetyValveBlocks(t *testing.T) {
	f := newFixture(t)
	f.nodePool("default")
	nodes := []launched{f.launch("a", "default"), f.launch("b", "default"), f.launch("c", "default"), f.launch("d", "default"), f.launch("e", "default")}
	f.sicken(nodes[0], corev1.NodeReady, corev1.ConditionUnknown, time.Hour)
	// Unhealthy counts whatever the toleration: b has not been sick for long.
	f.sicken(nodes[1], "NetworkingReady", corev1.ConditionFalse, time.Minute)

	if res := f.reconcile(nodes[0]); res.RequeueAfter != BlockedRequeue {
		t.Errorf("requeue after %s, want %s", res.RequeueAfter, BlockedRequeue)
	}
	if f.deleting(nodes[0].claim) {
		t.Fatal("repaired with 2 of 5 nodes unhealthy")
	}
	message := "more than 20% nodes are unhealthy in the nodepool"
	for _, obj := range []string{"Node/" + nodes[0].node, "NodeClaim/" + nodes[0].claim, "NodePool/default"} {
		if len(f.events.Find(EventReasonNodeRepairBlocked, obj+" Warning NodeRepairBlocked "+message)) != 1 {
			t.Errorf("no NodeRepairBlocked on %s: %v", obj, f.events.Events())
		}
	}
	if len(f.repairs) != 1 || f.repairs[0].Blocked != message || f.repairs[0].NodePool != "default" {
		t.Errorf("observed %+v, want the blocked repair", f.repairs)
	}
	// Again within 15 minutes: the Events are not repeated.
	f.reconcile(nodes[0])
	if got := len(f.events.Find(EventReasonNodeRepairBlocked)); got != 3 {
		t.Errorf("%d NodeRepairBlocked Events after a second pass, want the first 3 only", got)
	}

	// b's claim goes (as a user might delete it): 1 unhealthy of the 4 left, within 20%.
	if err := env.Client.Delete(f.ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nodes[1].claim}}); err != nil {
		t.Fatal(err)
	}
	f.terminate(nodes[1].claim)
	if f.reconcile(nodes[0]); !f.deleting(nodes[0].claim) {
		t.Error("not repaired with 1 of 4 nodes unhealthy")
	}
}

// TestSafetyValveCountsTheClusterWithoutNodePool: a NodeClaim without NodePool is held to the
// cluster's nodes, in Karpenter's words, with Events on the Node and the NodeClaim.
func TestSafetyValveCountsTheClusterWithoutNodePool(t *testing.T) {
	f := newFixture(t)
	a, b := f.launch("standalone-a", ""), f.launch("standalone-b", "")
	f.sicken(a, "StorageReady", corev1.ConditionFalse, time.Hour)
	f.sicken(b, "StorageReady", corev1.ConditionFalse, time.Hour)
	if res := f.reconcile(a); res.RequeueAfter != BlockedRequeue || f.deleting(a.claim) {
		t.Fatalf("2 of 2 nodes unhealthy: requeue %s, deleting %t; want blocked", res.RequeueAfter, f.deleting(a.claim))
	}
	message := "more then 20% nodes are unhealthy in the cluster"
	if got := f.events.Find(EventReasonNodeRepairBlocked, message); len(got) != 2 || got[0].Kind != "Node" || got[1].Kind != "NodeClaim" {
		t.Errorf("NodeRepairBlocked Events %v, want one on the Node and one on the NodeClaim", got)
	}
}

// TestRepairOverridesPDBsAndDoNotDisrupt: the pods of a repaired node are deleted at once,
// though a PodDisruptionBudget allows no eviction and a pod is annotated do-not-disrupt, and
// the node goes.
func TestRepairOverridesPDBsAndDoNotDisrupt(t *testing.T) {
	f := newFixture(t)
	n := f.launch("protected", "default")
	f.pod("guarded", n.node, map[string]string{"app": "guarded"}, nil)
	f.pod("pinned", n.node, nil, map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"})
	minAvailable := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: f.ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
	}
	if err := env.Client.Create(f.ctx, pdb); err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if err := env.Client.Status().Update(f.ctx, pdb); err != nil {
		t.Fatal(err)
	}

	f.sicken(n, "ContainerRuntimeReady", corev1.ConditionFalse, time.Hour)
	f.reconcile(n)
	f.terminate(n.claim)
	for _, name := range []string{"guarded", "pinned"} {
		pod := &corev1.Pod{}
		err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, pod)
		if client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		if err == nil && pod.DeletionTimestamp == nil {
			t.Errorf("pod %s survived the repair of its node", name)
		}
	}
	if len(f.events.Find("Disrupted", "bypasses the PDB")) != 2 {
		t.Errorf("want a Disrupted Event for each pod deleted past its PDB or do-not-disrupt: %v", f.events.Events())
	}
	if f.cloud.Instances()[0].State != "terminated" {
		t.Errorf("instance %+v not terminated", f.cloud.Instances()[0])
	}
}

// TestRepairForcesADrainAlreadyUnderWay: a node whose drain waits on a PodDisruptionBudget and
// then falls ill gets its termination timestamp brought forward to now, so the drain ends.
func TestRepairForcesADrainAlreadyUnderWay(t *testing.T) {
	f := newFixture(t)
	n := f.launch("draining", "default")
	f.pod("pinned", n.node, nil, map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"})
	if err := env.Client.Delete(f.ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: n.claim}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := f.termination.Reconcile(f.ctx, request(n.claim)); err != nil {
			t.Fatal(err)
		}
	}
	if f.claim(n.claim) == nil {
		t.Fatal("the drain did not wait for the do-not-disrupt pod")
	}
	f.sicken(n, corev1.NodeReady, corev1.ConditionFalse, time.Hour)
	f.reconcile(n)
	if got := f.claim(n.claim).Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; got != f.clock.Now().UTC().Format(time.RFC3339) {
		t.Fatalf("termination timestamp %q, want now", got)
	}
	f.terminate(n.claim)
	if len(f.repairs) != 0 {
		t.Errorf("a claim already deleting was counted as repaired: %+v", f.repairs)
	}
}

// TestIgnoresNodesWithoutClaim: a Node that no NodeClaim owns is not Karpenter's to repair.
func TestIgnoresNodesWithoutClaim(t *testing.T) {
	f := newFixture(t)
	n := f.launch("orphan", "default")
	f.sicken(n, "KernelReady", corev1.ConditionFalse, time.Hour)
	claim := f.claim(n.claim)
	claim.Finalizers = nil
	if err := env.Client.Update(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	if res := f.reconcile(n); res.RequeueAfter != 0 || len(f.repairs) != 0 {
		t.Errorf("a node without claim: requeue %s, repairs %+v", res.RequeueAfter, f.repairs)
	}
}

func TestConditionsChanged(t *testing.T) {
	at := func(m int) metav1.Time { return metav1.NewTime(time.Date(2026, 1, 1, 0, m, 0, 0, time.UTC)) }
	node := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: at(0), LastHeartbeatTime: at(0)},
	}}}
	for name, tc := range map[string]struct {
		mutate func(*corev1.Node)
		want   bool
	}{
		"heartbeat":  {func(n *corev1.Node) { n.Status.Conditions[0].LastHeartbeatTime = at(1) }, false},
		"message":    {func(n *corev1.Node) { n.Status.Conditions[0].Message = "x" }, false},
		"labels":     {func(n *corev1.Node) { n.Labels = map[string]string{"a": "b"} }, false},
		"status":     {func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown }, true},
		"transition": {func(n *corev1.Node) { n.Status.Conditions[0].LastTransitionTime = at(2) }, true},
		"added": {func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "KernelReady", Status: corev1.ConditionFalse})
		}, true},
		"replaced": {func(n *corev1.Node) { n.Status.Conditions[0].Type = "KernelReady" }, true},
	} {
		updated := node.DeepCopy()
		tc.mutate(updated)
		if got := conditionsChanged(event.UpdateEvent{ObjectOld: node, ObjectNew: updated}); got != tc.want {
			t.Errorf("%s: conditionsChanged = %t, want %t", name, got, tc.want)
		}
	}
}
