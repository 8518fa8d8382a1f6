package scheduler

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduler/lowerbound"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// lpPlan is a NodePool's plan for the new claims of one round: the LP relaxation of packing
// the round's shareable pending pods (lowerbound.Solve, by request vector) onto the NodePool's
// instance types, its load patterns rounded down to whole nodes. A pod that needs a new claim
// opens the next node of a pattern holding its size: the claim targets the pattern's type and
// is promised the pattern's other pods, which the promise mechanism then routes to it (see
// promisedClaim), and, in the room rounding leaves, the pods the LP values most. A pod that
// finds no plan node (rounding left it over, or the plan's pods went elsewhere: to existing
// nodes, to other claims) has the rest replanned, a few times per round; after that, and for
// pods the plan does not take (usesPlan), the look-ahead sizes the claim. The plan only ranks:
// every pod still joins its claim through the pipeline.
type lpPlan struct {
	patterns []*planPattern
	// solves counts the LP solves of the round; unpromised is the number of unpromised pods the
	// last one counted, so a re-solve is only tried when it could say something new.
	solves, unpromised int
	// classes index the requirements of the pods the plan counted (their requirements'
	// String()); pods without requirements are class 0, absent here.
	classes map[string]int
	// fillers are the sizes of the pods without requirements, the most valuable to the LP
	// first: what fills the room rounding leaves on a node.
	fillers []scheduling.Resources
}

// classOf is the plan class of the pod: 0 without requirements, else its requirements' index
// in the plan (-1 when the plan has not seen them).
func (plan *lpPlan) classOf(p *podInfo) int {
	reqs := p.variant().requirements
	if reqs.Len() == 0 {
		return 0
	}
	if k, ok := plan.classes[reqs.String()]; ok {
		return k
	}
	return -1
}

// planPattern is one LP pattern: pods per node by size (fractional) on one instance type, and
// the whole nodes of it not opened yet (by index, which spreads the fractions over them).
type planPattern struct {
	it      *cloudprovider.InstanceType
	room    scheduling.Resources
	sizes   []scheduling.Resources
	classes []int     // the class of the pods of each entry of sizes (see lpPlan.classes)
	x       []float64 // pods per node, by sizes
	nodes   float64   // the LP's (fractional) node count
	left    []int     // indices of the nodes not opened yet
}

// maxPlanSolves bounds the LP solves per NodePool and round: the first plans the batch, the
// others replan what rounding and the pods the plan did not foresee left over.
const maxPlanSolves = 8

// usesPlan reports whether new claims for the pod on the NodePool follow the LP plan: the pod
// may share its node with other pods (no node-level constraints) and asks for no host port,
// and the NodePool has no minValues, which the LP does not model. Limits it does not model
// either, but they need no fallback: a plan node is only opened on a type the limits still
// allow (typeRefusal), and the look-ahead takes the pods of those that are not.
func (s *solver) usesPlan(ps *poolState, p *podInfo) bool {
	return !s.opts.GrowClaims && len(p.hostPorts) == 0 &&
		!p.variant().hasNodeLevelConstraints() && !hasMinValues(ps.Requirements) && !ps.large(p.res)
}

// large reports whether pods of this size are too large for the plan: a share of the largest
// room of any instance type in cpu or memory. The LP splits such pods over nodes, which whole
// pods cannot follow; the look-ahead sizes their claims, filled with smaller pods.
func (ps *poolState) large(r scheduling.Resources) bool {
	room := ps.largest()
	return float64(r.MilliCPU) > float64(room.MilliCPU)*largeShare || float64(r.Memory) > float64(room.Memory)*largeShare
}

// largeShare is the share of the largest room above which a pod is large for the plan.
const largeShare = 1.0 / 16

// planned sizes a new claim for the pod from the NodePool's LP plan, solving it first if there
// is none or none of its nodes holds the pod's size. It returns the target type, the value of
// the pending pods it promises the claim and the promise, or nil when the plan has no node for
// the pod.
func (s *solver) planned(c *claimState, p *podInfo, reqs scheduling.Requirements) (*candidate, float64, map[scheduling.Resources]int) {
	ps := c.pool
	plan := s.plans[ps]
	if plan == nil {
		plan = &lpPlan{unpromised: -1}
		s.plans[ps] = plan
	}
	available := s.unpromised(ps, reqs)
	for attempt := 0; attempt < 2; attempt++ {
		if cand, others, fill := s.openPlanned(c, p, reqs, plan, available); cand != nil {
			return cand, others, fill
		}
		if attempt > 0 || plan.solves >= maxPlanSolves || !s.solvePlan(ps, p, plan) {
			break
		}
	}
	return nil, 0, nil
}

