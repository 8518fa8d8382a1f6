package sim

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/openkarpenter/karpenter/pkg/apis"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// A store that drops status on create, as stores with a status subresource may (the simulator's
// in-memory cluster among them): the kubelet writes the status through the subresource next.
func TestKubeletOnStoreThatDropsStatusOnCreate(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientBuilder().
		WithScheme(apis.NewScheme()).
		WithObjects(testNodeClass("default")).
		WithStatusSubresource(&corev1.Node{}, &corev1.Pod{}).
		WithIndex(&corev1.Pod{}, PodPhaseIndex, func(o client.Object) []string { return []string{string(o.(*corev1.Pod).Status.Phase)} }).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if node, ok := obj.(*corev1.Node); ok {
				node.Status = corev1.NodeStatus{}
			}
			return c.Create(ctx, obj, opts...)
		}}).
		Build()
	c, clk := newTestCloud(t, Options{NodeClasses: kube, LaunchLatency: 5 * time.Second})
	kubelet, err := NewKubelet(c, kube, KubeletOptions{ReadyDelay: 5 * time.Second, MarkPodsRunning: true})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, testClaim("claim"))
	inst := c.Instances()[0]

	clk.Step(5 * time.Second)
	if err := kubelet.Step(ctx); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKey{Name: inst.Hostname}, node); err != nil {
		t.Fatal(err)
	}
	if nodeReady(node) != corev1.ConditionFalse || node.Status.Capacity.Cpu().IsZero() {
		t.Fatalf("status after registration: Ready %q, capacity %v", nodeReady(node), node.Status.Capacity)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:       inst.Hostname,
			HostNetwork:    true,
			InitContainers: []corev1.Container{{Name: "sidecar", Image: "envoy", RestartPolicy: ptrTo(corev1.ContainerRestartPolicyAlways)}},
			Containers:     []corev1.Container{{Name: "app", Image: "nginx"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
	}
	if err := kube.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	clk.Step(5 * time.Second)
	if err := kubelet.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKey{Name: inst.Hostname}, node); err != nil {
		t.Fatal(err)
	}
	if nodeReady(node) != corev1.ConditionTrue || hasTaint(node.Spec.Taints, corev1.TaintNodeNotReady) {
		t.Errorf("after the ready delay: Ready %q, taints %v", nodeReady(node), taintKeys(node.Spec.Taints))
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP != inst.PrivateIP ||
		len(pod.Status.InitContainerStatuses) != 1 || pod.Status.InitContainerStatuses[0].State.Running == nil {
		t.Errorf("host-network pod with a sidecar: %+v", pod.Status)
	}
}

func TestKubeletNameTaken(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCloud(t, Options{})
	mustCreate(t, c, testClaim("claim"))
	squatter := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.Instances()[0].Hostname}}
	kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(squatter).Build()
	kubelet, err := NewKubelet(c, kube, KubeletOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := kubelet.Step(ctx); err == nil || !strings.Contains(err.Error(), "name is taken") {
		t.Errorf("Step with the hostname taken: %v", err)
	}
}

func TestKubeletOptionsValidate(t *testing.T) {
	c, _ := newTestCloud(t, Options{})
	kube := fakeReader()
	for _, opts := range []KubeletOptions{{ReadyDelay: -1}, {StartupTaintDelay: -1}, {Interval: -1}} {
		if _, err := NewKubelet(c, kube, opts); err == nil {
			t.Errorf("NewKubelet accepted %+v", opts)
		}
	}
	if _, err := NewKubelet(nil, kube, KubeletOptions{}); err == nil {
		t.Error("NewKubelet accepted a nil cloud")
	}
}

