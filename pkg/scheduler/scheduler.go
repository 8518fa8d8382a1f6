package scheduler

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Solve places the input's pods and returns the decisions. It does not modify the input.
//
// Unless the options ask for GrowClaims, it solves again when the first answer opens two new
// claims or more, or one beside existing nodes: once as described in the package doc, then growing claims as Karpenter's scheduler
// does, in our order of pods and, for batches of up to bothOrdersUpTo pods, in Karpenter's,
// and keeps the cheapest answer (see cheaper). When the first answer leaves pods unplaced, it
// takes Karpenter's if that places a pod the first left unplaced (solving it then if it has
// not yet). The default packing's LP plan and
// look-ahead win on large batches of free pods; growing claims wins where pods cannot share a
// node the look-ahead can see them share (zonal topology spread above all, whose pods the
// look-ahead sizes claims for a few at a time) and on small batches where one larger node
// holds what the plan spreads over several.
func Solve(in Input) *Results {
	in.Progress.setQueued(len(in.Pods))
	planned := newSolver(in).solve()
	if in.Options.GrowClaims {
		return planned
	}
	grown := in
	grown.Options.GrowClaims = true
	grown.Progress = nil
	// Karpenter's packing with its order of pods (cpu, then memory, descending): the answer
	// Karpenter would give, so the one kept is never dearer than Karpenter's.
	karpenter := grown
	karpenter.Options.karpenterOrder = true
	var alt *Results
	// One new claim may still cost more than another answer when existing nodes take other
	// pods in another order: a pod left over for the claim can need a dearer type.
	if len(planned.NewClaims) >= 2 || len(planned.NewClaims) == 1 && len(in.Nodes) > 0 {
		tolerance := 0.0
		if slices.ContainsFunc(in.Pods, scheduling.PlacedByKubeScheduler) {
			tolerance = unannouncedTolerance
		}
		// Large batches: the packing in our order, which places constrained pods first and
		// costs less there; small ones, where a third solve costs little: Karpenter's order too.
		alts := []Input{grown}
		if len(in.Pods) <= bothOrdersUpTo {
			alts = append(alts, karpenter)
		}
		best := planned
		for _, a := range alts {
			r := newSolver(a).solve()
			if cheaper(r, best, tolerance) {
				best = r
			}
			if a.Options.karpenterOrder {
				alt = r
			}
		}
		if best != planned {
			return best
		}
	}
	if len(planned.PodErrors) > 0 {
		// Never leave pending a pod Karpenter would place: its order of pods (largest first)
		// can place what ours (constrained pods first) shuts out.
		if alt == nil {
			alt = newSolver(karpenter).solve()
		}
		if refusesPlaced(planned, alt) {
			return alt
		}
	}
	return planned
}

// refusesPlaced reports whether a refuses a pod that b places (both answers for the same input,
// whose pods they share).
func refusesPlaced(a, b *Results) bool {
	if len(a.PodErrors) == 0 {
		return false
	}
	refused := make(map[*corev1.Pod]bool, len(b.PodErrors))
	for _, pe := range b.PodErrors {
		refused[pe.Pod] = true
	}
	for _, pe := range a.PodErrors {
		if !refused[pe.Pod] {
			return true
		}
	}
	return false
}

// bothOrdersUpTo is the largest batch (in pods) packed as Karpenter does in both orders of
// pods, ours and Karpenter's, beside the plan: a few milliseconds more where batches are small.
const bothOrdersUpTo = 100

// unannouncedTolerance is how much dearer the Karpenter packing may be and still be chosen
// when the batch has pods the kube-scheduler places on its own (scheduling.PlacedByKubeScheduler): within
// a zone it puts them on whichever node scores best, so a plan that splits a zone's share over
// several nodes sized to the last pod does not land as planned, and the pods left over launch
// more nodes; one node per domain, as growing claims packs, lands as planned.
const unannouncedTolerance = 0.05

// cheaper reports whether a is the better of two answers for the same input: it places more
// pods, or as many and its new claims cost less per hour than b's (up to a share tolerance of
// b's cost more), or as much with fewer claims.
func cheaper(a, b *Results, tolerance float64) bool {
	if len(a.PodErrors) != len(b.PodErrors) {
		return len(a.PodErrors) < len(b.PodErrors)
	}
	pa, pb := a.NewClaimsPrice(), b.NewClaimsPrice()
	const epsilon = 1e-9
	if tolerance > 0 && len(a.NewClaims) < len(b.NewClaims) && pa <= pb*(1+tolerance) {
		return true
	}
	if math.Abs(pa-pb) > epsilon*max(1, pb) {
		return pa < pb
	}
	return len(a.NewClaims) < len(b.NewClaims)
}

// NewClaimsPrice is the $/hour of the new claims, each at its cheapest instance type.
func (r *Results) NewClaimsPrice() float64 {
	total := 0.0
	for _, c := range r.NewClaims {
		total += c.Price
	}
	return total
}

