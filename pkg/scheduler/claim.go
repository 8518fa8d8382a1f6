package scheduler

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// claimState is a claim being filled during a run.
type claimState struct {
	pool         *poolState
	requirements scheduling.Requirements
	pods         []*podInfo
	used         scheduling.Resources // the pods' requests (room already excludes daemonsets)
	usedExtended corev1.ResourceList
	ports        []scheduling.HostPort
	// target is the instance type the claim is sized for.
	target *candidate
	// charged is what the claim holds of the NodePool's limits (nil when it has none): as
	// Karpenter's subtractMax, the most any type the claim could launch as when it opened has,
	// per limited resource. Its types stay within it as pods join.
	charged  corev1.ResourceList
	hostname string
	// index numbers the claim in the order the run opened claims (solver.opened).
	index int
	// promised counts, per pod size, the pending pods the claim's look-ahead counted on.
	promised map[scheduling.Resources]int
	// planned marks a claim opened on a node of the LP plan: pods not promised to it join it
	// only in the room its promises leave (unpromisedRoom).
	planned bool
	// reservation is the capacity reservation whose slot the claim holds (solver.reserve), or
	// "".
	reservation string
}

// unpromisedRoom is the room the claim's target leaves beside its pods and the pods promised
// to it.
func (c *claimState) unpromisedRoom() scheduling.Resources {
	room := c.target.room.Sub(c.used)
	for r, n := range c.promised {
		room = room.Sub(scale(r, n))
	}
	return room
}

// plan is what admitting a pod onto a claim (or a node) would change.
type plan struct {
	requirements scheduling.Requirements
	domains      []domainChoice               // the domain chosen per topology key
	target       *candidate                   // the claim's target afterwards
	extraCost    float64                      // target price increase, $/hour
	promise      map[scheduling.Resources]int // pending pods a new claim's look-ahead counted on
	planned      bool                         // a new claim on a node of the LP plan
}

// admit runs the pipeline for a pod joining the claim: whether it can, and at what extra
// cost, or the refusal (counted against the claim's NodePool).
func (s *solver) admit(c *claimState, p *podInfo) (*plan, refusal) {
	t := trial{p: p, v: p.variant(), claim: c, reqs: c.requirements}
	if !s.feasible(&t) {
		refusedByPool(c.pool, t.why)
		return nil, t.why
	}
	return &plan{requirements: t.reqs, domains: t.domains, target: t.target, extraCost: t.extra}, refusal{}
}

// resize finds the instance type the claim needs once the pod joins: its target if that still
// fits, else the cheapest type that does (an upgrade), within limits and minValues.
func (s *solver) resize(c *claimState, p *podInfo, reqs scheduling.Requirements) (*candidate, float64, error) {
	candidates := c.pool.candidatesFor(reqs)
	used := c.used.Add(p.res)
	extended := scheduling.Merge(c.usedExtended, p.extended)
	if len(candidates) == 0 {
		return nil, 0, c.pool.instanceTypeFilterError(reqs, used, extended)
	}
	ports := c.ports
	if len(p.hostPorts) > 0 {
		ports = append(append([]scheduling.HostPort(nil), c.ports...), p.hostPorts...)
	}
	var portErr error
	fits := func(cand *candidate) bool {
		err := cand.admits(used, extended, ports)
		if err == nil {
			return true
		}
		if _, daemonPort := err.(*daemonPortError); daemonPort && portErr == nil {
			portErr = err
		}
		return false
	}
	// minValues counts the types the claim could launch as: those that fit, within limits.
	launchable := func(cand *candidate) bool {
		return fits(cand) && c.withinLimits(cand.it) == nil
	}
	if err := minValuesMet(reqs, candidates, launchable, s.opts.MinValuesBestEffort); err != nil {
		if minValuesMet(reqs, candidates, fits, false) == nil {
			// Enough types have room; the limits leave too few: the limit is what to raise,
			// as Karpenter, which filters by limits before minValues, says.
			for _, cand := range candidates {
				if limitErr := c.withinLimits(cand.it); limitErr != nil && fits(cand) {
					return nil, 0, limitErr
				}
			}
		}
		return nil, 0, fmt.Errorf("%w, %s", err, filterDetail(reqs, used, extended))
	}
	if c.target != nil && fits(c.target) && containsCandidate(candidates, c.target.it) {
		return c.target, 0, nil
	}
	var limitErr error
	for _, cand := range candidates {
		switch err := typeRefusal(c, cand, used, extended, ports); err.(type) {
		case nil:
		case *daemonPortError:
			if portErr == nil {
				portErr = err
			}
			continue
		default:
			// The cheapest type's limit: the one a user would raise the limit for.
			if limitErr == nil && err != errNoRoom {
				limitErr = err
			}
			continue
		}
		extra := cand.price
		if c.target != nil {
			extra -= c.target.price
		}
		return cand, extra, nil
	}
	if limitErr != nil {
		return nil, 0, limitErr
	}
	if portErr != nil {
		return nil, 0, portErr
	}
	return nil, 0, c.pool.instanceTypeFilterError(reqs, used, extended)
}

