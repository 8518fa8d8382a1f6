package state

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ArrivalWindow is how recently a ReplicaSet must have created a pod for the provisioner to
// count the replicas it has yet to create, and for the room reserved for them to last (see
// Reserve). A ReplicaSet creating a burst adds pods every few milliseconds; one that stopped
// (a quota, an admission webhook refusing its pods) has not for longer than this.
const ArrivalWindow = 10 * time.Second

// reservation is room a provisioning pass planned, on a node or a claim, for a pod a
// ReplicaSet has yet to create (a stand-in): the first pod of that ReplicaSet to wait for
// capacity takes it as its nomination.
type reservation struct {
	standIn  *corev1.Pod
	target   string
	since    time.Time
	launched bool
}

// replicaSetReservations are a ReplicaSet's reservations and how many replicas it was to run
// when they were made.
type replicaSetReservations struct {
	replicas int
	held     []reservation
}

// Reserve records that a provisioning pass planned standIn, a pod the ReplicaSet owner (of
// replicas replicas) has yet to create, on target (a NodeClaim or Node name); launched says
// the target is a NodeClaim the pass created. The room counts on the target as a nominated
// pod's does, and the first of the ReplicaSet's pods to wait for capacity unnominated takes
// it as its nomination (TakeReservation, and every Snapshot): the pods of a burst the
// ReplicaSet creates after the pass are told the node planned for them as soon as they exist,
// rather than left to the kube-scheduler, which would give them whatever room is free first
// (room planned for other pods), and the pass after would launch more for those.
//
// A reservation lasts as a nomination does (while its target launches and for the nomination
// grace after it is ready) and while the ReplicaSet creates pods (its newest within
// ArrivalWindow); the ReplicaSet's reservations never outnumber the replicas it has yet to
// create (pods it created that bound elsewhere drop one each).
func (c *Cluster) Reserve(owner types.UID, replicas int, standIn *corev1.Pod, target string, launched bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reserved == nil {
		c.reserved = map[types.UID]*replicaSetReservations{}
	}
	rs := c.reserved[owner]
	if rs == nil {
		rs = &replicaSetReservations{}
		c.reserved[owner] = rs
	}
	rs.replicas = replicas
	rs.held = append(rs.held, reservation{standIn: standIn, target: target, since: c.clock.Now(), launched: launched})
}

// Reserved returns how many reservations the ReplicaSet holds.
func (c *Cluster) Reserved(owner types.UID) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rs := c.reserved[owner]; rs != nil {
		return len(rs.held)
	}
	return 0
}

// holdsReservations reports whether room is reserved on target (a NodeClaim or Node name)
// for pods a ReplicaSet has yet to create; c.mu is held.
func (c *Cluster) holdsReservations(target string) bool {
	for _, rs := range c.reserved {
		for _, r := range rs.held {
			if r.target == target {
				return true
			}
		}
	}
	return false
}

// TakeReservation nominates a pod waiting for capacity, unnominated, to a reservation its
// ReplicaSet holds, and returns the target; false when there is none to take.
func (c *Cluster) TakeReservation(pod *corev1.Pod) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.takeReservation(pod)
}

// takeReservation is TakeReservation with c.mu held.
func (c *Cluster) takeReservation(pod *corev1.Pod) (string, bool) {
	if len(c.reserved) == 0 || pod.Spec.NodeName != "" || pod.Status.NominatedNodeName != "" || pod.DeletionTimestamp != nil {
		return "", false
	}
	if _, nominated := c.nominations[pod.UID]; nominated {
		return "", false
	}
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return "", false
	}
	rs := c.reserved[owner.UID]
	if rs == nil || len(rs.held) == 0 {
		return "", false
	}
	r := rs.held[0]
	rs.held = rs.held[1:]
	if len(rs.held) == 0 {
		delete(c.reserved, owner.UID)
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	c.nominations[pod.UID] = nomination{target: r.target, since: r.since, launched: r.launched, unannounced: c.placedByKubeScheduler(pod)}
	if c.nominees[r.target] == nil {
		c.nominees[r.target] = map[types.UID]types.NamespacedName{}
	}
	c.nominees[r.target][pod.UID] = key
	return r.target, true
}

// replicaSetPods is what a snapshot counts of the pods of the ReplicaSets holding
// reservations, by ReplicaSet UID: its live pods (not terminal, not deleting), when it
// created the newest, and on which nodes its pods bound without a nomination.
type replicaSetPods struct {
	live    map[types.UID]int
	newest  map[types.UID]time.Time
	boundOn map[types.UID]map[string]int
}

// count notes a pod of a ReplicaSet holding reservations (owner, "" for others); bound names
// the node it bound to without a nomination.
func (p *replicaSetPods) count(owner types.UID, pod *corev1.Pod, bound string) {
	if owner == "" {
		return
	}
	p.live[owner]++
	if created := pod.CreationTimestamp.Time; created.After(p.newest[owner]) {
		p.newest[owner] = created
	}
	if bound != "" {
		if p.boundOn[owner] == nil {
			p.boundOn[owner] = map[string]int{}
		}
		p.boundOn[owner][bound]++
	}
}