// unpromised counts the pending pods, by size, that could share a claim of the NodePool under
// reqs and no claim counts on yet.
func (s *solver) unpromised(ps *poolState, reqs scheduling.Requirements) map[scheduling.Resources]int {
	out := map[scheduling.Resources]int{}
	for _, sc := range s.shareableWith(ps, reqs, true) {
		out[s.sizes[sc.size]] += sc.count
	}
	for r, n := range out {
		out[r] = n - s.promised[r]
	}
	return out
}

// openPlanned opens the first plan node that holds a pod of p's size on an instance type the
// claim may launch, and returns its target, promised pods and their value.
func (s *solver) openPlanned(c *claimState, p *podInfo, reqs scheduling.Requirements, plan *lpPlan, available map[scheduling.Resources]int) (*candidate, float64, map[scheduling.Resources]int) {
	for _, pat := range plan.patterns {
		own, class := -1, plan.classOf(p)
		for i, r := range pat.sizes {
			if r == p.res && pat.classes[i] == class {
				own = i
			}
		}
		if own < 0 || len(pat.left) == 0 {
			continue
		}
		cand := candidateOf(c.pool.candidatesFor(reqs), pat.it)
		if cand == nil || typeRefusal(c, cand, p.res, p.extended, p.hostPorts) != nil {
			continue
		}
		for k, j := range pat.left {
			take := pat.take(j, own)
			if take[own] == 0 {
				continue
			}
			pat.left = append(pat.left[:k], pat.left[k+1:]...)
			fill := map[scheduling.Resources]int{}
			others := 0.0
			for i, r := range pat.sizes {
				n := take[i]
				if i == own {
					n-- // the pod opening the claim
				}
				n = min(n, available[r])
				if n > 0 {
					fill[r] = n
					others += float64(n) * c.pool.value(r)
				}
			}
			// Room that rounding left on the node goes to the pods the LP values most.
			room := cand.room.Sub(p.res)
			for r, n := range fill {
				room = room.Sub(scale(r, n))
			}
			for _, r := range plan.fillers {
				if n := fitCount(room, r, available[r]-fill[r]); n > 0 {
					fill[r] += n
					others += float64(n) * c.pool.value(r)
					room = room.Sub(scale(r, n))
				}
			}
			return cand, others, fill
		}
	}
	return nil, 0, nil
}

// take is how many pods of each size node j of the pattern holds: the fractional counts per
// node spread over the nodes (node j holds the pods between j·x and (j+1)·x, rounded up), cut
// where they overshoot most until they fit the node (never below one pod of size own), then
// topped up where they fell short most while they fit.
func (pat *planPattern) take(j, own int) []int {
	take := make([]int, len(pat.sizes))
	var used scheduling.Resources
	for i, x := range pat.x {
		upTo := func(k int) float64 { return math.Ceil(math.Min(float64(k)*x, x*pat.nodes) - 1e-6) }
		take[i] = int(upTo(j+1) - upTo(j))
		used = used.Add(scale(pat.sizes[i], take[i]))
	}
	for !used.Fits(pat.room) {
		worst, excess := -1, math.Inf(-1)
		for i := range take {
			if take[i] == 0 || i == own && take[i] == 1 {
				continue
			}
			if e := float64(take[i]) - pat.x[i]; e > excess {
				worst, excess = i, e
			}
		}
		if worst < 0 {
			break
		}
		take[worst]--
		used = used.Sub(pat.sizes[worst])
	}
	for {
		best, short := -1, math.Inf(-1)
		for i := range take {
			if float64(take[i]) >= math.Ceil(pat.x[i]-1e-6) || !used.Add(pat.sizes[i]).Fits(pat.room) {
				continue
			}
			if e := pat.x[i] - float64(take[i]); e > short {
				best, short = i, e
			}
		}
		if best < 0 {
			return take
		}
		take[best]++
		used = used.Add(pat.sizes[best])
	}
}

func candidateOf(cands []*candidate, it *cloudprovider.InstanceType) *candidate {
	for _, c := range cands {
		if c.it == it {
			return c
		}
	}
	return nil
}

