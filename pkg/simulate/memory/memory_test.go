package memory_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/config/crd"
	"github.com/openkarpenter/karpenter/pkg/apis"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// newMemory returns a memory client on a fake clock with namespace "ns".
func newMemory(t testing.TB, opts ...memory.Option) (*memory.Client, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	c := memory.New(apis.NewScheme(), clk, opts...)
	mustDo(t, c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}))
	return c, clk
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// exists reports whether obj is stored, failing on errors other than NotFound.
func exists(t *testing.T, c client.Client, obj client.Object) bool {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	mustDo(t, err)
	return true
}

func controllerRef(owner client.Object, gvk schema.GroupVersionKind) metav1.OwnerReference {
	return *metav1.NewControllerRef(owner, gvk)
}

var (
	deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")
	replicaSetGVK = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	nodeClaimGVK  = karpv1.SchemeGroupVersion.WithKind("NodeClaim")
)

// workload creates a Deployment owning a ReplicaSet owning n unbound pods.
func workload(t *testing.T, c client.Client, name string, n int) (*appsv1.Deployment, *appsv1.ReplicaSet, []*corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	dep := testDeployment("ns", name)
	mustDo(t, c.Create(ctx, dep))
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-rs", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{controllerRef(dep, deploymentGVK)}},
		Spec:       appsv1.ReplicaSetSpec{Selector: dep.Spec.Selector, Template: dep.Spec.Template},
	}
	mustDo(t, c.Create(ctx, rs))
	var pods []*corev1.Pod
	for i := range n {
		pod := testPod("ns", fmt.Sprintf("%s-%d", name, i), map[string]string{"app": name}, "")
		pod.OwnerReferences = []metav1.OwnerReference{controllerRef(rs, replicaSetGVK)}
		mustDo(t, c.Create(ctx, pod))
		pods = append(pods, pod)
	}
	return dep, rs, pods
}