func containsCandidate(cands []*candidate, it *cloudprovider.InstanceType) bool {
	for _, c := range cands {
		if c.it == it {
			return true
		}
	}
	return false
}

// admits reports whether a node of the candidate's type has room for pods with these requests
// and host ports beside its daemonsets.
func (cand *candidate) admits(used scheduling.Resources, extended corev1.ResourceList, ports []scheduling.HostPort) error {
	if !used.Fits(cand.room) || !extendedFits(cand, extended) {
		return errNoRoom
	}
	if len(ports) > 0 && len(cand.daemon.ports) > 0 {
		if err := scheduling.HostPortConflict(cand.daemon.ports, ports); err != nil {
			return &daemonPortError{err: err}
		}
	}
	return nil
}

// errNoRoom: the pods' requests exceed what the instance type leaves them.
var errNoRoom = errors.New("no room")

// daemonPortError: a daemonset's pod on the node takes a host port a pod asks for.
type daemonPortError struct{ err error }

func (e *daemonPortError) Error() string { return "a daemonset's pod takes the port: " + e.err.Error() }

func extendedFits(cand *candidate, extended corev1.ResourceList) bool {
	if len(extended) == 0 {
		return true
	}
	alloc := cand.it.Allocatable()
	for name, want := range extended {
		have := alloc[name].DeepCopy()
		if d, ok := cand.daemon.extended[name]; ok {
			have.Sub(d)
		}
		if want.Cmp(have) > 0 {
			return false
		}
	}
	return true
}

// withinLimits reports whether the claim may launch as an instance type under its NodePool's
// limits: within what the NodePool has left when the claim is still to open, within what the
// claim was charged once it has.
func (c *claimState) withinLimits(it *cloudprovider.InstanceType) error {
	if c.target == nil {
		return c.pool.withinLimits(it)
	}
	for name, held := range c.charged {
		if need := capacityOf(it, name); need.Cmp(held) > 0 {
			return fmt.Errorf("all available instance types exceed limits for nodepool (NodePool=%s): %s %s of a %s, %s charged to the node when it opened under spec.limits",
				c.pool.Name, name, need.String(), it.Name, held.String())
		}
	}
	return nil
}

// minValuesMet checks each requirement's minValues against the instance types that would fit
// (cloudprovider.UnmetMinValues). Its error names the labels whose minValues are not met, in
// Karpenter's words.
func minValuesMet(reqs scheduling.Requirements, candidates []*candidate, fits func(*candidate) bool, bestEffort bool) error {
	if bestEffort || !hasMinValues(reqs) {
		return nil
	}
	its := make([]*cloudprovider.InstanceType, 0, len(candidates))
	for _, c := range candidates {
		if fits(c) {
			its = append(its, c.it)
		}
	}
	if short := cloudprovider.UnmetMinValues(reqs, its); len(short) > 0 {
		return fmt.Errorf("minValues requirement is not met for label(s) (label(s)=%v)", short)
	}
	return nil
}

