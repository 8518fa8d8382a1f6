package disruption_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/disruption"
	"github.com/openkarpenter/karpenter/pkg/health"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// newRepairFixture is newFixture with node repair as a disruption method, by the simulated
// cloud's repair policies (EC2's, as the AWS provider v1.15.2 declares them).
func newRepairFixture(t *testing.T, np *karpv1.NodePool) *fixture {
	t.Helper()
	return newRepairFixtureWith(t, np, disruption.Options{})
}

// newRepairFixtureWith is newRepairFixture with the options given (Repair set by it).
func newRepairFixtureWith(t *testing.T, np *karpv1.NodePool, opts disruption.Options) *fixture {
	t.Helper()
	f := newFixture(t, np)
	m, err := health.NewMatcher(f.cloud.RepairPolicies())
	if err != nil {
		t.Fatal(err)
	}
	opts.Repair = m
	f.controller = disruption.NewController(env.Client, state.NewCluster(env.Client, f.clock), f.cloud, nil, f.clock, f.recorder, opts)
	f.controller.Observe(func(c *disruption.Command) { f.commands = append(f.commands, c) })
	return f
}

// pool creates another NodePool, Ready.
func (f *fixture) pool(np *karpv1.NodePool) {
	f.t.Helper()
	f.create(np)
	np.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(context.Background(), np); err != nil {
		f.t.Fatal(err)
	}
}

// sicken makes the Node report Ready Unknown from now on, as the node lifecycle controller
// does when its kubelet stops posting status.
func (f *fixture) sicken(name string) {
	f.t.Helper()
	ctx := context.Background()
	var node corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
		f.t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
		Message: "Kubelet stopped posting node status.", LastTransitionTime: metav1.NewTime(f.clock.Now())}}
	if err := env.Client.Status().Update(ctx, &node); err != nil {
		f.t.Fatal(err)
	}
}

// heal makes the Node report Ready True again.
func (f *fixture) heal(name string) {
	f.t.Helper()
	ctx := context.Background()
	var node corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
		f.t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: metav1.NewTime(f.clock.Now())}}
	if err := env.Client.Status().Update(ctx, &node); err != nil {
		f.t.Fatal(err)
	}
}

// annotateNode sets an annotation on the Node.
func (f *fixture) annotateNode(name, key, value string) {
	f.t.Helper()
	ctx := context.Background()
	var node corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
		f.t.Fatal(err)
	}
	node.Annotations = map[string]string{key: value}
	if err := env.Client.Update(ctx, &node); err != nil {
		f.t.Fatal(err)
	}
}

