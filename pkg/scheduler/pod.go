package scheduler

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// podInfo is a pending pod with everything the pipeline reads from it computed once.
type podInfo struct {
	pod          *corev1.Pod
	requests     corev1.ResourceList
	res          scheduling.Resources
	extended     corev1.ResourceList // requests beyond cpu, memory, pods and ephemeral-storage
	hostPorts    []scheduling.HostPort
	variants     []*variant         // strictest first; each relaxes one preference of the previous
	current      int                // index of the variant being tried
	placedOn     string             // the existing node or in-flight claim it was placed on
	avoid        []string           // existing nodes and in-flight claims it must not go to
	keys         []string           // shape key per variant, computed on first use
	groups       [][]*topologyGroup // topology groups per variant, computed on first use
	selecting    []*topologyGroup   // groups whose selectors match the pod (labels do not vary)
	requiredAnti []*topologyGroup   // groups of its required anti-affinity terms
	priority     int32
}

func (p *podInfo) variant() *variant { return p.variants[p.current] }

// variant is one way of reading a pod's constraints: the required ones plus the preferences not
// relaxed yet. Pods whose variants are equal (and whose requests, labels and tolerations are)
// share a shape.
type variant struct {
	// requirements: nodeSelector ∧ one required node affinity term ∧ kept preferred terms.
	requirements scheduling.Requirements
	// required: nodeSelector ∧ the required node affinity term, without preferences or volumes.
	required scheduling.Requirements
	// requirementsErr is set when the node selector terms cannot be parsed.
	requirementsErr error
	// nextTerms are the required node affinity terms not tried yet (ORed alternatives).
	nextTerms []corev1.NodeSelectorTerm
	// preferredNode are the preferred node affinity terms not relaxed yet, heaviest first; the
	// first is held as required.
	preferredNode []corev1.PreferredSchedulingTerm
	// affinity and antiAffinity are required terms plus kept preferred ones.
	affinity, antiAffinity []corev1.PodAffinityTerm
	// preferredAffinity and preferredAntiAffinity are the kept preferred terms, by weight.
	preferredAffinity, preferredAntiAffinity []corev1.WeightedPodAffinityTerm
	// spread are DoNotSchedule constraints plus kept ScheduleAnyway ones.
	spread []corev1.TopologySpreadConstraint
	// scheduleAnyway are the kept ScheduleAnyway constraints.
	scheduleAnyway []corev1.TopologySpreadConstraint
	// avoidPreferNoSchedule treats PreferNoSchedule taints as NoSchedule (the last relaxation
	// tolerates them).
	avoidPreferNoSchedule bool
	// relaxed describes the relaxation that produced this variant, for logs.
	relaxed string
}

// newPodInfo reads a pod.
func newPodInfo(pod *corev1.Pod, ignorePreferences bool, volumes scheduling.Requirements) *podInfo {
	requests := scheduling.PodRequests(pod)
	extended := corev1.ResourceList{}
	for name, q := range requests {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
		default:
			if !q.IsZero() {
				extended[name] = q
			}
		}
	}
	p := &podInfo{
		pod:       pod,
		requests:  requests,
		res:       scheduling.ResourcesOf(requests),
		extended:  extended,
		hostPorts: scheduling.PodHostPorts(pod),
	}
	if pod.Spec.Priority != nil {
		p.priority = *pod.Spec.Priority
	}
	p.variants = variants(pod, ignorePreferences)
	if volumes.Len() > 0 {
		for _, v := range p.variants {
			v.requirements = v.requirements.Intersect(volumes)
		}
	}
	return p
}

// PodInfos remembers, across Solves, what a solve derives from each pod on its own: its
// requests, host ports, priority and the readings of its constraints (variants), with their
// shape keys. Callers that solve the same pods many times keep one, as disruption does for
// its what-ifs and re-packs, each of which would otherwise derive them again. Pods are known
// by pointer: a pod must not change while the PodInfos knows it (the read-only objects of a
// cache, or of the simulator's store, are replaced by a new object when they change, never
// modified). Prune forgets the pods not solved since the last Prune. It is not safe for
// concurrent use; the zero value is not usable (NewPodInfos).
type PodInfos struct {
	known map[podInfoKey]*knownPod
	round uint64
}

type knownPod struct {
	info  *podInfo
	round uint64
}

// NewPodInfos returns an empty PodInfos.
func NewPodInfos() *PodInfos { return &PodInfos{known: map[podInfoKey]*knownPod{}} }