// solver holds the state of one run.
type solver struct {
	opts   Options
	pods   []*podInfo
	nodes  []*nodeState
	pools  []*poolState // by weight, highest first, then name, last first
	claims []*claimState
	// claimOrder, with Options.karpenterOrder, is the claims in the order Karpenter's
	// scheduler holds its new NodeClaims (Scheduler.newNodeClaims): appended as they open and
	// sorted in place by pod count before each pod tries them (placeOnClaim).
	claimOrder []*claimState
	// opened counts the claims opened in the run (claimState.index).
	opened   int
	topology *topology
	// pending counts the unplaced pods per shape key, for the look-ahead that sizes claims.
	pending map[string]*shapeCount
	// promised counts, per pod size, the pending pods that open claims' look-aheads counted on;
	// later look-aheads see only the rest, so one pod is not promised to many claims.
	promised map[scheduling.Resources]int
	// promisedTo lists, per pod size, the claims whose look-ahead counted on pods of that size
	// (some may have had their promise kept or released since).
	promisedTo map[scheduling.Resources][]*claimState
	// shapes are this round's pending shapes in key order; sizes their distinct request vectors.
	shapes []*shapeCount
	sizes  []scheduling.Resources
	// rejected remembers, per shape key, the claims (as bits by index) that turned its pods
	// away for good: claims only narrow and fill, so such a claim never admits the shape later.
	rejected map[string][]uint64
	// shareableShapes caches, per NodePool and requirements, the shapes whose pods may share a
	// claim with them.
	shareableShapes map[string][]*shapeCount
	// plans are the round's LP plans for new claims, per NodePool (lpplan.go).
	plans    map[*poolState]*lpPlan
	errs     map[*podInfo]error
	progress *Progress
	volumes  map[types.UID]scheduling.Requirements // Input.VolumeRequirements
	// nodeRefused counts the refusals of existing nodes and in-flight claims, by stage;
	// nodeTally those of the pod being placed, by reason.
	nodeRefused [numStages]int
	nodeTally   [tallyKeys]tallyEntry
	// ledger counts the capacity reservations' slots (nil when no NodePool offers one).
	ledger *ledger
}

// nodeState is an existing node or in-flight claim during a run.
type nodeState struct {
	*Node
	available scheduling.Resources
	extended  corev1.ResourceList
	ports     []scheduling.HostPort
	reqs      scheduling.Requirements
}

// shapeCount tracks the unplaced pods of one shape.
type shapeCount struct {
	example *podInfo
	count   int
	free    bool // no node-level constraints: it may share any node its requirements allow
	size    int  // index of the pods' request vector in solver.sizes
}

func newSolver(in Input) *solver {
	s := &solver{
		opts:            in.Options,
		topology:        newTopology(in.NamespaceLabels),
		pending:         map[string]*shapeCount{},
		shareableShapes: map[string][]*shapeCount{},
		rejected:        map[string][]uint64{},
		errs:            map[*podInfo]error{},
		progress:        in.Progress,
		volumes:         in.VolumeRequirements,
	}
	for _, pod := range in.Pods {
		p := in.Infos.get(pod, in.Options.IgnorePreferences, in.VolumeRequirements[pod.UID])
		p.avoid = in.Avoid[pod.UID]
		s.pods = append(s.pods, p)
	}
	exclusive := make([][]*corev1.Pod, len(in.Nodes))
	for i, n := range in.Nodes {
		prep := n.prepared
		if prep == nil {
			prep = n.prepare()
		}
		exclusive[i] = prep.exclusive
		// The solver changes a node's extended resources and ports as it places pods: its own
		// copies (a prepared node's ports are capped, so appending copies them).
		s.nodes = append(s.nodes, &nodeState{Node: n, available: prep.available, extended: maps.Clone(prep.extended),
			ports: prep.ports[:len(prep.ports):len(prep.ports)], reqs: prep.reqs})
	}
	s.ledger = newLedger(in.NodePools)
	for _, np := range in.NodePools {
		ps := newPoolState(np, in.DaemonPods)
		ps.ledger = s.ledger
		s.pools = append(s.pools, ps)
	}
	sort.SliceStable(s.pools, func(i, j int) bool {
		if s.pools[i].Weight != s.pools[j].Weight {
			return s.pools[i].Weight > s.pools[j].Weight
		}
		// Equal weights by name, descending, as Karpenter's OrderByWeight (utils/nodepool).
		return s.pools[i].Name > s.pools[j].Name
	})
	// Every group any variant of any pod can use exists before counting, so counts are whole.
	for _, p := range s.pods {
		for i := range p.variants {
			p.current = i
			_, _ = s.topology.owned(p)
		}
		p.current = 0
	}
	s.topology.countExisting(in.Nodes, exclusive)
	least, extended := leastNeeds(s.pods)
	s.topology.addCreatableDomains(s.pools, least, extended)
	return s
}