func TestGarbageCollection(t *testing.T) {
	ctx := context.Background()
	t.Run("background deletion removes dependents at once", func(t *testing.T) {
		c, _ := newMemory(t)
		dep, rs, pods := workload(t, c, "web", 3)
		mustDo(t, c.Delete(ctx, dep))
		for _, obj := range []client.Object{dep, rs, pods[0], pods[1], pods[2]} {
			if exists(t, c, obj) {
				t.Errorf("%s %s survived its owner's deletion", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName())
			}
		}
	})
	t.Run("foreground deletion waits for blocking dependents", func(t *testing.T) {
		c, _ := newMemory(t)
		dep, rs, pods := workload(t, c, "web", 2)
		rs.Finalizers = []string{"test.io/hold"}
		mustDo(t, c.Update(ctx, rs))
		mustDo(t, c.Delete(ctx, dep, client.PropagationPolicy(metav1.DeletePropagationForeground)))
		if !exists(t, c, dep) || dep.DeletionTimestamp == nil || !contains(dep.Finalizers, metav1.FinalizerDeleteDependents) {
			t.Fatalf("the deployment should wait, deleting, with the foregroundDeletion finalizer: %+v", dep.ObjectMeta)
		}
		if !exists(t, c, rs) || rs.DeletionTimestamp == nil {
			t.Fatalf("the replicaset should be deleting: %+v", rs.ObjectMeta)
		}
		if exists(t, c, pods[0]) || exists(t, c, pods[1]) {
			t.Error("the pods (dependents of the replicaset, deleted in foreground) should be gone")
		}
		rs.Finalizers = nil
		mustDo(t, c.Update(ctx, rs))
		if exists(t, c, rs) || exists(t, c, dep) {
			t.Error("releasing the replicaset should finish the deployment's foreground deletion")
		}
	})
	t.Run("orphaning keeps dependents without the reference", func(t *testing.T) {
		c, _ := newMemory(t)
		_, rs, pods := workload(t, c, "web", 2)
		mustDo(t, c.Delete(ctx, rs, client.PropagationPolicy(metav1.DeletePropagationOrphan)))
		if exists(t, c, rs) {
			t.Error("the replicaset should be gone")
		}
		for _, pod := range pods {
			if !exists(t, c, pod) || len(pod.OwnerReferences) != 0 {
				t.Errorf("pod %s should remain without owner references: %+v", pod.Name, pod.OwnerReferences)
			}
		}
	})
	t.Run("a dependent with another owner loses only the reference", func(t *testing.T) {
		c, _ := newMemory(t)
		a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
		b := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}}
		mustDo(t, c.Create(ctx, a))
		mustDo(t, c.Create(ctx, b))
		cmGVK := corev1.SchemeGroupVersion.WithKind("ConfigMap")
		dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{
			*metav1.NewControllerRef(a, cmGVK), {APIVersion: "v1", Kind: "ConfigMap", Name: "b", UID: b.UID},
		}}}
		mustDo(t, c.Create(ctx, dep))
		mustDo(t, c.Delete(ctx, a))
		if !exists(t, c, dep) || len(dep.OwnerReferences) != 1 || dep.OwnerReferences[0].Name != "b" {
			t.Fatalf("the dependent should keep only its reference to b: %+v", dep.OwnerReferences)
		}
		mustDo(t, c.Delete(ctx, b))
		if exists(t, c, dep) {
			t.Error("the dependent should go with its last owner")
		}
	})
	t.Run("CollectGarbage removes dependents of owners that never existed or were replaced", func(t *testing.T) {
		c, _ := newMemory(t)
		orphan := testPod("ns", "orphan", nil, "")
		orphan.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "ghost", UID: "ghost-uid"}}
		mustDo(t, c.Create(ctx, orphan))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "ns"}}
		mustDo(t, c.Create(ctx, cm))
		stale := testPod("ns", "stale", nil, "")
		stale.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "an-older-uid"}}
		mustDo(t, c.Create(ctx, stale))
		unknown := testPod("ns", "unknown-kind", nil, "")
		unknown.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Thing", Name: "x", UID: "x"}}
		mustDo(t, c.Create(ctx, unknown))
		if !exists(t, c, orphan) {
			t.Fatal("nothing is collected before CollectGarbage")
		}
		if n := c.CollectGarbage(); n != 2 {
			t.Errorf("CollectGarbage changed %d objects, want 2", n)
		}
		if exists(t, c, orphan) || exists(t, c, stale) {
			t.Error("dependents of missing owners should be collected")
		}
		if !exists(t, c, unknown) {
			t.Error("an owner of a kind the scheme does not know counts as present")
		}
	})
	t.Run("a cluster-scoped owner of a cluster-scoped dependent with a finalizer", func(t *testing.T) {
		c, _ := newMemory(t)
		nc := builders.NodeClaim(builders.NodeClaimOptions{Name: "claim", Requirements: amd64})
		mustDo(t, c.Create(ctx, nc))
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node", Finalizers: []string{"karpenter.sh/termination"},
			OwnerReferences: []metav1.OwnerReference{controllerRef(nc, nodeClaimGVK)}}}
		mustDo(t, c.Create(ctx, node))
		mustDo(t, c.Delete(ctx, nc))
		if !exists(t, c, node) || node.DeletionTimestamp == nil {
			t.Fatalf("the node should be deleting, held by its finalizer: %+v", node.ObjectMeta)
		}
		node.Finalizers = nil
		mustDo(t, c.Update(ctx, node))
		if exists(t, c, node) {
			t.Error("the node should be gone once its finalizer is removed")
		}
	})
}

func TestNamespaceDeletion(t *testing.T) {
	ctx := context.Background()
	c, _ := newMemory(t)
	_, _, pods := workload(t, c, "web", 2)
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "ns", Finalizers: []string{"test.io/hold"}}}
	mustDo(t, c.Create(ctx, held))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}
	mustDo(t, c.Delete(ctx, ns))
	if !exists(t, c, ns) || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("the namespace should be terminating: %+v", ns.Status)
	}
	if exists(t, c, pods[0]) {
		t.Error("the namespace's pods should be gone")
	}
	if !exists(t, c, held) || held.DeletionTimestamp == nil {
		t.Fatal("the held configmap should be deleting")
	}
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "ns"}}); !apierrors.IsForbidden(err) {
		t.Errorf("creating in a terminating namespace: got %v, want Forbidden", err)
	}
	held.Finalizers = nil
	mustDo(t, c.Update(ctx, held))
	if exists(t, c, ns) {
		t.Error("the namespace should be gone with its last object")
	}
}