// replacements are the NodeClaims other than those named.
func replacements(t *testing.T, except ...string) []karpv1.NodeClaim {
	t.Helper()
	var claims karpv1.NodeClaimList
	if err := env.Client.List(context.Background(), &claims); err != nil {
		t.Fatal(err)
	}
	skip := map[string]bool{}
	for _, name := range except {
		skip[name] = true
	}
	var out []karpv1.NodeClaim
	for _, c := range claims.Items {
		if !skip[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

// fullPod is a pod that fills most of an m5.xlarge, so it fits on no other node of the test.
func fullPod(tolerations ...corev1.Toleration) *corev1.Pod {
	return builders.Pod(builders.PodOptions{CPU: "3", Memory: "8Gi", Tolerations: tolerations})
}

// TestRepairOnlyThePlainNodeReplacementFirst is the case of issue 37, against Karpenter
// v1.15.0's Repair (pkg/controllers/disruption/repair.go: ShouldDisrupt, ComputeCommands) and
// its queue (queue.go: replacements initialized before the candidates' deletion, the drain
// bound stamped just before it): three nodes have reported Ready Unknown for 30 minutes,
// EC2's toleration; one has karpenter.sh/do-not-repair, one is of a NodePool whose budget for
// reason Unhealthy is 0, one is plain. Only the plain one is repaired: a replacement for its
// pod is launched, and only once it is initialized is the node deleted, its drain bounded to
// EC2's 10 minutes. The vetoed node says why in a DisruptionBlocked Event, the frozen
// NodePool in its own.
func TestRepairOnlyThePlainNodeReplacementFirst(t *testing.T) {
	web := builders.NodePool(builders.NodePoolOptions{Name: "web", Requirements: m5Pool.Requirements})
	f := newRepairFixture(t, web)
	frozenTaint := corev1.Taint{Key: "frozen", Effect: corev1.TaintEffectNoSchedule}
	frozen := builders.NodePool(builders.NodePoolOptions{Name: "frozen", Requirements: m5Pool.Requirements, Taints: []corev1.Taint{frozenTaint},
		Budgets: []karpv1.Budget{{Nodes: "10"}, {Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonUnhealthy}}}})
	f.pool(frozen)
	plainPod := fullPod()
	f.node(web, "plain", "m5.xlarge", time.Hour, plainPod)
	f.node(web, "vetoed", "m5.xlarge", time.Hour, fullPod())
	// Four healthy nodes: two unhealthy of six is not more than 20%, rounded up.
	for i := range 4 {
		f.node(web, fmt.Sprintf("healthy-%d", i), "m5.xlarge", time.Hour, fullPod())
	}
	f.node(frozen, "frozen-1", "m5.xlarge", time.Hour, fullPod(corev1.Toleration{Key: "frozen", Operator: corev1.TolerationOpExists}))
	f.annotateNode("vetoed", karpv1.DoNotRepairAnnotationKey, "true")
	// A minute on, so the conditions are later than the Nodes' creation on the API server's
	// clock (a condition counts from no earlier than its Node's creation).
	f.clock.Step(time.Minute)
	for _, name := range []string{"plain", "vetoed", "frozen-1"} {
		f.sicken(name)
	}
	repaired := metrics.NodeClaimsUnhealthyDisruptedTotal.WithLabelValues("ready", "web", "on-demand", "", metrics.TerminationModeEventual)
	before := testutil.ToFloat64(repaired)

	f.step(29 * time.Minute)
	if len(f.commands) != 0 {
		t.Fatalf("repair within EC2's 30-minute toleration: %s", f.commands[0].Message())
	}
	if got, want := f.controller.NextWakeup(), f.clock.Now().Add(time.Minute); !got.Equal(want) {
		t.Errorf("next wakeup %s, want when the toleration runs out, %s", got, want)
	}
	f.step(time.Minute)
	if len(f.commands) != 1 {
		t.Fatalf("%d commands, want the plain node's repair", len(f.commands))
	}
	cmd := f.commands[0]
	if cmd.Method != disruption.MethodRepair || cmd.Reason != karpv1.DisruptionReasonUnhealthy || len(cmd.Candidates) != 1 || cmd.Candidates[0].Name() != "plain" {
		t.Fatalf("command %s %s %v, want repair of plain", cmd.Method, cmd.Reason, cmd.NodeNames())
	}
	if len(cmd.Replacements) != 1 || len(cmd.Replacements[0].Claim.Pods) != 1 || cmd.Replacements[0].Claim.Pods[0].Name != plainPod.Name {
		t.Fatalf("replacements %+v, want one for the plain node's pod", cmd.Replacements)
	}
	t.Log(cmd.Message())
	f.step(time.Second)
	f.step(time.Second)
	if claimGone(t, "plain") {
		t.Fatal("the plain node was deleted before its replacement initialized")
	}
	for _, name := range []string{"vetoed", "frozen-1"} {
		if claimGone(t, name) {
			t.Errorf("node %s was repaired", name)
		}
	}
	news := replacements(t, "plain", "vetoed", "frozen-1", "healthy-0", "healthy-1", "healthy-2", "healthy-3")
	if len(news) != 1 || news[0].Labels[karpv1.NodePoolLabelKey] != "web" {
		t.Fatalf("replacement claims %v, want one of NodePool web", news)
	}
	// The termination finalizer keeps the claim to read once deleted, as in a cluster.
	var held karpv1.NodeClaim
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "plain"}, &held); err != nil {
		t.Fatal(err)
	}
	held.Finalizers = append(held.Finalizers, karpv1.TerminationFinalizer)
	if err := env.Client.Update(context.Background(), &held); err != nil {
		t.Fatal(err)
	}
	replacement := &news[0]
	replacement.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(context.Background(), replacement); err != nil {
		t.Fatal(err)
	}
	f.step(time.Second)
	if !claimGone(t, "plain") {
		t.Fatal("the plain node was not deleted once its replacement initialized")
	}
	var plain karpv1.NodeClaim
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "plain"}, &plain); err != nil {
		t.Fatal(err)
	}
	if got, want := plain.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey], f.clock.Now().Add(10*time.Minute).UTC().Format(time.RFC3339); got != want {
		t.Errorf("termination timestamp %q, want EC2's 10-minute drain bound from the deletion, %q", got, want)
	}
	for _, step := range []time.Duration{time.Minute, time.Hour} {
		f.step(step)
		for _, name := range []string{"vetoed", "frozen-1"} {
			if claimGone(t, name) {
				t.Errorf("node %s was repaired after %s", name, step)
			}
		}
	}
	if len(f.commands) != 1 {
		t.Errorf("%d commands, want only the plain node's", len(f.commands))
	}
	f.expectEvent("Normal DisruptionBlocked", `repair is blocked through the "karpenter.sh/do-not-repair" annotation`)
	f.expectEvent("Normal DisruptionBlocked", "No allowed disruptions for disruption reason Unhealthy due to blocking budget")
	f.expectEvent("Normal DisruptionLaunching", "Launching NodeClaim: Unhealthy")
	f.expectEvent("Normal DisruptionTerminating", "Disrupting Node: Unhealthy")
	f.expectEvent("Normal DisruptionTerminating", "Disrupting NodeClaim: Unhealthy")
	if got := testutil.ToFloat64(repaired) - before; got != 1 {
		t.Errorf("karpenter_nodeclaims_unhealthy_disrupted_total{condition=ready,termination_mode=eventual} rose by %v, want 1", got)
	}
}

