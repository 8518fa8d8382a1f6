package deletioncost_test

import (
	"context"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/controllers"
	"github.com/openkarpenter/karpenter/pkg/deletioncost"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

type fixture struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	cloud *sim.Cloud
	np    *karpv1.NodePool
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: clocktesting.NewFakeClock(time.Now().Truncate(time.Second))}
	t.Cleanup(func() {
		env.Purge(t, []client.ObjectList{&karpv1.NodeClaimList{}, &corev1.NodeList{}, &karpv1.NodePoolList{}, &awsv1.EC2NodeClassList{}}, "default")
	})
	f.create(&awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			Role: "KarpenterNodeRole", AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
		},
	})
	// Every node may be disrupted at once, so no budget sends a node to the cleared group.
	f.np = builders.NodePool(builders.NodePoolOptions{ConsolidateAfter: "0s", Budgets: []karpv1.Budget{{Nodes: "100%"}}})
	f.create(f.np)
	var err error
	if f.cloud, err = sim.New(sim.Options{Clock: f.clock, NodeClasses: env.Client, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) create(obj client.Object) {
	f.t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		f.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// node creates an initialized NodeClaim of the NodePool and its Node, of the EC2 type, with
// the claim's extra conditions and the Node's taints, and binds the pods to it.
func (f *fixture) node(name, instanceType string, conditions []metav1.Condition, taints []corev1.Taint, pods ...*corev1.Pod) {
	f.t.Helper()
	ctx := context.Background()
	its, err := f.cloud.GetInstanceTypes(ctx, f.np)
	if err != nil {
		f.t.Fatal(err)
	}
	var allocatable corev1.ResourceList
	for _, it := range its {
		if it.Name == instanceType {
			allocatable = it.Allocatable()
		}
	}
	if allocatable == nil {
		f.t.Fatalf("no instance type %s", instanceType)
	}
	labels := map[string]string{
		karpv1.NodePoolLabelKey: f.np.Name, corev1.LabelInstanceTypeStable: instanceType, karpv1.CapacityTypeLabelKey: "on-demand",
		corev1.LabelTopologyZone: "us-east-1a", corev1.LabelArchStable: "amd64", corev1.LabelHostname: name,
	}
	claim := builders.NodeClaim(builders.NodeClaimOptions{Name: name, NodePool: f.np.Name, Labels: labels, Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}}}})
	f.create(claim)
	claim.Status = karpv1.NodeClaimStatus{NodeName: name, ProviderID: "sim:///us-east-1a/" + name, Allocatable: allocatable, Capacity: allocatable,
		Conditions: append([]metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized",
			LastTransitionTime: metav1.NewTime(f.clock.Now().Add(-time.Hour))}}, conditions...)}
	if err := env.Client.Status().Update(ctx, claim); err != nil {
		f.t.Fatal(err)
	}
	node := builders.Node(name, labels, allocatable)
	node.Spec.Taints = taints
	status := node.Status
	f.create(node)
	node.Status = status
	if err := env.Client.Status().Update(ctx, node); err != nil {
		f.t.Fatal(err)
	}
	for _, p := range pods {
		p.Spec.NodeName = name
		f.create(p)
	}
}

// pod builds a pod controlled by a controller of kind ("" for none: a bare pod) with the
// annotations.
func pod(name, kind string, annotations map[string]string) *corev1.Pod {
	p := builders.Pod(builders.PodOptions{Name: name, CPU: "100m"})
	p.UID = ""
	p.Annotations = annotations
	if kind != "" {
		apiVersion := "apps/v1"
		if kind == "Job" {
			apiVersion = "batch/v1"
		}
		controller := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name + "-owner", UID: types.UID(name + "-owner"), Controller: &controller}}
	}
	return p
}

// drain runs the queue's writes until none waits.
func drain(t *testing.T, q *deletioncost.Queue) {
	t.Helper()
	for range 10 {
		waiting := q.Waiting()
		if len(waiting) == 0 {
			return
		}
		for _, key := range waiting {
			if _, err := q.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatalf("writing %s: %v", key, err)
			}
		}
	}
	t.Fatalf("the queue did not drain: %v", q.Waiting())
}

// annotations reads each pod's controller.kubernetes.io/pod-deletion-cost ("-" for none).
func annotations(t *testing.T, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range names {
		p := &corev1.Pod{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
			t.Fatal(err)
		}
		v, ok := p.Annotations[corev1.PodDeletionCost]
		if !ok {
			v = "-"
		}
		out[name] = v
	}
	return out
}

func expectAnnotations(t *testing.T, step string, want map[string]string) {
	t.Helper()
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	got := annotations(t, names...)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: pod %s has pod-deletion-cost %q, want %q", step, name, got[name], w)
		}
	}
}

