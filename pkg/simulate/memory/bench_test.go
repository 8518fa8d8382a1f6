package memory_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
)

const (
	benchPods       = 10_000
	benchNamespaces = 10
	benchApps       = 100 // so an app label selects 100 pods
	benchNodes      = 1_000
)

// benchPod is a pod as a simulated workload has them: labels, an owner, requests, a
// toleration, bound to a node.
func benchPod(i int) *corev1.Pod {
	app := fmt.Sprintf("app-%d", i%benchApps)
	pod := testPod(fmt.Sprintf("ns-%d", i%benchNamespaces), fmt.Sprintf("pod-%d", i),
		map[string]string{"app": app, "tier": "web", "pod-template-hash": "5d8f9c7b6"}, fmt.Sprintf("node-%d", i%benchNodes))
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app, UID: "rs-uid", Controller: ptr.To(true)}}
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "karpenter.sh/disrupted", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	return pod
}

// benchClient returns a client holding the benchmark's pods.
func benchClient(b *testing.B) *memory.Client {
	b.Helper()
	c, _ := newMemory(b, memory.WithAutoCreateNamespaces())
	ctx := context.Background()
	for i := range benchPods {
		mustDo(b, c.Create(ctx, benchPod(i)))
	}
	return c
}

// BenchmarkCreate10kPods creates 10,000 pods in a new store per iteration.
func BenchmarkCreate10kPods(b *testing.B) {
	pods := make([]*corev1.Pod, benchPods)
	for i := range pods {
		pods[i] = benchPod(i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		c, _ := newMemory(b, memory.WithAutoCreateNamespaces())
		in := make([]*corev1.Pod, len(pods))
		for i, p := range pods {
			in[i] = p.DeepCopy()
		}
		b.StartTimer()
		for _, p := range in {
			if err := c.Create(ctx, p); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchPods), "ns/pod")
}

// BenchmarkList10kPods lists every pod.
func BenchmarkList10kPods(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		list := &corev1.PodList{}
		if err := c.List(ctx, list); err != nil || len(list.Items) != benchPods {
			b.Fatal(err, len(list.Items))
		}
	}
}

// BenchmarkList10kPodsUnsafeNoCopy lists every pod without deep copies.
func BenchmarkList10kPodsUnsafeNoCopy(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		list := &corev1.PodList{}
		if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil || len(list.Items) != benchPods {
			b.Fatal(err, len(list.Items))
		}
	}
}

// BenchmarkListLabelSelector lists the 100 pods of one app among 10,000.
func BenchmarkListLabelSelector(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		list := &corev1.PodList{}
		if err := c.List(ctx, list, client.MatchingLabels{"app": "app-7"}); err != nil || len(list.Items) != benchPods/benchApps {
			b.Fatal(err, len(list.Items))
		}
	}
}

// BenchmarkListLabelSelectorInNamespace lists the pods of one app in one namespace.
func BenchmarkListLabelSelectorInNamespace(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		list := &corev1.PodList{}
		if err := c.List(ctx, list, client.InNamespace("ns-7"), client.MatchingLabels{"app": "app-7"}); err != nil || len(list.Items) != benchPods/benchApps {
			b.Fatal(err, len(list.Items))
		}
	}
}

// BenchmarkListPodsOfNode lists the 10 pods of one node among 10,000 (spec.nodeName index).
func BenchmarkListPodsOfNode(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		list := &corev1.PodList{}
		if err := c.List(ctx, list, client.MatchingFields{"spec.nodeName": "node-7"}); err != nil || len(list.Items) != benchPods/benchNodes {
			b.Fatal(err, len(list.Items))
		}
	}
}

// BenchmarkGetPod gets one pod among 10,000.
func BenchmarkGetPod(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "ns-7", Name: "pod-7"}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Get(ctx, key, &corev1.Pod{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdatePodStatus writes a pod's status, alternating its phase.
func BenchmarkUpdatePodStatus(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	pod := &corev1.Pod{}
	mustDo(b, c.Get(ctx, client.ObjectKey{Namespace: "ns-7", Name: "pod-7"}, pod))
	phases := []corev1.PodPhase{corev1.PodRunning, corev1.PodPending}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		pod.Status.Phase = phases[i%2]
		i++
		if err := c.Status().Update(ctx, pod); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPatchPodLabels merge-patches a pod's labels (a JSON round trip).
func BenchmarkPatchPodLabels(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	pod := &corev1.Pod{}
	mustDo(b, c.Get(ctx, client.ObjectKey{Namespace: "ns-7", Name: "pod-7"}, pod))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		base := pod.DeepCopy()
		pod.Labels["n"] = fmt.Sprint(i)
		i++
		if err := c.Patch(ctx, pod, client.MergeFrom(base)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCollectGarbageIdle runs the garbage collection step over 10,000 pods owned by live
// ReplicaSets and bound to live nodes, with nothing to collect, as a simulation does each tick.
func BenchmarkCollectGarbageIdle(b *testing.B) {
	c, _ := newMemory(b, memory.WithAutoCreateNamespaces())
	ctx := context.Background()
	for i := range benchNodes {
		mustDo(b, c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}))
	}
	owners := map[string]*appsv1.ReplicaSet{}
	for i := range benchPods {
		pod := benchPod(i)
		key := pod.Namespace + "/" + pod.OwnerReferences[0].Name
		rs := owners[key]
		if rs == nil {
			rs = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: pod.OwnerReferences[0].Name, Namespace: pod.Namespace}}
			mustDo(b, c.Create(ctx, rs))
			owners[key] = rs
		}
		pod.OwnerReferences[0].UID = rs.UID
		mustDo(b, c.Create(ctx, pod))
	}
	if n := c.CollectGarbage(); n != 0 {
		b.Fatalf("collected %d objects from a steady state", n)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.CollectGarbage()
	}
}
