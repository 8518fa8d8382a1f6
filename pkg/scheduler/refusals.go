package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// refusal is why a stage turned a pod away from a target. It is built on the hot path, so it
// holds only what the check already had (the error it returned, or the resource that was
// short) and is formatted only for a pod that stays unplaced. The zero refusal is none.
type refusal struct {
	stage Stage
	// dim is, for StageRoom, the first resource short: an index of roomDims, or extendedDim
	// with ext naming the extended resource.
	dim uint8
	err error
	ext corev1.ResourceName
}

// roomDims are the resources every pod requests, in the order the room stage checks them.
var roomDims = [...]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage}

// extendedDim is a refusal's dim for an extended resource.
const extendedDim = uint8(len(roomDims))

func (r refusal) refused() bool { return r.stage != 0 }

// asError is the refusal as a pod's error says it.
func (r refusal) asError() error {
	switch {
	case r.err != nil:
		return r.err
	case r.stage == StageRoom && r.dim == extendedDim:
		return errors.New("too little " + string(r.ext))
	case r.stage == StageRoom:
		return errors.New("too little " + string(roomDims[r.dim]))
	case r.stage == StageAvoid:
		return errors.New("it turned the pod away before")
	}
	return nil
}

// tallyEntry counts the nodes that refused the pod being placed for one reason, with the
// first of them.
type tallyEntry struct {
	first refusal
	count int
}

// tallyKey is a refusal's reason as the tally groups them: its stage, and for room the
// resource short (cpu, memory, pods, ephemeral storage, or any extended resource, named by
// the first).
func tallyKey(r refusal) int {
	if r.stage != StageRoom {
		return int(r.stage)
	}
	return numStages + int(r.dim)
}

// tallyKeys sizes the tally: one key per stage, and one per room dimension.
const tallyKeys = numStages + int(extendedDim) + 1

// refusedByNode counts a refusal by an existing node or in-flight claim: in the run's totals,
// and in the tally of the pod being placed (reset by placeOnNode).
func (s *solver) refusedByNode(r refusal) {
	s.nodeRefused[r.stage]++
	e := &s.nodeTally[tallyKey(r)]
	if e.count == 0 {
		e.first = r
	}
	e.count++
}

// refusedByPool counts a refusal by a claim of the NodePool in the run's totals.
func refusedByPool(ps *poolState, r refusal) { ps.refused[r.stage]++ }

// nodeRefusals is the tally of the pod just placed, most frequent reason first.
func (s *solver) nodeRefusals() []NodeRefusals {
	var out []NodeRefusals
	for _, e := range s.nodeTally {
		if e.count > 0 {
			out = append(out, NodeRefusals{Stage: e.first.stage, Count: e.count, Reason: e.first.asError().Error()})
		}
	}
	slices.SortStableFunc(out, func(a, b NodeRefusals) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return int(a.Stage) - int(b.Stage)
	})
	return out
}

// refusals are the run's totals, existing nodes first, then the NodePools in the order tried,
// each in pipeline order.
func (s *solver) refusals() []Refusal {
	var out []Refusal
	add := func(pool string, counts *[numStages]int) {
		for _, stage := range pipeline {
			if n := counts[stage]; n > 0 {
				out = append(out, Refusal{NodePool: pool, Stage: stage, Count: n})
			}
		}
	}
	add("", &s.nodeRefused)
	for _, ps := range s.pools {
		add(ps.Name, &ps.refused)
	}
	return out
}

// Refusal counts how often, in a run, one stage of the pipeline turned pods away from the
// targets of one NodePool. A claim that refused a pod's shape for good is not asked again, so
// it counts once.
type Refusal struct {
	// NodePool of the claims (opened in the run, or new) that refused; "" for existing nodes
	// and in-flight claims.
	NodePool string
	// Stage that refused.
	Stage Stage
	// Count of refusals.
	Count int
}

// String is "<nodepool>/<stage>=<count>", the NodePool "existing" for existing nodes.
func (r Refusal) String() string {
	pool := r.NodePool
	if pool == "" {
		pool = "existing"
	}
	return pool + "/" + r.Stage.String() + "=" + strconv.Itoa(r.Count)
}

// NodeRefusals is how many existing nodes and in-flight claims turned a pod away for one
// reason.
type NodeRefusals struct {
	// Stage that refused them.
	Stage Stage
	// Count of nodes.
	Count int
	// Reason is the first node's: "did not tolerate taint …", "too little memory".
	Reason string
}

// String is "<count> <reason>" for room and avoid, whose reasons say their stage, and
// "<count> <stage>: <reason>" for the others.
func (n NodeRefusals) String() string {
	if n.Stage == StageRoom || n.Stage == StageAvoid {
		return strconv.Itoa(n.Count) + " " + n.Reason
	}
	return strconv.Itoa(n.Count) + " " + n.Stage.String() + ": " + n.Reason
}

// UnschedulableError says why a pod fits nowhere: which existing nodes and in-flight claims
// turned it away and why, and why each NodePool could not take it.
type UnschedulableError struct {
	// Nodes are the existing nodes and in-flight claims that refused the pod, by reason,
	// most first.
	Nodes []NodeRefusals
	// Reasons, one per NodePool tried, in the order tried; none when no NodePool can launch
	// nodes.
	Reasons []error
}

// Error lists why the pod fits nowhere: "3 nodes refused: 2 taints: did not tolerate taint
// …, 1 too little memory; incompatible with every nodepool: nodepool default: …".
func (e *UnschedulableError) Error() string {
	var b strings.Builder
	total := 0
	for _, n := range e.Nodes {
		total += n.Count
	}
	if total > 0 {
		if total == 1 {
			b.WriteString("1 node refused: ")
		} else {
			fmt.Fprintf(&b, "%d nodes refused: ", total)
		}
		for i, n := range e.Nodes {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(n.String())
		}
		b.WriteString("; ")
	}
	if len(e.Reasons) == 0 {
		b.WriteString("no NodePool can launch nodes")
		return b.String()
	}
	b.WriteString("incompatible with every nodepool: ")
	for i, r := range e.Reasons {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r.Error())
	}
	return b.String()
}

// Unwrap returns the per-NodePool reasons.
func (e *UnschedulableError) Unwrap() []error { return e.Reasons }