func TestNodeLabelsKubeletMaySet(t *testing.T) {
	for key, want := range map[string]bool{
		"team":                              true,
		karpv1.NodePoolLabelKey:             true,
		"node-role.kubernetes.io/worker":    false,
		"kubernetes.io/hostname":            false,
		"example.k8s.io/x":                  false,
		"node.kubernetes.io/exclude-lb":     true,
		"kubelet.kubernetes.io/anything":    true,
		"foo.node.kubernetes.io/bar":        true,
		"topology.kubernetes.io/zone":       false,
		"not-kubernetes.io.example.com/key": true,
	} {
		if got := kubeletMaySetLabel(key); got != want {
			t.Errorf("kubeletMaySetLabel(%q) = %v, want %v", key, got, want)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// The kubelet's hand-written patch for a started pod leaves the pod exactly as the merge patch
// client.MergeFrom computes would, for pods with and without init containers, sidecars, host
// networking and stale statuses.
func TestPodRunningPatchIsMergeFromPatch(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeHostName, Address: "n"}, {Type: corev1.NodeInternalIP, Address: "10.0.0.7"},
	}}}
	always := corev1.ContainerRestartPolicyAlways
	plain := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "plain", UID: "u1"},
		Spec:       corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
	}
	busy := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "busy", UID: "u2"},
		Spec: corev1.PodSpec{NodeName: "n", HostNetwork: true,
			InitContainers: []corev1.Container{{Name: "init", Image: "init:1"}, {Name: "sidecar", Image: "side:1", RestartPolicy: &always}},
			Containers:     []corev1.Container{{Name: "a", Image: "a:1"}, {Name: "b", Image: "b:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, HostIP: "10.9.9.9", Message: "kept",
			Conditions:            []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "NotYet"}, {Type: "custom", Status: corev1.ConditionTrue}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "stale", Image: "old"}}},
	}
	noInit := busy.DeepCopy()
	noInit.Name, noInit.UID, noInit.Spec.InitContainers, noInit.Spec.HostNetwork = "no-init", "u3", nil, false
	for _, pod := range []*corev1.Pod{plain, busy, noInit} {
		t.Run(pod.Name, func(t *testing.T) {
			// Two stores, each given the pod with its status: the container IDs derive from the
			// pod's name.
			viaMergeFrom, viaPatch := pod.DeepCopy(), pod.DeepCopy()
			newStore := func(p *corev1.Pod) client.Client {
				return fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithStatusSubresource(&corev1.Pod{}).WithObjects(p).Build()
			}
			kube, other := newStore(viaMergeFrom), newStore(viaPatch)
			for p, store := range map[*corev1.Pod]client.Client{viaMergeFrom: kube, viaPatch: other} {
				if err := store.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
					t.Fatal(err)
				}
			}
			running := viaMergeFrom.DeepCopy()
			setPodRunning(running, node, now)
			if err := kube.Status().Patch(ctx, running, client.MergeFrom(viaMergeFrom)); err != nil {
				t.Fatal(err)
			}
			patch := newPodRunningPatch(viaPatch, node, now)
			data, err := patch.Data(viaPatch)
			if err != nil {
				t.Fatal(err)
			}
			patched := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: viaPatch.Namespace, Name: viaPatch.Name}}
			if err := other.Status().Patch(ctx, patched, client.RawPatch(types.MergePatchType, data)); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(running.Status, patched.Status) {
				t.Errorf("patched status differs from MergeFrom's:\n got %+v\nwant %+v", patched.Status, running.Status)
			}
			// The typed application (the simulator's store) leaves exactly what the JSON does,
			// times and their zone included, and does not touch the pod it was built from.
			typed, before := viaPatch.DeepCopy(), viaPatch.DeepCopy()
			if err := patch.ApplyTo(typed); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(typed.Status, patched.Status) {
				t.Errorf("ApplyTo's status differs from the merge patch's:\n got %+v\nwant %+v", typed.Status, patched.Status)
			}
			if !reflect.DeepEqual(viaPatch, before) {
				t.Error("ApplyTo changed the pod the patch was built from")
			}
			if patched.Status.Phase != corev1.PodRunning || patched.Status.Message != pod.Status.Message {
				t.Errorf("phase %q, message %q: want Running, %q", patched.Status.Phase, patched.Status.Message, pod.Status.Message)
			}
		})
	}
}