// settleReservations, during a snapshot with c.mu held, drops the reservations that ended
// (their target gone, being deleted, or past its nomination; their ReplicaSet no longer
// creating pods) or that outnumber the replicas their ReplicaSet has yet to create, and adds
// the others' stand-ins to their targets' pods. A pod of the ReplicaSet bound without a
// nomination took room the kube-scheduler chose: the reservation dropped for it is preferably
// one on its node. A target holding reservations is nominated (StateNode.NominatedUntil).
func (c *Cluster) settleReservations(targets map[string]*StateNode, pods replicaSetPods, now time.Time) {
	for owner, rs := range c.reserved {
		kept := rs.held[:0]
		for _, r := range rs.held {
			sn, ok := targets[r.target]
			creating := now.Sub(r.since) <= ArrivalWindow || now.Sub(pods.newest[owner]) <= ArrivalWindow
			if ok && creating && !sn.MarkedForDeletion && !nominationExpired(sn, nomination{since: r.since}, now, c.nominationGrace()) {
				kept = append(kept, r)
			}
		}
		rs.held = kept
		if excess := len(rs.held) + pods.live[owner] - rs.replicas; excess > 0 {
			rs.held = dropReservations(rs.held, excess, pods.boundOn[owner], targets)
		}
		if len(rs.held) == 0 {
			delete(c.reserved, owner)
			continue
		}
		for _, r := range rs.held {
			sn := targets[r.target]
			sn.Pods = append(sn.Pods, r.standIn)
			// Room waiting for a pod keeps its node from disruption, as a nominee's does.
			c.nominateTarget(r.target, now)
		}
	}
}

// dropReservations removes n reservations: first those on the nodes where the ReplicaSet's
// pods bound unnominated (boundOn counts them by node name), then the latest made.
func dropReservations(held []reservation, n int, boundOn map[string]int, targets map[string]*StateNode) []reservation {
	onNode := func(r reservation) string {
		if sn := targets[r.target]; sn != nil && sn.Node != nil {
			return sn.Node.Name
		}
		return ""
	}
	order := make([]int, len(held))
	for i := range order {
		order[i] = i
	}
	// Reservations on a node the ReplicaSet's pods bound to first, then the latest first.
	sort.SliceStable(order, func(a, b int) bool {
		ba, bb := boundOn[onNode(held[order[a]])] > 0, boundOn[onNode(held[order[b]])] > 0
		if ba != bb {
			return ba
		}
		return order[a] > order[b]
	})
	drop := map[int]bool{}
	for _, i := range order {
		if len(drop) == n {
			break
		}
		if node := onNode(held[i]); boundOn[node] > 0 {
			boundOn[node]--
		}
		drop[i] = true
	}
	kept := held[:0]
	for i, r := range held {
		if !drop[i] {
			kept = append(kept, r)
		}
	}
	return kept
}

// launchBatch is the NodeClaims one provisioning pass created, and which of them have a Node
// that joined.
type launchBatch struct {
	claims  map[string]bool // claim name → its Node joined
	created time.Time
}

// batchMemory is how long a launch batch is remembered: longer than any registration hold.
const batchMemory = 10 * time.Minute

// RecordBatch remembers the NodeClaims a provisioning pass created together (HoldsRegistration).
func (c *Cluster) RecordBatch(claims ...string) {
	if len(claims) < 2 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if c.batches == nil {
		c.batches = map[string]*launchBatch{}
	}
	for name, b := range c.batches {
		if now.Sub(b.created) > batchMemory {
			delete(c.batches, name)
		}
	}
	b := &launchBatch{claims: make(map[string]bool, len(claims)), created: now}
	for _, name := range claims {
		b.claims[name] = false
		c.batches[name] = b
	}
}

// HoldsRegistration reports whether a NodeClaim whose Node has joined (the caller found it)
// should wait before registering the Node, which opens it to pods: while a pod nominated to
// it has not been told so yet (Announced); and, when room on the claims of its provisioning
// pass is planned for pods not told their node (holdsRoomUntold), while another claim of the
// pass has no Node yet or any of them waits for pods in the same way. The kube-scheduler tries every pod
// waiting for a node when one registers, a pod nominated to a node not yet registered
// included, and binds it to the registered one where there is room (the room planned for pods
// it places itself); the batch's nodes registering together leave no such window, and its
// pods land as planned. The lifecycle controller bounds the wait (nodeclaim.MaxRegistrationHold).
func (c *Cluster) HoldsRegistration(claim string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.batches[claim]
	if b != nil {
		b.claims[claim] = true
	}
	if b == nil || !c.holdsRoomUntold(b) {
		return c.waitsForPods(claim)
	}
	for name, joined := range b.claims {
		if !joined && c.batches[name] == b || c.waitsForPods(name) {
			return true
		}
	}
	return false
}

// holdsRoomUntold reports whether room on the batch's claims is planned for pods that will
// not be told their node there: reserved for pods still to be created, or nominated to pods
// the kube-scheduler places itself. Only then do its nodes wait for one another: the pods told
// their node bind there whichever opens first, and a pod with required affinity to pods still
// unbound binds best once those have; c.mu is held.
func (c *Cluster) holdsRoomUntold(b *launchBatch) bool {
	for name := range b.claims {
		if c.batches[name] != b {
			continue
		}
		if c.holdsReservations(name) {
			return true
		}
		for uid := range c.nominees[name] {
			if c.nominations[uid].unannounced {
				return true
			}
		}
	}
	return false
}

// waitsForPods reports whether room on target is reserved for pods still to be created, or a
// pod nominated there has yet to be told; c.mu is held.
func (c *Cluster) waitsForPods(target string) bool {
	if c.holdsReservations(target) {
		return true
	}
	for uid := range c.nominees[target] {
		if n := c.nominations[uid]; !n.announced && !n.unannounced {
			return true
		}
	}
	return false
}