// planShape is a shape of the plan's LP: pods of one size and class.
type planShape struct {
	res      scheduling.Resources
	class    int
	extended string // the extended resources requested, as a key
}

// solvePlan solves the LP over the NodePool's unpromised shareable pending pods (and p) on its
// instance types at their cheapest allowed offering, and replaces the plan's patterns by its
// patterns rounded down to whole nodes. It returns false when there was nothing new to solve or
// the LP could not be solved.
//
// Pods with requirements of their own (a capacity type, a zone, an architecture) form a class:
// their instance types are the NodePool's under those requirements too, at the prices they
// allow, as LP types of their own on which only the class's pods and pods without
// requirements may go (one more LP dimension per class, which only the class's pods request
// and only its types have).
func (s *solver) solvePlan(ps *poolState, p *podInfo, plan *lpPlan) bool {
	var (
		order      []planShape
		counts     = map[planShape]int{}
		extended   = map[planShape]corev1.ResourceList{}
		extNames   []corev1.ResourceName
		classReqs  = []scheduling.Requirements{ps.Requirements}
		classTypes = [][]*candidate{ps.candidatesFor(ps.Requirements)}
	)
	plan.classes = map[string]int{}
	add := func(sc *podInfo, n int) {
		k, reqs := 0, sc.variant().requirements
		if reqs.Len() > 0 {
			key := reqs.String()
			var ok bool
			if k, ok = plan.classes[key]; !ok {
				k = len(classReqs)
				plan.classes[key] = k
				narrowed := ps.Requirements.Intersect(reqs)
				classReqs = append(classReqs, narrowed)
				classTypes = append(classTypes, ps.candidatesFor(narrowed))
			}
		}
		if len(classTypes[k]) == 0 || ps.large(sc.res) {
			return // the look-ahead sizes them
		}
		ks := planShape{res: sc.res, class: k}
		if len(sc.extended) > 0 {
			ks.extended = fmt.Sprint(sc.extended)
			for name := range sc.extended {
				if !slices.Contains(extNames, name) {
					extNames = append(extNames, name)
				}
			}
		}
		if _, seen := counts[ks]; !seen {
			order = append(order, ks)
			extended[ks] = sc.extended
		}
		counts[ks] += n
	}
	for _, sc := range s.shareableWith(ps, ps.Requirements, true) {
		add(sc.example, sc.count)
	}
	add(p, 1)
	slices.Sort(extNames)
	// Promises are by size: count them against pods without requirements first.
	for _, r := range s.sizes {
		left := s.promised[r]
		for _, ks := range order {
			if ks.res == r && left > 0 {
				n := min(left, counts[ks])
				counts[ks] -= n
				left -= n
			}
		}
	}
	total := 0
	for _, n := range counts {
		total += max(n, 0)
	}
	if total == plan.unpromised {
		return false
	}
	plan.solves++
	plan.unpromised = total
	// The LP (lowerbound.Model): a class per requirement class, a dimension per extended
	// resource.
	model := lowerbound.NewModel(len(classReqs), len(extNames))
	var kept []planShape
	for _, ks := range order {
		if n := counts[ks]; n > 0 {
			var ext []float64
			if len(extNames) > 0 {
				ext = make([]float64, len(extNames))
				for i, name := range extNames {
					q := extended[ks][name]
					ext[i] = q.AsApproximateFloat64()
				}
			}
			model.AddShape(strconv.Itoa(len(kept)), ks.class, ks.res, ext, n)
			kept = append(kept, ks)
		}
	}
	var (
		cands   []*candidate
		classOf []int // the class of each of the model's types
	)
	// Each node costs a little more than its price in the LP, a thousandth of the cheapest
	// type's: of packings equal in price, the one with fewer nodes wins, as in the look-ahead.
	perNode := math.Inf(1)
	for _, list := range classTypes {
		for _, c := range list {
			if c.price > 0 {
				perNode = min(perNode, c.price/1000)
			}
		}
	}
	for k, list := range classTypes {
		for _, c := range list {
			if c.price <= 0 {
				continue
			}
			var ext []float64
			if len(extNames) > 0 {
				ext = make([]float64, len(extNames))
				for i, name := range extNames {
					q := c.it.Allocatable()[name].DeepCopy()
					if d, ok := c.daemon.extended[name]; ok {
						q.Sub(d)
					}
					ext[i] = max(q.AsApproximateFloat64(), 0)
				}
			}
			model.AddType(c.it.Name+"/"+strconv.Itoa(k), k, c.room, ext, c.price+perNode)
			cands = append(cands, c)
			classOf = append(classOf, k)
		}
	}
	plan.patterns = plan.patterns[:0]
	sol, err := model.Solve()
	if err != nil {
		return false
	}
	plan.fillers = plan.fillers[:0]
	var values []float64
	for i, ks := range kept {
		if ks.class == 0 && ks.extended == "" {
			plan.fillers = append(plan.fillers, ks.res)
			values = append(values, sol.ShapeValues[i])
		}
	}
	sort.Stable(byValue{plan.fillers, values})
	for _, lp := range sol.Patterns {
		cand, lpNodes, x := cands[lp.TypeIndex], lp.Nodes, lp.Pods
		if whole := wholePattern(lp, kept, sol.ShapeValues, cands, classOf, perNode); whole != nil {
			cand, lpNodes, x = whole.cand, whole.nodes, whole.pods
		}
		// Rounded down: what no whole node holds is planned again, with what the plan did not
		// foresee, when a pod finds no node for it; what no plan places falls to the
		// look-ahead.
		nodes := int(math.Floor(lpNodes + 1e-6))
		// A replan rounds up the patterns of pods with requirements of their own: they have
		// fewer instance types to go to, and the look-ahead would value their node's other pods
		// at the NodePool's prices (spot for a NodePool that allows it), not at their class's.
		if nodes == 0 && plan.solves > 1 {
			for i, x := range x {
				if x > 1e-9 && kept[i].class > 0 {
					nodes = 1
				}
			}
			// That node is sized to what the fraction holds: the cheapest type of the class
			// that fits its pods, whole.
			if nodes == 1 {
				if c, n := tailPattern(x, lpNodes, kept, cands, classOf, classOf[lp.TypeIndex]); c != nil {
					cand, x, lpNodes = c, n, 1
				}
			}
		}
		if nodes == 0 {
			continue
		}
		pat := &planPattern{it: cand.it, room: cand.room, nodes: lpNodes, left: make([]int, nodes)}
		for j := range pat.left {
			pat.left[j] = j
		}
		for i, x := range x {
			if x > 1e-9 {
				pat.sizes = append(pat.sizes, kept[i].res)
				pat.classes = append(pat.classes, kept[i].class)
				pat.x = append(pat.x, x)
			}
		}
		plan.patterns = append(plan.patterns, pat)
	}
	return true
}

