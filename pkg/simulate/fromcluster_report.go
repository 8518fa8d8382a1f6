package simulate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// ClusterReport is what `karpenter simulate --from-cluster` reports: the cluster's fleet today,
// what consolidation would do to it now, what this project would launch for the same pods from
// scratch, and what each saves.
type ClusterReport struct {
	// Version is the version of karpenter that ran it (set by the command).
	Version string `json:"version"`
	// Source names the cluster: the dump's file or the kubeconfig's context.
	Source string `json:"source"`
	// NodePoolsFrom says where the NodePools simulated came from.
	NodePoolsFrom string `json:"nodePoolsFrom"`
	// Seed is the simulated cloud's seed.
	Seed int64 `json:"seed"`
	// Pods counts the cluster's pods.
	Pods ClusterPods `json:"pods"`
	// Today is the fleet as read.
	Today ClusterFleet `json:"today"`
	// Consolidation is what the disruption controllers do to today's fleet.
	Consolidation Consolidation `json:"consolidation"`
	// FromScratch is the fleet launched for the same pods on an empty cluster.
	FromScratch ScratchFleet `json:"fromScratch"`
	// Savings compares the three.
	Savings Savings `json:"savings"`
	// Warnings are what was read but could not be taken as it is, and controller errors.
	Warnings []string `json:"warnings"`
}

// ClusterPods counts the cluster's pods that the simulation runs.
type ClusterPods struct {
	// Workload are the pods that are neither DaemonSets' nor static; Pending those of them
	// without a node.
	Workload int `json:"workload"`
	Pending  int `json:"pending"`
	// Daemon are the DaemonSet and static pods on the nodes read.
	Daemon int `json:"daemon"`
}

// ClusterFleet is a set of nodes and what it costs. Nodes whose instance type the catalog does
// not price are counted, listed in Unpriced and left out of the costs.
type ClusterFleet struct {
	Nodes    int          `json:"nodes"`
	PerHour  float64      `json:"perHour"`
	PerMonth float64      `json:"perMonth"`
	Groups   []FleetGroup `json:"groups"`
	Unpriced []string     `json:"unpriced"`
}

// FleetGroup is the nodes of one NodePool (UnmanagedNodePool for nodes Karpenter does not
// manage), instance type and capacity type.
type FleetGroup struct {
	NodePool     string `json:"nodePool"`
	InstanceType string `json:"instanceType"`
	CapacityType string `json:"capacityType"`
	Nodes        int    `json:"nodes"`
	// PricePerHour is one node's price; PerHour the group's; both 0 when not priced.
	PricePerHour float64 `json:"pricePerHour"`
	PerHour      float64 `json:"perHour"`
	Priced       bool    `json:"priced"`
}

// Consolidation is what the disruption controllers did to the adopted fleet: each command in
// order, and the fleet they left.
type Consolidation struct {
	// Duration is the virtual time run: the longest consolidateAfter plus the settle time.
	Duration string `json:"duration"`
	// Settled says no command started in the last SettleQuiet of the run.
	Settled bool                `json:"settled"`
	Steps   []ConsolidationStep `json:"steps"`
	Fleet   ClusterFleet        `json:"fleet"`
	// Unmanaged counts the nodes Karpenter does not manage, which it never disrupts.
	Unmanaged int `json:"unmanaged"`
	// PendingPods are the workload pods without a node at the end.
	PendingPods int `json:"pendingPods"`
}

// SettleQuiet is how long the end of a consolidation run must pass without a command for it
// to count as settled.
const SettleQuiet = 10 * time.Minute

// ConsolidationStep is one disruption command.
type ConsolidationStep struct {
	// AtSeconds is when it was decided, from the start of the run.
	AtSeconds int64 `json:"at"`
	// Method, Reason and Action (delete or replace) are as in the simulation's event log.
	Method string `json:"method"`
	Reason string `json:"reason"`
	Action string `json:"action"`
	// Nodes are the nodes it removes; Message says what it does.
	Nodes   []string `json:"nodes"`
	Message string   `json:"message"`
	// PerHourAfter is the fleet's $/hour once it is done (when the next begins, or at the end).
	PerHourAfter float64 `json:"perHourAfter"`
}

// ScratchFleet is the fleet launched for the cluster's pods on an empty cluster, once settled.
type ScratchFleet struct {
	Duration    string       `json:"duration"`
	Fleet       ClusterFleet `json:"fleet"`
	PendingPods int          `json:"pendingPods"`
	// Unscheduled says, per pod, why those still pending at the end have no node.
	Unscheduled []Unscheduled `json:"unscheduled"`
}

