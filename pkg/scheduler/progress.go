package scheduler

import (
	"maps"
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Values of Results.PendingByEffectiveZone besides a zone's name, and so of the zone label of
// karpenter_scheduler_pending_pods_by_effective_zone_count.
const (
	// EffectiveZoneFlexible: the pod may still go to more than one zone.
	EffectiveZoneFlexible = "flexible"
	// EffectiveZoneNone: no zone satisfies every zonal constraint of the pod.
	EffectiveZoneNone = "none"
)

// Progress tells how far a run has got while it runs; it is safe to read from another
// goroutine. The zero value is ready to use.
type Progress struct {
	queued atomic.Int64
}

// Queued is the number of pods the run has not placed yet: those it has not tried in its
// current round, and those that failed in it and will be tried again.
func (p *Progress) Queued() int {
	if p == nil {
		return 0
	}
	return int(p.queued.Load())
}

// setQueued records the queue depth; a nil Progress records nothing.
func (p *Progress) setQueued(n int) {
	if p != nil {
		p.queued.Store(int64(n))
	}
}

// countEffectiveZones counts the pending pods of the run by effective zone, before any is
// placed: the zone their zonal constraints leave (their required zones, their volumes' zones
// and the zones their own topology groups admit), EffectiveZoneFlexible when several remain,
// EffectiveZoneNone when none does. Pods of a shape share their topology groups, so those are
// worked out once per shape; their required zones may differ (a shape's requirements hold a
// preference that another pod of it requires), so those are read per pod. s.pending must
// hold the shapes of s.pods.
func (s *solver) countEffectiveZones() map[string]int {
	out := map[string]int{}
	byShape := make(map[*shapeCount]topologyZoneSet, len(s.shapes))
	var known []string // the zones of the nodes and NodePools, read when first needed
	knownZones := func() []string {
		if known == nil {
			known = s.knownZones()
		}
		return known
	}
	for _, p := range s.pods {
		if p.pod.Status.Phase != corev1.PodPending {
			continue
		}
		sc := s.pending[p.shapeKey()]
		topology, ok := byShape[sc]
		if !ok {
			topology = s.topologyZones(sc.example, knownZones)
			byShape[sc] = topology
		}
		out[effectiveZone(requiredZone(p, s.volumes[p.pod.UID]), topology)]++
	}
	return out
}

// effectiveZone is the effective zone of a pod whose required node selection (not its
// preferences) and volumes leave the zones required, and whose strictest variant's topology
// groups leave topology, as Karpenter's.
func effectiveZone(required scheduling.Requirement, topology topologyZoneSet) string {
	if !topology.satisfiable {
		return EffectiveZoneNone
	}
	var candidates []string
	switch {
	case required.IsFinite():
		candidates = required.Values()
	case topology.constrained:
		candidates = topology.zones
	default:
		return EffectiveZoneFlexible
	}
	var match string
	matches := 0
	for _, zone := range candidates {
		if !required.Has(zone) || topology.constrained && !slices.Contains(topology.zones, zone) {
			continue
		}
		if matches++; matches > 1 {
			return EffectiveZoneFlexible
		}
		match = zone
	}
	if matches == 0 {
		return EffectiveZoneNone
	}
	return match
}

// requiredZone is the zone requirement of a pod's node selector, first required node affinity
// term (its strictest variant's, without preferences) and volumes; Exists when they say nothing
// of zones.
func requiredZone(p *podInfo, volumes scheduling.Requirements) scheduling.Requirement {
	if r, ok := p.variants[0].required.Intersect(volumes).Get(corev1.LabelTopologyZone); ok {
		return r
	}
	return scheduling.MustRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpExists)
}

// topologyZoneSet is what a pod's zonal topology groups leave of the zones.
type topologyZoneSet struct {
	// zones are the zones every group admits the pod in, when constrained.
	zones []string
	// constrained is false when the pod has no zonal topology group.
	constrained bool
	// satisfiable is false when a group admits the pod nowhere.
	satisfiable bool
}

// topologyZones are the zones that every zonal topology group of the pod's strictest variant
// admits it in, before anything is placed.
//
// It runs before the first round, so the pod's current variant is its strictest.
func (s *solver) topologyZones(p *podInfo, knownZones func() []string) topologyZoneSet {
	own, err := s.topology.owned(p)
	if err != nil {
		return topologyZoneSet{satisfiable: true}
	}
	var out topologyZoneSet
	// As Karpenter, the zones a group admits are narrowed by the pod's requirements with its
	// preferences held.
	wanted, narrowed := p.variants[0].requirements.Get(corev1.LabelTopologyZone)
	for _, g := range own {
		if g.key != corev1.LabelTopologyZone {
			continue
		}
		var universe []string
		if g.kind == spreadGroup {
			universe = slices.Sorted(maps.Keys(g.domains))
		} else {
			universe = knownZones()
		}
		var admitted []string
		for _, zone := range universe {
			if (!narrowed || wanted.Has(zone)) && admits(p.pod, g, zone, true) == nil && (!out.constrained || slices.Contains(out.zones, zone)) {
				admitted = append(admitted, zone)
			}
		}
		if len(admitted) == 0 {
			return topologyZoneSet{constrained: true}
		}
		out.zones, out.constrained = admitted, true
	}
	out.satisfiable = true
	return out
}

// knownZones are the zones of the existing nodes and those the NodePools can create nodes in,
// sorted.
func (s *solver) knownZones() []string {
	seen := map[string]bool{}
	for _, n := range s.nodes {
		if zone, ok := existingDomain(n.Node, corev1.LabelTopologyZone); ok {
			seen[zone] = true
		}
	}
	for _, ps := range s.pools {
		for _, zone := range creatableValues(ps, ps.Requirements, corev1.LabelTopologyZone) {
			seen[zone] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