// commit applies a plan: the pod joins the claim.
func (s *solver) commit(c *claimState, p *podInfo, pl *plan) {
	opening := c.target == nil
	c.target = pl.target
	if pl.promise != nil {
		// The pod opening the claim is not among the pods it was promised.
		c.promised = pl.promise
		c.planned = pl.planned
		for r, n := range pl.promise {
			s.promised[r] += n
			s.promisedTo[r] = append(s.promisedTo[r], c)
		}
	} else if c.promised[p.res] > 0 {
		c.promised[p.res]--
		s.promised[p.res]--
	}
	c.requirements = pl.requirements
	c.pods = append(c.pods, p)
	c.used = c.used.Add(p.res)
	if len(p.extended) > 0 {
		c.usedExtended = scheduling.Merge(c.usedExtended, p.extended)
	}
	c.ports = append(c.ports, p.hostPorts...)
	s.reserve(c)
	if opening && c.pool.remaining != nil {
		c.charged = c.pool.charge(c.pool.launchable(c.requirements, c.used, c.usedExtended, c.ports))
		c.pool.take(c.charged)
	}
	s.trimPromises(c)
	s.recordTopology(p, func(key string) string {
		if key == corev1.LabelHostname {
			return c.hostname
		}
		if d, ok := domainOf(pl.domains, key); ok {
			return d
		}
		if r, ok := c.requirements.Get(key); ok && r.Len() == 1 {
			return r.Values()[0]
		}
		return ""
	}, func(key string) []string {
		if r, ok := c.requirements.Get(key); ok && r.IsFinite() {
			return r.Values()
		}
		return creatableValues(c.pool, c.requirements, key)
	}, func(g *topologyGroup) bool { return g.countsClaim(c.requirements, c.pool.Taints) })
}

// trimPromises releases the promises a claim can no longer keep, so later look-aheads count
// those pods again: pods that were not promised to it (larger pods are placed first) may have
// taken the room its look-ahead counted on for others. Larger sizes keep their promises first.
func (s *solver) trimPromises(c *claimState) {
	if len(c.promised) == 0 || c.target == nil {
		return
	}
	sizes := make([]scheduling.Resources, 0, len(c.promised))
	for r, n := range c.promised {
		if n > 0 {
			sizes = append(sizes, r)
		}
	}
	sort.Slice(sizes, func(i, j int) bool {
		a, b := sizes[i], sizes[j]
		if a.MilliCPU != b.MilliCPU {
			return a.MilliCPU > b.MilliCPU
		}
		if a.Memory != b.Memory {
			return a.Memory > b.Memory
		}
		return a.Pods > b.Pods || a.Pods == b.Pods && a.EphemeralStorage > b.EphemeralStorage
	})
	room := c.target.room.Sub(c.used)
	for _, r := range sizes {
		n := c.promised[r]
		k := fitCount(room, r, n)
		if k < n {
			c.promised[r] = k
			s.promised[r] -= n - k
		}
		room = room.Sub(scale(r, k))
	}
}

// need is what a claim's node must hold with a pod: its pods' requests and extended resources
// and the pod's.
type need struct {
	res      scheduling.Resources
	extended corev1.ResourceList
}

// chooseDomains picks, for every topology key the pod's groups use, a domain that satisfies
// them all, and pins it in the requirements. The target fixes some domains: an existing node
// (node) its labels' and its name as hostname; a claim its hostname (pool is then the claim's
// NodePool, nil for an existing node, and n what its node must hold with the pod).
func (s *solver) chooseDomains(p *podInfo, reqs scheduling.Requirements, node *Node, hostname string, pool *poolState, n need) ([]domainChoice, scheduling.Requirements, error) {
	own, err := s.topology.owned(p)
	if err != nil {
		return nil, reqs, err
	}
	selecting := s.topology.selectingGroupsOf(p)
	if len(own) == 0 && len(selecting) == 0 {
		return nil, reqs, nil
	}
	checks := make([]groupCheck, 0, len(own)+len(selecting))
	for _, g := range own {
		checks = append(checks, groupCheck{g, true})
	}
	for _, g := range selecting {
		checks = append(checks, groupCheck{g, false})
	}
	var domains []domainChoice
	for i, gc := range checks {
		key := gc.g.key
		if seenKey(checks[:i], key) {
			continue
		}
		onKey := checksOn(checks[i:], key)
		if d, ok := fixedDomain(node, hostname, key); ok {
			if err := admitAll(p.pod, onKey, d); err != nil {
				return nil, reqs, err
			}
			domains = append(domains, domainChoice{key, d})
			continue
		}
		if r, pinned := reqs.Get(key); pinned && r.Len() == 1 {
			d := r.Values()[0]
			if err := admitAll(p.pod, onKey, d); err != nil {
				return nil, reqs, err
			}
			domains = append(domains, domainChoice{key, d})
			continue
		}
		if followedElsewhere(onKey) {
			// Karpenter's Topology.Record: a pod only selected by other pods' affinity or
			// ScheduleAnyway spread does not narrow its node's domain; it counts there once
			// the node's domain is one.
			// Where an owner requires the affinity and no pod it follows is placed yet, the
			// domain is pinned all the same, so that the owner is placed in the same batch
			// (Karpenter places it on a later pass, once the pods it follows run on nodes).
			continue
		}
		if pool == nil {
			// An existing node without the label: only anti-affinity is satisfied by absence.
			for _, c := range onKey {
				if c.own && c.g.kind != antiAffinityGroup {
					return nil, reqs, fmt.Errorf("%s on %s: the node has no %s label", c.g.kind, key, key)
				}
			}
			continue
		}
		if s.opts.GrowClaims && bindsByAntiAffinityOnly(onKey) {
			// As Karpenter's nextDomainAntiAffinity: the claim may be in any domain the
			// anti-affinity admits, and the launch takes the cheapest; the pod is recorded
			// in all of them (commit).
			open, err := openDomains(p, onKey, pool, reqs, key)
			if err != nil {
				return nil, reqs, err
			}
			reqs = reqs.With(scheduling.MustRequirement(key, corev1.NodeSelectorOpIn, open...))
			continue
		}
		d, err := s.bestDomain(p, onKey, pool, reqs, key, n)
		if err != nil {
			return nil, reqs, err
		}
		domains = append(domains, domainChoice{key, d})
		reqs = reqs.With(scheduling.MustRequirement(key, corev1.NodeSelectorOpIn, d))
	}
	return domains, reqs, nil
}

