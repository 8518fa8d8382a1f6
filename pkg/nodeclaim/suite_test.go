package nodeclaim

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
)

// env is the real API server every test here runs against. Tests do not run in parallel: the
// simulated kubelet owns every sim:/// Node it sees.
var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// fixture is one test's world: a simulated cloud and kubelet on a fake clock, and the
// controllers under test wired to the API server.
type fixture struct {
	t           *testing.T
	ctx         context.Context
	clock       *clocktesting.FakeClock
	cloud       *sim.Cloud
	creates     *countingLauncher
	kubelet     *sim.Kubelet
	unavailable *cloudprovider.UnavailableOfferings
	events      *record.FakeRecorder
	lifecycle   *LifecycleController
	gc          *GarbageCollector
	opts        LifecycleOptions
}

type fixtureOptions struct {
	sim     sim.Options
	kubelet sim.KubeletOptions
	opts    LifecycleOptions
}

// newFixture builds the world on a fake clock at the present (the API server stamps creation
// times from the real clock), with a small catalog and the "default" EC2NodeClass.
func newFixture(t *testing.T, o fixtureOptions) *fixture {
	t.Helper()
	ctx := context.Background()
	env.EnsureNodeClass(t, "default")
	t.Cleanup(func() { cleanup(t) })

	clk := clocktesting.NewFakeClock(time.Now())
	o.sim.Clock = clk
	o.sim.NodeClasses = env.Client
	if o.sim.Catalog == nil {
		o.sim.Catalog = testCatalog(t)
	}
	cloud, err := sim.New(o.sim)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	kubelet, err := sim.NewKubelet(cloud, env.Client, o.kubelet)
	if err != nil {
		t.Fatalf("sim.NewKubelet: %v", err)
	}
	f := &fixture{
		t: t, ctx: ctx, clock: clk, cloud: cloud, kubelet: kubelet,
		creates:     &countingLauncher{InstanceLifecycle: cloud},
		unavailable: cloudprovider.NewUnavailableOfferings(clk, 0),
		events:      record.NewFakeRecorder(1000),
		opts:        o.opts,
	}
	f.lifecycle = f.newLifecycle()
	f.gc = NewGarbageCollector(env.Client, cloud, clk, f.events, GarbageCollectorOptions{})
	return f
}

// newLifecycle is a fresh lifecycle controller on the fixture's world, as after a restart.
func (f *fixture) newLifecycle() *LifecycleController {
	return NewLifecycleController(env.Client, f.creates, f.unavailable, f.clock, f.events, f.opts)
}

// countingLauncher counts Create calls.
type countingLauncher struct {
	cloudprovider.InstanceLifecycle
	n atomic.Int32
}

func (c *countingLauncher) Create(ctx context.Context, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	c.n.Add(1)
	return c.InstanceLifecycle.Create(ctx, claim)
}

func testCatalog(t *testing.T) []catalog.Entry {
	t.Helper()
	var out []catalog.Entry
	for _, name := range []string{"c5.large", "m5.large", "p3.2xlarge"} {
		e, ok := catalog.Lookup(name)
		if !ok {
			t.Fatalf("catalog has no %s", name)
		}
		out = append(out, e)
	}
	return out
}

// cleanup removes every NodeClaim and Node, finalizers and all.
func cleanup(t *testing.T) {
	env.Purge(t, []client.ObjectList{&karpv1.NodeClaimList{}, &corev1.NodeList{}})
}

// claimOptions describe a test NodeClaim of the "default" NodePool.
type claimOptions struct {
	instanceType  string // default m5.large
	capacityType  string // default on-demand
	nodeClass     string // default "default"
	labels        map[string]string
	taints        []corev1.Taint
	startupTaints []corev1.Taint
	requests      corev1.ResourceList // the pods' requests (spec.resources.requests)
	owner         *karpv1.NodePool    // the NodePool owning the claim; default none
}

