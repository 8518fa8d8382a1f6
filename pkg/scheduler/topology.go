package scheduler

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

type groupKind int

const (
	spreadGroup groupKind = iota
	affinityGroup
	antiAffinityGroup
)

func (k groupKind) String() string {
	return [...]string{"topology spread", "pod affinity", "pod anti-affinity"}[k]
}

// topologyGroup counts, per domain of one topology key, the pods a selector matches. Pods with
// identical constraints share one group.
type topologyGroup struct {
	kind       groupKind
	key        string
	namespaces map[string]bool // nil: every namespace
	selector   labels.Selector
	maxSkew    int32
	minDomains int32
	// honorAffinity and honorTaints: which existing nodes count (spread's node policies).
	honorAffinity, honorTaints bool
	// ownerReqs are the owner's node selector and required node affinity term, without its
	// held preferences or its volumes' zones: the node affinity the kube-scheduler's node
	// inclusion policy reads (Karpenter's TopologyNodeFilter too).
	ownerReqs scheduling.Requirements
	// ownerAlternatives are the owner's other required node affinity terms (each with its node
	// selector): a node any of them matches is eligible too, as the kube-scheduler reads ORed
	// terms, though the owner is placed under one at a time.
	ownerAlternatives []scheduling.Requirements
	ownerTolerations  []corev1.Toleration

	// required: some owner holds the term as a required pod affinity or a DoNotSchedule
	// spread, not a preference kept until relaxed (a preferred affinity term, a ScheduleAnyway
	// spread).
	required bool

	counts map[string]int // matching pods per domain
	owners map[string]int // pods carrying this anti-affinity term, per domain
	total  int            // matching pods anywhere
	// domains are the eligible domains of a spread group (existing and creatable).
	domains map[string]bool
	name    string
}

func (g *topologyGroup) selects(pod *corev1.Pod) bool {
	return (g.namespaces == nil || g.namespaces[pod.Namespace]) && g.selector.Matches(labels.Set(pod.Labels))
}

// minCount is the smallest count over the eligible domains (0 with fewer than minDomains).
func (g *topologyGroup) minCount() int {
	if g.key == corev1.LabelHostname || len(g.domains) < int(max(g.minDomains, 1)) {
		// A new node is always a hostname domain with no pods.
		return 0
	}
	lowest := math.MaxInt
	for d := range g.domains {
		lowest = min(lowest, g.counts[d])
	}
	return lowest
}

// topology holds every group of a run.
type topology struct {
	// namespaceLabels are Input.NamespaceLabels (nil when not read).
	namespaceLabels map[string]map[string]string
	groups          map[string]*topologyGroup
	// selecting caches, per shape key, the groups whose selector matches the shape's pods.
	selecting map[string][]*topologyGroup
}

// hasKey reports whether any group of the run counts domains of the topology key.
func (t *topology) hasKey(key string) bool {
	for _, g := range t.groups {
		if g.key == key {
			return true
		}
	}
	return false
}

func newTopology(namespaceLabels map[string]map[string]string) *topology {
	return &topology{namespaceLabels: namespaceLabels, groups: map[string]*topologyGroup{}, selecting: map[string][]*topologyGroup{}}
}

// owned returns the groups of a pod's current variant, creating them on first sight.
func (t *topology) owned(p *podInfo) ([]*topologyGroup, error) {
	if p.groups == nil {
		p.groups = make([][]*topologyGroup, len(p.variants))
	}
	if cached := p.groups[p.current]; cached != nil {
		return cached, nil
	}
	gs, err := t.buildOwned(p)
	if err != nil {
		return nil, err
	}
	if gs == nil {
		gs = []*topologyGroup{}
	}
	p.groups[p.current] = gs
	return gs, nil
}

