package scheduler

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// instanceTypeFilterError says why none of the NodePool's instance types can take pods with
// these requests under reqs, in Karpenter's words: which of the three criteria — meeting the
// scheduling requirements (labels), having enough resources, having an available offering in
// an allowed zone and capacity type — no instance type met, alone or together. As Karpenter,
// only the instance types the NodePool's own requirements allow are considered.
func (ps *poolState) instanceTypeFilterError(reqs scheduling.Requirements, used scheduling.Resources, extended corev1.ResourceList) error {
	var requirementsMet, fits, hasOffering, requirementsAndFits, requirementsAndOffering, fitsAndOffering bool
	for _, cand := range ps.candidatesFor(ps.Requirements) {
		r := labelsCompatible(cand.it, reqs)
		_, o := ps.ledger.cheapest(cand.it, reqs)
		f := used.Fits(cand.room) && extendedFits(cand, extended)
		requirementsMet = requirementsMet || r
		fits = fits || f
		hasOffering = hasOffering || o
		requirementsAndFits = requirementsAndFits || r && f && !o
		requirementsAndOffering = requirementsAndOffering || r && o && !f
		fitsAndOffering = fitsAndOffering || f && o && !r
	}
	var what string
	switch {
	case !requirementsMet && !fits && !hasOffering:
		what = "no instance type met the scheduling requirements or had enough resources or had a required offering"
	case !requirementsMet && !fits:
		what = "no instance type met the scheduling requirements or had enough resources"
	case !requirementsMet && !hasOffering:
		what = "no instance type met the scheduling requirements or had a required offering"
	case !fits && !hasOffering:
		what = "no instance type had enough resources or had a required offering"
	case !requirementsMet:
		what = "no instance type met all requirements"
	case !fits:
		what = "no instance type has enough resources"
	case !hasOffering:
		what = "no instance type has the required offering"
	case requirementsAndFits:
		what = "no instance type which met the scheduling requirements and had enough resources, had a required offering"
	case fitsAndOffering:
		what = "no instance type which had enough resources and the required offering met the scheduling requirements"
	case requirementsAndOffering:
		what = "no instance type which met the scheduling requirements and the required offering had the required resources"
	default:
		what = "no instance type met the requirements/resources/offering tuple"
	}
	msg := what + ", " + filterDetail(reqs, used, extended)
	if !fits && used.MilliCPU >= 1_000_000_000 {
		// Karpenter's hint for a request of a million CPUs or more.
		msg += " (CPU request >= 1 Million, m vs M typo?)"
	}
	return fmt.Errorf("%s", msg)
}

// filterDetail is the end of Karpenter's instance type errors: the requirements (sorted,
// without the hostname's) and the requests (as JSON), as Karpenter prints them.
func filterDetail(reqs scheduling.Requirements, used scheduling.Resources, extended corev1.ResourceList) string {
	var rendered []string
	for _, r := range reqs.All() {
		if r.Key != corev1.LabelHostname {
			rendered = append(rendered, r.String())
		}
	}
	sort.Strings(rendered)
	// As Karpenter's: the resources requested, and the pod count.
	list := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(used.Pods, resource.DecimalSI)}
	if used.MilliCPU > 0 {
		list[corev1.ResourceCPU] = *resource.NewMilliQuantity(used.MilliCPU, resource.DecimalSI)
	}
	if used.Memory > 0 {
		list[corev1.ResourceMemory] = *resource.NewQuantity(used.Memory, resource.BinarySI)
	}
	if used.EphemeralStorage > 0 {
		list[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(used.EphemeralStorage, resource.BinarySI)
	}
	for name, q := range extended {
		list[name] = q
	}
	resources, err := json.Marshal(list)
	if err != nil {
		resources = []byte(err.Error())
	}
	return fmt.Sprintf("requirements=%s, resources=%s", strings.Join(rendered, ", "), resources)
}
