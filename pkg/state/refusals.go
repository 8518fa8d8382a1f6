package state

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// How the cluster state deals with a node that turns away a pod nominated to it: a node
// launched for pods that cannot run there (a label, a taint or a resource the NodePool promised
// and the node lacks), or an existing node the kube-scheduler judges full or out of spread.
// Karpenter itself plans such a pod again at once, on the same node or on a new one, without
// end; here the pod avoids the node for a while, and a pod that keeps missing the nodes
// launched for it waits longer and longer before the next launch.
const (
	// RefusalMemory is how long a pod avoids a node that turned it away.
	RefusalMemory = 10 * time.Minute
	// LaunchBackoffBase is the wait after a pod's second missed launch; it doubles with each
	// miss after that, up to LaunchBackoffMax.
	LaunchBackoffBase = 5 * time.Minute
	// LaunchBackoffMax bounds the wait between launches for one pod.
	LaunchBackoffMax = time.Hour
)

// LaunchBackoff is how long a pod that has missed launches (nodes launched for it became
// ready and did not take it) waits before the provisioner plans it again. The first miss costs
// nothing (other pods may have raced it to the node); then base, doubling up to limit. With
// the defaults (LaunchBackoffBase, LaunchBackoffMax) that is at most five launches in the first
// hour of a pod no node can take, and one an hour after.
func LaunchBackoff(launches int, base, limit time.Duration) time.Duration {
	if launches < 2 {
		return 0
	}
	d := base
	for i := 2; i < launches && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// Miss is a nomination that ended with its pod unbound though its node was ready for it: the
// kube-scheduler refused the pod there (cleared the nominated node name it was given), or did
// not bind it within the nomination grace. The provisioner judges whether the node can take the
// pod and, if not, penalizes the pod's return to it (Penalize).
type Miss struct {
	// Pod that was turned away.
	Pod types.NamespacedName
	// UID of the pod.
	UID types.UID
	// Node (or NodeClaim, while it has no Node) that turned it away.
	Node string
	// Target is what the pod was nominated to: the NodeClaim, or Node.
	Target string
	// NodePool of the node; "" for a node Karpenter does not manage.
	NodePool string
	// Launched: the node was launched for the pod.
	Launched bool
	// Announced: the pod's nominated node name was set to the node, so the kube-scheduler
	// tried it there first.
	Announced bool
	// Refused: the kube-scheduler tried the pod on the node and refused it; otherwise the
	// nomination's grace ran out.
	Refused bool
}

// refusal is what a pod's refusals left: the nodes it avoids (until when), and its missed
// launches.
type refusal struct {
	avoid    map[string]time.Time
	launches int
	retryAt  time.Time
}

// avoiding lists the nodes the pod still avoids at now, sorted.
func (r *refusal) avoiding(now time.Time) []string {
	var out []string
	for node, until := range r.avoid {
		if now.Before(until) {
			out = append(out, node)
		}
	}
	slices.Sort(out)
	return out
}

// Refused records that the node of the pod's nomination turned it away: the kube-scheduler
// tried the pod on the node, ready for pods, and cleared the nominated node name it was given
// (Announced). The nomination ends and the next snapshot reports the miss. It does nothing, and
// returns false, unless the pod is nominated to target and was announced.
func (c *Cluster) Refused(pod *corev1.Pod, target, node, nodePool string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nominations[pod.UID]
	if !ok || n.target != target || !n.announced {
		return false
	}
	c.miss(pod, node, nodePool, n, true)
	c.forget(pod.UID)
	return true
}

// TakeMisses returns the nominations that ended, since the last call, with their pods unbound
// though the node was ready for them (see Miss), for the provisioner to judge, and forgets them.
// SyncSnapshot and the nomination controller record them; only the provisioner takes them, so a
// snapshot taken for another purpose (disruption's) loses none. Their pods are pending in the
// snapshot taken before the call, unless backed off from earlier misses.
func (c *Cluster) TakeMisses() []Miss {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.missed
	c.missed = nil
	return out
}

// miss records a miss for TakeMisses; c.mu is held.
func (c *Cluster) miss(pod *corev1.Pod, node, nodePool string, n nomination, refused bool) {
	c.missed = append(c.missed, Miss{Pod: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, UID: pod.UID,
		Node: node, Target: n.target, NodePool: nodePool, Launched: n.launched, Announced: n.announced, Refused: refused})
}

// Penalty is what Penalize decided for a pod.
type Penalty struct {
	// Avoid lists the nodes the pod avoids now, sorted.
	Avoid []string
	// Launches is how many launches for the pod have missed so far.
	Launches int
	// RetryAt is when the provisioner plans the pod again; zero for at once.
	RetryAt time.Time
}

// Penalize records that the miss's node cannot take its pod: the pod avoids the node (and its
// claim) for RefusalMemory after it is planned again, and a node launched for it counts as a
// missed launch, after which the pod waits LaunchBackoff before it is planned again.
func (c *Cluster) Penalize(m Miss) Penalty {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	r := c.refusals[m.UID]
	if r == nil {
		r = &refusal{avoid: map[string]time.Time{}}
		c.refusals[m.UID] = r
	}
	if m.Launched {
		r.launches++
		base, limit := LaunchBackoffBase, LaunchBackoffMax
		if c.LaunchBackoffBase > 0 {
			base, limit = c.LaunchBackoffBase, max(c.LaunchBackoffBase, c.LaunchBackoffMax)
		}
		if wait := LaunchBackoff(r.launches, base, limit); wait > 0 {
			r.retryAt = now.Add(wait)
		}
	}
	until := now.Add(RefusalMemory)
	if r.retryAt.After(now) {
		until = r.retryAt.Add(RefusalMemory)
	}
	r.avoid[m.Node] = until
	r.avoid[m.Target] = until
	p := Penalty{Avoid: r.avoiding(now), Launches: r.launches}
	if r.retryAt.After(now) {
		p.RetryAt = r.retryAt
	}
	return p
}

// pruneRefusals forgets the refusals of pods that are gone (not in seen), and node avoidances
// that lapsed; c.mu is held. A pod that binds loses its refusals when the snapshot sees it bound.
func (c *Cluster) pruneRefusals(seen map[types.UID]bool, now time.Time) {
	for uid, r := range c.refusals {
		if !seen[uid] {
			delete(c.refusals, uid)
			continue
		}
		for node, until := range r.avoid {
			if !now.Before(until) {
				delete(r.avoid, node)
			}
		}
	}
}

// Announced records that the nominated node name of the pod, nominated to target, was set to
// target's node, or that the pod needs it no more (bound, or being deleted). It does nothing
// when the pod is no longer nominated to target.
func (c *Cluster) Announced(pod types.UID, target string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.nominations[pod]; ok && n.target == target {
		n.announced = true
		c.nominations[pod] = n
	}
}
