package disruption

import (
	"hash/maphash"
	"time"

	"github.com/openkarpenter/karpenter/pkg/state"
)

// ConsolidationStateRefresh is how long a cluster that has not changed stays consolidated, as
// Karpenter's state.Cluster.ConsolidationState: past it, the consolidation methods look again
// in case something they cannot see changed (an offering became available, a price fell).
const ConsolidationStateRefresh = 5 * time.Minute

// consolidationState is Karpenter's consolidation state (state.Cluster.ConsolidationState,
// MarkUnconsolidated, and each method's IsConsolidated and markConsolidated), as the
// disruption passes see the cluster. Karpenter marks the cluster unconsolidated on a pod
// deleted or newly bound, a Node or NodeClaim created or deleted, one that initialized or
// was marked for deletion, and any NodePool change; emptiness, multi-node and single-node
// consolidation each skip a pass when nothing of that kind happened since one of their own
// found nothing (and no budget held a candidate back), or for ConsolidationStateRefresh.
// Here each pass compares a signature of those facts with the last pass's: a pod deleted
// while pending is seen when the pending pods are fewer and nothing else changed (one created
// meanwhile hides it, until the next change or the refresh). NodeOverlay changes, which
// Karpenter counts, are seen at the refresh.
//
// One difference, on purpose: what changes which nodes the methods may act on counts as a
// change too: the decision's next change with time (a node becoming consolidatable once
// consolidateAfter passed, a budget window opening, a do-not-disrupt duration or a nomination
// ending: Decision.NextChange) and its Eligibility (each candidate's consolidatable and
// protected state, as a PodDisruptionBudget's allowed disruptions change it, and the budgets,
// and how many pods are pending). Karpenter's state sees none of those, so a node that becomes
// empty and consolidatable in an otherwise quiet cluster waits there for the refresh, up to
// 5 minutes, paying for the node meanwhile; here it goes when its time comes. The refresh
// itself is left to the controller's polling: a driver of virtual time (simulate) does not
// wake for it (each refresh of a quiet simulated day would run a whole search again), so what
// only a refresh finds there (an offering's insufficient-capacity mark expiring) waits for the
// next change.
type consolidationState struct {
	seed      maphash.Seed
	signature uint64
	unbound   int
	// at is when the cluster last changed as consolidation counts changes (or was refreshed).
	at time.Time
	// timeDue is the last decision's NextChange: once it passed, the cluster changed.
	timeDue time.Time
	// settled holds, by method, the state in which the method last found nothing, and the
	// decision's Eligibility then.
	settled map[string]settledState
}

type settledState struct {
	at          time.Time
	eligibility uint64
}

func newConsolidationState() *consolidationState {
	return &consolidationState{seed: maphash.MakeSeed(), settled: map[string]settledState{}}
}

// consolidationMethods are the methods consolidationState gates, as Karpenter's.
var consolidationMethods = []string{MethodEmptiness, MethodMultiNode, MethodSingleNode}

// observe takes a pass's snapshot at now and returns the methods that found nothing in the
// cluster's current state, with the decision's Eligibility then (Input.Consolidated).
func (s *consolidationState) observe(snap *state.Snapshot, now time.Time) map[string]uint64 {
	signature, unbound := s.sign(snap)
	if s.at.IsZero() || signature != s.signature || unbound < s.unbound || !s.timeDue.IsZero() && !now.Before(s.timeDue) ||
		now.Sub(s.at) >= ConsolidationStateRefresh {
		s.at = now
	}
	s.signature, s.unbound = signature, unbound
	out := map[string]uint64{}
	for _, m := range consolidationMethods {
		if st, ok := s.settled[m]; ok && st.at.Equal(s.at) {
			out[m] = st.eligibility
		}
	}
	return out
}

// settle records the pass's decision: the methods that found nothing in the state the last
// observe saw, with the decision's Eligibility, and when it may change with time next.
func (s *consolidationState) settle(d *Decision) {
	for _, m := range d.Consolidated {
		s.settled[m] = settledState{at: s.at, eligibility: d.Eligibility}
	}
	s.timeDue = d.NextChange
}

// sign hashes what Karpenter's consolidation state counts: the bound pods with their nodes,
// the Nodes and NodeClaims, which are initialized and which are marked for deletion, and the
// NodePools' versions; it also counts the pods not bound.
func (s *consolidationState) sign(snap *state.Snapshot) (signature uint64, unbound int) {
	str := func(kind byte, v string) uint64 {
		var h maphash.Hash
		h.SetSeed(s.seed)
		h.WriteByte(kind)
		h.WriteString(v)
		return h.Sum64()
	}
	nodes := map[string]uint64{}
	for _, pod := range snap.Pods {
		if pod.Spec.NodeName == "" {
			unbound++
			continue
		}
		n, ok := nodes[pod.Spec.NodeName]
		if !ok {
			n = str('b', pod.Spec.NodeName)
			nodes[pod.Spec.NodeName] = n
		}
		signature ^= maphash.String(s.seed, string(pod.UID))*0x9E3779B97F4A7C15 ^ n
	}
	for _, sn := range snap.Nodes {
		if sn.Node != nil {
			signature ^= str('n', sn.Node.Name)
		}
		if sn.NodeClaim != nil {
			signature ^= str('c', sn.NodeClaim.Name)
		}
		if sn.Initialized() {
			signature ^= str('i', sn.Name())
		}
		if sn.MarkedForDeletion {
			signature ^= str('d', sn.Name())
		}
	}
	for _, np := range snap.NodePools {
		signature ^= str('p', np.Name+"/"+np.ResourceVersion)
	}
	return signature, unbound
}

// ConsolidationClock is Karpenter's state.Cluster.ConsolidationState for a controller beside
// disruption: the moment the cluster last changed as Karpenter's consolidation state counts
// changes (see consolidationState), or was refreshed, every ConsolidationStateRefresh. The pod
// deletion cost controller skips a pass while it has not moved, as Karpenter's does.
type ConsolidationClock struct {
	s *consolidationState
}

// NewConsolidationClock returns a clock that has seen nothing yet.
func NewConsolidationClock() *ConsolidationClock {
	return &ConsolidationClock{s: newConsolidationState()}
}

// Observe takes a pass's snapshot at now and returns when the cluster last changed: now on
// the first call, on a change since the last one, and once ConsolidationStateRefresh passed.
func (c *ConsolidationClock) Observe(snap *state.Snapshot, now time.Time) time.Time {
	c.s.observe(snap, now)
	return c.s.at
}
