package reboot_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/reboot"
	"github.com/openkarpenter/karpenter/pkg/termination"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/eventlog"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// fixture is a simulated cloud and kubelet on a fake clock, with the lifecycle, termination
// (the drainer) and reboot controllers, against the real API server.
type fixture struct {
	t         *testing.T
	ctx       context.Context
	ns        string
	clock     *clocktesting.FakeClock
	cloud     *sim.Cloud
	kubelet   *sim.Kubelet
	events    *eventlog.Log
	lifecycle *nodeclaim.LifecycleController
	ctrl      *reboot.Controller
}

var nsCounter atomic.Int32

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	env.EnsureNodeClass(t, "default")
	ns := fmt.Sprintf("reboot-%d", nsCounter.Add(1))
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Purge(t, []client.ObjectList{&karpv1.NodeClaimList{}, &corev1.NodeList{}}, ns) })
	entry, ok := catalog.Lookup("m5.large")
	if !ok {
		t.Fatal("catalog has no m5.large")
	}
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	cloud, err := sim.New(sim.Options{Clock: clk, NodeClasses: env.Client, Catalog: []catalog.Entry{entry}, RebootForRepair: true})
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := sim.NewKubelet(cloud, env.Client, sim.KubeletOptions{MarkPodsRunning: true})
	if err != nil {
		t.Fatal(err)
	}
	events := &eventlog.Log{}
	lifecycle := nodeclaim.NewLifecycleController(env.Client, cloud, nil, clk, events, nodeclaim.LifecycleOptions{})
	term := termination.NewController(env.Client, lifecycle, clk, events, termination.Options{})
	return &fixture{t: t, ctx: ctx, ns: ns, clock: clk, cloud: cloud, kubelet: kubelet, events: events, lifecycle: lifecycle,
		ctrl: reboot.NewController(env.Client, cloud, term, clk, events)}
}

// launch creates a NodeClaim and drives it to an initialized Node; it returns the Node's name.
func (f *fixture) launch(name string) string {
	f.t.Helper()
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
			},
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	if err := env.Client.Create(f.ctx, claim); err != nil {
		f.t.Fatal(err)
	}
	for range 3 {
		f.reconcileLifecycle(name)
		f.stepKubelet()
	}
	f.reconcileLifecycle(name)
	got := f.claim(name)
	if got == nil || !got.IsInitialized() {
		f.t.Fatalf("nodeclaim %s did not initialize: %+v", name, got)
	}
	return got.Status.NodeName
}

func (f *fixture) reconcileLifecycle(name string) {
	f.t.Helper()
	if _, err := f.lifecycle.Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
		f.t.Fatalf("lifecycle of %s: %v", name, err)
	}
}

func (f *fixture) stepKubelet() {
	f.t.Helper()
	if err := f.kubelet.Step(f.ctx); err != nil {
		f.t.Fatalf("kubelet step: %v", err)
	}
}

// reconcile runs the reboot controller on the claim.
func (f *fixture) reconcile(name string) reconcile.Result {
	f.t.Helper()
	res, err := f.ctrl.Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	if err != nil {
		f.t.Fatalf("reboot of %s: %v", name, err)
	}
	return res
}

func (f *fixture) claim(name string) *karpv1.NodeClaim {
	f.t.Helper()
	var c karpv1.NodeClaim
	if err := env.Client.Get(f.ctx, client.ObjectKey{Name: name}, &c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		f.t.Fatal(err)
	}
	return &c
}

func (f *fixture) node(name string) *corev1.Node {
	f.t.Helper()
	var n corev1.Node
	if err := env.Client.Get(f.ctx, client.ObjectKey{Name: name}, &n); err != nil {
		f.t.Fatal(err)
	}
	return &n
}

// commit commits a reboot of the claim as node repair does (disruption's commitReboot).
func (f *fixture) commit(name, bound string) {
	f.t.Helper()
	c := f.claim(name)
	base := c.DeepCopy()
	if bound != "" {
		c.Annotations = map[string]string{karpv1.RebootTerminationGracePeriodAnnotationKey: bound}
		if err := env.Client.Patch(f.ctx, c, client.MergeFrom(base)); err != nil {
			f.t.Fatal(err)
		}
		base = c.DeepCopy()
	}
	now := metav1.NewTime(f.clock.Now())
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue, Reason: "Unhealthy", Message: "Unhealthy", LastTransitionTime: now})
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeRebooting, Status: metav1.ConditionTrue,
		Reason: karpv1.RebootReasonRequested, Message: "rebooting for AcceleratedHardwareReady/NvidiaXID48Error", LastTransitionTime: now})
	if err := env.Client.Status().Patch(f.ctx, c, client.MergeFrom(base)); err != nil {
		f.t.Fatal(err)
	}
}

// pod binds a pod without controller to the node, and lets the kubelet run it.
func (f *fixture) pod(name, node string) {
	f.t.Helper()
	grace := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "app:1"}}, TerminationGracePeriodSeconds: &grace},
	}
	if err := env.Client.Create(f.ctx, pod); err != nil {
		f.t.Fatal(err)
	}
	f.stepKubelet()
}