// TestPodDeletionCostFollowsRanking checks the controller, through the controller set as the
// operator builds it, against Karpenter v1.15.0's pkg/controllers/pod/deletioncost:
// ranking.go RankNodes (groups and their order: a disrupted-tainted node's pods at
// math.MinInt32; drifted nodes before the others, by savings ratio, RankForBC's -n..-1;
// do-not-disrupt and pinned nodes cleared), controller.go tryEnqueueNode (ReplicaSet pods
// only; a user's value overwritten, as annotation_test.go "should overwrite customer-set
// pod-deletion-cost values"), controller.go Reconcile (no pass while the consolidation state
// has not changed) and queue.go Reconcile with metrics.go's two metrics. With the gate off
// the set has no such controller, and nothing is written.
func TestPodDeletionCostFollowsRanking(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.node("going", "m5.large", nil, []corev1.Taint{{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}},
		pod("going-web", "ReplicaSet", nil))
	f.node("drifted", "m5.large", []metav1.Condition{{Type: karpv1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted", LastTransitionTime: metav1.Now()}}, nil,
		pod("drifted-web", "ReplicaSet", nil))
	// dear saves more per unit of reschedule cost than cheap (a pricier node, fewer pods to
	// move), so consolidation tries it first, and its pods go first.
	f.node("dear", "m5.2xlarge", nil, nil, pod("dear-web", "ReplicaSet", map[string]string{corev1.PodDeletionCost: "100"}))
	f.node("cheap", "m5.large", nil, nil, pod("cheap-web", "ReplicaSet", nil), pod("cheap-job", "Job", nil))
	f.node("protected", "m5.large", nil, nil,
		pod("protected-web", "ReplicaSet", map[string]string{karpv1.DoNotDisruptAnnotationKey: "true", corev1.PodDeletionCost: "-5"}))
	f.node("pinned", "m5.large", nil, nil, pod("pinned-bare", "", nil), pod("pinned-web", "ReplicaSet", map[string]string{corev1.PodDeletionCost: "-7"}))
	unmanaged := builders.Node("unmanaged", map[string]string{corev1.LabelHostname: "unmanaged"}, builders.Resources("cpu", "4", "memory", "8Gi"))
	f.create(unmanaged)
	other := pod("unmanaged-web", "ReplicaSet", map[string]string{corev1.PodDeletionCost: "3"})
	other.Spec.NodeName = "unmanaged"
	f.create(other)
	all := []string{"going-web", "drifted-web", "dear-web", "cheap-web", "cheap-job", "protected-web", "pinned-web", "pinned-bare", "unmanaged-web"}

	deps := controllers.Deps{Kube: env.Client, Cluster: state.NewCluster(env.Client, f.clock), Cloud: f.cloud, Clock: f.clock}
	off := controllers.New(deps, controllers.Options{})
	if off.DeletionCost != nil || off.DeletionCostQueue != nil {
		t.Fatal("the controller set has the pod deletion cost controller with the gate off")
	}

	set := controllers.New(deps, controllers.Options{PodDeletionCostManagement: true})
	updated := testutil.ToFloat64(metrics.PodDeletionCostPodAnnotationWritesTotal.WithLabelValues(metrics.DeletionCostUpdated))
	next, err := set.DeletionCost.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next != deletioncost.Interval {
		t.Errorf("next pass in %s, want %s", next, deletioncost.Interval)
	}
	// going (no cap), drifted, dear and cheap (ranked), protected and pinned (cleared): six
	// nodes with a pod to change.
	if got := testutil.ToFloat64(metrics.PodDeletionCostNodesWithPendingAnnotationWrites.WithLabelValues(f.np.Name)); got != 6 {
		t.Errorf("nodes with pending writes %v, want 6", got)
	}
	drain(t, set.DeletionCostQueue)
	expectAnnotations(t, "first pass", map[string]string{
		"going-web":   strconv.Itoa(math.MinInt32),
		"drifted-web": "-3", "dear-web": "-2", "cheap-web": "-1",
		"cheap-job": "-", "pinned-bare": "-", // no ReplicaSet: never written
		"protected-web": "-", "pinned-web": "-", // cleared
		"unmanaged-web": "3", // not Karpenter's node
	})
	if got := testutil.ToFloat64(metrics.PodDeletionCostPodAnnotationWritesTotal.WithLabelValues(metrics.DeletionCostUpdated)) - updated; got != 6 {
		t.Errorf("%v pods updated, want 6", got)
	}

	// Nothing consolidation counts changed: the pass ranks nothing, writes nothing.
	rv := map[string]string{}
	for _, name := range all {
		p := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
			t.Fatal(err)
		}
		rv[name] = p.ResourceVersion
	}
	f.clock.Step(time.Minute)
	if _, err := set.DeletionCost.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if w := set.DeletionCostQueue.Waiting(); len(w) != 0 {
		t.Errorf("an unchanged cluster queued writes: %v", w)
	}

	// A do-not-disrupt pod lands on cheap: it leaves the ranking (its pods' annotation is
	// removed) and the others move up: drifted -2, dear -1.
	f.create(func() *corev1.Pod {
		p := pod("cheap-guarded", "ReplicaSet", map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"})
		p.Spec.NodeName = "cheap"
		return p
	}())
	f.clock.Step(time.Minute)
	if _, err := set.DeletionCost.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	drain(t, set.DeletionCostQueue)
	expectAnnotations(t, "after cheap is protected", map[string]string{
		"going-web":   strconv.Itoa(math.MinInt32),
		"drifted-web": "-2", "dear-web": "-1",
		"cheap-web": "-", "cheap-guarded": "-",
		"protected-web": "-", "pinned-web": "-", "unmanaged-web": "3",
	})
	for _, name := range []string{"going-web", "protected-web", "pinned-web", "unmanaged-web", "cheap-job"} {
		p := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
			t.Fatal(err)
		}
		if p.ResourceVersion != rv[name] {
			t.Errorf("pod %s was written though its annotation was already as planned", name)
		}
	}
}
