package disruption

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/openkarpenter/karpenter/pkg/state"
)

// This file lends disruption's view of a node to the controllers that rank nodes as
// consolidation would (package deletioncost), so both judge a node the same way.

// NodeProtection says why the node itself may not be voluntarily disrupted at now (nominated
// for pods, or karpenter.sh/do-not-disrupt on its Node or NodeClaim), or "", as a candidate's
// Candidate.NodeProtection. The node must be registered and managed (Node and NodeClaim set).
func NodeProtection(sn *state.StateNode, now time.Time) string { return nodeProtection(sn, now) }

// PodProtection says why the pods may not be voluntarily disrupted at now (a do-not-disrupt
// pod, or a PodDisruptionBudget that allows no disruption), or "", as a candidate's
// Candidate.PodProtection of its reschedulable pods.
func PodProtection(pods []*corev1.Pod, pdbs *state.PDBIndex, now time.Time) string {
	return podProtection(pods, pdbs, now)
}
