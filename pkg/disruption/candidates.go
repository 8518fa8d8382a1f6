package disruption

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/health"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// Reasons of the Consolidatable and Drifted conditions.
const (
	ReasonConsolidatable        = "Consolidatable"
	ReasonConsolidateAfterNever = "ConsolidateAfterNever"
	ReasonRecentPodEvent        = "RecentPodEvent"
	ReasonNodePoolDrifted       = "NodePoolDrifted"
	ReasonRequirementsDrifted   = "RequirementsDrifted"
	ReasonInstanceTypeNotFound  = "InstanceTypeNotFound"
)

// instanceTypeCheckAge is how old a claim must be before its instance type is looked for among
// its NodePool's, as Karpenter v1.15.0's drift controller waits: a cloud-generated set of
// options, not a user's field, so drift from it may come late.
const instanceTypeCheckAge = time.Hour

// Event reasons of disruption, as Karpenter's.
const (
	// EventReasonInvalidDoNotDisrupt: a pod's karpenter.sh/do-not-disrupt value is neither
	// "true" nor a positive duration, and is ignored.
	EventReasonInvalidDoNotDisrupt events.Reason = "InvalidDoNotDisruptAnnotation"
	// EventReasonBlocked: a node (do-not-disrupt, PDB) or a NodePool (budget) holds disruption.
	EventReasonBlocked events.Reason = "DisruptionBlocked"
	// EventReasonUnconsolidatable: consolidation can neither delete nor replace the node.
	EventReasonUnconsolidatable events.Reason = "Unconsolidatable"
	// EventReasonLaunching: a replacement is launched for a disruption.
	EventReasonLaunching events.Reason = "DisruptionLaunching"
	// EventReasonWaitingReadiness: a disruption waits for its replacement to initialize.
	EventReasonWaitingReadiness events.Reason = "DisruptionWaitingReadiness"
	// EventReasonTerminating: the node is being deleted for a disruption.
	EventReasonTerminating events.Reason = "DisruptionTerminating"
	// EventReasonAbandoned: a disruption was given up (its replacement failed) and undone.
	EventReasonAbandoned events.Reason = "DisruptionAbandoned"
	// EventReasonConsolidationCandidate: consolidation found a replacement for the node.
	EventReasonConsolidationCandidate events.Reason = "ConsolidationCandidate"
	// EventReasonConsolidationRejected: a consolidation of the node failed its validation.
	EventReasonConsolidationRejected events.Reason = "ConsolidationRejected"
	// EventReasonConsolidationApproved: the Balanced policy approved a consolidation.
	EventReasonConsolidationApproved events.Reason = "ConsolidationApproved"
)

// Candidate is a node disruption may act on: initialized, of a dynamic NodePool, not being
// deleted. A protected candidate (NodeProtection or PodProtection set) is left alone, but by
// drift of a claim with a terminationGracePeriod, which ignores PodProtection (the drain
// honours it until the grace period ends), as Karpenter does.
type Candidate struct {
	*state.StateNode
	// NodePool the node belongs to.
	NodePool *karpv1.NodePool
	// Pods are the pods that must move if the node goes: not daemonset or static pods, not
	// terminal, not being deleted.
	Pods []*corev1.Pod
	// InstanceType, CapacityType and Zone are read from the node's labels.
	InstanceType, CapacityType, Zone string
	// Price is the node's price, $/hour: its instance type's offering in its zone and capacity
	// type. Zero when unknown.
	Price float64
	// RescheduleCost is what disrupting the node costs: 1, plus the positive eviction costs
	// of its pods (EvictionCost), as Karpenter's RescheduleDisruptionCost.
	RescheduleCost float64
	// Consolidatable: consolidateAfter has passed since the node's last pod event.
	Consolidatable bool
	// Drifted is why the node drifted from its NodePool, or "".
	Drifted string
	// NodeProtection says why the node itself may not be voluntarily disrupted (it is
	// nominated for pods, or the karpenter.sh/do-not-disrupt annotation is on its Node or
	// NodeClaim), or "".
	NodeProtection string
	// PodProtection says why its pods may not be voluntarily disrupted (a do-not-disrupt pod,
	// or a PodDisruptionBudget that allows no disruption), or "".
	PodProtection string
	// Repair is the repair decision for the node when a repair policy applies to it now
	// (MethodRepair), else nil.
	Repair *health.Result
	// RebootEscalated: Repair's policy reboots the node, but its NodeClaim was rebooted
	// RebootsBeforeReplacement times within RebootHistoryWindow, so repair replaces it.
	RebootEscalated bool
	// DrainBound, for a node repair replaces, bounds its drain (see drainBound): the
	// controller sets its NodeClaim's termination timestamp to this long after it deletes it.
	// Nil leaves the NodeClaim's own terminationGracePeriod, if any, to bound it.
	DrainBound *time.Duration
}