func TestPodTermination(t *testing.T) {
	ctx := context.Background()
	c, clk := newMemory(t)
	mustDo(t, c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node"}}))
	graceful := testPod("ns", "graceful", nil, "node")
	held := testPod("ns", "held", nil, "node")
	held.Finalizers = []string{"test.io/hold"}
	stranded := testPod("ns", "stranded", nil, "gone-node")
	running := testPod("ns", "running", nil, "node")
	for _, pod := range []*corev1.Pod{graceful, held, stranded, running} {
		mustDo(t, c.Create(ctx, pod))
	}
	mustDo(t, c.Delete(ctx, graceful))
	mustDo(t, c.Delete(ctx, held))
	c.CollectGarbage()
	if !exists(t, c, graceful) {
		t.Error("a pod within its grace period stays")
	}
	if exists(t, c, stranded) {
		t.Error("a pod bound to a missing node is collected")
	}
	clk.Step(31 * time.Second)
	c.CollectGarbage()
	if exists(t, c, graceful) {
		t.Error("a pod past its grace period is removed")
	}
	if !exists(t, c, held) || *held.DeletionGracePeriodSeconds != 0 {
		t.Errorf("a held pod past its grace period stays with a zero grace period: %+v", held.ObjectMeta)
	}
	held.Finalizers = nil
	mustDo(t, c.Update(ctx, held))
	if exists(t, c, held) {
		t.Error("the held pod goes with its finalizer")
	}
	if !exists(t, c, running) {
		t.Error("a running pod stays")
	}
}

func TestEvictionComputesBudgets(t *testing.T) {
	ctx := context.Background()
	c, clk := newMemory(t)
	mustDo(t, c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node"}}))
	labels := map[string]string{"app": "web"}
	var pods []*corev1.Pod
	for i := range 3 {
		pod := testPod("ns", fmt.Sprintf("web-%d", i), labels, "node")
		mustDo(t, c.Create(ctx, pod))
		pod.Status.Phase = corev1.PodRunning // no Ready condition: a Running pod counts as ready
		mustDo(t, c.Status().Update(ctx, pod))
		pods = append(pods, pod)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromString("33%")), Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	mustDo(t, c.Create(ctx, pdb))
	if n := c.SyncDisruptionBudgets(); n != 1 {
		t.Errorf("SyncDisruptionBudgets changed %d budgets, want 1", n)
	}
	mustDo(t, c.Get(ctx, client.ObjectKeyFromObject(pdb), pdb))
	if got := pdb.Status; got.DisruptionsAllowed != 1 || got.CurrentHealthy != 3 || got.DesiredHealthy != 2 || got.ExpectedPods != 3 || got.ObservedGeneration != 1 {
		t.Errorf("budget status = %+v, want 1 allowed, 3 healthy, 2 desired, 3 expected", got)
	}
	evict := func(pod *corev1.Pod) error {
		return c.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{})
	}
	mustDo(t, evict(pods[0]))
	if err := evict(pods[1]); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("the second eviction: got %v, want TooManyRequests", err)
	}
	mustDo(t, c.Get(ctx, client.ObjectKeyFromObject(pdb), pdb))
	if pdb.Status.DisruptionsAllowed != 0 {
		t.Errorf("the eviction should refresh the budget's status: %+v", pdb.Status)
	}
	// The evicted pod finishes terminating and a replacement starts.
	clk.Step(time.Minute)
	c.CollectGarbage()
	replacement := testPod("ns", "web-3", labels, "node")
	mustDo(t, c.Create(ctx, replacement))
	replacement.Status.Phase = corev1.PodRunning
	mustDo(t, c.Status().Update(ctx, replacement))
	mustDo(t, evict(pods[1]))
}