func (t *topology) buildOwned(p *podInfo) ([]*topologyGroup, error) {
	v := p.variant()
	var out []*topologyGroup
	for i := range v.spread {
		g, err := t.spreadGroup(p.pod, v, &v.spread[i])
		if err != nil {
			return nil, err
		}
		g.required = g.required || v.spread[i].WhenUnsatisfiable != corev1.ScheduleAnyway
		out = append(out, g)
	}
	required := len(v.affinity) - len(v.preferredAffinity) // the preferred terms come last
	for i, term := range v.affinity {
		g, err := t.affinityGroup(p.pod, affinityGroup, term)
		if err != nil {
			return nil, err
		}
		g.required = g.required || i < required
		out = append(out, g)
	}
	for _, term := range v.antiAffinity {
		g, err := t.affinityGroup(p.pod, antiAffinityGroup, term)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

func (t *topology) spreadGroup(pod *corev1.Pod, v *variant, c *corev1.TopologySpreadConstraint) (*topologyGroup, error) {
	selector, err := selectorWithLabelKeys(c.LabelSelector, c.MatchLabelKeys, pod.Labels)
	if err != nil {
		return nil, fmt.Errorf("topology spread on %s: %w", c.TopologyKey, err)
	}
	g := &topologyGroup{
		kind:          spreadGroup,
		key:           c.TopologyKey,
		namespaces:    map[string]bool{pod.Namespace: true},
		selector:      selector,
		maxSkew:       c.MaxSkew,
		honorAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor,
		honorTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor,
	}
	if c.MinDomains != nil {
		g.minDomains = *c.MinDomains
	}
	var alternatives strings.Builder
	if g.honorAffinity {
		g.ownerReqs = v.required
		g.ownerAlternatives = otherTerms(pod, v)
		for _, alt := range g.ownerAlternatives {
			alternatives.WriteString("|" + alt.String())
		}
	}
	if g.honorTaints {
		g.ownerTolerations = pod.Spec.Tolerations
	}
	var tolerations strings.Builder
	writeStrings(&tolerations, g.ownerTolerations)
	return t.intern(g, fmt.Sprintf("%s|%d|%v|%v|%v|%s%s", g.ownerReqs.String(), g.minDomains, g.honorAffinity, g.honorTaints, g.maxSkew, tolerations.String(), alternatives.String())), nil
}

// affinityGroup is the group of a pod (anti-)affinity term. The term's labelSelector is read as
// stored, as the kube-scheduler reads it: the API server merged its matchLabelKeys and
// mismatchLabelKeys into it when the pod was created (key In, key NotIn the pod's value; GA
// since Kubernetes 1.33), so merging them again here would repeat matchLabelKeys and, for a
// pod whose labels changed since, contradict the stored selector.
func (t *topology) affinityGroup(pod *corev1.Pod, kind groupKind, term corev1.PodAffinityTerm) (*topologyGroup, error) {
	selector, err := selectorWithLabelKeys(term.LabelSelector, nil, pod.Labels)
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", kind, term.TopologyKey, err)
	}
	g := &topologyGroup{kind: kind, key: term.TopologyKey, selector: selector}
	if term.NamespaceSelector != nil && t.namespaceLabels != nil {
		// As Kubernetes: the namespaces listed and those the selector matches; an empty
		// selector matches every namespace.
		nsSelector, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
		if err != nil {
			return nil, fmt.Errorf("%s on %s: namespaceSelector: %w", kind, term.TopologyKey, err)
		}
		if nsSelector.Empty() {
			return t.intern(g, ""), nil
		}
		g.namespaces = map[string]bool{}
		for _, ns := range term.Namespaces {
			g.namespaces[ns] = true
		}
		for ns, nsLabels := range t.namespaceLabels {
			if nsSelector.Matches(labels.Set(nsLabels)) {
				g.namespaces[ns] = true
			}
		}
		return t.intern(g, ""), nil
	}
	if len(term.Namespaces) > 0 || term.NamespaceSelector == nil {
		g.namespaces = map[string]bool{}
		for _, ns := range term.Namespaces {
			g.namespaces[ns] = true
		}
		if len(term.Namespaces) == 0 {
			g.namespaces[pod.Namespace] = true
		}
	}
	// A namespaceSelector matches namespaces by their labels: when the input holds none, it is
	// read as every namespace, the safe side for anti-affinity.
	return t.intern(g, ""), nil
}

// selectorWithLabelKeys is ls with key=value added for each of matchLabelKeys the pod has a
// label of (nil ls selects nothing). Spread constraints take it as the kube-scheduler does at
// scheduling time; the API server merging them at creation too (key In (value), since
// Kubernetes 1.34) only repeats the same requirement.
func selectorWithLabelKeys(ls *metav1.LabelSelector, matchLabelKeys []string, podLabels map[string]string) (labels.Selector, error) {
	if ls == nil {
		return labels.Nothing(), nil
	}
	selector, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, err
	}
	for _, key := range matchLabelKeys {
		if value, ok := podLabels[key]; ok {
			req, err := labels.NewRequirement(key, "=", []string{value})
			if err != nil {
				return nil, err
			}
			selector = selector.Add(*req)
		}
	}
	return selector, nil
}