// fixedDomain is the domain of key an existing node (node) or a claim (with hostname) already
// has.
func fixedDomain(node *Node, hostname, key string) (string, bool) {
	if node != nil {
		return existingDomain(node, key)
	}
	if key == corev1.LabelHostname {
		return hostname, true
	}
	return "", false
}

// domainChoice is the domain chosen for a pod on one topology key.
type domainChoice struct{ key, domain string }

func domainOf(choices []domainChoice, key string) (string, bool) {
	for _, c := range choices {
		if c.key == key {
			return c.domain, true
		}
	}
	return "", false
}

func seenKey(checks []groupCheck, key string) bool {
	for _, c := range checks {
		if c.g.key == key {
			return true
		}
	}
	return false
}

func checksOn(checks []groupCheck, key string) []groupCheck {
	if len(checks) == 1 {
		return checks
	}
	out := make([]groupCheck, 0, len(checks))
	for _, c := range checks {
		if c.g.key == key {
			out = append(out, c)
		}
	}
	return out
}

// followedElsewhere: no check binds where the pod goes (binds). As Karpenter's
// Topology.AddRequirements, which narrows a pod's domains by its own groups and other pods'
// anti-affinity only, such a pod leaves its claim's domain open.
func followedElsewhere(checks []groupCheck) bool {
	return !slices.ContainsFunc(checks, binds)
}

// bindsByAntiAffinityOnly: the checks include pod anti-affinity (the pod's own, or another
// pod's that selects it), and bind the pod by nothing else.
func bindsByAntiAffinityOnly(checks []groupCheck) bool {
	anti := false
	for _, c := range checks {
		if c.g.kind == antiAffinityGroup {
			anti = true
		} else if binds(c) {
			return false
		}
	}
	return anti
}

// binds reports whether a check binds where the pod goes: all do but those of groups that
// select the pod without being its own and whose owners do not need it in a domain chosen now,
// that is pod affinity groups each of whose owners either only prefers to share a domain with
// it or already has a pod it follows placed, and spread groups whose owners only prefer their
// skew (ScheduleAnyway).
func binds(c groupCheck) bool {
	switch {
	case c.own:
		return true
	case c.g.kind == affinityGroup:
		return c.g.required && c.g.total == 0
	case c.g.kind == spreadGroup:
		return c.g.required
	}
	return true
}

// openDomains lists the domains of key a new node of the pool could have under reqs that admit
// the pod: what an undecided claim keeps open for pod anti-affinity, as Karpenter does.
func openDomains(p *podInfo, checks []groupCheck, pool *poolState, reqs scheduling.Requirements, key string) ([]string, error) {
	return admittingDomains(p.pod, checks, creatableValues(pool, reqs, key), key)
}

// admittingDomains are the values of key that admit the pod under every check, or an error
// naming the first refusal when none does.
func admittingDomains(pod *corev1.Pod, checks []groupCheck, values []string, key string) ([]string, error) {
	admitted := make([]string, 0, len(values))
	var firstErr error
	for _, d := range values {
		if err := admitAll(pod, checks, d); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		admitted = append(admitted, d)
	}
	if len(admitted) == 0 {
		if firstErr == nil {
			firstErr = errors.New("no domain available")
		}
		return nil, fmt.Errorf("no %s domain admits the pod: %w", key, firstErr)
	}
	return admitted, nil
}

