package repair

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/termination"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
	"github.com/openkarpenter/karpenter/pkg/test/eventlog"
)

// env is the real API server every test here runs against. Tests do not run in parallel: the
// simulated kubelet owns every sim:/// Node it sees, and the safety valve counts every Node.
var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// fixture is one test's world: a simulated cloud and kubelet on a fake clock, the lifecycle
// and termination controllers, and the repair controller under test.
type fixture struct {
	t           *testing.T
	ctx         context.Context
	ns          string
	clock       *clocktesting.FakeClock
	cloud       *sim.Cloud
	kubelet     *sim.Kubelet
	events      *eventlog.Log
	lifecycle   *nodeclaim.LifecycleController
	termination *termination.Controller
	repair      *Controller
	repairs     []Outcome
}

var nsCounter atomic.Int32

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	env.EnsureNodeClass(t, "default")
	ns := fmt.Sprintf("repair-%d", nsCounter.Add(1))
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		env.Purge(t, []client.ObjectList{&karpv1.NodeClaimList{}, &corev1.NodeList{}, &karpv1.NodePoolList{}}, ns)
	})

	// Whole seconds: the API server keeps condition times to the second.
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	entry, ok := catalog.Lookup("m5.large")
	if !ok {
		t.Fatal("catalog has no m5.large")
	}
	cloud, err := sim.New(sim.Options{Clock: clk, NodeClasses: env.Client, Catalog: []catalog.Entry{entry}})
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	kubelet, err := sim.NewKubelet(cloud, env.Client, sim.KubeletOptions{MarkPodsRunning: true})
	if err != nil {
		t.Fatalf("sim.NewKubelet: %v", err)
	}
	events := &eventlog.Log{}
	lifecycle := nodeclaim.NewLifecycleController(env.Client, cloud, nil, clk, events, nodeclaim.LifecycleOptions{})
	f := &fixture{
		t: t, ctx: ctx, ns: ns, clock: clk, cloud: cloud, kubelet: kubelet, events: events, lifecycle: lifecycle,
		termination: termination.NewController(env.Client, lifecycle, clk, events, termination.Options{}),
		repair:      NewController(env.Client, cloudprovider.LegacyRepairPolicies(cloud), clk, events),
	}
	f.repair.Observe(func(r Outcome) { f.repairs = append(f.repairs, r) })
	return f
}

// nodePool creates the NodePool of that name, for its NodeRepairBlocked Event.
func (f *fixture) nodePool(name string) *karpv1.NodePool {
	f.t.Helper()
	np := builders.NodePool(builders.NodePoolOptions{Name: name, Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
		builders.Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
	}})
	if err := env.Client.Create(f.ctx, np); err != nil {
		f.t.Fatalf("creating nodepool %s: %v", name, err)
	}
	return np
}

// launched is a NodeClaim driven until its Node registered.
type launched struct {
	claim, node string
	providerID  string
}

// launch creates a NodeClaim of the NodePool (none when empty) and drives the lifecycle
// controller and the simulated kubelet until its Node is registered and initialized.
func (f *fixture) launch(name, nodePool string) launched {
	f.t.Helper()
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
			},
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	if nodePool != "" {
		claim.Labels = map[string]string{karpv1.NodePoolLabelKey: nodePool}
	}
	if err := env.Client.Create(f.ctx, claim); err != nil {
		f.t.Fatalf("creating nodeclaim %s: %v", name, err)
	}
	for range 3 {
		if _, err := f.lifecycle.Reconcile(f.ctx, request(name)); err != nil {
			f.t.Fatalf("lifecycle of %s: %v", name, err)
		}
		f.stepKubelet()
	}
	got := f.claim(name)
	if got == nil || got.Status.NodeName == "" {
		f.t.Fatalf("nodeclaim %s did not register: %+v", name, got)
	}
	return launched{claim: name, node: got.Status.NodeName, providerID: got.Status.ProviderID}
}

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}
}

func (f *fixture) stepKubelet() {
	f.t.Helper()
	if err := f.kubelet.Step(f.ctx); err != nil {
		f.t.Fatalf("kubelet step: %v", err)
	}
}

// sicken makes the node report the condition since ago before now, as its kubelet or the node
// monitoring agent would, and lets the kubelet write it.
func (f *fixture) sicken(n launched, typ corev1.NodeConditionType, status corev1.ConditionStatus, ago time.Duration) {
	f.t.Helper()
	if err := f.cloud.MakeUnhealthy(n.providerID, sim.NodeCondition{Type: typ, Status: status, Since: f.clock.Now().Add(-ago)}); err != nil {
		f.t.Fatalf("making %s unhealthy: %v", n.node, err)
	}
	f.stepKubelet()
}

// reconcile runs the repair controller once on the node and fails on an error.
func (f *fixture) reconcile(n launched) reconcile.Result {
	f.t.Helper()
	res, err := f.repair.Reconcile(f.ctx, request(n.node))
	if err != nil {
		f.t.Fatalf("repairing %s: %v", n.node, err)
	}
	return res
}

// terminate runs the termination controller and the kubelet, stepping the clock as asked,
// until the claim is gone.
func (f *fixture) terminate(name string) {
	f.t.Helper()
	for range 10 {
		if f.claim(name) == nil {
			return
		}
		res, err := f.termination.Reconcile(f.ctx, request(name))
		if err != nil {
			f.t.Fatalf("terminating %s: %v", name, err)
		}
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

// deleting reports whether the claim is being deleted (or gone).
func (f *fixture) deleting(name string) bool {
	f.t.Helper()
	claim := f.claim(name)
	return claim == nil || claim.DeletionTimestamp != nil
}

// pod creates a pod of the test's namespace bound to the node, then lets the kubelet mark it
// Running.
func (f *fixture) pod(name, node string, labels, annotations map[string]string) *corev1.Pod {
	f.t.Helper()
	grace := int64(30)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: labels, Annotations: annotations},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "app:1"}}, TerminationGracePeriodSeconds: &grace},
	}
	if err := env.Client.Create(f.ctx, pod); err != nil {
		f.t.Fatalf("creating pod %s: %v", name, err)
	}
	f.stepKubelet()
	return pod
}