// Savings are the $/hour and $/month of today's fleet, after consolidation and from scratch,
// and what the last two save on today's.
type Savings struct {
	TodayPerHour         float64 `json:"todayPerHour"`
	ConsolidatedPerHour  float64 `json:"consolidatedPerHour"`
	FromScratchPerHour   float64 `json:"fromScratchPerHour"`
	ConsolidationPerHour float64 `json:"consolidationSavesPerHour"`
	ConsolidationMonth   float64 `json:"consolidationSavesPerMonth"`
	FromScratchSavesHour float64 `json:"fromScratchSavesPerHour"`
	FromScratchMonth     float64 `json:"fromScratchSavesPerMonth"`
}

// Run runs both simulations and reports.
func (r *ClusterRun) Run(ctx context.Context) (*ClusterReport, error) {
	rep := &ClusterReport{Source: r.cluster.Source, NodePoolsFrom: r.poolsFrom, Seed: r.opts.Seed, Warnings: slices.Clone(r.warnings)}
	unpriced := map[string]bool{}
	nodePoolOf := map[string]string{}
	var today []fleetMember
	for _, a := range r.nodes {
		today = append(today, fleetMember{name: a.node.Name, nodePool: a.nodePool, instanceType: a.instanceType, capacityType: a.capacityType, price: a.price, priced: a.priced})
		if !a.priced {
			unpriced[a.node.Name] = true
		}
		nodePoolOf[a.node.Name] = a.nodePool
		if a.nodePool == "" {
			rep.Consolidation.Unmanaged++
		}
	}
	rep.Today = fleetOf(today)
	rep.Pods.Daemon = len(r.daemons)
	for _, p := range r.pods {
		rep.Pods.Workload++
		if p.node == "" {
			rep.Pods.Pending++
		}
	}
	opts := func(run string) Options {
		o := Options{}
		if r.opts.Progress != nil {
			o.Progress = func(done, total time.Duration) { r.opts.Progress(run, done, total) }
		}
		return o
	}
	consolidated, err := Run(ctx, r.workload(false), opts("consolidation now"))
	if err != nil {
		return nil, fmt.Errorf("consolidation now: %w", err)
	}
	scratch, err := Run(ctx, r.workload(true), opts("from scratch"))
	if err != nil {
		return nil, fmt.Errorf("from scratch: %w", err)
	}
	rep.Consolidation = r.consolidation(consolidated, unpriced, nodePoolOf, rep.Consolidation.Unmanaged)
	rep.FromScratch = ScratchFleet{Duration: scratch.Duration, Fleet: fleetOf(finalFleet(scratch, nil, nil)), PendingPods: scratch.Pods.NeverScheduled,
		Unscheduled: slices.Clone(scratch.Pods.Unscheduled)}
	if rep.FromScratch.Unscheduled == nil {
		rep.FromScratch.Unscheduled = []Unscheduled{}
	}
	for _, w := range append(consolidated.Warnings, scratch.Warnings...) {
		if !slices.Contains(rep.Warnings, w) {
			rep.Warnings = append(rep.Warnings, w)
		}
	}
	if rep.Warnings == nil {
		rep.Warnings = []string{}
	}
	s := &rep.Savings
	s.TodayPerHour, s.ConsolidatedPerHour, s.FromScratchPerHour = rep.Today.PerHour, rep.Consolidation.Fleet.PerHour, rep.FromScratch.Fleet.PerHour
	s.ConsolidationPerHour = round(s.TodayPerHour - s.ConsolidatedPerHour)
	s.ConsolidationMonth = round(rep.Today.PerMonth - rep.Consolidation.Fleet.PerMonth)
	s.FromScratchSavesHour = round(s.TodayPerHour - s.FromScratchPerHour)
	s.FromScratchMonth = round(rep.Today.PerMonth - rep.FromScratch.Fleet.PerMonth)
	return rep, nil
}