// Prune forgets the pods no solve was given since the last Prune.
func (i *PodInfos) Prune() {
	for key, k := range i.known {
		if k.round != i.round {
			delete(i.known, key)
		}
	}
	i.round++
}

// podInfoKey is what a podInfo's derived parts depend on.
type podInfoKey struct {
	pod               *corev1.Pod
	ignorePreferences bool
	volumes           string // Requirements.Fingerprint of the pod's volume requirements
}

// get returns a new podInfo of pod for one solve, sharing the derived parts of an earlier one
// (which no solve changes). A nil PodInfos derives them afresh.
func (i *PodInfos) get(pod *corev1.Pod, ignorePreferences bool, volumes scheduling.Requirements) *podInfo {
	if i == nil {
		return newPodInfo(pod, ignorePreferences, volumes)
	}
	key := podInfoKey{pod: pod, ignorePreferences: ignorePreferences, volumes: volumes.Fingerprint()}
	k := i.known[key]
	if k == nil {
		k = &knownPod{info: newPodInfo(pod, ignorePreferences, volumes)}
		k.info.keys = make([]string, len(k.info.variants))
		i.known[key] = k
	}
	k.round = i.round
	known := k.info
	return &podInfo{pod: pod, requests: known.requests, res: known.res, extended: known.extended, hostPorts: known.hostPorts,
		variants: known.variants, keys: known.keys, priority: known.priority}
}

// variants lists the ways of reading a pod's constraints, strictest first.
func variants(pod *corev1.Pod, ignorePreferences bool) []*variant {
	v := &variant{avoidPreferNoSchedule: !ignorePreferences}
	if a := pod.Spec.Affinity; a != nil {
		if na := a.NodeAffinity; na != nil {
			if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
				v.nextTerms = r.NodeSelectorTerms
			}
			if !ignorePreferences {
				v.preferredNode = sortedByWeight(na.PreferredDuringSchedulingIgnoredDuringExecution, func(t corev1.PreferredSchedulingTerm) int32 { return t.Weight })
			}
		}
		if pa := a.PodAffinity; pa != nil {
			v.affinity = pa.RequiredDuringSchedulingIgnoredDuringExecution
			if !ignorePreferences {
				v.preferredAffinity = sortedByWeight(pa.PreferredDuringSchedulingIgnoredDuringExecution, func(t corev1.WeightedPodAffinityTerm) int32 { return t.Weight })
			}
		}
		if paa := a.PodAntiAffinity; paa != nil {
			v.antiAffinity = paa.RequiredDuringSchedulingIgnoredDuringExecution
			if !ignorePreferences {
				v.preferredAntiAffinity = sortedByWeight(paa.PreferredDuringSchedulingIgnoredDuringExecution, func(t corev1.WeightedPodAffinityTerm) int32 { return t.Weight })
			}
		}
	}
	for _, c := range pod.Spec.TopologySpreadConstraints {
		switch {
		case c.WhenUnsatisfiable != corev1.ScheduleAnyway:
			v.spread = append(v.spread, c)
		case !ignorePreferences:
			v.scheduleAnyway = append(v.scheduleAnyway, c)
		}
	}
	// The first required term is tried first; the others wait as alternatives.
	var first *corev1.NodeSelectorTerm
	if len(v.nextTerms) > 0 {
		first, v.nextTerms = &v.nextTerms[0], v.nextTerms[1:]
	}
	v.build(pod, first)
	out := []*variant{v}
	for {
		next := out[len(out)-1].relax(pod)
		if next == nil {
			return out
		}
		out = append(out, next)
	}
}

// sortedByWeight returns terms heaviest first (stable, so equal weights keep their order).
func sortedByWeight[T any](terms []T, weight func(T) int32) []T {
	out := slices.Clone(terms)
	slices.SortStableFunc(out, func(a, b T) int { return int(weight(b)) - int(weight(a)) })
	return out
}