// TestRepairStopsWhenTooManyUnhealthy: two unhealthy nodes of three are more than 20% of the
// NodePool (Karpenter v1.15.0's Repair.breakerTrippedPools): neither is repaired, and each
// says why in NodeRepairBlocked Warnings on its Node, its NodeClaim and the NodePool. Once one
// heals, the other is repaired.
func TestRepairStopsWhenTooManyUnhealthy(t *testing.T) {
	web := builders.NodePool(builders.NodePoolOptions{Name: "web", Requirements: m5Pool.Requirements})
	f := newRepairFixture(t, web)
	for _, name := range []string{"a", "b", "c"} {
		f.node(web, name, "m5.xlarge", time.Hour, fullPod())
	}
	f.clock.Step(time.Minute)
	f.sicken("a")
	f.sicken("b")
	f.step(31 * time.Minute)
	f.step(time.Second)
	if len(f.commands) != 0 {
		t.Fatalf("repair with 2 of 3 nodes unhealthy: %s", f.commands[0].Message())
	}
	f.expectEvent("Warning NodeRepairBlocked", `more than 20% of nodes in nodepool "web" are unhealthy`)
	if n := countEvents(f, "Warning NodeRepairBlocked"); n != 5 {
		t.Errorf("%d NodeRepairBlocked events, want 5: the Node and the NodeClaim of each node, and the NodePool's once (deduplicated by its UID for 15 minutes)", n)
	}
	f.heal("b")
	f.step(time.Second)
	if len(f.commands) != 1 || f.commands[0].Candidates[0].Name() != "a" {
		t.Fatalf("commands %d, want a's repair once b healed", len(f.commands))
	}
}

