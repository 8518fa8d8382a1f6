package termination

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

func TestDrainEvictsThenTerminates(t *testing.T) {
	f := newFixture(t)
	node := f.launch("drain", nil)
	f.pod("fast", node, podOptions{})
	f.pod("slow", node, podOptions{grace: 30})
	f.pod("agent", node, podOptions{owner: "DaemonSet"})
	f.pod("static", node, podOptions{owner: "Node"})
	f.pod("mirror", node, podOptions{annotations: map[string]string{"kubernetes.io/config.mirror": "abc"}})
	f.pod("tolerant", node, podOptions{tolerations: []corev1.Toleration{{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists}}})
	f.deleteClaim("drain")

	res := f.reconcile("drain")
	if !hasDisruptedTaint(f.node(node)) {
		t.Error("node has no disrupted taint")
	}
	f.expectEvent("Normal", EventReasonDraining, node)
	if !f.evicted("fast") || !f.evicted("slow") {
		t.Error("fast and slow were not evicted")
	}
	if f.getPod("fast") != nil {
		t.Error("fast (grace 0) still exists")
	}
	if res.RequeueAfter != DefaultDrainPoll {
		t.Errorf("RequeueAfter %s, want %s", res.RequeueAfter, DefaultDrainPoll)
	}
	if n := f.finalizer.n.Load(); n != 0 {
		t.Fatalf("Finalize called %d times while pods drain", n)
	}
	if a := f.claim("drain").Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; a != "" {
		t.Errorf("termination timestamp %q without a termination grace period", a)
	}

	// slow is terminating: the drain waits for it.
	f.clock.Step(time.Second)
	f.reconcile("drain")
	if n := f.finalizer.n.Load(); n != 0 {
		t.Fatalf("Finalize called %d times while slow terminates", n)
	}

	f.kubeletRemoves("slow")
	f.finish("drain")
	if f.finalizer.n.Load() == 0 {
		t.Error("Finalize never called")
	}
	if n := f.liveInstances(); n != 0 {
		t.Errorf("%d live instances, want 0", n)
	}
	if f.node(node) != nil {
		t.Errorf("node %s still exists", node)
	}
	for _, name := range []string{"agent", "static", "mirror", "tolerant"} {
		if f.evicted(name) {
			t.Errorf("%s was evicted", name)
		}
	}
	f.expectEvent("Normal", EventReasonTerminated, "drain")
}

func TestBudgetBlocksEvictionUntilAllowed(t *testing.T) {
	f := newFixture(t)
	node := f.launch("pdb", nil)
	web := map[string]string{"app": "web"}
	f.pod("web-0", node, podOptions{labels: web})
	f.pod("web-1", node, podOptions{labels: web})
	f.budget("web", 0)
	f.deleteClaim("pdb")

	// Refused passes back off: EvictionRetryBase, doubling, at most DefaultEvictionRetry.
	for _, want := range []time.Duration{EvictionRetryBase, 2 * EvictionRetryBase, 4 * EvictionRetryBase} {
		res := f.reconcile("pdb")
		if f.evicted("web-0") || f.evicted("web-1") {
			t.Fatal("a pod was evicted against its budget")
		}
		if res.RequeueAfter != want {
			t.Errorf("RequeueAfter %s, want %s", res.RequeueAfter, want)
		}
	}
	f.expectEvent("Node/", "Warning", EventReasonFailedDraining, "Failed to drain node, evicting pod violates a PDB (Pod="+f.ns+"/web-0, PodDisruptionBudget="+f.ns+"/web)")

	// One disruption allowed: the first pod goes, the API server spends the allowance, and the
	// second waits.
	f.allow("web", 1)
	f.clock.Step(DefaultEvictionRetry)
	f.reconcile("pdb")
	if !f.evicted("web-0") || f.evicted("web-1") {
		t.Fatalf("web-0 evicted %t, web-1 evicted %t; want true, false", f.evicted("web-0"), f.evicted("web-1"))
	}
	if f.finalizer.n.Load() != 0 {
		t.Fatal("finalized with a pod left")
	}

	f.allow("web", 1)
	f.finish("pdb")
	if !f.evicted("web-1") {
		t.Error("web-1 was not evicted")
	}
	if n := f.liveInstances(); n != 0 {
		t.Errorf("%d live instances, want 0", n)
	}
}

func TestCriticalPodsDrainLast(t *testing.T) {
	f := newFixture(t)
	node := f.launch("critical", nil)
	f.pod("app", node, podOptions{grace: 30})
	f.pod("dns", node, podOptions{priority: "system-cluster-critical"})
	f.pod("proxy", node, podOptions{priority: "system-node-critical"})
	f.deleteClaim("critical")

	f.reconcile("critical")
	if !f.evicted("app") {
		t.Fatal("app was not evicted")
	}
	if f.evicted("dns") || f.evicted("proxy") {
		t.Fatal("a critical pod was evicted before the non-critical ones were gone")
	}
	f.clock.Step(time.Second)
	f.reconcile("critical")
	if f.evicted("dns") || f.evicted("proxy") {
		t.Fatal("a critical pod was evicted while app terminates")
	}

	f.kubeletRemoves("app")
	f.reconcile("critical")
	if !f.evicted("dns") || !f.evicted("proxy") {
		t.Fatal("critical pods were not evicted once the others were gone")
	}
	f.finish("critical")
}