// build computes the requirements and the combined affinity and spread lists.
func (v *variant) build(pod *corev1.Pod, term *corev1.NodeSelectorTerm) {
	reqs := scheduling.FromLabels(pod.Spec.NodeSelector)
	add := func(exprs []corev1.NodeSelectorRequirement) {
		if v.requirementsErr != nil {
			return
		}
		more, err := scheduling.FromNodeSelectorRequirements(exprs...)
		if err != nil {
			v.requirementsErr = fmt.Errorf("node affinity: %w", err)
			return
		}
		reqs = reqs.Intersect(more)
	}
	if term != nil {
		add(term.MatchExpressions)
		if len(term.MatchFields) > 0 {
			add(matchFieldsAsLabels(term.MatchFields))
		}
	}
	v.required = reqs
	// As in Karpenter, only the heaviest preferred node affinity term is held as required.
	if len(v.preferredNode) > 0 {
		add(v.preferredNode[0].Preference.MatchExpressions)
	}
	v.requirements = reqs
	v.affinity = append(slices.Clone(v.affinity), termsOf(v.preferredAffinity)...)
	v.antiAffinity = append(slices.Clone(v.antiAffinity), termsOf(v.preferredAntiAffinity)...)
	v.spread = append(slices.Clone(v.spread), v.scheduleAnyway...)
}

// otherTerms are the requirements of the pod's required node affinity terms other than the one
// the variant is placed under (each with the pod's node selector): the kube-scheduler ORs them,
// so a spread counts a node any of them matches among its domains. Nil with one term or none.
func otherTerms(pod *corev1.Pod, v *variant) []scheduling.Requirements {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) < 2 {
		return nil
	}
	current := len(terms) - len(v.nextTerms) - 1
	var out []scheduling.Requirements
	for i := range terms {
		if i == current {
			continue
		}
		alt := &variant{}
		alt.build(pod, &terms[i])
		if alt.requirementsErr == nil {
			out = append(out, alt.required)
		}
	}
	return out
}

// matchFieldsAsLabels turns the one supported field selector, metadata.name, into a hostname
// requirement.
func matchFieldsAsLabels(fields []corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, 0, len(fields))
	for _, f := range fields {
		if f.Key == "metadata.name" {
			out = append(out, corev1.NodeSelectorRequirement{Key: corev1.LabelHostname, Operator: f.Operator, Values: f.Values})
		}
	}
	return out
}

func termsOf(weighted []corev1.WeightedPodAffinityTerm) []corev1.PodAffinityTerm {
	out := make([]corev1.PodAffinityTerm, len(weighted))
	for i, w := range weighted {
		out[i] = w.PodAffinityTerm
	}
	return out
}

// relax returns the variant with one more preference dropped, in Karpenter's order: the next
// required node affinity term, then the heaviest preferred pod affinity, pod anti-affinity and
// node affinity terms (heaviest first, so lighter ones get their turn), then ScheduleAnyway
// spread, then tolerating PreferNoSchedule taints. It returns nil when nothing is left.
func (v *variant) relax(pod *corev1.Pod) *variant {
	base := &variant{
		nextTerms:             v.nextTerms,
		preferredNode:         v.preferredNode,
		preferredAffinity:     v.preferredAffinity,
		preferredAntiAffinity: v.preferredAntiAffinity,
		scheduleAnyway:        v.scheduleAnyway,
		avoidPreferNoSchedule: v.avoidPreferNoSchedule,
	}
	// Required terms and DoNotSchedule constraints stay; only preferences move.
	base.affinity = v.affinity[:len(v.affinity)-len(v.preferredAffinity)]
	base.antiAffinity = v.antiAffinity[:len(v.antiAffinity)-len(v.preferredAntiAffinity)]
	base.spread = v.spread[:len(v.spread)-len(v.scheduleAnyway)]
	var term *corev1.NodeSelectorTerm
	switch {
	case len(v.nextTerms) > 0:
		term, base.nextTerms = &v.nextTerms[0], v.nextTerms[1:]
		base.relaxed = "tried the next required node affinity term"
	case len(v.preferredAffinity) > 0:
		base.preferredAffinity = v.preferredAffinity[1:]
		base.relaxed = "dropped a preferred pod affinity term"
	case len(v.preferredAntiAffinity) > 0:
		base.preferredAntiAffinity = v.preferredAntiAffinity[1:]
		base.relaxed = "dropped a preferred pod anti-affinity term"
	case len(v.preferredNode) > 0:
		base.preferredNode = v.preferredNode[1:]
		base.relaxed = "dropped a preferred node affinity term"
	case len(v.scheduleAnyway) > 0:
		base.scheduleAnyway = nil
		base.relaxed = "dropped ScheduleAnyway topology spread"
	case v.avoidPreferNoSchedule:
		base.avoidPreferNoSchedule = false
		base.relaxed = "tolerated PreferNoSchedule taints"
	default:
		return nil
	}
	if term == nil {
		term = v.currentTerm(pod)
	}
	base.build(pod, term)
	return base
}

