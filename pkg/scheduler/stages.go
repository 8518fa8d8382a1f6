package scheduler

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Stage is one feasibility check of the placement pipeline. The zero Stage is none.
type Stage uint8

// The stages, in the order the pipeline runs them (see pipeline for why).
const (
	// StageAvoid refuses an existing node or in-flight claim the pod must avoid: it turned
	// the pod away before (Input.Avoid).
	StageAvoid Stage = iota + 1
	// StageRoom refuses a node or a claim without free room for the pod's requests.
	StageRoom
	// StageTaints refuses a target with a taint the pod does not tolerate.
	StageTaints
	// StageRequirements refuses a target whose labels or requirements the pod's node
	// selector, required node affinity (and the preferences still held) and volume zones
	// exclude.
	StageRequirements
	// StageHostPorts refuses a target where a host port the pod asks for is taken.
	StageHostPorts
	// StageTopology refuses a target where the pod would break a topology spread
	// constraint, its pod affinity or anti-affinity, or another pod's anti-affinity.
	StageTopology
	// StageInstanceType refuses a claim for which no instance type would hold the pod with
	// the claim's pods within the NodePool's limits and minValues.
	StageInstanceType
)

// numStages sizes arrays indexed by Stage.
const numStages = int(StageInstanceType) + 1

var stageNames = [...]string{
	StageAvoid:        "avoid",
	StageRoom:         "room",
	StageTaints:       "taints",
	StageRequirements: "requirements",
	StageHostPorts:    "host ports",
	StageTopology:     "topology",
	StageInstanceType: "instance type",
}

// String is the stage's name as the package documentation lists it.
func (s Stage) String() string {
	if int(s) < len(stageNames) && stageNames[s] != "" {
		return stageNames[s]
	}
	return "none"
}

// pipeline is the feasibility stages in the order they run, for every target alike. A stage
// that does not apply to a kind of target passes it. The order is cheap and selective first,
// so that most refusals cost little, and stateful last:
var pipeline = [...]Stage{
	// One lookup in a list that is almost always empty; and final: a node that turned the
	// pod away, for a reason the scheduler may not see, is not worth another check.
	StageAvoid,
	// Four integer comparisons (a map lookup more for extended resources), and on a busy
	// cluster the most selective check: most nodes are full.
	StageRoom,
	// A short loop over the target's taints; taints fence whole groups of nodes and
	// NodePools off, so they turn many targets away before their requirements are compared.
	StageTaints,
	// Compares sorted requirement lists; for a claim it also narrows the claim's
	// requirements by the pod's, which the topology and instance type stages read.
	StageRequirements,
	// A loop over the pod's host ports, which most pods do not have.
	StageHostPorts,
	// Reads group counts per domain and may pin a domain: costly, and stateful (its answer
	// depends on where the other pods went, and can turn either way, where room only
	// shrinks), so it runs only on targets that pass every other check of theirs. It
	// chooses the domains the placement then records.
	StageTopology,
	// Claims only: searches the NodePool's instance types for one that holds the claim's
	// pods and this one beside the daemonsets, within limits and minValues, under the
	// requirements the stages before narrowed. Last because it needs them, and it is the
	// costliest check: a search over instance types.
	StageInstanceType,
}

// trial is one pod tried against one target: the target, what the stages read, and what they
// leave for the placement. The target is one of: an existing node or in-flight claim (node);
// a claim of this run (claim), new while it holds no pods; or, for the look-ahead's question
// whether pods could share a node, a NodePool's prospective node under reqs (pool).
type trial struct {
	p *podInfo
	v *variant

	node  *nodeState
	claim *claimState
	pool  *poolState

	// reqs are the requirements of a claim or a prospective node (a node's are its own): for a
	// claim, the requirements stage narrows them by the pod's, and the topology stage pins the
	// domains it chooses in them.
	reqs scheduling.Requirements
	// domains are the topology domains chosen for the pod.
	domains []domainChoice
	// target and extra are the instance type a claim needs with the pod, and the price
	// increase over its current one.
	target *candidate
	extra  float64
	// why is the refusal of the stage that turned the pod away.
	why refusal
}

// feasible runs the pipeline on a trial: true when every stage admits the pod, else false with
// the first refusal in t.why. Each stage returns whether it admits the pod, and writes its
// refusal only when it does not. The stages are called in the order of pipeline
// (TestFeasibleRunsPipelineInOrder holds them to it), written out rather than looped over so
// that a node refused by an early stage costs a few comparisons, no more.
func (s *solver) feasible(t *trial) bool {
	return avoidStage(t) &&
		roomStage(t) &&
		taintStage(t) &&
		requirementStage(t) &&
		hostPortStage(t) &&
		s.topologyStage(t) &&
		s.instanceTypeStage(t)
}