// wholeFit is an LP pattern moved to whole pods on another instance type of its class: pods
// per node (whole numbers) by the LP's shapes, and the fractional node count that carries as
// much LP value as the pattern's nodes did.
type wholeFit struct {
	cand  *candidate
	pods  []float64
	nodes float64
}

// wholePattern chooses patterns with integrality in view. A pattern's pods per node are
// fractional; whole nodes of it hold their floor, topped up while they fit, which on a node
// that the LP fills in two dimensions at once loses most of a pod of each shape (13.7 and 13.4
// pods become 13 and 13 on an m5a.12xlarge). The pattern scaled onto another type of its class
// (by the smaller of the two types' cpu and memory room ratios) loses a fraction of a pod on
// more room, or fits a ratio better: each type's whole-pod pattern is costed as whole nodes
// carrying the pattern's LP value (by the shapes' dual values, sol.ShapeValues) plus what they
// leave over at the own type's whole-pod cost per value, and the cheapest wins (54 and 54 pods
// on an m6a.48xlarge at about four times the price, in the example). It returns nil when the
// pattern's own type wins, or the pattern has pods with extended resources (whose room does
// not scale with the size).
func wholePattern(lp lowerbound.Pattern, kept []planShape, values []float64, cands []*candidate, classOf []int, perNode float64) *wholeFit {
	sizes := make([]scheduling.Resources, len(kept))
	lpValue := 0.0
	for i, x := range lp.Pods {
		if x <= 1e-9 {
			continue
		}
		if kept[i].extended != "" {
			return nil
		}
		sizes[i] = kept[i].res
		lpValue += x * values[i]
	}
	own := cands[lp.TypeIndex]
	valueOf := func(n []int) float64 {
		v := 0.0
		for i, k := range n {
			v += float64(k) * values[i]
		}
		return v
	}
	// The cost of the pattern's LP value on whole nodes of c holding n, what they leave over
	// costed per value as on the pattern's own type.
	ownN := wholeCounts(lp.Pods, 1, sizes, own.room)
	ownRate := (own.price + perNode) / valueOf(ownN)
	if math.IsInf(ownRate, 0) || math.IsNaN(ownRate) {
		return nil
	}
	total := lp.Nodes * lpValue
	cost := func(c *candidate, n []int) float64 {
		v := valueOf(n)
		if v <= 0 {
			return math.Inf(1)
		}
		whole := math.Floor(total/v + 1e-6)
		return whole*(c.price+perNode) + max(total-whole*v, 0)*ownRate
	}
	var (
		best     *candidate
		bestN    []int
		bestCost = cost(own, ownN) * (1 - 1e-9)
	)
	for j, c := range cands {
		if c == own || classOf[j] != classOf[lp.TypeIndex] || c.price <= 0 {
			continue
		}
		ratio := math.Min(float64(c.room.MilliCPU)/float64(own.room.MilliCPU), float64(c.room.Memory)/float64(own.room.Memory))
		n := wholeCounts(lp.Pods, ratio, sizes, c.room)
		if k := cost(c, n); k < bestCost {
			best, bestN, bestCost = c, n, k
		}
	}
	if best == nil {
		return nil
	}
	out := &wholeFit{cand: best, pods: make([]float64, len(bestN))}
	v := 0.0
	for i, k := range bestN {
		out.pods[i] = float64(k)
		v += float64(k) * values[i]
	}
	out.nodes = lp.Nodes * lpValue / v
	return out
}

