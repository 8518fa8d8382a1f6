package termination

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/eventlog"
)

// env is the real API server the tests run against. Tests do not run in parallel: the
// simulated kubelet owns every sim:/// Node it sees.
var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// fixture is one test's world: a simulated cloud and kubelet on a fake clock, the lifecycle
// controller finalizing externally, and the termination controller under test.
type fixture struct {
	t         *testing.T
	ctx       context.Context
	ns        string
	clock     *clocktesting.FakeClock
	cloud     *sim.Cloud
	kubelet   *sim.Kubelet
	events    *eventlog.Log
	lifecycle *nodeclaim.LifecycleController
	finalizer *countingFinalizer
	ctrl      *Controller
}

// countingFinalizer counts Finalize calls.
type countingFinalizer struct {
	Finalizer
	n atomic.Int32
}

func (c *countingFinalizer) Finalize(ctx context.Context, claim *karpv1.NodeClaim) (reconcile.Result, error) {
	c.n.Add(1)
	return c.Finalizer.Finalize(ctx, claim)
}

var nsCounter atomic.Int32

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	env.EnsureNodeClass(t, "default")
	ns := fmt.Sprintf("term-%d", nsCounter.Add(1))
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() { cleanup(t, ns) })

	clk := clocktesting.NewFakeClock(time.Now())
	cloud, err := sim.New(sim.Options{Clock: clk, NodeClasses: env.Client, Catalog: testCatalog(t)})
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	kubelet, err := sim.NewKubelet(cloud, env.Client, sim.KubeletOptions{MarkPodsRunning: true})
	if err != nil {
		t.Fatalf("sim.NewKubelet: %v", err)
	}
	events := &eventlog.Log{}
	lifecycle := nodeclaim.NewLifecycleController(env.Client, cloud, nil, clk, events, nodeclaim.LifecycleOptions{})
	fin := &countingFinalizer{Finalizer: lifecycle}
	return &fixture{
		t: t, ctx: ctx, ns: ns, clock: clk, cloud: cloud, kubelet: kubelet, events: events,
		lifecycle: lifecycle, finalizer: fin,
		ctrl: NewController(env.Client, fin, clk, events, Options{}),
	}
}

func testCatalog(t *testing.T) []catalog.Entry {
	t.Helper()
	e, ok := catalog.Lookup("m5.large")
	if !ok {
		t.Fatal("catalog has no m5.large")
	}
	return []catalog.Entry{e}
}

// cleanup removes every NodeClaim and Node, finalizers and all, and the namespace's pods.
func cleanup(t *testing.T, ns string) {
	env.Purge(t, []client.ObjectList{&karpv1.NodeClaimList{}, &corev1.NodeList{}}, ns)
}

func forceDelete(t *testing.T, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	if len(obj.GetFinalizers()) > 0 {
		obj.SetFinalizers(nil)
		if err := env.Client.Update(ctx, obj); client.IgnoreNotFound(err) != nil {
			t.Errorf("cleanup: removing finalizers of %s: %v", obj.GetName(), err)
		}
	}
	if err := env.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
		t.Errorf("cleanup: deleting %s: %v", obj.GetName(), err)
	}
}

// launch creates a NodeClaim and drives the lifecycle controller and the simulated kubelet
// until its Node is registered and initialized. It returns the Node's name.
func (f *fixture) launch(name string, grace *time.Duration) string {
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
	if grace != nil {
		claim.Spec.TerminationGracePeriod = &metav1.Duration{Duration: *grace}
	}
	if err := env.Client.Create(f.ctx, claim); err != nil {
		f.t.Fatalf("creating nodeclaim %s: %v", name, err)
	}
	for range 3 {
		if _, err := f.lifecycle.Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
			f.t.Fatalf("lifecycle of %s: %v", name, err)
		}
		f.stepKubelet()
	}
	got := f.claim(name)
	if got == nil || got.Status.NodeName == "" {
		f.t.Fatalf("nodeclaim %s did not register: %+v", name, got)
	}
	return got.Status.NodeName
}

func (f *fixture) stepKubelet() {
	f.t.Helper()
	if err := f.kubelet.Step(f.ctx); err != nil {
		f.t.Fatalf("kubelet step: %v", err)
	}
}

// podOptions describe a test pod.
type podOptions struct {
	labels      map[string]string
	annotations map[string]string
	owner       string // owner reference kind, if any
	grace       int64  // terminationGracePeriodSeconds; 0 makes an eviction remove it at once
	priority    string // priority class name
	tolerations []corev1.Toleration
	claims      []string // PersistentVolumeClaims the pod mounts
}