// refuse records why a stage turned the pod away, and returns false for the stage to return.
func (t *trial) refuse(stage Stage, err error) bool {
	t.why = refusal{stage: stage, err: err}
	return false
}

// avoidStage: an existing node or in-flight claim the pod avoids. Claims of this run are
// never avoided.
func avoidStage(t *trial) bool {
	if t.node != nil && len(t.p.avoid) > 0 && slices.Contains(t.p.avoid, t.node.Name) {
		return t.refuse(StageAvoid, nil)
	}
	return true
}

// roomStage: a node's free room, or what a claim holding pods could still take at most (the
// room of its NodePool's largest instance type less its pods'). An empty claim's room is what
// its instance type will have: the instance type stage judges it, under the pod's
// requirements, in Karpenter's words. Small enough to be inlined: most nodes a pod is tried
// on are full.
func roomStage(t *trial) bool {
	if n := t.node; n != nil {
		if !t.p.res.Fits(n.available) {
			t.why = refusal{stage: StageRoom, dim: shortOf(t.p.res, n.available)}
			return false
		}
		return len(t.p.extended) == 0 || extendedRoomStage(t)
	}
	return claimRoomStage(t)
}

// claimRoomStage: the room stage for a claim.
func claimRoomStage(t *trial) bool {
	if t.claim != nil && len(t.claim.pods) > 0 {
		if room := t.claim.roomUnderLargest(); !t.p.res.Fits(room) {
			return t.refuseRoom(room)
		}
	}
	return true
}

// refuseRoom records that room is short of the pod's requests.
func (t *trial) refuseRoom(room scheduling.Resources) bool {
	t.why = refusal{stage: StageRoom, dim: shortOf(t.p.res, room)}
	return false
}

// extendedRoomStage: the node's free extended resources.
func extendedRoomStage(t *trial) bool {
	for name, q := range t.p.extended {
		if have := t.node.extended[name]; q.Cmp(have) > 0 {
			t.why = refusal{stage: StageRoom, dim: extendedDim, ext: name}
			return false
		}
	}
	return true
}

// shortOf is the first resource (an index of roomDims) of which r asks more than room has;
// r must not fit.
func shortOf(r, room scheduling.Resources) uint8 {
	switch {
	case r.MilliCPU > room.MilliCPU:
		return 0
	case r.Memory > room.Memory:
		return 1
	case r.Pods > room.Pods:
		return 2
	}
	return 3
}

// taintStage: the node's taints, or the NodePool's for a claim or a prospective node.
func taintStage(t *trial) bool {
	var taints []corev1.Taint
	switch {
	case t.node != nil:
		taints = t.node.Taints
	case t.claim != nil:
		taints = t.claim.pool.Taints
	default:
		taints = t.pool.Taints
	}
	if len(taints) == 0 {
		return true
	}
	if err := t.v.tolerates(t.p.pod, taints); err != nil {
		return t.refuse(StageTaints, err)
	}
	return true
}

// requirementStage: the pod's requirements against a registered node's labels; against an
// in-flight claim's or a prospective node's requirements, compatible and jointly
// satisfiable; against a claim's, compatible, narrowing the claim's by them (an intersection
// no instance type satisfies is the instance type stage's to say, in Karpenter's words).
func requirementStage(t *trial) bool {
	v := t.v
	if v.requirementsErr != nil {
		return t.refuse(StageRequirements, v.requirementsErr)
	}
	var err error
	switch {
	case t.node != nil && t.node.Requirements == nil:
		err = v.requirements.Matches(t.node.Labels)
	case t.claim != nil:
		if err = v.requirements.Compatible(t.reqs, scheduling.IsWellKnownLabel); err == nil {
			t.reqs = t.reqs.Intersect(v.requirements)
		}
	default:
		reqs := t.reqs
		if t.node != nil {
			reqs = t.node.reqs
		}
		if err = v.requirements.Compatible(reqs, scheduling.IsWellKnownLabel); err == nil {
			err = reqs.Intersect(v.requirements).Satisfiable()
		}
	}
	if err != nil {
		return t.refuse(StageRequirements, err)
	}
	return true
}