// countEvents counts the Events recorded so far with the prefix (type and reason).
func countEvents(f *fixture, prefix string) int {
	n := 0
	for _, e := range f.events() {
		if len(e) >= len(prefix) && e[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

// TestRepairIgnoresDoNotDisrupt: karpenter.sh/do-not-disrupt on the Node and on its pod does
// not keep repair off an unhealthy node (Karpenter v1.15.0's NewCandidate ignores it for
// repair: it "was never intended to strand a broken node"); the pod's protection is bounded by
// the policy's drain bound instead.
func TestRepairIgnoresDoNotDisrupt(t *testing.T) {
	web := builders.NodePool(builders.NodePoolOptions{Name: "web", Requirements: m5Pool.Requirements})
	f := newRepairFixture(t, web)
	pod := fullPod()
	pod.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	f.node(web, "protected", "m5.xlarge", time.Hour, pod)
	f.annotateNode("protected", karpv1.DoNotDisruptAnnotationKey, "true")
	f.clock.Step(time.Minute)
	f.sicken("protected")
	f.step(30 * time.Minute)
	if len(f.commands) != 1 || f.commands[0].Method != disruption.MethodRepair {
		t.Fatalf("%d commands, want the repair of the do-not-disrupt node", len(f.commands))
	}
	if b := f.commands[0].Candidates[0].DrainBound; b == nil || *b != 10*time.Minute {
		t.Errorf("drain bound %v, want EC2's 10 minutes", b)
	}
}

// TestRepairStaticNodePool: a node of a static NodePool is replaced by a NodeClaim of its
// template, launched first, as Karpenter v1.15.0's Repair does (its static path, mirroring
// static drift); at the NodePool's limits.nodes no replacement can launch first: without the
// TerminateFirstRepair gate the node is blocked, with Karpenter's words; with it, the node is
// deleted at once (a terminate-first decision, static-at-limit), for the static NodePool
// controller to refill.
func TestRepairStaticNodePool(t *testing.T) {
	for _, tc := range []struct {
		name           string
		limit          bool
		terminateFirst bool
		replace        bool
	}{{"below its limit", false, false, true}, {"at its limit", true, false, false}, {"at its limit, terminate first", true, true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			replicas := int64(1)
			opts := builders.NodePoolOptions{Name: "static", Requirements: m5Pool.Requirements, Replicas: &replicas}
			if tc.limit {
				opts.Limits = corev1.ResourceList{nodepool.ResourceNodes: resource.MustParse("1")}
			}
			np := builders.NodePool(opts)
			f := newRepairFixtureWith(t, np, disruption.Options{TerminateFirstRepair: tc.terminateFirst})
			f.node(np, "static-1", "m5.xlarge", time.Hour, fullPod())
			f.clock.Step(time.Minute)
			f.sicken("static-1")
			decisions := metrics.VoluntaryDisruptionTerminateFirstDecisionsTotal.WithLabelValues("static", "unhealthy", disruption.TerminateFirstStaticAtLimit)
			before := testutil.ToFloat64(decisions)
			f.step(30 * time.Minute)
			if tc.terminateFirst {
				if len(f.commands) != 1 || len(f.commands[0].Replacements) != 0 || f.commands[0].TerminateFirst != disruption.TerminateFirstStaticAtLimit {
					t.Fatalf("%d commands, want the static node's terminate-first repair", len(f.commands))
				}
				if !claimGone(t, "static-1") {
					t.Error("a terminate-first repair did not delete the node at once")
				}
				if got := testutil.ToFloat64(decisions) - before; got != 1 {
					t.Errorf("karpenter_voluntary_disruption_terminate_first_decisions_total rose by %v, want 1", got)
				}
				return
			}
			if !tc.replace {
				if len(f.commands) != 0 {
					t.Fatalf("repair at the node limit: %s", f.commands[0].Message())
				}
				f.expectEvent("Normal DisruptionBlocked", "static NodePool is at its node limit and cannot stage a replacement")
				return
			}
			if len(f.commands) != 1 || len(f.commands[0].Replacements) != 1 || f.commands[0].Method != disruption.MethodRepair {
				t.Fatalf("%d commands, want the static node's repair with one replacement", len(f.commands))
			}
			news := replacements(t, "static-1")
			if len(news) != 1 || news[0].Labels[karpv1.NodePoolLabelKey] != "static" {
				t.Fatalf("replacement claims %v, want one of the static NodePool", news)
			}
			if claimGone(t, "static-1") {
				t.Error("the static node was deleted before its replacement initialized")
			}
		})
	}
}

// TestRepairUninitializedNode: a registered node that never initialized is repaired too, and
// without budget (Karpenter v1.15.0's NewCandidate ignores the uninitialized error for repair;
// ComputeCommands consults budgets for initialized nodes only): its NodePool's Unhealthy
// budget is 0, yet the node, which runs nothing, is deleted.
func TestRepairUninitializedNode(t *testing.T) {
	web := builders.NodePool(builders.NodePoolOptions{Name: "web", Requirements: m5Pool.Requirements,
		Budgets: []karpv1.Budget{{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonUnhealthy}}}})
	f := newRepairFixture(t, web)
	claim := f.node(web, "stuck", "m5.xlarge", 0)
	claim.Status.Conditions = nil
	if err := env.Client.Status().Update(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(time.Minute)
	f.sicken("stuck")
	f.step(30 * time.Minute)
	if len(f.commands) != 1 || f.commands[0].Method != disruption.MethodRepair || len(f.commands[0].Replacements) != 0 {
		t.Fatalf("%d commands, want the uninitialized node's repair, deleting it", len(f.commands))
	}
	if !claimGone(t, "stuck") {
		t.Error("the uninitialized unhealthy node was not deleted")
	}
}

// TestStaticDriftAtLimit: a drifted node of a static NodePool at its limits.nodes cannot have
// its replacement launched first. As Karpenter v1.15.0's StaticDrift (staticdrift.go,
// unreplaceableCommands), it is blocked with a DisruptionBlocked Event, or with
// TerminateFirstDrift deleted first (the static NodePool controller refills the NodePool).
func TestStaticDriftAtLimit(t *testing.T) {
	for _, terminateFirst := range []bool{false, true} {
		t.Run(map[bool]string{false: "blocked", true: "terminate first"}[terminateFirst], func(t *testing.T) {
			replicas := int64(1)
			np := builders.NodePool(builders.NodePoolOptions{Name: "static", Requirements: m5Pool.Requirements, Replicas: &replicas,
				Limits: corev1.ResourceList{nodepool.ResourceNodes: resource.MustParse("1")}})
			f := newRepairFixtureWith(t, np, disruption.Options{TerminateFirstDrift: terminateFirst})
			f.node(np, "static-1", "m5.xlarge", time.Hour)
			f.updatePool(np.Name, func(np *karpv1.NodePool) { np.Spec.Template.Labels = map[string]string{"team": "b"} })
			decisions := metrics.VoluntaryDisruptionTerminateFirstDecisionsTotal.WithLabelValues("static", "drifted", disruption.TerminateFirstStaticAtLimit)
			before := testutil.ToFloat64(decisions)
			for range 3 {
				f.step(10 * time.Second)
			}
			if !terminateFirst {
				if len(f.commands) != 0 {
					t.Fatalf("drift at the node limit: %s", f.commands[0].Message())
				}
				f.expectEvent("Normal DisruptionBlocked", "static NodePool is at its node limit and cannot stage a replacement")
				return
			}
			if len(f.commands) != 1 || f.commands[0].Method != disruption.MethodStaticDrift || len(f.commands[0].Replacements) != 0 ||
				f.commands[0].TerminateFirst != disruption.TerminateFirstStaticAtLimit {
				t.Fatalf("%d commands, want the drifted static node's terminate-first drift", len(f.commands))
			}
			if !claimGone(t, "static-1") {
				t.Error("a terminate-first drift did not delete the node at once")
			}
			if got := testutil.ToFloat64(decisions) - before; got != 1 {
				t.Errorf("karpenter_voluntary_disruption_terminate_first_decisions_total{reason=drifted} rose by %v, want 1", got)
			}
		})
	}
}

// gpuFault makes the Node's node monitoring agent report AcceleratedHardwareReady False for a
// GPU XID error, from now on.
func (f *fixture) gpuFault(name, xid string) {
	f.t.Helper()
	ctx := context.Background()
	var node corev1.Node
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
		f.t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: metav1.NewTime(f.clock.Now().Add(-time.Hour))},
		{Type: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, Reason: "NvidiaXID" + xid + "Error", LastTransitionTime: metav1.NewTime(f.clock.Now())},
	}
	if err := env.Client.Status().Update(ctx, &node); err != nil {
		f.t.Fatal(err)
	}
}