// pod creates a pod bound to node, then lets the kubelet mark it Running.
func (f *fixture) pod(name, node string, o podOptions) *corev1.Pod {
	f.t.Helper()
	grace := o.grace
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: o.labels, Annotations: o.annotations},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			Containers:                    []corev1.Container{{Name: "app", Image: "app:1"}},
			TerminationGracePeriodSeconds: &grace,
			PriorityClassName:             o.priority,
			Tolerations:                   o.tolerations,
		},
	}
	for _, c := range o.claims {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	if o.owner != "" {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: o.owner, Name: "owner", UID: "0b1c2d3e-0000-4000-8000-000000000001"}}
		if o.owner == "Node" {
			pod.OwnerReferences[0].APIVersion = "v1"
			pod.OwnerReferences[0].Name = node
		}
	}
	if err := env.Client.Create(f.ctx, pod); err != nil {
		f.t.Fatalf("creating pod %s: %v", name, err)
	}
	f.stepKubelet()
	return pod
}

// budget creates a PodDisruptionBudget selecting app=<name> and writes its status as the
// disruption controller would, allowing the given number of disruptions.
func (f *fixture) budget(name string, allowed int32) {
	f.t.Helper()
	minAvailable := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
	if err := env.Client.Create(f.ctx, pdb); err != nil {
		f.t.Fatalf("creating pdb %s: %v", name, err)
	}
	f.allow(name, allowed)
}

// allow writes the budget's status so that it allows n disruptions.
func (f *fixture) allow(name string, n int32) {
	f.t.Helper()
	pdb := &policyv1.PodDisruptionBudget{}
	if err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, pdb); err != nil {
		f.t.Fatalf("getting pdb %s: %v", name, err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: n,
		CurrentHealthy:     1 + n,
		DesiredHealthy:     1,
		ExpectedPods:       1 + n,
	}
	if err := env.Client.Status().Update(f.ctx, pdb); err != nil {
		f.t.Fatalf("writing status of pdb %s: %v", name, err)
	}
}

// deleteClaim marks the claim for deletion; its finalizer holds it.
func (f *fixture) deleteClaim(name string) {
	f.t.Helper()
	if err := env.Client.Delete(f.ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		f.t.Fatalf("deleting nodeclaim %s: %v", name, err)
	}
}

// reconcile runs the termination controller once on the claim and fails on an error.
func (f *fixture) reconcile(name string) reconcile.Result {
	f.t.Helper()
	res, err := f.ctrl.Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	if err != nil {
		f.t.Fatalf("reconciling %s: %v", name, err)
	}
	return res
}

// finish reconciles the claim, stepping the clock as asked, until it is gone.
func (f *fixture) finish(name string) {
	f.t.Helper()
	for range 10 {
		if f.claim(name) == nil {
			return
		}
		res := f.reconcile(name)
		f.clock.Step(res.RequeueAfter)
		f.stepKubelet()
	}
	f.t.Fatalf("nodeclaim %s still exists", name)
}

// claim reads a NodeClaim; nil when it does not exist.
func (f *fixture) claim(name string) *karpv1.NodeClaim {
	f.t.Helper()
	return apiserver.Lookup[karpv1.NodeClaim](f.t, env.Client, client.ObjectKey{Name: name})
}

// node reads a Node; nil when it does not exist.
func (f *fixture) node(name string) *corev1.Node {
	f.t.Helper()
	return apiserver.Lookup[corev1.Node](f.t, env.Client, client.ObjectKey{Name: name})
}

// getPod reads a pod of the test's namespace; nil when it does not exist.
func (f *fixture) getPod(name string) *corev1.Pod {
	f.t.Helper()
	return apiserver.Lookup[corev1.Pod](f.t, env.Client, client.ObjectKey{Namespace: f.ns, Name: name})
}

// evicted reports whether the pod is gone or being deleted.
func (f *fixture) evicted(name string) bool {
	f.t.Helper()
	pod := f.getPod(name)
	return pod == nil || pod.DeletionTimestamp != nil
}

// kubeletRemoves plays the kubelet finishing a terminating pod: it deletes it for good.
func (f *fixture) kubeletRemoves(name string) {
	f.t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}}
	if err := env.Client.Delete(f.ctx, pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		f.t.Fatalf("removing pod %s: %v", name, err)
	}
}

// liveInstances counts the cloud's instances that are not terminated.
func (f *fixture) liveInstances() int {
	n := 0
	for _, in := range f.cloud.Instances() {
		if in.State != sim.InstanceStateTerminated {
			n++
		}
	}
	return n
}

// expectEvent checks that an event containing all of parts ("Kind/name Type Reason Message")
// was recorded since the fixture began.
func (f *fixture) expectEvent(parts ...any) {
	f.t.Helper()
	var seen []string
	for _, e := range f.events.Events() {
		if containsAll(e.String(), parts) {
			return
		}
		seen = append(seen, e.String())
	}
	f.t.Errorf("no event with %q among %q", parts, seen)
}

func containsAll(s string, parts []any) bool {
	for _, p := range parts {
		if !strings.Contains(s, fmt.Sprint(p)) {
			return false
		}
	}
	return true
}

func hasDisruptedTaint(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == karpv1.DisruptedTaintKey && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}
