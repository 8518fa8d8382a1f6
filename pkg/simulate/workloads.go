package simulate

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	// daemons counts, by node name and then DaemonSet UID, the DaemonSets' pods bound there
	// that are not being deleted (see daemonOf).
	daemons map[string]map[types.UID]int
}

func newPodTracker() *podTracker {
	return &podTracker{byOwner: map[string]map[string]*corev1.Pod{}, live: map[string]int{}, onNode: map[string]int{}, daemons: map[string]map[types.UID]int{}}
}

// daemonOf is the UID of the DaemonSet whose pod p is, bound to a node and not being deleted;
// empty otherwise.
func daemonOf(p *corev1.Pod) types.UID {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return ""
	}
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "DaemonSet" {
		return ref.UID
	}
	return ""
}

// countDaemon adds n to the count of p's DaemonSet on its node, when p is a daemon pod.
func (t *podTracker) countDaemon(p *corev1.Pod, n int) {
	uid := daemonOf(p)
	if uid == "" {
		return
	}
	byDS := t.daemons[p.Spec.NodeName]
	if byDS == nil {
		byDS = map[types.UID]int{}
		t.daemons[p.Spec.NodeName] = byDS
	}
	if byDS[uid] += n; byDS[uid] <= 0 {
		delete(byDS, uid)
		if len(byDS) == 0 {
			delete(t.daemons, p.Spec.NodeName)
		}
	}
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
		t.countDaemon(prev, -1)
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
	t.countDaemon(pod, 1)
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
