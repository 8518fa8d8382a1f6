package state

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// StartedPodRetention is how long after a pod became ready the moments of its scheduling are
// kept: long enough for the pod metrics controller to observe its startup.
const StartedPodRetention = time.Minute

// PodScheduling is when Karpenter noticed a pod waiting for capacity and when its provisioning
// passes decided on it, as the pod metrics measure from them. Zero moments did not happen.
type PodScheduling struct {
	// Acknowledged is when the provisioner's pod controller first saw the pod wait for capacity.
	Acknowledged time.Time
	// Decided is when a provisioning pass first decided on the pod: placed it, or could not.
	Decided time.Time
	// Schedulable is when a provisioning pass first placed the pod since the last pass that
	// could not; zero while the latest pass that decided on it could not place it.
	Schedulable time.Time
}

// podSchedulingBook holds the PodScheduling of the pods Karpenter is provisioning for, by UID.
// It has its own lock: pods are acknowledged by many concurrent reconciles, which must not
// wait for a snapshot.
type podSchedulingBook struct {
	mu    sync.Mutex
	byUID map[types.UID]*PodScheduling
}

// entry returns the pod's PodScheduling, creating it; b.mu is held.
func (b *podSchedulingBook) entry(uid types.UID) *PodScheduling {
	if b.byUID == nil {
		b.byUID = map[types.UID]*PodScheduling{}
	}
	e := b.byUID[uid]
	if e == nil {
		e = &PodScheduling{}
		b.byUID[uid] = e
	}
	return e
}

// AckPods records that the provisioner saw the pods wait for capacity, for those it had not
// seen yet.
func (c *Cluster) AckPods(pods ...*corev1.Pod) {
	now := c.clock.Now()
	b := &c.podScheduling
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, pod := range pods {
		if e := b.entry(pod.UID); e.Acknowledged.IsZero() {
			e.Acknowledged = now
		}
	}
}

// MarkSchedulingDecisions records a provisioning pass's decisions: it placed the pods placed
// and could not place those failed. It returns, for each acknowledged pod decided on for the
// first time, how long it waited since its acknowledgement.
func (c *Cluster) MarkSchedulingDecisions(placed, failed []*corev1.Pod) (firstDecisionWaits []time.Duration) {
	now := c.clock.Now()
	b := &c.podScheduling
	b.mu.Lock()
	defer b.mu.Unlock()
	decide := func(e *PodScheduling) {
		if !e.Decided.IsZero() {
			return
		}
		e.Decided = now
		if !e.Acknowledged.IsZero() {
			firstDecisionWaits = append(firstDecisionWaits, now.Sub(e.Acknowledged))
		}
	}
	for _, pod := range failed {
		e := b.entry(pod.UID)
		decide(e)
		e.Schedulable = time.Time{}
	}
	for _, pod := range placed {
		e := b.entry(pod.UID)
		decide(e)
		if e.Schedulable.IsZero() {
			e.Schedulable = now
		}
	}
	return firstDecisionWaits
}

// PodScheduling returns the moments of a pod's scheduling (zero when Karpenter never saw it
// wait for capacity, or has forgotten it).
func (c *Cluster) PodScheduling(uid types.UID) PodScheduling {
	b := &c.podScheduling
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.byUID[uid]; e != nil {
		return *e
	}
	return PodScheduling{}
}

// prunePodScheduling forgets the pods that are gone or terminal, and those ready for longer than
// StartedPodRetention.
func (c *Cluster) prunePodScheduling(pods []*corev1.Pod, now time.Time) {
	b := &c.podScheduling
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.byUID) == 0 {
		return
	}
	keep := make(map[types.UID]bool, len(b.byUID))
	for _, pod := range pods {
		if _, ok := b.byUID[pod.UID]; ok && !isTerminal(pod) && !readyFor(pod, now, StartedPodRetention) {
			keep[pod.UID] = true
		}
	}
	for uid := range b.byUID {
		if !keep[uid] {
			delete(b.byUID, uid)
		}
	}
}

// readyFor reports whether the pod's Ready condition has been True for longer than d.
func readyFor(pod *corev1.Pod, now time.Time, d time.Duration) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && now.Sub(c.LastTransitionTime.Time) > d
		}
	}
	return false
}