func (f *fixture) podsOn(node string) int {
	f.t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(f.ctx, &pods, client.InNamespace(f.ns)); err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

func rebooting(c *karpv1.NodeClaim) *metav1.Condition {
	return meta.FindStatusCondition(c.Status.Conditions, karpv1.ConditionTypeRebooting)
}

func hasRebootTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.RebootingTaintKey })
}

// TestRebootSucceeds follows one committed reboot through Karpenter v1.15.0's reboot controller
// (pkg/controllers/nodeclaim/reboot/controller.go: reconcileRequested, drain, issueReboot,
// reconcileIssued, transitionToSucceeded) on the simulated cloud: the Node is fenced and
// drained (at least 5 seconds), its boot ID kept, the instance rebooted (the cloud counts
// it), Initialized goes Unknown and the Node loses karpenter.sh/initialized; while the
// instance reboots the Node is NotReady with the old boot ID; once it reports a new one and is
// Ready the fence goes, a RebootObserved Event says so, the reboot succeeds, and the lifecycle
// controller initializes the claim afresh.
func TestRebootSucceeds(t *testing.T) {
	f := newFixture(t)
	node := f.launch("gpu")
	f.pod("work", node)
	bootID := f.node(node).Status.NodeInfo.BootID
	succeeded := testutil.ToFloat64(metrics.NodesRebootsTotal.WithLabelValues(metrics.RebootSucceeded))
	f.commit("gpu", "5m0s")

	f.reconcile("gpu")
	if !hasRebootTaint(f.node(node)) {
		t.Fatal("the node is not fenced while it drains")
	}
	f.stepKubelet() // the evicted pod goes
	if n := f.podsOn(node); n != 0 {
		t.Fatalf("%d pods on the node after the drain's first pass, want the pod evicted", n)
	}
	if res := f.reconcile("gpu"); res.RequeueAfter <= 0 || rebooting(f.claim("gpu")).Reason != karpv1.RebootReasonRequested {
		t.Fatalf("the reboot was issued before the minimum drain time (requeue %s)", res.RequeueAfter)
	}
	f.clock.Step(reboot.MinDrainTime)
	f.reconcile("gpu")
	c := f.claim("gpu")
	if r := rebooting(c); r.Status != metav1.ConditionTrue || r.Reason != karpv1.RebootReasonIssued {
		t.Fatalf("Rebooting %+v, want True RebootIssued", r)
	}
	if c.Annotations[karpv1.RebootPreBootIDAnnotationKey] != bootID {
		t.Errorf("pre-boot ID %q, want the node's %q", c.Annotations[karpv1.RebootPreBootIDAnnotationKey], bootID)
	}
	if init := meta.FindStatusCondition(c.Status.Conditions, karpv1.ConditionTypeInitialized); init == nil || init.Status != metav1.ConditionUnknown || init.Reason != karpv1.RebootReasonRebooting {
		t.Errorf("Initialized %+v, want Unknown Rebooting", init)
	}
	if _, ok := f.node(node).Labels[karpv1.NodeInitializedLabelKey]; ok {
		t.Error("the rebooting node keeps karpenter.sh/initialized")
	}
	instances := f.cloud.Instances()
	if len(instances) != 1 || instances[0].Reboots != 1 {
		t.Fatalf("instances %+v, want one rebooted once", instances)
	}
	// The lifecycle controller leaves a rebooting claim uninitialized.
	f.reconcileLifecycle("gpu")
	if f.claim("gpu").IsInitialized() {
		t.Fatal("the lifecycle initialized a rebooting claim")
	}

	f.clock.Step(30 * time.Second)
	f.stepKubelet()
	if n := f.node(node); n.Status.NodeInfo.BootID != bootID || isReady(n) {
		t.Fatalf("mid-reboot: boot ID %s ready %v, want the old one and NotReady", n.Status.NodeInfo.BootID, isReady(n))
	}
	f.reconcile("gpu")
	if rebooting(f.claim("gpu")).Reason != karpv1.RebootReasonIssued || !hasRebootTaint(f.node(node)) {
		t.Fatal("the reboot ended before the node came back")
	}

	f.clock.Step(sim.DefaultRebootDuration)
	f.stepKubelet()
	if n := f.node(node); n.Status.NodeInfo.BootID == bootID || !isReady(n) {
		t.Fatalf("after the reboot: boot ID %s ready %v, want a new one and Ready", n.Status.NodeInfo.BootID, isReady(n))
	}
	f.reconcile("gpu")
	c = f.claim("gpu")
	if r := rebooting(c); r.Status != metav1.ConditionFalse || r.Reason != karpv1.RebootReasonSucceeded {
		t.Fatalf("Rebooting %+v, want False RebootSucceeded", r)
	}
	if _, ok := c.Annotations[karpv1.RebootPreBootIDAnnotationKey]; ok {
		t.Error("the pre-boot ID outlived the reboot")
	}
	if meta.FindStatusCondition(c.Status.Conditions, karpv1.ConditionTypeDisruptionReason) != nil {
		t.Error("the DisruptionReason condition outlived the reboot")
	}
	if hasRebootTaint(f.node(node)) {
		t.Error("the fence outlived the reboot")
	}
	if got := testutil.ToFloat64(metrics.NodesRebootsTotal.WithLabelValues(metrics.RebootSucceeded)) - succeeded; got != 1 {
		t.Errorf("karpenter_nodes_reboots_total{result=succeeded} rose by %v, want 1", got)
	}
	f.expectEvent("Normal RebootObserved", "New boot observed")
	f.reconcileLifecycle("gpu")
	if !f.claim("gpu").IsInitialized() || f.node(node).Labels[karpv1.NodeInitializedLabelKey] != "true" {
		t.Error("the lifecycle did not initialize the claim again after its reboot")
	}
	if f.claim("gpu").DeletionTimestamp != nil {
		t.Error("a successful reboot deleted the claim")
	}
}

