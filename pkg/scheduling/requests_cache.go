package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RequestsCache remembers pods' effective requests (PodRequests) by UID, valid while a pod's
// resourceVersion holds (an in-place resize changes it). Computing requests walks every
// container, so components that sum the pods of every node on every pass keep one. It is not
// safe for concurrent use; the zero value is ready.
type RequestsCache struct {
	entries map[types.UID]cachedRequests
	round   uint64
}

type cachedRequests struct {
	resourceVersion string
	requests        corev1.ResourceList
	round           uint64
}

// Get returns the pod's requests. The list is shared: read it, do not change it.
func (c *RequestsCache) Get(pod *corev1.Pod) corev1.ResourceList {
	if pod.UID == "" || pod.ResourceVersion == "" {
		return PodRequests(pod)
	}
	if e, ok := c.entries[pod.UID]; ok && e.resourceVersion == pod.ResourceVersion {
		if e.round != c.round {
			e.round = c.round
			c.entries[pod.UID] = e
		}
		return e.requests
	}
	if c.entries == nil {
		c.entries = map[types.UID]cachedRequests{}
	}
	r := PodRequests(pod)
	c.entries[pod.UID] = cachedRequests{resourceVersion: pod.ResourceVersion, requests: r, round: c.round}
	return r
}

// Prune forgets the pods not asked for since the previous Prune, so the cache holds only
// pods still around.
func (c *RequestsCache) Prune() {
	for uid, e := range c.entries {
		if e.round != c.round {
			delete(c.entries, uid)
		}
	}
	c.round++
}
