package sim

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

func TestRepairPoliciesAreEC2s(t *testing.T) {
	c, _ := newTestCloud(t, Options{})
	if got, want := c.RepairPolicies(), cloudprovider.EC2RepairPolicies(false); !reflect.DeepEqual(got, want) {
		t.Errorf("RepairPolicies() = %v, want EC2's %v", got, want)
	}
}

func TestMakeUnhealthy(t *testing.T) {
	c, clk := newTestCloud(t, Options{})
	a := mustCreate(t, c, testClaim("a"))
	clk.Step(time.Hour)

	for name, tc := range map[string]struct {
		providerID string
		cond       NodeCondition
		want       string
	}{
		"unknown instance": {"sim:///us-east-1a/i-00000000000000000", NodeCondition{Type: "KernelReady", Status: corev1.ConditionFalse}, "no instance"},
		"no type":          {a.Status.ProviderID, NodeCondition{Status: corev1.ConditionFalse}, "type is required"},
		"bad status":       {a.Status.ProviderID, NodeCondition{Type: "KernelReady", Status: "Broken"}, `status "Broken"`},
		"future":           {a.Status.ProviderID, NodeCondition{Type: "KernelReady", Status: corev1.ConditionFalse, Since: clk.Now().Add(time.Second)}, "is after now"},
	} {
		err := c.MakeUnhealthy(tc.providerID, tc.cond)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, tc.want)
		}
	}
	if err := c.MakeUnhealthy("sim:///us-east-1a/i-00000000000000000", NodeCondition{Type: "KernelReady", Status: corev1.ConditionFalse}); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("an unknown instance: %v, want a NodeClaimNotFoundError", err)
	}

	earlier := clk.Now().Add(-20 * time.Minute)
	if err := c.MakeUnhealthy(a.Status.ProviderID, NodeCondition{Type: "KernelReady", Status: corev1.ConditionFalse, Reason: "SoftLockup", Since: earlier}); err != nil {
		t.Fatal(err)
	}
	if err := c.MakeUnhealthy(a.Status.ProviderID, NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse}); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	// A second fault of a type replaces the first.
	if err := c.MakeUnhealthy(a.Status.ProviderID, NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}); err != nil {
		t.Fatal(err)
	}
	want := []NodeCondition{
		{Type: "KernelReady", Status: corev1.ConditionFalse, Reason: "SoftLockup", Message: "the simulated cloud reports KernelReady False", Since: earlier},
		{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: ReasonNodeStatusUnknown, Message: "Kubelet stopped posting node status.", Since: clk.Now()},
	}
	if got := c.Instances()[0].Conditions; !reflect.DeepEqual(got, want) {
		t.Errorf("conditions\n got  %+v\n want %+v", got, want)
	}
}

func TestNodeFailureRate(t *testing.T) {
	run := func(failure NodeCondition) []Instance {
		c, clk := newTestCloud(t, Options{Seed: 5, LaunchLatency: time.Minute, Faults: FaultPlan{NodeFailureRate: 1, NodeFailure: failure}})
		for i := range 20 {
			mustCreate(t, c, testClaim(fmt.Sprintf("claim-%d", i)))
		}
		clk.Step(24 * time.Hour)
		return c.Instances()
	}
	a, b := run(NodeCondition{}), run(NodeCondition{})
	for i := range a {
		if !a[i].FailureTime.Equal(b[i].FailureTime) {
			t.Fatalf("same seed, different failures: %v vs %v", a[i].FailureTime, b[i].FailureTime)
		}
		failed := !a[i].FailureTime.After(epoch.Add(24 * time.Hour))
		if a[i].FailureTime.Before(a[i].RunningTime) {
			t.Errorf("%s fails at %v, before it runs at %v", a[i].ID, a[i].FailureTime, a[i].RunningTime)
		}
		if !failed {
			if len(a[i].Conditions) != 0 {
				t.Errorf("%s reports %v before its failure", a[i].ID, a[i].Conditions)
			}
			continue
		}
		want := []NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: ReasonNodeStatusUnknown,
			Message: "Kubelet stopped posting node status.", Since: a[i].FailureTime}}
		if !reflect.DeepEqual(a[i].Conditions, want) {
			t.Errorf("%s conditions %+v, want %+v", a[i].ID, a[i].Conditions, want)
		}
	}
	if failed := slices.IndexFunc(a, func(in Instance) bool { return len(in.Conditions) > 0 }); failed < 0 {
		t.Error("no node failed in a day at one failure an hour")
	}
	for _, in := range run(NodeCondition{Type: "AcceleratedHardwareReady", Status: corev1.ConditionFalse}) {
		for _, cond := range in.Conditions {
			if cond.Type != "AcceleratedHardwareReady" || cond.Reason != ReasonSimulatedFault {
				t.Errorf("the fault plan's node failure is %+v, want AcceleratedHardwareReady False", cond)
			}
		}
	}
	for name, f := range map[string]FaultPlan{
		"negative rate":     {NodeFailureRate: -1},
		"no type":           {NodeFailure: NodeCondition{Status: corev1.ConditionFalse}},
		"bad status":        {NodeFailure: NodeCondition{Type: "KernelReady", Status: "No"}},
		"since is per node": {NodeFailure: NodeCondition{Type: "KernelReady", Status: corev1.ConditionFalse, Since: epoch}},
	} {
		if _, err := New(Options{NodeClasses: fakeReader(), Faults: f}); err == nil {
			t.Errorf("%s: New accepted the fault plan", name)
		}
	}
}