func TestDoNotDisruptBlocksUntilGracePeriod(t *testing.T) {
	f := newFixture(t)
	grace := 5 * time.Minute
	node := f.launch("dnd", &grace)
	f.pod("precious", node, podOptions{grace: 30, annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}})
	f.pod("guarded", node, podOptions{labels: map[string]string{"app": "guarded"}})
	f.budget("guarded", 0)
	f.deleteClaim("dnd")

	res := f.reconcile("dnd")
	claim := f.claim("dnd")
	want := claim.DeletionTimestamp.Add(grace).UTC().Format(time.RFC3339)
	if got := claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; got != want {
		t.Errorf("termination timestamp %q, want %q", got, want)
	}
	if f.evicted("precious") || f.evicted("guarded") {
		t.Fatal("a pod was evicted before the grace period")
	}
	f.expectEvent("Warning", EventReasonFailedDraining, "pod precious has "+karpv1.DoNotDisruptAnnotationKey)
	if res.RequeueAfter <= 0 || res.RequeueAfter > DefaultEvictionRetry {
		t.Errorf("RequeueAfter %s, want within %s", res.RequeueAfter, DefaultEvictionRetry)
	}

	// Later, but within the grace period: still held.
	f.clock.Step(2 * time.Minute)
	f.reconcile("dnd")
	if f.evicted("precious") || f.finalizer.n.Load() != 0 {
		t.Fatal("precious evicted or node finalized within the grace period")
	}

	// The grace period is over: both are deleted directly and the node goes at once.
	f.clock.SetTime(claim.DeletionTimestamp.Add(grace + time.Second))
	f.reconcile("dnd")
	if !f.evicted("precious") || !f.evicted("guarded") {
		t.Fatal("pods not deleted after the grace period")
	}
	f.expectEvent("Pod/precious", "Normal", EventReasonDisrupted, "Deleting the pod to accommodate the terminationTime "+claim.DeletionTimestamp.Add(grace).UTC().String()+" of the node. The pod was granted 1 seconds of grace-period of its 30 terminationGracePeriodSeconds.")
	if f.finalizer.n.Load() == 0 {
		t.Fatal("not finalized after the grace period")
	}
	f.finish("dnd")
	if n := f.liveInstances(); n != 0 {
		t.Errorf("%d live instances, want 0", n)
	}
}

// A do-not-disrupt duration holds the drain until it has run since the pod started, and the
// drain looks again when it ends.
func TestDoNotDisruptDurationHoldsUntilItEnds(t *testing.T) {
	f := newFixture(t)
	node := f.launch("dnd-duration", nil)
	f.pod("precious", node, podOptions{annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "10m"}})
	f.deleteClaim("dnd-duration")

	res := f.reconcile("dnd-duration")
	if f.evicted("precious") {
		t.Fatal("evicted while its 10m protection runs")
	}
	f.expectEvent("Warning", EventReasonFailedDraining, "pod precious has "+karpv1.DoNotDisruptAnnotationKey+" until ")
	if res.RequeueAfter <= 0 || res.RequeueAfter > 10*time.Minute {
		t.Errorf("RequeueAfter %s, want within the protection's 10m", res.RequeueAfter)
	}
	f.clock.Step(10*time.Minute + time.Second)
	f.reconcile("dnd-duration")
	if !f.evicted("precious") {
		t.Fatal("not evicted once its protection ended")
	}
	f.finish("dnd-duration")
}

func TestNodeDeletedDirectly(t *testing.T) {
	f := newFixture(t)
	node := f.launch("direct", nil)
	f.pod("app", node, podOptions{})
	if err := env.Client.Delete(f.ctx, f.node(node)); err != nil {
		t.Fatalf("deleting node: %v", err)
	}

	f.reconcile("direct")
	claim := f.claim("direct")
	if claim == nil || claim.DeletionTimestamp == nil {
		t.Fatal("nodeclaim of the deleted node is not being deleted")
	}
	if !f.evicted("app") {
		t.Error("app was not evicted")
	}
	f.expectEvent("Normal", EventReasonNodeDeleted, node)
	f.finish("direct")
	if f.node(node) != nil {
		t.Errorf("node %s still exists", node)
	}
	if n := f.liveInstances(); n != 0 {
		t.Errorf("%d live instances, want 0", n)
	}
}

// TestNodeGoneDeletesRegisteredClaim: a registered claim whose Node is gone altogether (its
// finalizer forced off) is deleted and finalized by this controller, the one owner of that
// deletion.
func TestNodeGoneDeletesRegisteredClaim(t *testing.T) {
	f := newFixture(t)
	node := f.launch("gone", nil)
	forceDelete(t, f.node(node))
	f.reconcile("gone")
	if claim := f.claim("gone"); claim != nil && claim.DeletionTimestamp == nil {
		t.Fatal("nodeclaim of the vanished node is not being deleted")
	}
	f.expectEvent("Normal", EventReasonNodeDeleted, node)
	f.finish("gone")
	if n := f.liveInstances(); n != 0 {
		t.Errorf("%d live instances, want 0", n)
	}
}