type groupCheck struct {
	g   *topologyGroup
	own bool
}

func admitAll(pod *corev1.Pod, checks []groupCheck, domain string) error {
	for _, gc := range checks {
		if err := admits(pod, gc.g, domain, gc.own); err != nil {
			return err
		}
	}
	return nil
}

// bestDomain picks for an undecided claim the domain of key that admits the pod with the lowest
// count of matching pods (spreading; other pods' spread, which does not bind this pod, does not
// count), the cheapest for what the claim's node must hold with the pod (n) among equal counts,
// among the values a new node with room for that could have (all a new node could have when no
// instance type holds it), so that a domain only smaller types reach is not pinned for it: a
// pod joining a claim does not pin a zone where no type holds the claim's pods with it.
func (s *solver) bestDomain(p *podInfo, checks []groupCheck, pool *poolState, reqs scheduling.Requirements, key string, n need) (string, error) {
	values := creatableValues(pool, reqs, key)
	if holding := creatableValuesHolding(pool, reqs, key, n.res, n.extended); len(holding) > 0 {
		values = holding
	}
	if !s.opts.MinValuesBestEffort && hasMinValues(reqs) {
		// A domain whose types cannot meet the NodePool's minValues would refuse the claim.
		if meeting := domainsMeetingMinValues(pool, reqs, key, values, n.res); len(meeting) > 0 {
			values = meeting
		}
	}
	admitted, err := admittingDomains(p.pod, checks, values, key)
	if err != nil {
		return "", err
	}
	best, bestCount, bestPrice := "", math.MaxInt, math.Inf(1)
	for _, d := range admitted {
		count := 0
		for _, gc := range checks {
			if !gc.own && gc.g.kind == spreadGroup {
				// Another pod's spread constrains that pod, not this one (the
				// kube-scheduler reads only the incoming pod's constraints): it does
				// not steer this pod's domain, which goes where its node is cheapest.
				continue
			}
			count += gc.g.counts[d]
			if gc.g.kind == affinityGroup && gc.own {
				count -= 2 * gc.g.counts[d] // affinity prefers where matching pods are
			}
		}
		switch {
		case count < bestCount:
			best, bestCount, bestPrice = d, count, math.NaN()
		case count == bestCount:
			// Equal counts: the domain where the pod's node is cheapest (Karpenter takes any
			// of them, as its map of domains iterates, so it is sometimes the cheaper one).
			if math.IsNaN(bestPrice) {
				bestPrice = domainPrice(pool, reqs, key, best, n.res)
			}
			if price := domainPrice(pool, reqs, key, d, n.res); price < bestPrice {
				best, bestPrice = d, price
			}
		}
	}
	return best, nil
}

// domainsMeetingMinValues are the values of key among values where the pool's instance types
// with room for res meet the minValues of reqs.
func domainsMeetingMinValues(pool *poolState, reqs scheduling.Requirements, key string, values []string, res scheduling.Resources) []string {
	var out []string
	for _, d := range values {
		in := reqs.With(scheduling.MustRequirement(key, corev1.NodeSelectorOpIn, d))
		if minValuesMet(in, pool.candidatesFor(in), func(c *candidate) bool { return res.Fits(c.room) }, false) == nil {
			out = append(out, d)
		}
	}
	return out
}

// domainPrice is the price of the cheapest instance type of the pool with room for res in
// domain d of key, under reqs; +Inf when there is none.
func domainPrice(pool *poolState, reqs scheduling.Requirements, key, d string, res scheduling.Resources) float64 {
	for _, c := range pool.candidatesFor(reqs.With(scheduling.MustRequirement(key, corev1.NodeSelectorOpIn, d))) {
		if res.Fits(c.room) {
			return c.price // candidates come cheapest first
		}
	}
	return math.Inf(1)
}

// recordTopology counts a placed pod in the groups that select it, at the domains domainOf
// gives; a spread group counts it only where counts says the group counts the pod's node. For
// pod anti-affinity, a pod on a claim whose domain of a key is still open counts in every
// domain possible gives (nil on an existing node).
func (s *solver) recordTopology(p *podInfo, domainOf func(string) string, possible func(string) []string, counts func(*topologyGroup) bool) {
	own, err := s.topology.owned(p)
	if err != nil {
		return
	}
	record(own, s.topology.selectingGroupsOf(p), s.topology.requiredAntiAffinity(p), domainOf, possible, counts)
}