// preparedNode is what a solve derives from a Node before placing pods.
type preparedNode struct {
	available scheduling.Resources
	extended  corev1.ResourceList
	ports     []scheduling.HostPort
	reqs      scheduling.Requirements
	// exclusive are the node's pods with required pod anti-affinity, which keep matching pods
	// off their domains (found once, not by every solve among all the pods of every node).
	exclusive []*corev1.Pod
}

// prepare derives what a solve needs of the node: its room, requirements (labels, narrowed by
// an in-flight claim's requirements) and the host ports in use.
func (n *Node) prepare() *preparedNode {
	p := &preparedNode{available: scheduling.ResourcesOf(n.Available), extended: extendedOf(n.Available), reqs: scheduling.FromLabels(n.Labels)}
	if n.Requirements != nil {
		p.reqs = n.Requirements.Intersect(p.reqs)
	}
	p.ports = append(p.ports, n.HostPorts...)
	for _, pod := range n.Pods {
		p.ports = append(p.ports, scheduling.PodHostPorts(pod)...)
		if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			p.exclusive = append(p.exclusive, pod)
		}
	}
	return p
}

// Prepare computes once what every Solve derives from the node (its room, requirements, host
// ports in use and pods with required anti-affinity), for a Node given to many Solves: disruption's what-ifs solve the same
// nodes once per candidate, and each would otherwise rebuild that from the node's labels and
// pods. Copies of the Node made afterwards share it. The Node's Labels, Requirements,
// Available, HostPorts and Pods must not change after Prepare.
func (n *Node) Prepare() { n.prepared = n.prepare() }

func (s *solver) solve() *Results {
	queue := s.pods
	var pendingByZone map[string]int
	for first := true; len(queue) > 0; first = false {
		s.sortQueue(queue)
		s.countPending(queue)
		if first && s.opts.CountEffectiveZones {
			pendingByZone = s.countEffectiveZones()
		}
		var failed []*podInfo
		for i, p := range queue {
			s.pending[p.shapeKey()].count--
			err := s.place(p)
			if s.opts.karpenterOrder {
				// Karpenter's trySchedule (scheduling/scheduler.go, v1.15.0) relaxes a pod that
				// fits nowhere and tries it again at once, until it fits or nothing is left to
				// relax; a pod that still fails goes back to the queue as it was.
				for err != nil && p.current+1 < len(p.variants) {
					p.current++
					err = s.place(p)
				}
				if err != nil {
					p.current = 0
				}
			}
			if err != nil {
				s.errs[p] = err
				failed = append(failed, p)
			}
			// As Karpenter's queue: the pods not tried yet, and the failed ones, tried again.
			s.progress.setQueued(len(queue) - i - 1 + len(failed))
		}
		// Pods that fit nowhere try again with one more preference relaxed; a pod with pod
		// affinity first tries again as it is while the round placed others, which it may need
		// (pods with node-level constraints go first, so its targets may come after it), as
		// Karpenter's queue retries a pod while any other pod made progress.
		progress := len(failed) < len(queue)
		queue = queue[:0:0]
		for _, p := range failed {
			switch {
			case s.opts.karpenterOrder:
				// Karpenter's queue tries its failed pods again, each from its strictest
				// form, for as long as the others make progress.
				if progress {
					delete(s.errs, p)
					queue = append(queue, p)
				}
			case progress && len(p.variant().affinity) > 0:
				delete(s.errs, p)
				queue = append(queue, p)
			case p.current+1 < len(p.variants):
				p.current++
				delete(s.errs, p)
				queue = append(queue, p)
			}
		}
		s.progress.setQueued(len(queue))
	}
	results := s.results()
	results.PendingByEffectiveZone = pendingByZone
	return results
}

// sortQueue orders pods: higher priority first; then pods that constrain which node they share
// (they need nodes of their own, which the others then fill); then larger requests; then name.
// With Options.karpenterOrder it takes Karpenter's order instead (scheduling/queue.go,
// v1.15.0: cpu, then memory, descending; then the oldest; then by UID), but for a capacity
// buffer's virtual pods (the lowest priority there is), which come last.
func (s *solver) sortQueue(queue []*podInfo) {
	if s.opts.karpenterOrder {
		sort.SliceStable(queue, func(i, j int) bool {
			a, b := queue[i], queue[j]
			if va, vb := a.priority == math.MinInt32, b.priority == math.MinInt32; va != vb {
				return vb
			}
			if a.res.MilliCPU != b.res.MilliCPU {
				return a.res.MilliCPU > b.res.MilliCPU
			}
			if a.res.Memory != b.res.Memory {
				return a.res.Memory > b.res.Memory
			}
			if ta, tb := a.pod.CreationTimestamp, b.pod.CreationTimestamp; !ta.Equal(&tb) {
				return ta.Before(&tb)
			}
			return a.pod.UID < b.pod.UID
		})
		return
	}
	sort.SliceStable(queue, func(i, j int) bool {
		a, b := queue[i], queue[j]
		if a.priority != b.priority {
			return a.priority > b.priority
		}
		if ca, cb := a.variant().hasNodeLevelConstraints(), b.variant().hasNodeLevelConstraints(); ca != cb {
			return ca
		}
		if a.res.MilliCPU != b.res.MilliCPU {
			return a.res.MilliCPU > b.res.MilliCPU
		}
		if a.res.Memory != b.res.Memory {
			return a.res.Memory > b.res.Memory
		}
		if a.pod.Namespace != b.pod.Namespace {
			return a.pod.Namespace < b.pod.Namespace
		}
		return a.pod.Name < b.pod.Name
	})
}