// createClaim creates a NodeClaim in the API server.
func (f *fixture) createClaim(name string, o claimOptions) *karpv1.NodeClaim {
	f.t.Helper()
	if o.instanceType == "" {
		o.instanceType = "m5.large"
	}
	if o.capacityType == "" {
		o.capacityType = karpv1.CapacityTypeOnDemand
	}
	if o.nodeClass == "" {
		o.nodeClass = "default"
	}
	labels := map[string]string{karpv1.NodePoolLabelKey: "default"}
	for k, v := range o.labels {
		labels[k] = v
	}
	var owners []metav1.OwnerReference
	if o.owner != nil {
		owners = []metav1.OwnerReference{{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodePool", Name: o.owner.Name, UID: o.owner.UID}}
	}
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, OwnerReferences: owners},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}},
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{o.instanceType}},
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{o.capacityType}},
			},
			Taints:        o.taints,
			StartupTaints: o.startupTaints,
			Resources:     karpv1.ResourceRequirements{Requests: o.requests},
			NodeClassRef:  &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: o.nodeClass},
		},
	}
	if err := env.Client.Create(f.ctx, claim); err != nil {
		f.t.Fatalf("creating nodeclaim %s: %v", name, err)
	}
	return claim
}

// reconcile runs the lifecycle controller once on the claim.
func (f *fixture) reconcile(name string) (reconcile.Result, error) {
	return f.lifecycle.Reconcile(f.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
}

// mustReconcile runs the lifecycle controller once on the claim and fails on an error.
func (f *fixture) mustReconcile(name string) reconcile.Result {
	f.t.Helper()
	res, err := f.reconcile(name)
	if err != nil {
		f.t.Fatalf("reconciling %s: %v", name, err)
	}
	return res
}

// stepKubelet runs one pass of the simulated kubelet.
func (f *fixture) stepKubelet() {
	f.t.Helper()
	if err := f.kubelet.Step(f.ctx); err != nil {
		f.t.Fatalf("kubelet step: %v", err)
	}
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

// nodeOf returns the one Node with the claim's provider ID.
func (f *fixture) nodeOf(claim *karpv1.NodeClaim) *corev1.Node {
	f.t.Helper()
	nodes, err := NodesByProviderID(f.ctx, env.Client, claim.Status.ProviderID)
	if err != nil || len(nodes) != 1 {
		f.t.Fatalf("nodes of %s (%s): %d, %v", claim.Name, claim.Status.ProviderID, len(nodes), err)
	}
	return nodes[0]
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

// expectCondition checks a condition's status and, when given, its reason.
func expectCondition(t *testing.T, claim *karpv1.NodeClaim, condType string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	cond := meta.FindStatusCondition(claim.Status.Conditions, condType)
	if cond == nil {
		t.Errorf("%s: no %s condition", claim.Name, condType)
		return
	}
	if cond.Status != status || (reason != "" && cond.Reason != reason) {
		t.Errorf("%s: %s=%s (%s: %s), want %s (%s)", claim.Name, condType, cond.Status, cond.Reason, cond.Message, status, reason)
	}
}

// expectEvent checks that an event starting with prefix ("Normal Launched") was recorded, and
// consumes the events up to it.
func (f *fixture) expectEvent(eventType string, reason events.Reason, message ...string) {
	f.t.Helper()
	prefix := strings.Join(append([]string{eventType, string(reason)}, message...), " ")
	var seen []string
	for {
		select {
		case e := <-f.events.Events:
			if strings.HasPrefix(e, prefix) {
				return
			}
			seen = append(seen, e)
		default:
			f.t.Errorf("no event %q among %q", prefix, seen)
			return
		}
	}
}

// expectDeleting checks that the claim is marked for deletion (held by its finalizer).
func (f *fixture) expectDeleting(name string) {
	f.t.Helper()
	claim := f.claim(name)
	if claim != nil && claim.DeletionTimestamp == nil {
		f.t.Fatalf("nodeclaim %s is not being deleted", name)
	}
}

// finish finalizes a deleting claim until it is gone, as the termination controller does
// once the node is drained.
func (f *fixture) finish(name string) {
	f.t.Helper()
	for range 5 {
		claim := f.claim(name)
		if claim == nil {
			return
		}
		if _, err := f.lifecycle.Finalize(f.ctx, claim); err != nil {
			f.t.Fatalf("finalizing %s: %v", name, err)
		}
	}
	f.t.Fatalf("nodeclaim %s still exists", name)
}