// TestKubeletReportsFaults: the Node shows each fault as a condition from its time; a Ready
// fault keeps it from taking pods and taints it as the node lifecycle controller would, and an
// Unknown one (a vanished kubelet) leaves its deleted pods terminating.
func TestKubeletReportsFaults(t *testing.T) {
	f := newKubeletFixture(t, "faults", Options{}, KubeletOptions{MarkPodsRunning: true})
	ctx := f.ctx
	claim := f.claim("faults")
	f.create(claim)
	launched, err := f.cloud.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	f.step()
	inst := f.cloud.Instances()[0]
	if node := f.node(inst.Hostname); node == nil || nodeReady(node) != corev1.ConditionTrue {
		t.Fatalf("node %s not Ready after launch", inst.Hostname)
	}

	// A node monitoring agent's condition: reported from its time, the node stays Ready.
	f.clock.Step(time.Hour)
	since := f.clock.Now().Add(-15 * time.Minute)
	if err := f.cloud.MakeUnhealthy(launched.Status.ProviderID, NodeCondition{Type: "KernelReady", Status: corev1.ConditionFalse, Reason: "SoftLockup", Since: since}); err != nil {
		t.Fatal(err)
	}
	f.step()
	node := f.node(inst.Hostname)
	cond := findNodeCondition(node.Status.Conditions, "KernelReady")
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != "SoftLockup" || !cond.LastTransitionTime.Time.Equal(since) {
		t.Fatalf("KernelReady %+v, want False SoftLockup since %v", cond, since)
	}
	if nodeReady(node) != corev1.ConditionTrue || hasTaint(node.Spec.Taints, corev1.TaintNodeNotReady) {
		t.Errorf("a KernelReady fault changed Ready (%s) or tainted the node (%v)", nodeReady(node), taintKeys(node.Spec.Taints))
	}
	before := node.ResourceVersion
	f.step()
	if after := f.node(inst.Hostname).ResourceVersion; after != before {
		t.Errorf("a step without changes wrote the node (%s → %s)", before, after)
	}

	// The kubelet vanishes: Ready Unknown, the unreachable taint, pods neither started nor
	// finished.
	if err := f.cloud.MakeUnhealthy(launched.Status.ProviderID, NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}); err != nil {
		t.Fatal(err)
	}
	held := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "default", Finalizers: []string{"example.com/hold"}},
		Spec: corev1.PodSpec{NodeName: inst.Hostname, Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	f.create(held)
	f.step()
	node = f.node(inst.Hostname)
	if cond := findNodeCondition(node.Status.Conditions, corev1.NodeReady); cond == nil || cond.Status != corev1.ConditionUnknown ||
		cond.Reason != ReasonNodeStatusUnknown || !cond.LastTransitionTime.Time.Equal(f.clock.Now()) {
		t.Fatalf("Ready %+v, want Unknown NodeStatusUnknown since now", cond)
	}
	if !hasTaint(node.Spec.Taints, corev1.TaintNodeUnreachable) {
		t.Errorf("taints %v lack %s", taintKeys(node.Spec.Taints), corev1.TaintNodeUnreachable)
	}
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: inst.Hostname, Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	f.create(pending)
	if err := f.kube.Delete(ctx, held); err != nil {
		t.Fatal(err)
	}
	f.step()
	if err := f.kube.Get(ctx, client.ObjectKeyFromObject(pending), pending); err != nil {
		t.Fatal(err)
	}
	if pending.Status.Phase == corev1.PodRunning {
		t.Error("a pod started on a node whose kubelet is gone")
	}
	if err := f.kube.Get(ctx, client.ObjectKeyFromObject(held), held); err != nil {
		t.Fatalf("the deleted pod of a node whose kubelet is gone was finished: %v", err)
	}
	held.Finalizers = nil
	if err := f.kube.Update(ctx, held); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
}

// TestStoreKeepsFaults: a cloud restored from the store carries its instances' faults and
// pending failures on.
func TestStoreKeepsFaults(t *testing.T) {
	ctx := context.Background()
	store := NewConfigMapStore(env.Client, "default", "sim-state-faults")
	t.Cleanup(func() {
		cm := &corev1.ConfigMap{}
		cm.Namespace, cm.Name = "default", "sim-state-faults"
		_ = env.Client.Delete(ctx, cm)
	})
	first, clk := newTestCloud(t, Options{Store: store, Seed: 1, Faults: FaultPlan{NodeFailureRate: 0.5}})
	a := mustCreate(t, first, testClaim("a"))
	since := clk.Now()
	if err := first.MakeUnhealthy(a.Status.ProviderID, NodeCondition{Type: "StorageReady", Status: corev1.ConditionFalse}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := first.snapshotLive(ctx); err != nil { // as the kubelet's next step, which saves
		t.Fatal(err)
	}
	failAt := first.Instances()[0].FailureTime

	second, _ := newTestCloud(t, Options{Store: store})
	if _, err := second.List(ctx); err != nil {
		t.Fatal(err)
	}
	got := second.Instances()[0]
	if len(got.Conditions) != 1 || got.Conditions[0].Type != "StorageReady" || !got.Conditions[0].Since.Equal(since) || !got.FailureTime.Equal(failAt) {
		t.Errorf("restored conditions %+v, failure at %v; want StorageReady since %v and the failure at %v", got.Conditions, got.FailureTime, since, failAt)
	}
}