// hostPortStage: the host ports in use on the node or by the claim's pods. A prospective
// node has none (the look-ahead leaves pods with host ports out).
func hostPortStage(t *trial) bool {
	var used []scheduling.HostPort
	switch {
	case len(t.p.hostPorts) == 0:
		return true
	case t.node != nil:
		used = t.node.ports
	case t.claim != nil:
		used = t.claim.ports
	}
	if err := scheduling.HostPortConflict(used, t.p.hostPorts); err != nil {
		return t.refuse(StageHostPorts, err)
	}
	return true
}

// topologyStage: a domain for every topology key the pod's spread and (anti-)affinity use,
// and the other pods' anti-affinity, that admits it: the node's own, or for a claim the one
// its requirements pin or else the best a new node could have. Prospective nodes are not
// checked (the look-ahead leaves pods with node-level constraints out, and zonal ones are
// settled when their claims are).
func (s *solver) topologyStage(t *trial) bool {
	var err error
	switch {
	case t.node != nil:
		t.domains, _, err = s.chooseDomains(t.p, t.node.reqs, t.node.Node, "", nil, need{})
	case t.claim != nil:
		// A domain chosen for a claim must offer a type for its pods with this one.
		n := need{t.p.res, t.p.extended}
		if len(t.claim.pods) > 0 {
			n.res = t.claim.used.Add(t.p.res)
			if len(t.claim.usedExtended) > 0 {
				n.extended = scheduling.Merge(t.claim.usedExtended, t.p.extended)
			}
		}
		t.domains, t.reqs, err = s.chooseDomains(t.p, t.reqs, nil, t.claim.hostname, t.claim.pool, n)
	}
	if err != nil {
		return t.refuse(StageTopology, err)
	}
	return true
}

// instanceTypeStage: for a claim, the instance type it needs with the pod (see resize).
func (s *solver) instanceTypeStage(t *trial) bool {
	if t.claim == nil {
		return true
	}
	target, extra, err := s.resize(t.claim, t.p, t.reqs)
	if err != nil {
		return t.refuse(StageInstanceType, err)
	}
	t.target, t.extra = target, extra
	return true
}

// typeRefusal is the instance type stage's check of one instance type for a claim: a node of
// the type has room for used (and extended) beside its daemonsets with no host port of ports
// taken by one, within the NodePool's limits (claimState.withinLimits). The look-ahead sizes
// new claims with it too.
func typeRefusal(c *claimState, cand *candidate, used scheduling.Resources, extended corev1.ResourceList, ports []scheduling.HostPort) error {
	if err := cand.admits(used, extended, ports); err != nil {
		return err
	}
	return c.withinLimits(cand.it)
}

// StageRefusal is a stage's refusal of a pod on a node: the stage, and why.
type StageRefusal struct {
	Stage Stage
	Err   error
}

// CheckNode runs the pipeline's node stages that need no other pending pod (room, taints,
// requirements and host ports) for one pod on one node, each on its own, and returns the
// refusal of every stage that turns the pod away, in pipeline order. The pod is read by its
// required constraints only (preferences are the kube-scheduler's scores, not its filters):
// its node selector with any one of its required node affinity terms, and volumes, the zones
// its volumes allow. Topology is left out: its verdict depends on where the other pods are.
// It is the one check of a single pod on a single node outside a solve (provisioning.Mismatch).
func CheckNode(pod *corev1.Pod, n *Node, volumes scheduling.Requirements) []StageRefusal {
	p := newPodInfo(pod, true, volumes)
	prep := n.prepared
	if prep == nil {
		prep = n.prepare()
	}
	node := &nodeState{Node: n, available: prep.available, extended: prep.extended, ports: prep.ports, reqs: prep.reqs}
	var out []StageRefusal
	check := func(stage func(*trial) bool, v *variant) (refusal, bool) {
		t := trial{p: p, v: v, node: node}
		ok := stage(&t)
		return t.why, ok
	}
	for _, stage := range [...]func(*trial) bool{roomStage, taintStage, requirementStage, hostPortStage} {
		why, ok := check(stage, p.variants[0])
		// The required node affinity terms are ORed: the requirements refuse only when every
		// term (a variant each, preferences being ignored) does.
		for _, v := range p.variants[1:] {
			if ok {
				break
			}
			_, ok = check(stage, v)
		}
		if ok {
			continue
		}
		err := why.asError()
		if why.stage == StageRoom {
			// With the amounts, which the pipeline does not spend time on.
			if detailed := scheduling.Fits(p.requests, n.Available); detailed != nil {
				err = detailed
			}
		}
		out = append(out, StageRefusal{Stage: why.stage, Err: err})
	}
	return out
}