func TestChanges(t *testing.T) {
	ctx := context.Background()
	c, _ := newMemory(t)
	var got []string
	var last uint64
	cancel := c.OnChange(func(ch memory.Change) {
		if ch.ResourceVersion <= last {
			t.Errorf("change %s %s at version %d after %d", ch.Type, ch.Key, ch.ResourceVersion, last)
		}
		last = ch.ResourceVersion
		got = append(got, fmt.Sprintf("%s %s %s", ch.Type, ch.GVK.Kind, ch.Key))
		if ch.Type == watch.Modified && ch.Old == nil {
			t.Error("a modification carries the old version")
		}
		// A hook may call the client.
		_ = c.List(ctx, &corev1.PodList{})
	})
	_, rs, pods := workload(t, c, "web", 1)
	rs.Labels = map[string]string{"a": "b"}
	mustDo(t, c.Update(ctx, rs))
	mustDo(t, c.Update(ctx, rs)) // no change, no event
	mustDo(t, c.Delete(ctx, rs))
	cancel()
	mustDo(t, c.Create(ctx, testPod("ns", "after", nil, "")))
	want := []string{
		"ADDED Deployment ns/web", "ADDED ReplicaSet ns/web-rs", "ADDED Pod ns/web-0",
		"MODIFIED ReplicaSet ns/web-rs", "DELETED ReplicaSet ns/web-rs", "DELETED Pod ns/" + pods[0].Name,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestEventRecorder(t *testing.T) {
	ctx := context.Background()
	c, clk := newMemory(t)
	pod := testPod("ns", "pod", nil, "")
	mustDo(t, c.Create(ctx, pod))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node"}}
	mustDo(t, c.Create(ctx, node))
	rec := c.EventRecorderFor("karpenter")
	rec.Eventf(pod, corev1.EventTypeWarning, "FailedScheduling", "no %s fits", "nodepool")
	clk.Step(time.Minute)
	rec.Eventf(pod, corev1.EventTypeWarning, "FailedScheduling", "no %s fits", "nodepool")
	rec.Event(node, corev1.EventTypeNormal, "Launched", "launched")
	rec.Event(node, corev1.EventTypeNormal, "Ready", "ready")
	events := &corev1.EventList{}
	mustDo(t, c.List(ctx, events, client.InNamespace("ns"), client.MatchingFields{"involvedObject.name": "pod"}))
	if len(events.Items) != 1 {
		t.Fatalf("got %d events about the pod, want 1 counted twice", len(events.Items))
	}
	e := events.Items[0]
	if e.Count != 2 || e.Message != "no nodepool fits" || e.Source.Component != "karpenter" || e.InvolvedObject.UID != pod.UID ||
		!e.FirstTimestamp.Time.Equal(epoch) || !e.LastTimestamp.Time.Equal(epoch.Add(time.Minute)) {
		t.Errorf("unexpected event %+v", e)
	}
	mustDo(t, c.List(ctx, events, client.InNamespace("default")))
	if len(events.Items) != 2 || events.Items[0].InvolvedObject.Kind != "Node" {
		t.Errorf("events about a node go to the default namespace: %+v", events.Items)
	}
}

func TestIndexField(t *testing.T) {
	ctx := context.Background()
	c, _ := newMemory(t)
	for i, id := range []string{"sim:///a", "sim:///b", ""} {
		nc := builders.NodeClaim(builders.NodeClaimOptions{Name: fmt.Sprintf("nc-%d", i), Requirements: amd64})
		mustDo(t, c.Create(ctx, nc))
		nc.Status.ProviderID = id
		mustDo(t, c.Status().Update(ctx, nc))
	}
	byProvider := func(o client.Object) []string {
		if id := o.(*karpv1.NodeClaim).Status.ProviderID; id != "" {
			return []string{id}
		}
		return nil
	}
	list := &karpv1.NodeClaimList{}
	if err := c.List(ctx, list, client.MatchingFields{"status.providerID": "sim:///a"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("an unindexed field: got %v, want BadRequest", err)
	}
	mustDo(t, c.IndexField(ctx, &karpv1.NodeClaim{}, "status.providerID", byProvider))
	if err := c.IndexField(ctx, &karpv1.NodeClaim{}, "status.providerID", byProvider); err == nil {
		t.Error("indexing a field twice should fail")
	}
	names := func(opts ...client.ListOption) string {
		mustDo(t, c.List(ctx, list, opts...))
		var out []string
		for _, item := range list.Items {
			out = append(out, item.Name)
		}
		return strings.Join(out, ",")
	}
	if got := names(client.MatchingFields{"status.providerID": "sim:///b"}); got != "nc-1" {
		t.Errorf("indexed lookup = %q, want nc-1", got)
	}
	nc := &karpv1.NodeClaim{}
	mustDo(t, c.Get(ctx, client.ObjectKey{Name: "nc-2"}, nc))
	nc.Status.ProviderID = "sim:///b"
	mustDo(t, c.Status().Update(ctx, nc))
	if got := names(client.MatchingFields{"status.providerID": "sim:///b"}); got != "nc-1,nc-2" {
		t.Errorf("after an update = %q, want nc-1,nc-2", got)
	}
	mustDo(t, c.Delete(ctx, nc))
	if got := names(client.MatchingFields{"status.providerID": "sim:///b"}); got != "nc-1" {
		t.Errorf("after a delete = %q, want nc-1", got)
	}
	// Node spec.providerID is indexed out of the box and may be replaced.
	mustDo(t, c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{ProviderID: "sim:///a"}}))
	nodes := &corev1.NodeList{}
	mustDo(t, c.List(ctx, nodes, client.MatchingFields{"spec.providerID": "sim:///a"}))
	mustDo(t, c.IndexField(ctx, &corev1.Node{}, "spec.providerID", func(o client.Object) []string { return []string{o.(*corev1.Node).Spec.ProviderID} }))
	mustDo(t, c.List(ctx, nodes, client.MatchingFields{"spec.providerID": "sim:///a"}))
	if len(nodes.Items) != 1 {
		t.Errorf("spec.providerID lookup found %d nodes, want 1", len(nodes.Items))
	}
}

func TestCopies(t *testing.T) {
	ctx := context.Background()
	c, _ := newMemory(t)
	pod := testPod("ns", "pod", map[string]string{"a": "1"}, "")
	mustDo(t, c.Create(ctx, pod))
	pod.Labels["a"] = "changed after create"
	pod.Spec.Containers[0].Image = "changed"
	got := &corev1.Pod{}
	mustDo(t, c.Get(ctx, client.ObjectKeyFromObject(pod), got))
	if got.Labels["a"] != "1" || got.Spec.Containers[0].Image == "changed" {
		t.Fatal("the store shares memory with the object given to Create")
	}
	got.Labels["a"] = "changed after get"
	list := &corev1.PodList{}
	mustDo(t, c.List(ctx, list))
	if list.Items[0].Labels["a"] != "1" {
		t.Fatal("the store shares memory with an object from Get")
	}
	list.Items[0].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *list.Items[0].Spec.Containers[0].Resources.Requests.Memory()
	again := &corev1.Pod{}
	mustDo(t, c.Get(ctx, client.ObjectKeyFromObject(pod), again))
	if again.Spec.Containers[0].Resources.Requests.Cpu().String() != "100m" {
		t.Fatal("the store shares memory with a listed object")
	}
	var seen client.Object
	c.OnChange(func(ch memory.Change) { seen = ch.Object })
	again.Labels = map[string]string{"b": "2"}
	mustDo(t, c.Update(ctx, again))
	again.Labels["b"] = "changed after update"
	if seen.GetLabels()["b"] != "2" {
		t.Fatal("the store shares memory with the object given to Update")
	}
}

func TestDeterminism(t *testing.T) {
	run := func(seed uint64) string {
		clk := clocktesting.NewFakeClock(epoch)
		c := memory.New(apis.NewScheme(), clk, memory.WithSeed(seed))
		var out []string
		for range 5 {
			pod := testPod("default", "", nil, "")
			pod.GenerateName = "web-"
			mustDo(t, c.Create(context.Background(), pod))
			out = append(out, pod.Name+"/"+string(pod.UID))
		}
		return strings.Join(out, " ")
	}
	a, b, other := run(1), run(1), run(2)
	if a != b {
		t.Errorf("same seed, different objects:\n%s\n%s", a, b)
	}
	if a == other {
		t.Error("different seeds gave the same names")
	}
	if !strings.Contains(a, "-4") {
		t.Errorf("uids should look like version 4 UUIDs: %s", a)
	}
}

func TestDryRun(t *testing.T) {
	ctx := context.Background()
	c, _ := newMemory(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}}
	mustDo(t, c.Create(ctx, cm.DeepCopy(), client.DryRunAll))
	if exists(t, c, cm.DeepCopy()) {
		t.Fatal("a dry-run create stored the object")
	}
	mustDo(t, c.Create(ctx, cm))
	cm.Data = map[string]string{"a": "b"}
	mustDo(t, c.Update(ctx, cm.DeepCopy(), client.DryRunAll))
	mustDo(t, c.Delete(ctx, cm, client.DryRunAll))
	if !exists(t, c, cm) || cm.Data != nil {
		t.Fatal("a dry-run update or delete changed the object")
	}
}