// consolidation reads the steps and the final fleet of the adopted run.
func (r *ClusterRun) consolidation(rep *Report, unpriced map[string]bool, nodePoolOf map[string]string, unmanaged int) Consolidation {
	out := Consolidation{Duration: rep.Duration, Steps: []ConsolidationStep{}, Unmanaged: unmanaged, PendingPods: rep.Pods.NeverScheduled}
	var steps []LogEntry
	for _, e := range rep.Events {
		if e.Kind == LogDisruption && e.Action != "blocked" {
			steps = append(steps, e)
		}
	}
	for i, e := range steps {
		after := rep.Cost.FinalPerHour
		if i+1 < len(steps) {
			after = costAt(rep.Series, steps[i+1].AtSeconds)
		}
		out.Steps = append(out.Steps, ConsolidationStep{AtSeconds: e.AtSeconds, Method: e.Method, Reason: e.Reason, Action: e.Action, Nodes: slices.Clone(e.Nodes), Message: e.Message, PerHourAfter: after})
	}
	end := int64(r.duration / time.Second)
	out.Settled = len(steps) == 0 || steps[len(steps)-1].AtSeconds <= end-int64(SettleQuiet/time.Second)
	out.Fleet = fleetOf(finalFleet(rep, unpriced, nodePoolOf))
	return out
}

// costAt is the fleet's $/hour in the last sample before at.
func costAt(series []Sample, at int64) float64 {
	cost := 0.0
	for _, s := range series {
		if s.AtSeconds >= at {
			break
		}
		cost = s.CostPerHour
	}
	return cost
}

// fleetMember is one node of a fleet.
type fleetMember struct {
	name, nodePool, instanceType, capacityType string
	price                                      float64
	priced                                     bool
}

// finalFleet is a run's nodes at the end; unpriced and nodePoolOf say which adopted nodes have
// no price and their NodePools (launched nodes' come from the node history).
func finalFleet(rep *Report, unpriced map[string]bool, nodePoolOf map[string]string) []fleetMember {
	pools := map[string]string{}
	for _, n := range rep.NodeHistory {
		pools[n.Name] = n.NodePool
	}
	var out []fleetMember
	for _, n := range rep.Fleet {
		pool, ok := nodePoolOf[n.Name]
		if !ok {
			pool = pools[n.Name]
		}
		out = append(out, fleetMember{name: n.Name, nodePool: pool, instanceType: n.InstanceType, capacityType: n.CapacityType, price: n.PricePerHour, priced: !unpriced[n.Name]})
	}
	return out
}

// fleetOf sums a fleet up by NodePool, instance type and capacity type.
func fleetOf(members []fleetMember) ClusterFleet {
	f := ClusterFleet{Nodes: len(members), Groups: []FleetGroup{}, Unpriced: []string{}}
	groups := map[[3]string]*FleetGroup{}
	total := 0.0
	slices.SortFunc(members, func(a, b fleetMember) int { return strings.Compare(a.name, b.name) })
	for _, m := range members {
		pool := cmp.Or(m.nodePool, UnmanagedNodePool)
		key := [3]string{pool, m.instanceType, m.capacityType}
		g := groups[key]
		if g == nil {
			g = &FleetGroup{NodePool: pool, InstanceType: m.instanceType, CapacityType: m.capacityType, Priced: m.priced}
			if m.priced {
				g.PricePerHour = round(m.price)
			}
			groups[key] = g
		}
		g.Nodes++
		if m.priced {
			g.PerHour = round(g.PerHour + m.price)
			total += m.price
		} else {
			f.Unpriced = append(f.Unpriced, m.name)
		}
	}
	for _, g := range groups {
		f.Groups = append(f.Groups, *g)
	}
	slices.SortFunc(f.Groups, func(a, b FleetGroup) int {
		return cmp.Or(strings.Compare(a.NodePool, b.NodePool), strings.Compare(a.InstanceType, b.InstanceType), strings.Compare(a.CapacityType, b.CapacityType))
	})
	f.PerHour = round(total)
	f.PerMonth = round(total * cloudprovider.HoursPerMonth)
	return f
}