func (s *solver) countPending(queue []*podInfo) {
	s.pending = map[string]*shapeCount{}
	s.promised = map[scheduling.Resources]int{}
	s.promisedTo = map[scheduling.Resources][]*claimState{}
	s.shareableShapes = map[string][]*shapeCount{}
	s.plans = map[*poolState]*lpPlan{}
	s.shapes, s.sizes = nil, nil
	for _, c := range s.claims {
		c.promised = nil
	}
	sizeIndex := map[scheduling.Resources]int{}
	for _, p := range queue {
		key := p.shapeKey()
		sc, ok := s.pending[key]
		if !ok {
			size, seen := sizeIndex[p.res]
			if !seen {
				size = len(s.sizes)
				sizeIndex[p.res] = size
				s.sizes = append(s.sizes, p.res)
			}
			sc = &shapeCount{example: p, free: !p.variant().hasNodeLevelConstraints(), size: size}
			s.pending[key] = sc
			s.shapes = append(s.shapes, sc)
		}
		sc.count++
	}
	sort.Slice(s.shapes, func(i, j int) bool { return s.shapes[i].example.shapeKey() < s.shapes[j].example.shapeKey() })
}

// place puts one pod on an existing node, an open claim or a new claim. An open claim that
// takes the pod at no extra cost wins; otherwise the cheapest upgrade of an open claim competes
// with a new claim on what each would cost because of this pod: the upgrade's price increase,
// against the new claim's price less the market value of the pending pods it would also hold.
func (s *solver) place(p *podInfo) error {
	if s.placeOnNode(p) {
		return nil
	}
	err := s.placeNew(p)
	if ue, ok := err.(*UnschedulableError); ok {
		ue.Nodes = s.nodeRefusals()
	}
	return err
}

// placeNew puts a pod that no existing node took on an open claim or a new claim.
func (s *solver) placeNew(p *podInfo) error {
	upgrade, upgradePlan, placed := s.placeOnClaim(p)
	if placed {
		return nil
	}
	fresh, freshPlan, freshCost, err := s.newClaim(p)
	switch {
	case upgrade != nil && (fresh == nil || upgradePlan.extraCost <= freshCost+1e-12):
		s.commit(upgrade, p, upgradePlan)
		return nil
	case fresh != nil:
		s.commit(fresh, p, freshPlan)
		fresh.index = s.opened
		s.opened++
		s.claims = append(s.claims, fresh)
		if s.opts.karpenterOrder {
			s.claimOrder = append(s.claimOrder, fresh)
		}
		return nil
	default:
		return err
	}
}

// placeOnNode tries existing nodes and in-flight claims, in input order, tallying why each
// that did not take the pod refused it.
func (s *solver) placeOnNode(p *podInfo) bool {
	if len(s.nodes) > 0 {
		clear(s.nodeTally[:])
	}
	v := p.variant()
	t := trial{p: p, v: v}
	for _, n := range s.nodes {
		t.node = n
		if !s.feasible(&t) {
			s.refusedByNode(t.why)
			continue
		}
		domains := t.domains
		n.available = n.available.Sub(p.res)
		for name, q := range p.extended {
			left := n.extended[name]
			left.Sub(q)
			n.extended[name] = left
		}
		n.ports = append(n.ports, p.hostPorts...)
		s.recordTopology(p, func(key string) string { d, _ := domainOf(domains, key); return d }, nil,
			func(g *topologyGroup) bool { return g.countsNode(n.Node) })
		p.placedOn = n.Name
		return true
	}
	return false
}