func TestUnsupported(t *testing.T) {
	ctx := context.Background()
	c, _ := newMemory(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}}
	mustDo(t, c.Create(ctx, cm))
	if err := c.Patch(ctx, cm, client.RawPatch(types.ApplyPatchType, []byte(`{}`))); !apierrors.IsMethodNotSupported(err) {
		t.Errorf("server-side apply: got %v, want MethodNotSupported", err)
	}
	if err := c.SubResource("scale").Get(ctx, cm, &corev1.ConfigMap{}); !apierrors.IsMethodNotSupported(err) {
		t.Errorf("an unknown subresource: got %v, want MethodNotSupported", err)
	}
}

func TestAutoCreateNamespaces(t *testing.T) {
	ctx := context.Background()
	c, _ := newMemory(t, memory.WithAutoCreateNamespaces())
	mustDo(t, c.Create(ctx, testPod("new-ns", "pod", nil, "")))
	if !exists(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new-ns"}}) {
		t.Error("the namespace should have been created")
	}
}

func TestUnsafeDisableDeepCopy(t *testing.T) {
	ctx := context.Background()
	c, _ := newMemory(t)
	mustDo(t, c.Create(ctx, testPod("ns", "pod", map[string]string{"a": "1"}, "")))
	list := &corev1.PodList{}
	mustDo(t, c.List(ctx, list, client.UnsafeDisableDeepCopy))
	if len(list.Items) != 1 || list.Items[0].Labels["a"] != "1" {
		t.Fatalf("unexpected list %+v", list.Items)
	}
}