// protected says why no voluntary method may disrupt the candidate, or "".
// IsEmpty reports whether disrupting the node costs nothing beyond the node itself: no pod to
// move, or only pods whose eviction costs nothing (a disruption cost or priority low enough),
// as Karpenter's Candidate.IsEmpty. Such a node is emptiness's, under its Empty budget.
func (c *Candidate) IsEmpty() bool { return c.RescheduleCost <= perNodeRescheduleCost }

// SavingsRatio is the node's price per unit of reschedule cost: consolidation tries the
// highest first, as Karpenter's sortCandidates.
func (c *Candidate) SavingsRatio() float64 { return c.Price / c.RescheduleCost }

func (c *Candidate) protected() string {
	if c.NodeProtection != "" {
		return c.NodeProtection
	}
	return c.PodProtection
}

// mayDrift reports whether drift may replace the candidate despite its protection: it has
// none, or only its pods are protected and its NodeClaim has a terminationGracePeriod, which
// bounds how long they may hold the drain.
func (c *Candidate) mayDrift() bool {
	return c.NodeProtection == "" && (c.PodProtection == "" || c.NodeClaim.Spec.TerminationGracePeriod != nil)
}

// ClaimStatus is what a pass concludes about an initialized NodeClaim, for its Consolidatable
// and Drifted conditions.
type ClaimStatus struct {
	// NodeClaim is the claim's name.
	NodeClaim string
	// Consolidatable is the condition's status; Reason and Message explain it.
	Consolidatable                              bool
	ConsolidatableReason, ConsolidatableMessage string
	// Drifted is the drift reason, or "" when the claim has not drifted.
	Drifted string
}

// Blocked is a node that would be disrupted but may not be, and why.
type Blocked struct {
	// Node and NodeClaim name the node.
	Node, NodeClaim string
	// Reason says what protects it, in Karpenter's words, such as
	// "Pdb prevents pod evictions (PodDisruptionBudget=[default/web])".
	Reason string
	// Method is MethodRepair when node repair wanted the node (it is unhealthy past its
	// policy's toleration); empty for the protections every other method shares.
	Method string
}

// nodeProtection says why a node itself may not be voluntarily disrupted at now, or "": it is
// nominated for pods (checked first, as Karpenter's ValidateNodeDisruptable does), or its own
// annotation (or its NodeClaim's) says so. Karpenter's words, as its DisruptionBlocked Events
// say them.
func nodeProtection(sn *state.StateNode, now time.Time) string {
	if sn.Nominated(now) {
		return "Node is nominated for a pending pod"
	}
	if sn.Node.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true" || sn.NodeClaim.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true" {
		return fmt.Sprintf("Disruption is blocked through the %q annotation", karpv1.DoNotDisruptAnnotationKey)
	}
	return ""
}

// podProtection says why a node's pods may not be voluntarily disrupted at now, or "":
// Karpenter's words, as its DisruptionBlocked Events say them.
func podProtection(pods []*corev1.Pod, pdbs *state.PDBIndex, now time.Time) string {
	for _, pod := range pods {
		if p := karpv1.PodDoNotDisrupt(pod, now); p.Active {
			return fmt.Sprintf("Pod has %q annotation (Pod=%s/%s)", karpv1.DoNotDisruptAnnotationKey, pod.Namespace, pod.Name)
		}
	}
	for _, pod := range pods {
		if pdb := pdbs.Blocking(pod); pdb != nil {
			return fmt.Sprintf("Pdb prevents pod evictions (PodDisruptionBudget=[%s/%s])", pdb.Namespace, pdb.Name)
		}
	}
	return ""
}

// consolidatable evaluates the Consolidatable condition of an initialized claim.
func consolidatable(claim *karpv1.NodeClaim, np *karpv1.NodePool, now time.Time) (bool, string, string) {
	at, ok := consolidatableAt(claim, np)
	if !ok {
		return false, ReasonConsolidateAfterNever, "consolidateAfter is Never"
	}
	if !now.Before(at) {
		return true, ReasonConsolidatable, ""
	}
	since := lastPodEvent(claim)
	return false, ReasonRecentPodEvent, fmt.Sprintf("last pod event at %s, consolidateAfter %s", since.UTC().Format(time.RFC3339), at.Sub(since))
}