// placeOnClaim tries the claims opened in this run. It commits to the first that takes the pod
// at no extra cost; otherwise it returns the cheapest upgrade among the first few it could
// make (upgrades cost a search over instance types, so only a few are priced).
func (s *solver) placeOnClaim(p *podInfo) (*claimState, *plan, bool) {
	const upgradesPriced = 8
	var (
		best     *claimState
		bestPlan *plan
		priced   int
	)
	// A claim whose look-ahead counted on a pod of this size takes it first, so that the type
	// chosen for those pods is the one they fill.
	if c, pl := s.promisedClaim(p); c != nil {
		s.commit(c, p, pl)
		return nil, nil, true
	}
	key := p.shapeKey()
	rejected := s.rejected[key]
	claims := s.claims
	if s.opts.karpenterOrder {
		// Karpenter's add (scheduling/scheduler.go, v1.15.0) sorts its new NodeClaims by pod
		// count, fewest first, with sort.Slice (the same sort on the same order is the same
		// permutation), before trying them in turn.
		sort.Slice(s.claimOrder, func(a, b int) bool { return len(s.claimOrder[a].pods) < len(s.claimOrder[b].pods) })
		claims = s.claimOrder
	}
	for _, c := range claims {
		i := c.index
		if i/64 < len(rejected) && rejected[i/64]&(1<<(i%64)) != 0 {
			continue
		}
		// Ranking, not feasibility: past a few priced upgrades, only claims with room
		// under their target are tried.
		if priced >= upgradesPriced && !s.opts.GrowClaims && !p.res.Fits(c.target.room.Sub(c.used)) {
			continue
		}
		// Ranking too: a claim the LP plan sized keeps the room its promises need.
		if c.planned && !p.res.Fits(c.unpromisedRoom()) {
			continue
		}
		pl, r := s.admit(c, p)
		if r.refused() {
			if permanent(r) {
				for len(rejected) <= i/64 {
					rejected = append(rejected, 0)
				}
				rejected[i/64] |= 1 << (i % 64)
				s.rejected[key] = rejected
			}
			continue
		}
		if pl.extraCost <= 0 || s.opts.GrowClaims {
			s.commit(c, p, pl)
			return nil, nil, true
		}
		priced++
		if bestPlan == nil || pl.extraCost < bestPlan.extraCost {
			best, bestPlan = c, pl
		}
	}
	return best, bestPlan, false
}

// promisedClaim returns the first claim still counting on a pod of p's size that admits p at no
// extra cost, with its plan, dropping the claims whose promises are spent from the index.
func (s *solver) promisedClaim(p *podInfo) (*claimState, *plan) {
	if s.opts.GrowClaims {
		return nil, nil
	}
	list := s.promisedTo[p.res]
	kept := list[:0]
	for _, c := range list {
		if c.promised[p.res] > 0 {
			kept = append(kept, c)
		}
	}
	clear(list[len(kept):])
	s.promisedTo[p.res] = kept
	for _, c := range kept {
		if pl, r := s.admit(c, p); !r.refused() && pl.extraCost <= 0 {
			return c, pl
		}
	}
	return nil, nil
}

// permanent reports whether a claim that refused a pod for this reason will refuse pods of its
// shape for the rest of the run, so that it is not asked again. Only pod affinity and spread
// over zone-like keys can change their mind (as other domains fill); everything else only gets
// stricter as claims fill. Room is not remembered: checking it costs no more than the memo.
func permanent(r refusal) bool {
	switch r.stage {
	case StageRoom:
		return false
	case StageTopology:
		var te *topologyError
		if errors.As(r.err, &te) {
			return te.g.kind == antiAffinityGroup || te.g.key == corev1.LabelHostname && te.g.kind == spreadGroup
		}
	}
	return true
}

// roomUnderLargest is the most a claim could still take: the room of its NodePool's largest
// instance type less what its pods use. It lets full claims be skipped cheaply.
func (c *claimState) roomUnderLargest() scheduling.Resources {
	return c.pool.largest().Sub(c.used)
}

// largest is the largest room of any instance type in each dimension.
func (ps *poolState) largest() scheduling.Resources {
	if ps.largestRoom != nil {
		return *ps.largestRoom
	}
	var r scheduling.Resources
	for _, c := range ps.candidatesFor(ps.Requirements) {
		r.MilliCPU = max(r.MilliCPU, c.room.MilliCPU)
		r.Memory = max(r.Memory, c.room.Memory)
		r.Pods = max(r.Pods, c.room.Pods)
		r.EphemeralStorage = max(r.EphemeralStorage, c.room.EphemeralStorage)
	}
	ps.largestRoom = &r
	return r
}

// newClaim plans a claim on the first NodePool (by weight) that can take the pod, and says what
// it would cost because of this pod: its price less the value of the pending pods it would hold.
func (s *solver) newClaim(p *podInfo) (*claimState, *plan, float64, error) {
	if len(s.pools) == 0 {
		return nil, nil, 0, &UnschedulableError{}
	}
	var errs []error
	for _, ps := range s.pools {
		c := &claimState{pool: ps, requirements: ps.Requirements, hostname: "hostname-placeholder-" + strconv.Itoa(len(s.claims))}
		pl, r := s.admit(c, p)
		err := r.asError()
		if err == nil {
			err = ps.Requirements.Satisfiable()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("nodepool %s: %w", ps.Name, err))
			continue
		}
		// admit sized the claim for this pod alone; a larger type may hold the pending pods
		// more cheaply per unit of value.
		cost := pl.target.price
		if s.opts.GrowClaims {
			return c, pl, cost, nil
		}
		if s.usesPlan(ps, p) {
			if t, others, fill := s.planned(c, p, pl.requirements); t != nil {
				pl.target, pl.extraCost, cost = t, t.price, t.price-others
				pl.promise, pl.planned = fill, true
				return c, pl, cost, nil
			}
		}
		if t, others, fill := s.lookAhead(c, p, pl.requirements); t != nil {
			pl.target, pl.extraCost, cost = t, t.price, t.price-others
			pl.promise = fill
		}
		return c, pl, cost, nil
	}
	return nil, nil, 0, &UnschedulableError{Reasons: errs}
}