// currentTerm is the required node affinity term this variant uses.
func (v *variant) currentTerm(pod *corev1.Pod) *corev1.NodeSelectorTerm {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if i := len(terms) - len(v.nextTerms) - 1; i >= 0 && i < len(terms) {
		return &terms[i]
	}
	return nil
}

// tolerates reports whether the pod, read as this variant, tolerates taints.
func (v *variant) tolerates(pod *corev1.Pod, taints []corev1.Taint) error {
	if v.avoidPreferNoSchedule {
		return scheduling.ToleratesAll(pod.Spec.Tolerations, taints)
	}
	return scheduling.Tolerates(pod.Spec.Tolerations, taints)
}

// shapeKey is a string equal for pods the pipeline cannot tell apart: same namespace, labels,
// requests, ports, tolerations and constraints (as read by their current variant).
func (p *podInfo) shapeKey() string {
	if p.keys == nil {
		p.keys = make([]string, len(p.variants))
	}
	if p.keys[p.current] == "" {
		p.keys[p.current] = p.computeShapeKey()
	}
	return p.keys[p.current]
}

func (p *podInfo) computeShapeKey() string {
	var b strings.Builder
	pod := p.pod
	b.WriteString(pod.Namespace)
	b.WriteByte('|')
	writeSortedMap(&b, pod.Labels)
	b.WriteByte('|')
	names := make([]string, 0, len(p.requests))
	for name := range p.requests {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		q := p.requests[corev1.ResourceName(name)]
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(q.String())
		b.WriteByte(',')
	}
	// As fmt's %v would print each, without fmt for the usual empty ones.
	b.WriteByte('|')
	writeSlice(&b, p.hostPorts)
	b.WriteByte('|')
	writeStrings(&b, pod.Spec.Tolerations)
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(int(p.priority)))
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(p.current))
	b.WriteByte('|')
	v := p.variant()
	b.WriteString(v.requirements.String())
	b.WriteByte('|')
	writeStrings(&b, v.affinity)
	b.WriteByte('|')
	writeStrings(&b, v.antiAffinity)
	b.WriteByte('|')
	writeStrings(&b, v.spread)
	b.WriteByte('|')
	b.WriteString(strconv.FormatBool(v.avoidPreferNoSchedule))
	b.WriteByte('|')
	if v.requirementsErr == nil {
		b.WriteString("<nil>")
	} else {
		fmt.Fprintf(&b, "%v", v.requirementsErr)
	}
	return b.String()
}

// writeStrings writes a slice of API structs by value, each by its String method. fmt's %v
// would print a nested pointer (a toleration's tolerationSeconds, a term's labelSelector) as
// its address: equal pods read from the API server, each with pointers of its own, would each
// get a key of their own, and the scheduler would plan every pod as a shape alone.
func writeStrings[T any, P interface {
	*T
	String() string
}](b *strings.Builder, slice []T) {
	b.WriteByte('[')
	for i := range slice {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(P(&slice[i]).String())
	}
	b.WriteByte(']')
}

// writeSlice writes a slice of plain values (no pointers inside) as fmt's %v does, without
// fmt when it is empty ("[]").
func writeSlice[T any](b *strings.Builder, slice []T) {
	if len(slice) == 0 {
		b.WriteString("[]")
		return
	}
	fmt.Fprintf(b, "%v", slice)
}

func writeSortedMap(b *strings.Builder, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(m[k])
		b.WriteByte(',')
	}
}

// sharesWithSiblings reports whether pods of the same shape can share any node this pod may
// run on, though the pod has node-level constraints: its only ones are required pod affinity
// terms at keys wider than a node (a zone, say). Siblings on one node are in the same domain of
// every key, so one's affinity holds for all.
func (v *variant) sharesWithSiblings() bool {
	if len(v.affinity) == 0 || len(v.antiAffinity) > 0 {
		return false
	}
	for _, t := range v.affinity {
		if t.TopologyKey == corev1.LabelHostname {
			return false
		}
	}
	for _, c := range v.spread {
		if c.TopologyKey == corev1.LabelHostname {
			return false
		}
	}
	return true
}

// hasNodeLevelConstraints reports whether the pod constrains which node it shares, not just
// which zone: hostname spread, pod affinity or anti-affinity at any key.
func (v *variant) hasNodeLevelConstraints() bool {
	if len(v.affinity) > 0 || len(v.antiAffinity) > 0 {
		return true
	}
	for _, c := range v.spread {
		if c.TopologyKey == corev1.LabelHostname {
			return true
		}
	}
	return false
}