// endReboot ends the claim's reboot as the reboot controller does when it succeeds.
func (f *fixture) endReboot(name string) {
	f.t.Helper()
	ctx := context.Background()
	var claim karpv1.NodeClaim
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &claim); err != nil {
		f.t.Fatal(err)
	}
	meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeRebooting, Status: metav1.ConditionFalse,
		Reason: karpv1.RebootReasonSucceeded, LastTransitionTime: metav1.NewTime(f.clock.Now())})
	meta.RemoveStatusCondition(&claim.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
	if err := env.Client.Status().Update(ctx, &claim); err != nil {
		f.t.Fatal(err)
	}
}

// TestRepairRebootsThenEscalates: with the AWS provider's RebootForRepair gate, a GPU fault a
// reboot clears (XID 48) reboots the node in place after its 10-minute toleration, as Karpenter
// v1.15.0's Repair.computeCommands and commitReboot (disruption/repair.go): no replacement, the
// NodeClaim's Rebooting condition True (RebootRequested), its DisruptionReason Unhealthy and
// its drain bounded by the policy's 5 minutes (karpenter.sh/reboot-termination-grace-period).
// The rebooting node is no candidate of any method but counts against the budgets. A fault
// that comes back is rebooted again, tolerated from the reboot's end (health.Resolve's
// notBefore); the third within 24 hours replaces the node (RebootHistory.Resolve: two
// reboots before replacement).
func TestRepairRebootsThenEscalates(t *testing.T) {
	web := builders.NodePool(builders.NodePoolOptions{Name: "web", Requirements: m5Pool.Requirements,
		Budgets: []karpv1.Budget{{Nodes: "1"}}})
	f := newFixture(t, web)
	m, err := health.NewMatcher(cloudprovider.EC2RepairPolicies(true))
	if err != nil {
		t.Fatal(err)
	}
	f.controller = disruption.NewController(env.Client, state.NewCluster(env.Client, f.clock), f.cloud, nil, f.clock, f.recorder, disruption.Options{Repair: m})
	f.controller.Observe(func(c *disruption.Command) { f.commands = append(f.commands, c) })
	f.node(web, "gpu", "m5.xlarge", time.Hour, fullPod())
	for i := range 5 {
		f.node(web, fmt.Sprintf("healthy-%d", i), "m5.xlarge", time.Hour, fullPod())
	}
	f.clock.Step(time.Minute)
	f.gpuFault("gpu", "48")
	reboots := metrics.VoluntaryDisruptionDecisionsTotal.WithLabelValues(metrics.DecisionReboot, metrics.DisruptionReason(karpv1.DisruptionReasonUnhealthy), "")
	before := testutil.ToFloat64(reboots)

	f.step(9 * time.Minute)
	if len(f.commands) != 0 {
		t.Fatalf("repair within the 10-minute toleration: %s", f.commands[0].Message())
	}
	f.step(time.Minute)
	if len(f.commands) != 1 || !f.commands[0].Reboot || len(f.commands[0].Replacements) != 0 || f.commands[0].NodeNames()[0] != "gpu" {
		t.Fatalf("commands %v, want the gpu node's reboot", f.commands)
	}
	t.Log(f.commands[0].Message())
	var claim karpv1.NodeClaim
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "gpu"}, &claim); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeRebooting); c == nil || c.Status != metav1.ConditionTrue || c.Reason != karpv1.RebootReasonRequested {
		t.Fatalf("Rebooting condition %+v, want True RebootRequested", c)
	}
	if c := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeDisruptionReason); c == nil || c.Reason != string(karpv1.DisruptionReasonUnhealthy) {
		t.Errorf("DisruptionReason condition %+v, want Unhealthy", c)
	}
	if got := claim.Annotations[karpv1.RebootTerminationGracePeriodAnnotationKey]; got != "5m0s" {
		t.Errorf("reboot drain bound %q, want the policy's 5m0s", got)
	}
	if claimGone(t, "gpu") {
		t.Fatal("a reboot deleted the node")
	}
	if got := testutil.ToFloat64(reboots) - before; got != 1 {
		t.Errorf("karpenter_disruption_decisions_total{decision=reboot} rose by %v, want 1", got)
	}
	// Rebooting, the node is no candidate, and it takes the budget of one: an empty node is
	// not consolidated meanwhile.
	f.node(web, "empty", "m5.xlarge", time.Hour)
	f.step(time.Minute)
	f.step(time.Minute)
	if len(f.commands) != 1 {
		t.Fatalf("%d commands while the node reboots, want none more: %s", len(f.commands), f.commands[len(f.commands)-1].Message())
	}
	for _, reason := range []karpv1.DisruptionReason{karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonUnhealthy} {
		if got := testutil.ToFloat64(metrics.NodePoolsNodesConsumingBudgets.WithLabelValues("web", metrics.DisruptionReason(reason))); got != 1 {
			t.Errorf("karpenter_nodepools_nodes_consuming_budgets{reason=%s} %v, want the rebooting node", reason, got)
		}
	}

	// The reboot ends; the fault comes back at once, tolerated from the reboot's end.
	f.endReboot("gpu")
	f.gpuFault("gpu", "48")
	f.step(9 * time.Minute)
	if n := len(f.commands); n != 1 && !(n == 2 && f.commands[1].NodeNames()[0] == "empty") {
		t.Fatalf("a second repair within the toleration after the reboot: %s", f.commands[n-1].Message())
	}
	f.step(time.Minute)
	last := f.commands[len(f.commands)-1]
	if !last.Reboot || last.NodeNames()[0] != "gpu" {
		t.Fatalf("%s, want the gpu node's second reboot", last.Message())
	}
	// A third fault within 24 hours: the node is replaced.
	f.endReboot("gpu")
	f.gpuFault("gpu", "48")
	f.step(10 * time.Minute)
	last = f.commands[len(f.commands)-1]
	if last.Reboot || last.NodeNames()[0] != "gpu" || len(last.Replacements) != 1 || !last.Candidates[0].RebootEscalated {
		t.Fatalf("%s, want the gpu node replaced after two reboots", last.Message())
	}
}