// lastPodEvent is when consolidateAfter starts counting for a claim: its last pod event, or its
// initialization if later.
func lastPodEvent(claim *karpv1.NodeClaim) time.Time {
	since := time.Time{}
	if c := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeInitialized); c != nil {
		since = c.LastTransitionTime.Time
	}
	if t := claim.Status.LastPodEventTime.Time; t.After(since) {
		since = t
	}
	return since
}

// consolidatableAt is when a claim becomes consolidatable: its consolidateAfter (none when
// unset) after its last pod event; false when consolidateAfter is Never.
func consolidatableAt(claim *karpv1.NodeClaim, np *karpv1.NodePool) (time.Time, bool) {
	after := np.Spec.Disruption.ConsolidateAfter
	wait := time.Duration(0)
	if !after.IsZero() {
		if after.IsNever() {
			return time.Time{}, false
		}
		wait = *after.Duration
	}
	return lastPodEvent(claim).Add(wait), true
}

// drifted says why a claim no longer matches its NodePool, or "": its NodePool's hash, then its
// requirements, then (once the claim is instanceTypeCheckAge old) its instance type among the
// NodePool's, its, when those are known, then the cloud's reason; Karpenter v1.15.0's order
// (nodeclaim/disruption/drift.go isDrifted).
func drifted(claim *karpv1.NodeClaim, nodeLabels map[string]string, np *karpv1.NodePool, its []*cloudprovider.InstanceType, now time.Time, cloudReason cloudprovider.DriftReason) string {
	if h, ok := claim.Annotations[karpv1.NodePoolHashAnnotationKey]; ok {
		if want, known := nodepool.HashFor(np, claim.Annotations[karpv1.NodePoolHashVersionAnnotationKey]); known && h != want {
			return ReasonNodePoolDrifted
		}
	}
	if reqs, err := scheduling.NodePoolRequirements(np, nil); err == nil {
		for _, r := range reqs.All() {
			v, ok := nodeLabels[r.Key]
			if !ok {
				v, ok = claim.Labels[r.Key]
			}
			if ok && !r.Has(v) {
				return ReasonRequirementsDrifted
			}
		}
	}
	if len(its) > 0 && now.Sub(claim.CreationTimestamp.Time) > instanceTypeCheckAge && !instanceTypeFound(claim, its) {
		return ReasonInstanceTypeNotFound
	}
	return string(cloudReason)
}

// instanceTypeFound reports whether the claim's instance type is still among its NodePool's,
// its, with an offering, available or not, in the claim's zone and of its capacity type, as
// Karpenter v1.15.0's instanceTypeNotFound: a reserved claim may also find an on-demand
// offering, and its reservation is not looked for, since a reservation that ends turns its
// nodes on-demand (the capacity type controller relabels them, perhaps not yet).
func instanceTypeFound(claim *karpv1.NodeClaim, its []*cloudprovider.InstanceType) bool {
	name := claim.Labels[corev1.LabelInstanceTypeStable]
	i := slices.IndexFunc(its, func(it *cloudprovider.InstanceType) bool { return it.Name == name })
	if name == "" || i < 0 {
		return false
	}
	zone, ct := claim.Labels[corev1.LabelTopologyZone], claim.Labels[karpv1.CapacityTypeLabelKey]
	return slices.ContainsFunc(its[i].Offerings, func(o cloudprovider.Offering) bool {
		return (zone == "" || o.Zone == zone) &&
			(ct == "" || o.CapacityType == ct || o.CapacityType == cloudprovider.CapacityTypeAfterReservation(ct))
	})
}

// NodePrice is a registered node's price, $/hour, read from the instance types as a
// candidate's Candidate.Price (cloudprovider.NodePrice); 0 when they do not price it.
func NodePrice(sn *state.StateNode, lists ...[]*cloudprovider.InstanceType) float64 {
	price, _ := cloudprovider.NodePrice(func(key string) string { return nodeLabel(sn, key) }, lists...)
	return price
}

func nodeLabel(sn *state.StateNode, key string) string {
	if v, ok := sn.Node.Labels[key]; ok {
		return v
	}
	return sn.NodeClaim.Labels[key]
}
