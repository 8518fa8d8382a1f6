package sim

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// candidate is one way to launch a claim: an instance type bought as one of its offerings.
type candidate struct {
	it       *cloudprovider.InstanceType
	offering cloudprovider.Offering
}

func (c candidate) id() cloudprovider.OfferingID { return c.offering.ID(c.it.Name) }

// capacityTypeRank orders capacity types by preference: capacity already paid for, then the
// cheap interruptible kind, then on-demand; the claim's requirements decide which are allowed.
func capacityTypeRank(ct string) int {
	switch ct {
	case karpv1.CapacityTypeReserved:
		return 0
	case karpv1.CapacityTypeSpot:
		return 1
	default:
		return 2
	}
}

// launchRequest is what a claim asks of the cloud.
type launchRequest struct {
	// reqs are the claim's requirements.
	reqs scheduling.Requirements
	// requests must fit the instance type's allocatable resources.
	requests corev1.ResourceList
	// fixed are labels every instance launched for the claim carries whatever its type (region,
	// NodePool, NodeClass).
	fixed map[string]string
}

// candidates returns every offering of types that can launch the request, in the order the
// cloud tries them: preferred capacity type first, then cheapest, then by instance type name,
// zone and capacity type, so the order is total and deterministic. Availability is not
// considered: launching an unavailable offering is what fails with insufficient capacity.
//
// Only well-known labels are checked: the cloud decides them, while any other label of the
// claim (from its NodePool's template) is Karpenter's to put on the node. A label the instance
// type lacks (instance-gpu-name on a type without GPUs) satisfies only requirements that allow
// it to be absent.
func candidates(types *typeSet, req launchRequest) []candidate {
	var zoneReq, ctReq *scheduling.Requirement
	var typeReqs []scheduling.Requirement
	for _, r := range req.reqs.All() {
		switch {
		case !scheduling.IsWellKnownLabel(r.Key):
		case r.Key == corev1.LabelTopologyZone:
			zoneReq = &r
		case r.Key == karpv1.CapacityTypeLabelKey:
			ctReq = &r
		default:
			typeReqs = append(typeReqs, r)
		}
	}

	// With a finite instance-type requirement, as Karpenter's claims have, look the types up
	// rather than scanning the catalog.
	its := types.base
	if r, ok := req.reqs.Get(corev1.LabelInstanceTypeStable); ok && r.IsFinite() {
		its = its[:0:0]
		for _, name := range r.Values() {
			if it, ok := types.byName[name]; ok {
				its = append(its, it)
			}
		}
	}

	var out []candidate
	for _, it := range its {
		if !typeMatches(it, typeReqs, req.fixed) || scheduling.Fits(req.requests, it.Allocatable()) != nil {
			continue
		}
		for _, o := range it.Offerings {
			if (zoneReq != nil && !zoneReq.Has(o.Zone)) || (ctReq != nil && !ctReq.Has(o.CapacityType)) {
				continue
			}
			out = append(out, candidate{it: it, offering: o})
		}
	}
	slices.SortFunc(out, func(a, b candidate) int {
		return cmp.Or(
			cmp.Compare(capacityTypeRank(a.offering.CapacityType), capacityTypeRank(b.offering.CapacityType)),
			cmp.Compare(a.offering.Price, b.offering.Price),
			cmp.Compare(a.it.Name, b.it.Name),
			cmp.Compare(a.offering.Zone, b.offering.Zone),
			cmp.Compare(a.offering.CapacityType, b.offering.CapacityType),
		)
	})
	return out
}

// typeMatches reports whether an instance of the type, carrying the fixed labels too, meets
// every requirement.
func typeMatches(it *cloudprovider.InstanceType, reqs []scheduling.Requirement, fixed map[string]string) bool {
	for _, r := range reqs {
		v, ok := it.Labels[r.Key]
		if !ok {
			v, ok = fixed[r.Key]
		}
		if ok && !r.Has(v) || !ok && !r.AllowsAbsent() {
			return false
		}
	}
	return true
}