func (t *topology) intern(g *topologyGroup, extra string) *topologyGroup {
	ns := make([]string, 0, len(g.namespaces))
	for n := range g.namespaces {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	name := fmt.Sprintf("%s|%s|%v|%s|%s", g.kind, g.key, ns, g.selector.String(), extra)
	if existing, ok := t.groups[name]; ok {
		return existing
	}
	g.name, g.counts, g.owners, g.domains = name, map[string]int{}, map[string]int{}, map[string]bool{}
	t.groups[name] = g
	return g
}

// selectingGroupsOf returns the groups whose selectors match a pod, cached on the pod.
func (t *topology) selectingGroupsOf(p *podInfo) []*topologyGroup {
	if p.selecting == nil {
		p.selecting = t.selectingGroups(p.shapeKey(), p.pod)
	}
	return p.selecting
}

// selectingGroups returns the groups whose selectors match pods of a shape.
func (t *topology) selectingGroups(shapeKey string, pod *corev1.Pod) []*topologyGroup {
	if gs, ok := t.selecting[shapeKey]; ok {
		return gs
	}
	var out []*topologyGroup
	for _, name := range t.sortedNames() {
		if g := t.groups[name]; g.selects(pod) {
			out = append(out, g)
		}
	}
	t.selecting[shapeKey] = out
	return out
}

func (t *topology) sortedNames() []string {
	names := make([]string, 0, len(t.groups))
	for name := range t.groups {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// countExisting records the pods on existing nodes, and the domains those nodes offer;
// exclusive[i] are the pods of nodes[i] with required pod anti-affinity.
func (t *topology) countExisting(nodes []*Node, exclusive [][]*corev1.Pod) {
	names := t.sortedNames()
	for i, n := range nodes {
		for _, name := range names {
			g := t.groups[name]
			domain, ok := existingDomain(n, g.key)
			if !ok || !g.countsNode(n) {
				continue
			}
			if g.kind == spreadGroup {
				g.domains[domain] = true
			}
			for _, pod := range n.Pods {
				if g.selects(pod) {
					g.counts[domain]++
					g.total++
				}
			}
		}
		// Anti-affinity terms of bound pods keep matching pods away (the symmetric check).
		for _, pod := range exclusive[i] {
			for _, term := range pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				g, err := t.affinityGroup(pod, antiAffinityGroup, term)
				if err != nil {
					continue
				}
				if domain, ok := existingDomain(n, g.key); ok {
					g.owners[domain]++
				}
			}
		}
	}
	// Groups created just now (from bound pods' terms) still need their counts.
	for _, name := range t.sortedNames() {
		g := t.groups[name]
		if g.kind != antiAffinityGroup || g.total > 0 || len(g.counts) > 0 {
			continue
		}
		for _, n := range nodes {
			if domain, ok := existingDomain(n, g.key); ok {
				for _, pod := range n.Pods {
					if g.selects(pod) {
						g.counts[domain]++
						g.total++
					}
				}
			}
		}
	}
	t.selecting = map[string][]*topologyGroup{}
}

// countsNode says whether a spread group counts pods on a node (its node inclusion policies).
func (g *topologyGroup) countsNode(n *Node) bool {
	return g.admits(func(owner scheduling.Requirements) bool { return owner.Matches(n.Labels) == nil }, n.Taints)
}

// countsClaim is countsNode for a claim of this run, whose node is known by its requirements
// and taints: its pods count unless no node it may become matches the owner's node affinity,
// or its taints are not tolerated (Karpenter's TopologyNodeFilter.Matches, v1.15.0).
func (g *topologyGroup) countsClaim(reqs scheduling.Requirements, taints []corev1.Taint) bool {
	return g.admits(func(owner scheduling.Requirements) bool {
		return owner.Compatible(reqs, scheduling.IsWellKnownLabel) == nil
	}, taints)
}

// admits is the node filter of a spread group (every node counts for other groups): the node
// is one that meets, by meets, the owner's node affinity (its requirements or one of their
// alternatives) under nodeAffinityPolicy Honor, and whose taints the owner tolerates under
// nodeTaintsPolicy Honor.
func (g *topologyGroup) admits(meets func(owner scheduling.Requirements) bool, taints []corev1.Taint) bool {
	if g.kind != spreadGroup {
		return true
	}
	if g.honorAffinity && g.ownerReqs.Len() > 0 && !meets(g.ownerReqs) && !slices.ContainsFunc(g.ownerAlternatives, meets) {
		return false
	}
	return !g.honorTaints || scheduling.Tolerates(g.ownerTolerations, taints) == nil
}

// existingDomain is a node's domain for a key: its label, or for an in-flight claim the value
// its requirements pin.
func existingDomain(n *Node, key string) (string, bool) {
	if v, ok := n.Labels[key]; ok {
		return v, true
	}
	if key == corev1.LabelHostname {
		return n.Name, true
	}
	return "", false
}

// leastNeeds is the least any of the pods asks of a node: each resource's smallest request,
// and the extended resources every one of them asks for, at the smallest quantity.
func leastNeeds(pods []*podInfo) (scheduling.Resources, corev1.ResourceList) {
	if len(pods) == 0 {
		return scheduling.Resources{}, nil
	}
	least, extended := pods[0].res, pods[0].extended
	for _, p := range pods[1:] {
		least.MilliCPU = min(least.MilliCPU, p.res.MilliCPU)
		least.Memory = min(least.Memory, p.res.Memory)
		least.Pods = min(least.Pods, p.res.Pods)
		least.EphemeralStorage = min(least.EphemeralStorage, p.res.EphemeralStorage)
		if len(extended) == 0 {
			continue
		}
		var both corev1.ResourceList
		for name, q := range extended {
			if other, ok := p.extended[name]; ok {
				if both == nil {
					both = corev1.ResourceList{}
				}
				if other.Cmp(q) < 0 {
					q = other
				}
				both[name] = q
			}
		}
		extended = both
	}
	return least, extended
}

// addCreatableDomains adds to spread groups the domains new claims could land in: those of
// the instance types with room for what the least of the batch's pods asks (least and
// extended, from leastNeeds). A zone where no pod of the batch gets a node stays without one
// the kube-scheduler would count, so it is no domain: GPU pods whose types are offered in two
// zones spread over those two, not over a third where only CPU types are.
func (t *topology) addCreatableDomains(pools []*poolState, least scheduling.Resources, extended corev1.ResourceList) {
	for _, name := range t.sortedNames() {
		g := t.groups[name]
		if g.kind != spreadGroup || g.key == corev1.LabelHostname {
			continue
		}
		for _, np := range pools {
			for _, owner := range append([]scheduling.Requirements{g.ownerReqs}, g.ownerAlternatives...) {
				reqs := np.Requirements.Intersect(owner)
				if reqs.Satisfiable() != nil {
					continue
				}
				for _, d := range creatableValuesHolding(np, reqs, g.key, least, extended) {
					g.domains[d] = true
				}
			}
		}
	}
}

// creatableValues lists the values of key a new node of the NodePool could have under reqs:
// from the compatible instance types' labels and the zones, zone IDs, capacity types and
// placement group partitions of their available offerings, or the requirement's own values for
// other keys.
func creatableValues(ps *poolState, reqs scheduling.Requirements, key string) []string {
	return domainValues(ps, reqs, key, nil, nil)
}

// creatableValuesHolding is creatableValues of the instance types with room for requests and
// extended beside their daemonsets.
func creatableValuesHolding(ps *poolState, reqs scheduling.Requirements, key string, requests scheduling.Resources, extended corev1.ResourceList) []string {
	return domainValues(ps, reqs, key, &requests, extended)
}

// domainKey is what domainValues' result depends on: the topology key, the requirements (as
// their String) and, when it filters by room, the requests and extended resources to hold.
type domainKey struct {
	key, reqs string
	holding   scheduling.Resources
	holds     bool
	extended  string
}

func domainValues(ps *poolState, reqs scheduling.Requirements, key string, holding *scheduling.Resources, extended corev1.ResourceList) []string {
	cacheKey := domainKey{key: key, reqs: reqs.String()}
	if holding != nil {
		cacheKey.holding, cacheKey.holds = *holding, true
		for _, name := range slices.Sorted(maps.Keys(extended)) {
			q := extended[name]
			cacheKey.extended += string(name) + "=" + q.String() + ","
		}
	}
	if cached, ok := ps.domainValues[cacheKey]; ok {
		return cached
	}
	seen := map[string]bool{}
	offerings := cloudprovider.NewOfferingFilter(reqs)
	for _, c := range ps.candidatesFor(reqs) {
		if holding != nil && (!holding.Fits(c.room) || !extendedFits(c, extended)) {
			continue
		}
		switch key {
		case corev1.LabelTopologyZone, awsv1.LabelTopologyZoneID, karpv1.CapacityTypeLabelKey, awsv1.LabelPlacementGroupPartition:
			for _, o := range c.it.Offerings {
				if !o.Available || !offerings.Allows(o) {
					continue
				}
				switch key {
				case corev1.LabelTopologyZone:
					seen[o.Zone] = true
				case karpv1.CapacityTypeLabelKey:
					seen[o.CapacityType] = true
				case awsv1.LabelPlacementGroupPartition:
					if o.PlacementPartition != 0 {
						seen[cloudprovider.PartitionLabel(o.PlacementPartition)] = true
					}
				default:
					if o.ZoneID != "" {
						seen[o.ZoneID] = true
					}
				}
			}
		default:
			if v, ok := c.it.Labels[key]; ok {
				seen[v] = true
			} else if r, ok := reqs.Get(key); ok && r.IsFinite() {
				for _, v := range r.Values() {
					seen[v] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	ps.domainValues[cacheKey] = out
	return out
}

// admits checks a pod against a group at one domain of its key. own says whether the group is
// the pod's own constraint; otherwise the group merely selects the pod (only anti-affinity of
// other pods then binds it).
func admits(pod *corev1.Pod, g *topologyGroup, domain string, own bool) error {
	switch g.kind {
	case spreadGroup:
		if !own {
			return nil
		}
		self := 0
		if g.selects(pod) {
			self = 1
		}
		if skew := g.counts[domain] + self - g.minCount(); skew > int(g.maxSkew) {
			return &topologyError{g: g, domain: domain, skew: skew}
		}
	case affinityGroup:
		if own && g.counts[domain] == 0 && !(g.total == 0 && g.selects(pod)) {
			return &topologyError{g: g, domain: domain}
		}
	case antiAffinityGroup:
		if own && g.counts[domain] > 0 {
			return &topologyError{g: g, domain: domain}
		}
		if !own && g.owners[domain] > 0 {
			return &topologyError{g: g, domain: domain, others: true}
		}
	}
	return nil
}

// topologyError is a topology constraint a domain breaks. It is built on the hot path, so its
// message is only formatted when read.
type topologyError struct {
	g      *topologyGroup
	domain string
	skew   int
	others bool // another pod's anti-affinity excludes this one
}

func (e *topologyError) Error() string {
	g := e.g
	switch {
	case g.kind == spreadGroup:
		return fmt.Sprintf("topology spread on %s: domain %s would have skew %d > maxSkew %d", g.key, e.domain, e.skew, g.maxSkew)
	case g.kind == affinityGroup:
		return fmt.Sprintf("pod affinity on %s: no matching pod in %s", g.key, e.domain)
	case e.others:
		return fmt.Sprintf("pod anti-affinity of a pod in %s on %s excludes this pod", e.domain, g.key)
	default:
		return fmt.Sprintf("pod anti-affinity on %s: a matching pod is already in %s", g.key, e.domain)
	}
}

// record counts a placed pod in its domains: in every group that selects it, but a spread
// group only where counts says its node inclusion policies count the pod's node. Only the
// pod's required anti-affinity terms keep other pods away (the symmetric check); preferred
// terms bind only the pod that prefers them. Where domainOf knows no domain of a key (a claim
// that left it open), an anti-affinity group counts the pod in every domain possible lists, as
// Karpenter's Topology.Record blocks out every domain the pod could land in; other groups do
// not count it.
func record(own, selecting []*topologyGroup, requiredAnti []*topologyGroup, domainOf func(key string) string, possible func(key string) []string, counts func(*topologyGroup) bool) {
	for _, g := range selecting {
		if g.kind == spreadGroup && !counts(g) {
			continue
		}
		if d := domainOf(g.key); d != "" {
			g.counts[d]++
			g.total++
			if g.kind == spreadGroup {
				g.domains[d] = true
			}
		} else if g.kind == antiAffinityGroup && possible != nil {
			for _, d := range possible(g.key) {
				g.counts[d]++
			}
			g.total++
		}
	}
	for _, g := range requiredAnti {
		if d := domainOf(g.key); d != "" {
			g.owners[d]++
		} else if possible != nil {
			for _, d := range possible(g.key) {
				g.owners[d]++
			}
		}
	}
}

// requiredAntiAffinity returns the groups of a pod's required anti-affinity terms (the same for
// every variant), cached on the pod.
func (t *topology) requiredAntiAffinity(p *podInfo) []*topologyGroup {
	if p.requiredAnti != nil {
		return p.requiredAnti
	}
	p.requiredAnti = []*topologyGroup{}
	if a := p.pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if g, err := t.affinityGroup(p.pod, antiAffinityGroup, term); err == nil {
				p.requiredAnti = append(p.requiredAnti, g)
			}
		}
	}
	return p.requiredAnti
}

// describeGroups names groups for error messages.
func describeGroups(gs []*topologyGroup) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = fmt.Sprintf("%s on %s", g.kind, g.key)
	}
	return strings.Join(parts, ", ")
}