// tailPattern sizes the one node that a fraction (nodes < 1) of a pattern is rounded up to:
// the pattern's pods on that fraction, each count rounded up, on the cheapest type of the
// class k that fits them all (nil when none does, or the pattern has extended resources).
func tailPattern(x []float64, nodes float64, kept []planShape, cands []*candidate, classOf []int, k int) (*candidate, []float64) {
	var (
		used scheduling.Resources
		n    = make([]float64, len(x))
	)
	for i, xi := range x {
		if xi <= 1e-9 {
			continue
		}
		if kept[i].extended != "" {
			return nil, nil
		}
		n[i] = math.Ceil(xi*nodes - 1e-6)
		used = used.Add(scale(kept[i].res, int(n[i])))
	}
	var best *candidate
	for j, c := range cands {
		if classOf[j] == k && c.price > 0 && used.Fits(c.room) && (best == nil || c.price < best.price) {
			best = c
		}
	}
	if best == nil {
		return nil, nil
	}
	return best, n
}

// wholeCounts is the whole-pod pattern of the fractional one x scaled by ratio on a node with
// the given room: the floor of each count, cut where it overshoots most until it fits, then
// topped up (never past the count's ceiling) where it fell short most while it fits.
func wholeCounts(x []float64, ratio float64, sizes []scheduling.Resources, room scheduling.Resources) []int {
	n := make([]int, len(x))
	var used scheduling.Resources
	for i, xi := range x {
		if xi > 1e-9 {
			n[i] = int(math.Floor(xi*ratio + 1e-6))
			used = used.Add(scale(sizes[i], n[i]))
		}
	}
	for !used.Fits(room) {
		worst, excess := -1, math.Inf(-1)
		for i := range n {
			if e := float64(n[i]) - x[i]*ratio; n[i] > 0 && e > excess {
				worst, excess = i, e
			}
		}
		if worst < 0 {
			return n
		}
		n[worst]--
		used = used.Sub(sizes[worst])
	}
	for {
		best, short := -1, math.Inf(-1)
		for i := range n {
			y := x[i] * ratio
			if y <= 1e-9 || float64(n[i]) >= math.Ceil(y-1e-6) || !used.Add(sizes[i]).Fits(room) {
				continue
			}
			if e := y - float64(n[i]); e > short {
				best, short = i, e
			}
		}
		if best < 0 {
			return n
		}
		n[best]++
		used = used.Add(sizes[best])
	}
}

// byValue sorts sizes by their values, highest first.
type byValue struct {
	sizes  []scheduling.Resources
	values []float64
}

func (b byValue) Len() int           { return len(b.sizes) }
func (b byValue) Less(i, j int) bool { return b.values[i] > b.values[j] }
func (b byValue) Swap(i, j int) {
	b.sizes[i], b.sizes[j] = b.sizes[j], b.sizes[i]
	b.values[i], b.values[j] = b.values[j], b.values[i]
}