// TestRebootThatDoesNotRecoverReplaces: a node that is not back within the 20-minute
// observation window of its reboot's issue fails the reboot (recovery_timeout, a RebootFailed
// Warning) and is replaced, its NodeClaim deleted with the reboot's drain bound as its
// termination deadline, as Karpenter's transitionToFailed. A forceful reboot ("0") skips the
// drain.
func TestRebootThatDoesNotRecoverReplaces(t *testing.T) {
	f := newFixture(t)
	node := f.launch("gpu")
	f.pod("work", node)
	timeouts := testutil.ToFloat64(metrics.NodesRebootsTotal.WithLabelValues(metrics.RebootRecoveryTimeout))
	f.commit("gpu", "0s")
	// The claim keeps a finalizer, as in a cluster, so its deletion can be read.
	c := f.claim("gpu")
	c.Finalizers = append(c.Finalizers, karpv1.TerminationFinalizer)
	if err := env.Client.Update(f.ctx, c); err != nil {
		t.Fatal(err)
	}
	f.reconcile("gpu")
	if r := rebooting(f.claim("gpu")); r.Reason != karpv1.RebootReasonIssued {
		t.Fatalf("Rebooting %+v, want issued at once without a drain", r)
	}
	if n := f.podsOn(node); n != 1 {
		t.Errorf("%d pods on the node, want the pod to ride the forceful reboot", n)
	}
	// The instance's kubelet does not come back.
	inst := f.cloud.Instances()[0]
	f.clock.Step(time.Second)
	if err := f.cloud.MakeUnhealthy(inst.ProviderID, sim.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse}); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(reboot.ObservationWindow - 2*time.Second)
	f.stepKubelet()
	f.reconcile("gpu")
	if f.claim("gpu").DeletionTimestamp != nil {
		t.Fatal("the reboot failed within the observation window")
	}
	f.clock.Step(2 * time.Second)
	f.reconcile("gpu")
	c = f.claim("gpu")
	if c == nil || c.DeletionTimestamp == nil {
		t.Fatal("a reboot that did not recover did not replace the node")
	}
	if got, want := c.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey], f.clock.Now().UTC().Format(time.RFC3339); got != want {
		t.Errorf("termination timestamp %q, want the forceful reboot's bound from now, %q", got, want)
	}
	if hasRebootTaint(f.node(node)) {
		t.Error("the fence outlived the failed reboot")
	}
	if got := testutil.ToFloat64(metrics.NodesRebootsTotal.WithLabelValues(metrics.RebootRecoveryTimeout)) - timeouts; got != 1 {
		t.Errorf("karpenter_nodes_reboots_total{result=recovery_timeout} rose by %v, want 1", got)
	}
	f.expectEvent("Warning RebootFailed", "node did not recover within the observation window")
}

// TestRebootInvalidBoundFailsWithoutReplacing: a malformed drain bound fails the reboot
// (invalid_request) and leaves the node, as Karpenter's.
func TestRebootInvalidBoundFailsWithoutReplacing(t *testing.T) {
	f := newFixture(t)
	f.launch("gpu")
	f.commit("gpu", "soon")
	f.reconcile("gpu")
	c := f.claim("gpu")
	if r := rebooting(c); r.Status != metav1.ConditionFalse || r.Reason != karpv1.RebootReasonFailed || !strings.Contains(r.Message, "invalid reboot request") {
		t.Fatalf("Rebooting %+v, want False RebootFailed", r)
	}
	if c.DeletionTimestamp != nil || f.cloud.Instances()[0].Reboots != 0 {
		t.Error("an invalid reboot request deleted or rebooted the node")
	}
}

func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (f *fixture) expectEvent(prefix, text string) {
	f.t.Helper()
	for _, e := range f.events.Events() {
		line := e.Type + " " + e.Reason + " " + e.Message
		if strings.HasPrefix(line, prefix) && strings.Contains(line, text) {
			return
		}
	}
	f.t.Errorf("no event %q containing %q among %v", prefix, text, f.events.Events())
}
