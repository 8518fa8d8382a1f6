package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRequestsCache(t *testing.T) {
	pod := func(rv, cpu string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", ResourceVersion: rv}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	}
	var c RequestsCache
	if got := c.Get(pod("1", "1")); got.Cpu().String() != "1" {
		t.Fatalf("cpu %s", got.Cpu())
	}
	// Same version: the cached list, even if the object given differs (it cannot, in a store).
	if got := c.Get(pod("1", "3")); got.Cpu().String() != "1" {
		t.Errorf("same resourceVersion recomputed: cpu %s", got.Cpu())
	}
	// A resize is a new version.
	if got := c.Get(pod("2", "2")); got.Cpu().String() != "2" {
		t.Errorf("new resourceVersion served stale: cpu %s", got.Cpu())
	}
	c.Prune()
	if len(c.entries) != 1 {
		t.Fatalf("%d entries after a prune of a used pod", len(c.entries))
	}
	c.Prune()
	if len(c.entries) != 0 {
		t.Errorf("%d entries after a prune of an unused pod", len(c.entries))
	}
	// Pods without UID or version are never cached.
	c.Get(&corev1.Pod{})
	if len(c.entries) != 0 {
		t.Error("cached a pod without UID")
	}
}