// lookAhead picks the instance type with the best value per dollar when filled greedily with
// the pod and the pending pods that could share its node, and returns the value of those others.
func (s *solver) lookAhead(c *claimState, p *podInfo, reqs scheduling.Requirements) (*candidate, float64, map[scheduling.Resources]int) {
	candidates := c.pool.candidatesFor(reqs)
	// Only the pending pods' sizes matter to the fill: group the shareable ones by size.
	counts := make([]int, len(s.sizes))
	for _, sc := range s.shareable(c.pool, reqs) {
		counts[sc.size] += sc.count
	}
	// Pods that share only with their own kind (zonal pod affinity) count their pending
	// siblings: sized for the pod alone, each would get a claim of its own.
	if own := s.pending[p.shapeKey()]; own != nil && !own.free && p.variant().sharesWithSiblings() {
		counts[own.size] += own.count
	}
	sizes := make([]sizeCount, 0, len(counts))
	for i, n := range counts {
		r := s.sizes[i]
		if n -= s.promised[r]; n > 0 {
			sizes = append(sizes, sizeCount{r, n, c.pool.value(r)})
		}
	}
	sort.Slice(sizes, func(i, j int) bool {
		if sizes[i].value != sizes[j].value {
			return sizes[i].value > sizes[j].value
		}
		return sizes[i].res.MilliCPU > sizes[j].res.MilliCPU || sizes[i].res.MilliCPU == sizes[j].res.MilliCPU && sizes[i].res.Memory > sizes[j].res.Memory
	})
	own := c.pool.value(p.res)
	takes, mixTakes := make([]int, len(sizes)), make([]int, len(sizes))
	var pendingTotal scheduling.Resources
	for _, sz := range sizes {
		pendingTotal = pendingTotal.Add(scale(sz.res, sz.count))
	}
	var (
		best     *candidate
		bestFill map[scheduling.Resources]int
	)
	bestEff, bestRoom, bestOthers := -1.0, int64(0), 0.0
	for _, cand := range candidates {
		if cand.price <= 0 || typeRefusal(c, cand, p.res, p.extended, p.hostPorts) != nil {
			continue
		}
		if minValuesMet(reqs, candidates, func(x *candidate) bool { return p.res.Fits(x.room) && c.pool.withinLimits(x.it) == nil }, s.opts.MinValuesBestEffort) != nil {
			continue
		}
		others := fill(cand.room.Sub(p.res), sizes, takes, nil)
		if len(sizes) > 1 {
			// A large type may hold a mix of the pending pods better than the most valuable
			// sizes alone: try a share of every size too, and keep the better fill.
			if mixed := fill(cand.room.Sub(p.res), sizes, mixTakes, &pendingTotal); mixed > others {
				others = mixed
				copy(takes, mixTakes)
			}
		}
		eff := (own + others) / cand.price
		better := eff > bestEff*1.005
		if !better && eff >= bestEff*0.995 && cand.room.MilliCPU > bestRoom {
			// As good within half a percent: the larger type makes fewer nodes.
			better, eff = true, math.Max(eff, bestEff)
		}
		if better {
			best, bestEff, bestRoom, bestOthers = cand, eff, cand.room.MilliCPU, others
			bestFill = map[scheduling.Resources]int{}
			for i, k := range takes {
				if k > 0 {
					bestFill[sizes[i].res] = k
				}
			}
		}
	}
	return best, bestOthers, bestFill
}

// fill packs pending pods into room, writing how many of each size it takes into takes, and
// returns their value. Greedy (total nil): the most valuable sizes first. Mixed: first the
// largest equal share of every size that fits (total is the sizes' summed requests, so the
// share keeps the pending pods' own proportions), then greedily.
func fill(room scheduling.Resources, sizes []sizeCount, takes []int, total *scheduling.Resources) float64 {
	clear(takes)
	if total != nil {
		share := 1.0
		for _, d := range [][2]int64{{room.MilliCPU, total.MilliCPU}, {room.Memory, total.Memory}, {room.Pods, total.Pods}, {room.EphemeralStorage, total.EphemeralStorage}} {
			if d[1] > 0 {
				share = min(share, float64(max(d[0], 0))/float64(d[1]))
			}
		}
		for i, sz := range sizes {
			takes[i] = int(share * float64(sz.count))
			room = room.Sub(scale(sz.res, takes[i]))
		}
	}
	value := 0.0
	for i, sz := range sizes {
		if k := fitCount(room, sz.res, sz.count-takes[i]); k > 0 {
			takes[i] += k
			room = room.Sub(scale(sz.res, k))
		}
		value += float64(takes[i]) * sz.value
	}
	return value
}