func TestClaimWithoutNodeFinalizesAtOnce(t *testing.T) {
	f := newFixture(t)
	node := f.launch("early", nil)
	// Make it look unregistered: no node, no node name.
	forceDelete(t, f.node(node))
	claim := f.claim("early")
	claim.Status.NodeName = ""
	if err := env.Client.Status().Update(f.ctx, claim); err != nil {
		t.Fatalf("clearing node name: %v", err)
	}
	f.deleteClaim("early")
	f.finish("early")
	if n := f.liveInstances(); n != 0 {
		t.Errorf("%d live instances, want 0", n)
	}
}

func TestNotDeletingIsLeftAlone(t *testing.T) {
	f := newFixture(t)
	node := f.launch("idle", nil)
	f.pod("app", node, podOptions{})
	if res := f.reconcile("idle"); res.RequeueAfter != 0 {
		t.Errorf("RequeueAfter %s, want 0", res.RequeueAfter)
	}
	if f.evicted("app") || hasDisruptedTaint(f.node(node)) || f.finalizer.n.Load() != 0 {
		t.Error("a claim not being deleted was touched")
	}
}

// TestUnprocessedBudgetDoesNotHoldTheDrain: the API server answers evictions under a budget
// whose status nobody has written yet with 429 and Retry-After: 10, which client-go would obey
// ten times; the drain gives up after EvictionTimeout, reports the eviction as refused and backs
// off as for any refusal, and evicts once the budget is processed.
func TestUnprocessedBudgetDoesNotHoldTheDrain(t *testing.T) {
	f := newFixture(t)
	f.ctrl.opts.EvictionTimeout = 300 * time.Millisecond
	node := f.launch("fresh-pdb", nil)
	f.pod("api-0", node, podOptions{labels: map[string]string{"app": "api"}})
	minAvailable := intstr.FromInt32(0)
	if err := env.Client.Create(f.ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: f.ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}},
	}); err != nil {
		t.Fatal(err)
	}
	f.deleteClaim("fresh-pdb")

	start := time.Now()
	res := f.reconcile("fresh-pdb")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the reconcile took %s: the eviction call was not bounded", took)
	}
	if f.evicted("api-0") {
		t.Fatal("evicted under a budget the server has not processed")
	}
	if res.RequeueAfter != EvictionRetryBase {
		t.Errorf("RequeueAfter %s, want the refusal back-off %s", res.RequeueAfter, EvictionRetryBase)
	}
	f.expectEvent("Warning", EventReasonFailedDraining, "eviction of pod api-0 not granted within 300ms")

	f.allow("api", 1)
	f.finish("fresh-pdb")
	if !f.evicted("api-0") {
		t.Error("api-0 was not evicted once the budget was processed")
	}
}

// TestPodsDeletedInTimeForTheirGracePeriod: as in Karpenter v1, a pod the drain is waiting for
// is deleted at the node's deadline less its own terminationGracePeriodSeconds, so that it gets
// its full grace period before the node goes, with the deletion's grace period clamped to the
// time left.
func TestPodsDeletedInTimeForTheirGracePeriod(t *testing.T) {
	f := newFixture(t)
	grace := 5 * time.Minute
	node := f.launch("early", &grace)
	dnd := map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	f.pod("slow", node, podOptions{grace: 240, annotations: dnd})
	f.pod("quick", node, podOptions{grace: 30, annotations: dnd})
	f.deleteClaim("early")
	start := f.claim("early").DeletionTimestamp.Time
	f.clock.SetTime(start)

	res := f.reconcile("early")
	if f.evicted("slow") || f.evicted("quick") {
		t.Fatal("a pod was deleted before its time")
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute {
		t.Errorf("RequeueAfter %s, want at most the minute until slow must go", res.RequeueAfter)
	}

	f.clock.SetTime(start.Add(time.Minute))
	f.reconcile("early")
	if p := f.getPod("slow"); p != nil && (p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds > 240) {
		t.Fatalf("slow not deleted with at most 240s of grace at deadline - 240s: %+v", p.ObjectMeta)
	}
	if f.evicted("quick") {
		t.Fatal("quick deleted long before deadline - 30s")
	}
	f.expectEvent("Pod/slow", "Normal", EventReasonDisrupted, "The pod was granted")

	f.clock.SetTime(start.Add(grace - 30*time.Second))
	f.reconcile("early")
	if !f.evicted("quick") {
		t.Fatal("quick not deleted at deadline - 30s")
	}
	if f.finalizer.n.Load() != 0 {
		t.Fatal("finalized before the pods were gone or the deadline passed")
	}
	f.clock.SetTime(start.Add(grace + time.Second))
	f.finish("early")
}
