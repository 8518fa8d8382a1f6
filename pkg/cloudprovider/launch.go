package cloudprovider

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// LaunchCandidate is one way to launch a claim: an instance type bought as one of its offerings.
type LaunchCandidate struct {
	// InstanceType is the type to launch.
	InstanceType *InstanceType
	// Offering is where and how it is bought.
	Offering Offering
}

// ID names the candidate's offering.
func (c LaunchCandidate) ID() OfferingID { return c.Offering.ID(c.InstanceType.Name) }

// CapacityTypeRank orders capacity types by preference: capacity already paid for, then the
// cheap interruptible kind, then on-demand; the claim's requirements decide which are allowed.
func CapacityTypeRank(ct string) int {
	switch ct {
	case karpv1.CapacityTypeReserved:
		return 0
	case karpv1.CapacityTypeSpot:
		return 1
	default:
		return 2
	}
}

// LaunchRequest is what a claim asks of the cloud.
type LaunchRequest struct {
	// Requirements are the claim's requirements.
	Requirements scheduling.Requirements
	// Requests must fit the instance type's allocatable resources.
	Requests corev1.ResourceList
	// Fixed are labels every instance launched for the claim carries whatever its type (region,
	// NodePool, NodeClass).
	Fixed map[string]string
}

// LaunchCandidates returns every offering of the types that can launch the request, in the
// order a cloud should try them: preferred capacity type first, then cheapest, then by instance
// type name, zone, capacity type, reservation and partition, so the order is total and
// deterministic. Availability is
// not considered: launching an unavailable offering is what fails with insufficient capacity.
// byName, when not nil, indexes types by name; a finite instance-type requirement (as
// Karpenter's claims have) is then looked up rather than scanned.
//
// Only well-known labels are checked: the cloud decides them, while any other label of the
// claim (from its NodePool's template) is Karpenter's to put on the node. A label the instance
// type lacks (instance-gpu-name on a type without GPUs) satisfies only requirements that allow
// it to be absent.
func LaunchCandidates(types []*InstanceType, byName map[string]*InstanceType, req LaunchRequest) []LaunchCandidate {
	offerings := NewOfferingFilter(req.Requirements)
	var typeReqs []scheduling.Requirement
	for _, r := range req.Requirements.All() {
		if scheduling.IsWellKnownLabel(r.Key) && !IsOfferingKey(r.Key) {
			typeReqs = append(typeReqs, r)
		}
	}

	its := types
	if r, ok := req.Requirements.Get(corev1.LabelInstanceTypeStable); ok && r.IsFinite() && byName != nil {
		its = nil
		for _, name := range r.Values() {
			if it, ok := byName[name]; ok {
				its = append(its, it)
			}
		}
	}

	var out []LaunchCandidate
	for _, it := range its {
		if !typeMatches(it, typeReqs, req.Fixed) || scheduling.Fits(req.Requests, it.Allocatable()) != nil {
			continue
		}
		for _, o := range it.Offerings {
			if !offerings.Allows(o) {
				continue
			}
			out = append(out, LaunchCandidate{InstanceType: it, Offering: o})
		}
	}
	slices.SortFunc(out, func(a, b LaunchCandidate) int {
		return cmp.Or(
			cmp.Compare(CapacityTypeRank(a.Offering.CapacityType), CapacityTypeRank(b.Offering.CapacityType)),
			cmp.Compare(a.Offering.Price, b.Offering.Price),
			cmp.Compare(a.InstanceType.Name, b.InstanceType.Name),
			cmp.Compare(a.Offering.Zone, b.Offering.Zone),
			cmp.Compare(a.Offering.CapacityType, b.Offering.CapacityType),
			cmp.Compare(a.Offering.ReservationID, b.Offering.ReservationID),
			cmp.Compare(a.Offering.PlacementPartition, b.Offering.PlacementPartition),
		)
	})
	return out
}

// typeMatches reports whether an instance of the type, carrying the fixed labels too, meets
// every requirement. A label chosen at launch (scheduling.LaunchChoices) and not fixed meets a
// requirement that allows one of its values.
func typeMatches(it *InstanceType, reqs []scheduling.Requirement, fixed map[string]string) bool {
	for _, r := range reqs {
		v, ok := it.Labels[r.Key]
		if !ok {
			v, ok = fixed[r.Key]
		}
		if values, choice := scheduling.LaunchChoices(r.Key); choice && !ok {
			if !slices.ContainsFunc(values, r.Has) {
				return false
			}
			continue
		}
		if ok && !r.Has(v) || !ok && !r.AllowsAbsent() {
			return false
		}
	}
	return true
}

// ClaimNodePool is the NodePool a claim belongs to: its karpenter.sh/nodepool label, else the
// one value its requirements allow for that key, else "".
func ClaimNodePool(claim *karpv1.NodeClaim, reqs scheduling.Requirements) string {
	if np := claim.Labels[karpv1.NodePoolLabelKey]; np != "" {
		return np
	}
	if r, ok := reqs.Get(karpv1.NodePoolLabelKey); ok {
		if vs := r.Values(); len(vs) == 1 {
			return vs[0]
		}
	}
	return ""
}