// sizeCount is how many pending pods of one size could share a claim, and what each is worth.
type sizeCount struct {
	res   scheduling.Resources
	count int
	value float64
}

// shareable returns the pending free shapes whose pods could join a claim of the NodePool with
// these requirements: the pipeline admits them on such a node (its taints and requirements:
// the stages that apply to a node not launched yet), and they have no host ports and no
// extended resources (those are sized pod by pod).
func (s *solver) shareable(ps *poolState, reqs scheduling.Requirements) []*shapeCount {
	return s.shareableWith(ps, reqs, false)
}

// shareableWith is shareable, with the shapes that request extended resources too when
// extended is set (the LP plan sizes them with the others).
func (s *solver) shareableWith(ps *poolState, reqs scheduling.Requirements, extended bool) []*shapeCount {
	key := ps.Name + "\x00" + reqs.String()
	if extended {
		key += "\x00extended"
	}
	if cached, ok := s.shareableShapes[key]; ok {
		return cached
	}
	var out []*shapeCount
	for _, sc := range s.shapes {
		example := sc.example
		if !sc.free || len(example.extended) > 0 && !extended || len(example.hostPorts) > 0 {
			continue
		}
		t := trial{p: example, v: example.variant(), pool: ps, reqs: reqs}
		if s.feasible(&t) {
			out = append(out, sc)
		}
	}
	s.shareableShapes[key] = out
	return out
}

// fitCount is how many pods of size r fit in room, at most limit.
func fitCount(room, r scheduling.Resources, limit int) int {
	k := int64(limit)
	for _, d := range [][2]int64{{room.MilliCPU, r.MilliCPU}, {room.Memory, r.Memory}, {room.Pods, r.Pods}, {room.EphemeralStorage, r.EphemeralStorage}} {
		if d[1] > 0 {
			k = min(k, max(d[0], 0)/d[1])
		}
	}
	return int(k)
}

func scale(r scheduling.Resources, k int) scheduling.Resources {
	n := int64(k)
	return scheduling.Resources{MilliCPU: r.MilliCPU * n, Memory: r.Memory * n, Pods: r.Pods * n, EphemeralStorage: r.EphemeralStorage * n}
}

// results turns the run's state into decisions.
func (s *solver) results() *Results {
	s.mergeClaims()
	out := &Results{}
	for _, p := range s.pods {
		if p.placedOn != "" {
			out.ExistingPlacements = append(out.ExistingPlacements, Placement{Pod: p.pod, Node: p.placedOn})
		}
	}
	for _, c := range s.claims {
		out.NewClaims = append(out.NewClaims, s.finish(c))
	}
	for _, p := range s.pods {
		if err, ok := s.errs[p]; ok {
			out.PodErrors = append(out.PodErrors, PodError{Pod: p.pod, Err: err})
		}
	}
	out.Refusals = s.refusals()
	return out
}

// finish turns a claim into its decision: every compatible instance type that fits its pods
// and the NodePool's limits, cheapest first.
func (s *solver) finish(c *claimState) *Claim {
	claim := &Claim{
		NodePool:     c.pool.Name,
		Requirements: c.requirements,
		Taints:       c.pool.Taints,
		Labels:       c.pool.Labels,
		Hostname:     c.hostname,
	}
	for _, p := range c.pods {
		claim.Pods = append(claim.Pods, p.pod)
	}
	var daemons []*daemonLoad
	for _, cand := range c.pool.candidatesFor(c.requirements) {
		if cand.admits(c.used, c.usedExtended, c.ports) != nil {
			continue
		}
		if c.withinLimits(cand.it) != nil {
			continue
		}
		claim.InstanceTypes = append(claim.InstanceTypes, cand.it)
		if !slices.Contains(daemons, cand.daemon) { // types share loads: a few at most
			daemons = append(daemons, cand.daemon)
		}
		if len(claim.InstanceTypes) == 1 {
			claim.Price = cand.price
		}
	}
	// As Karpenter: the daemonsets' requests the claim is sure to carry, whichever of its
	// types launches.
	claim.Requests = scheduling.Merge(minRequests(daemons), requestsOf(c))
	if s.opts.MinValuesBestEffort {
		claim.Requirements, claim.MinValuesRelaxed = cloudprovider.RelaxMinValues(claim.Requirements, claim.InstanceTypes)
	}
	return claim
}

func requestsOf(c *claimState) corev1.ResourceList {
	lists := make([]corev1.ResourceList, len(c.pods))
	for i, p := range c.pods {
		lists[i] = p.requests
	}
	return scheduling.Merge(lists...)
}

