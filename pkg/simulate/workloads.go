package simulate

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
)

// podTracker follows the workloads' pods through the store's changes, so that the Deployment
// and Job controllers the engine plays need not read every pod on every pass: at a hundred
// thousand pods, that scan was a large part of each pass.
type podTracker struct {
	// byOwner holds the current version of every pod, by its workload (ownerKey), then
	// namespace/name (the store's own objects: read-only).
	byOwner map[string]map[string]*corev1.Pod
	// live counts each owner's live pods: not being deleted, not Succeeded.
	live map[string]int
	// onNode counts the pods bound to each node name, being deleted or not.
	onNode map[string]int
}

func newPodTracker() *podTracker {
	return &podTracker{byOwner: map[string]map[string]*corev1.Pod{}, live: map[string]int{}, onNode: map[string]int{}}
}

// podLive reports whether a pod counts towards its owner's replicas.
func podLive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded
}

// observe takes one change of the store (memory.Client.OnChange).
func (t *podTracker) observe(ch memory.Change) {
	pod, ok := ch.Object.(*corev1.Pod)
	if !ok {
		return
	}
	owner, key := ownerKey(pod), pod.Namespace+"/"+pod.Name
	pods := t.byOwner[owner]
	if prev := pods[key]; prev != nil {
		if podLive(prev) {
			t.live[owner]--
		}
		if prev.Spec.NodeName != "" {
			if t.onNode[prev.Spec.NodeName]--; t.onNode[prev.Spec.NodeName] == 0 {
				delete(t.onNode, prev.Spec.NodeName)
			}
		}
		delete(pods, key)
	}
	if ch.Type == watch.Deleted {
		return
	}
	if pods == nil {
		pods = map[string]*corev1.Pod{}
		t.byOwner[owner] = pods
	}
	pods[key] = pod
	if podLive(pod) {
		t.live[owner]++
	}
	if pod.Spec.NodeName != "" {
		t.onNode[pod.Spec.NodeName]++
	}
}

// livePods returns the owner's live pods, in no order.
func (t *podTracker) livePods(owner string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range t.byOwner[owner] {
		if podLive(p) {
			out = append(out, p)
		}
	}
	return out
}