// text writes the report for a terminal.
func (rep *ClusterReport) text(b *strings.Builder) {
	fmt.Fprintf(b, "Cluster %s: %d nodes, %d pods (%d pending) and %d DaemonSet or static pods\n", rep.Source, rep.Today.Nodes, rep.Pods.Workload, rep.Pods.Pending, rep.Pods.Daemon)
	fmt.Fprintf(b, "NodePools: %s\n", rep.NodePoolsFrom)

	fmt.Fprintf(b, "\nToday: %d nodes, $%.4f/hour, $%.2f/month\n", rep.Today.Nodes, rep.Today.PerHour, rep.Today.PerMonth)
	writeGroups(b, rep.Today)

	c := rep.Consolidation
	fmt.Fprintf(b, "\nConsolidation now: %d nodes, $%.4f/hour, $%.2f/month%s\n", c.Fleet.Nodes, c.Fleet.PerHour, c.Fleet.PerMonth, change(rep.Today.PerHour, c.Fleet.PerHour))
	if len(c.Steps) == 0 {
		b.WriteString("  no command: consolidation leaves the fleet as it is\n")
	}
	for i, s := range c.Steps {
		fmt.Fprintf(b, "  %2d. at %-7s %s (%s): %s; nodes %s; then $%.4f/hour\n", i+1, time.Duration(s.AtSeconds)*time.Second, s.Method, s.Reason, strings.TrimPrefix(s.Message, "consolidating: "), strings.Join(s.Nodes, ", "), s.PerHourAfter)
	}
	if c.Unmanaged > 0 {
		fmt.Fprintf(b, "  %d %s Karpenter does not manage, listed as %s, %s never disrupted: --adopt-nodes NODEPOOL takes them into a NodePool\n", c.Unmanaged, plural(c.Unmanaged, "node", "nodes"), UnmanagedNodePool, plural(c.Unmanaged, "is", "are"))
	}
	if !c.Settled {
		fmt.Fprintf(b, "  still consolidating when the run ended (%s): a longer --settle shows the rest\n", c.Duration)
	}
	if c.PendingPods > 0 {
		fmt.Fprintf(b, "  %d %s without a node at the end\n", c.PendingPods, plural(c.PendingPods, "pod", "pods"))
	}
	writeGroups(b, c.Fleet)

	s := rep.FromScratch
	fmt.Fprintf(b, "\nFrom scratch: %d nodes, $%.4f/hour, $%.2f/month%s\n", s.Fleet.Nodes, s.Fleet.PerHour, s.Fleet.PerMonth, change(rep.Today.PerHour, s.Fleet.PerHour))
	writeGroups(b, s.Fleet)
	for _, u := range s.Unscheduled {
		fmt.Fprintf(b, "  never scheduled: %s (%d): %s\n", u.Workload, u.Pods, u.Reason)
	}

	sv := rep.Savings
	b.WriteString("\nSavings\n")
	tw := tabwriter.NewWriter(b, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  FLEET\t$/HOUR\t$/MONTH\tSAVES $/MONTH")
	fmt.Fprintf(tw, "  today\t%.4f\t%.2f\t-\n", sv.TodayPerHour, rep.Today.PerMonth)
	fmt.Fprintf(tw, "  after consolidation\t%.4f\t%.2f\t%.2f\n", sv.ConsolidatedPerHour, c.Fleet.PerMonth, sv.ConsolidationMonth)
	fmt.Fprintf(tw, "  from scratch\t%.4f\t%.2f\t%.2f\n", sv.FromScratchPerHour, s.Fleet.PerMonth, sv.FromScratchMonth)
	_ = tw.Flush()
	if len(rep.Today.Unpriced) > 0 {
		fmt.Fprintf(b, "  %d %s of instance types the catalog does not price (%s): counted as nodes, left out of every $ figure\n",
			len(rep.Today.Unpriced), plural(len(rep.Today.Unpriced), "node", "nodes"), strings.Join(rep.Today.Unpriced, ", "))
	}
	if len(rep.Warnings) > 0 {
		b.WriteString("\nWarnings\n")
		for _, msg := range rep.Warnings {
			fmt.Fprintf(b, "  %s\n", msg)
		}
	}
}

// pageTemplate draws the report on one page: the savings first, then today's fleet,
// consolidation's steps and the fleet they leave, and the fleet from scratch.
func (rep *ClusterReport) pageTemplate() (name string, data any) {
	return "cluster", rep
}

// change describes a fleet's $/hour against today's: " (-$0.1234/hour, -12%)".
func change(today, now float64) string {
	if today <= 0 {
		return ""
	}
	d := now - today
	return fmt.Sprintf(" (%+.4f $/hour, %+.0f%%)", d, 100*d/today)
}

func writeGroups(b *strings.Builder, f ClusterFleet) {
	if len(f.Groups) == 0 {
		return
	}
	tw := tabwriter.NewWriter(b, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NODEPOOL\tTYPE\tCAPACITY\tNODES\t$/HOUR EACH\t$/HOUR")
	for _, g := range f.Groups {
		each, total := fmt.Sprintf("%.4f", g.PricePerHour), fmt.Sprintf("%.4f", g.PerHour)
		if !g.Priced {
			each, total = "unpriced", "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\n", g.NodePool, g.InstanceType, g.CapacityType, g.Nodes, each, total)
	}
	_ = tw.Flush()
}