// mergeClaims repacks claims that fewer nodes hold for no more than they cost apart: fewer
// nodes at no extra cost (often less, as the daemonsets run once per node). The look-ahead sizes
// claims one at a time, and pods whose spread or zone leaves them few partners (a zonal spread
// catching up in one zone) end up on many small claims. Only claims of the same NodePool and
// requirements are joined (so no pod's zone or any other domain changes), each claim's pods
// staying together, and only where no pod of the run has a hostname-level constraint (whose
// counts a join would change), no claim uses host ports or extended resources or holds a
// capacity reservation's slot, and the NodePool has no minValues.
func (s *solver) mergeClaims() {
	if len(s.claims) < 2 || s.opts.GrowClaims || s.topology.hasKey(corev1.LabelHostname) {
		return
	}
	groups := map[string][]*claimState{}
	var keys []string
	for _, c := range s.claims {
		if len(c.ports) > 0 || len(c.usedExtended) > 0 || c.target == nil || hasMinValues(c.pool.Requirements) || c.reservation != "" {
			continue
		}
		key := c.pool.Name + "\x00" + c.requirements.String()
		if _, ok := groups[key]; !ok {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], c)
	}
	joined := map[*claimState]bool{}
	for _, key := range keys {
		// A group's repacking tries every distinct instance type as the bin: large groups are
		// the LP plan's, already whole nodes of their types.
		const largestGroup = 64
		if group := groups[key]; len(group) >= 2 && len(group) <= largestGroup {
			s.repack(group, joined)
		}
	}
	if len(joined) > 0 {
		s.claims = slices.DeleteFunc(s.claims, func(c *claimState) bool { return joined[c] })
	}
}

// packing is a repacking of claims: the claims in each bin, the bins' requests, and the
// instance type each launches as.
type packing struct {
	bins    [][]*claimState
	used    []scheduling.Resources
	targets []*candidate
	price   float64
}

// repack packs the group's claims, whole, into as few nodes as cost no more than the claims do:
// for each instance type as the bin, first fit by decreasing cpu, each bin then launched as the
// cheapest type that holds it; the cheapest packing (then the one with fewest nodes) wins when
// it has fewer nodes and costs no more. Claims absorbed into another are marked in joined.
func (s *solver) repack(group []*claimState, joined map[*claimState]bool) {
	pool := group[0].pool
	candidates := pool.candidatesFor(group[0].requirements)
	sort.SliceStable(group, func(i, j int) bool {
		if group[i].used.MilliCPU != group[j].used.MilliCPU {
			return group[i].used.MilliCPU > group[j].used.MilliCPU
		}
		return group[i].used.Memory > group[j].used.Memory
	})
	before := 0.0
	for _, c := range group {
		before += c.target.price
	}
	cheapestHolding := func(used scheduling.Resources) *candidate {
		for _, cand := range candidates {
			if used.Fits(cand.room) {
				return cand
			}
		}
		return nil
	}
	var best *packing
	seen := map[scheduling.Resources]bool{}
	for _, bin := range candidates {
		if seen[bin.room] {
			continue
		}
		seen[bin.room] = true
		var (
			bins [][]*claimState
			used []scheduling.Resources
		)
		for _, c := range group {
			placed := false
			for i := range bins {
				if u := used[i].Add(c.used); u.Fits(bin.room) {
					bins[i], used[i], placed = append(bins[i], c), u, true
					break
				}
			}
			if !placed {
				bins, used = append(bins, []*claimState{c}), append(used, c.used)
			}
		}
		if len(bins) >= len(group) {
			continue
		}
		p := &packing{bins: bins, used: used}
		for _, u := range used {
			t := cheapestHolding(u)
			if t == nil {
				p = nil
				break
			}
			p.targets = append(p.targets, t)
			p.price += t.price
		}
		if p == nil || p.price > before*(1+1e-9) {
			continue
		}
		if best == nil || p.price < best.price*(1-1e-9) || p.price <= best.price*(1+1e-9) && len(p.bins) < len(best.bins) {
			best = p
		}
	}
	if best == nil || !recharge(pool, group, best) {
		return
	}
	for i, bin := range best.bins {
		head := bin[0]
		head.target = best.targets[i]
		for _, c := range bin[1:] {
			head.pods = append(head.pods, c.pods...)
			head.used = head.used.Add(c.used)
			joined[c] = true
		}
	}
}

// recharge moves the group's charges against the NodePool's limits to the packing's bins, each
// charged as a claim opening with the bin's pods would be, when the limits allow every bin its
// target; otherwise it changes nothing and reports false.
func recharge(pool *poolState, group []*claimState, p *packing) bool {
	if pool.remaining == nil {
		return true
	}
	for _, c := range group {
		pool.refund(c.charged)
	}
	charges := make([]corev1.ResourceList, 0, len(p.bins))
	for i, bin := range p.bins {
		head := bin[0]
		its := pool.launchable(head.requirements, p.used[i], head.usedExtended, head.ports)
		if !slices.Contains(its, p.targets[i].it) {
			for _, ch := range charges {
				pool.refund(ch)
			}
			for _, c := range group {
				pool.take(c.charged)
			}
			return false
		}
		charges = append(charges, pool.charge(its))
		pool.take(charges[i])
	}
	for i, bin := range p.bins {
		bin[0].charged = charges[i]
	}
	return true
}