func TestConcurrency(t *testing.T) {
	ctx := context.Background()
	c, _ := newMemory(t)
	var wg sync.WaitGroup
	const workers, perWorker = 8, 50
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				pod := testPod("ns", fmt.Sprintf("w%d-%d", w, i), map[string]string{"worker": fmt.Sprint(w)}, "")
				if err := c.Create(ctx, pod); err != nil {
					t.Error(err)
					return
				}
				pod.Labels["touched"] = "yes"
				if err := c.Update(ctx, pod); err != nil {
					t.Error(err)
					return
				}
				if err := c.List(ctx, &corev1.PodList{}, client.MatchingLabels{"worker": fmt.Sprint(w)}); err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					if err := c.Delete(ctx, pod); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	list := &corev1.PodList{}
	mustDo(t, c.List(ctx, list, client.MatchingLabels{"touched": "yes"}))
	if want := workers * perWorker / 2; len(list.Items) != want {
		t.Errorf("%d pods left, want %d", len(list.Items), want)
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func TestCustomResourceDefinitions(t *testing.T) {
	ctx := context.Background()
	crds, err := crd.All()
	mustDo(t, err)
	var claims *apiextensionsv1.CustomResourceDefinition
	for _, def := range crds {
		if def.Spec.Names.Kind == "NodeClaim" {
			claims = def.DeepCopy()
		}
	}
	// The same kind, said to have no status subresource: status is then written by Update.
	for i := range claims.Spec.Versions {
		claims.Spec.Versions[i].Subresources = nil
	}
	c, _ := newMemory(t, memory.WithCustomResourceDefinitions(claims))
	nc := builders.NodeClaim(builders.NodeClaimOptions{Name: "nc", Requirements: amd64})
	nc.Status.ProviderID = "sim:///kept"
	mustDo(t, c.Create(ctx, nc))
	if nc.Status.ProviderID != "sim:///kept" {
		t.Errorf("without a status subresource, create keeps the status: %+v", nc.Status)
	}
	if err := c.Status().Update(ctx, nc); !apierrors.IsNotFound(err) {
		t.Errorf("status update without a status subresource: got %v, want NotFound", err)
	}
	if nc.Spec.ExpireAfter.Duration == nil {
		t.Error("the CRD's defaults still apply")
	}
}

// TestRangeVisitsWhatListReturns: Range visits the objects List returns for the same options,
// in the same order, the store's own (unchanged by later writes), stops when asked and refuses
// paging and unsupported field selectors as List does.
func TestRangeVisitsWhatListReturns(t *testing.T) {
	c, _ := newMemory(t)
	ctx := context.Background()
	mustDo(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}))
	for i, ns := range []string{"ns", "other", "ns", "ns"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", 3-i), Namespace: ns, Labels: map[string]string{"app": fmt.Sprint(i % 2)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
		if i == 2 {
			pod.Spec.NodeName = "n1"
		}
		mustDo(t, c.Create(ctx, pod))
	}
	for _, opts := range [][]client.ListOption{
		nil,
		{client.InNamespace("ns")},
		{client.MatchingLabels{"app": "0"}},
		{client.MatchingFields{"spec.nodeName": ""}},
		{client.InNamespace("ns"), client.MatchingFields{"spec.nodeName": "n1"}},
	} {
		var list corev1.PodList
		mustDo(t, c.List(ctx, &list, opts...))
		var want, got []string
		for _, p := range list.Items {
			want = append(want, p.Namespace+"/"+p.Name)
		}
		var kept []*corev1.Pod
		mustDo(t, c.Range(&corev1.PodList{}, func(o client.Object) bool {
			p := o.(*corev1.Pod)
			got = append(got, p.Namespace+"/"+p.Name)
			kept = append(kept, p)
			return true
		}, opts...))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("options %v: Range visited %v, List returned %v", opts, got, want)
		}
		for _, p := range kept {
			// A later write stores a new version; what Range gave stays as it was.
			update := p.DeepCopy()
			update.Labels["app"] = "changed"
			mustDo(t, c.Update(ctx, update))
			if p.Labels["app"] == "changed" {
				t.Fatalf("an update changed the object Range gave")
			}
			update.Labels["app"] = p.Labels["app"]
			update.ResourceVersion = ""
			mustDo(t, c.Update(ctx, update))
		}
	}
	visited := 0
	mustDo(t, c.Range(&corev1.PodList{}, func(client.Object) bool { visited++; return visited < 2 }))
	if visited != 2 {
		t.Errorf("Range went on after fn returned false: %d visits, want 2", visited)
	}
	if err := c.Range(&corev1.PodList{}, func(client.Object) bool { return true }, client.Limit(1)); !apierrors.IsBadRequest(err) {
		t.Errorf("Range with a limit: got %v, want a BadRequest error", err)
	}
	if err := c.Range(&corev1.PodList{}, func(client.Object) bool { return true }, client.MatchingFields{"spec.nope": "x"}); !apierrors.IsBadRequest(err) {
		t.Errorf("Range with an unsupported field selector: got %v, want a BadRequest error", err)
	}
}
