package simulate

import (
	"context"
	"fmt"
	"strings"
)

// explainFleet sets why each node of the final fleet stays (FleetNode.StaysBecause,
// WouldChange, DisruptedNext), from the decision the disruption controller's next pass would
// take.
func explainFleet(ctx context.Context, e *engine, fleet []FleetNode) error {
	if len(fleet) == 0 {
		return nil
	}
	explanations, err := e.disruption.Explain(ctx, e.clock.Now())
	if err != nil {
		return fmt.Errorf("explaining the final fleet: %w", err)
	}
	byNode := make(map[string]int, len(fleet))
	for i, n := range fleet {
		byNode[n.Name] = i
	}
	for _, x := range explanations {
		if i, ok := byNode[x.Node]; ok {
			fleet[i].StaysBecause, fleet[i].WouldChange, fleet[i].DisruptedNext = x.Reason, x.Change, x.Next
		}
	}
	return nil
}

// stayGroup is the final nodes that stay for one reason, with one change that would let
// disruption act on them, as the text and HTML reports list them.
type stayGroup struct {
	// Types lists the nodes' instance and capacity types with their counts ("2 × m6a.48xlarge
	// spot, 1 × c6a.large spot"); PerHour is what they cost together.
	Types   string
	PerHour float64
	Reason  string
	Change  string
	Nodes   int
}

// stayGroups groups the explained nodes of the fleet by reason and change, in fleet order.
func stayGroups(fleet []FleetNode) []stayGroup {
	type group struct {
		stayGroup
		counts map[string]int
		order  []string
	}
	var groups []*group
	index := map[[2]string]*group{}
	for _, n := range fleet {
		if n.StaysBecause == "" {
			continue
		}
		key := [2]string{n.StaysBecause, n.WouldChange}
		g := index[key]
		if g == nil {
			g = &group{stayGroup: stayGroup{Reason: n.StaysBecause, Change: n.WouldChange}, counts: map[string]int{}}
			index[key] = g
			groups = append(groups, g)
		}
		t := n.InstanceType + " " + n.CapacityType
		if g.counts[t] == 0 {
			g.order = append(g.order, t)
		}
		g.counts[t]++
		g.PerHour += n.PricePerHour
		g.Nodes++
	}
	out := make([]stayGroup, 0, len(groups))
	for _, g := range groups {
		types := make([]string, 0, len(g.order))
		for _, t := range g.order {
			types = append(types, fmt.Sprintf("%d × %s", g.counts[t], t))
		}
		g.Types = strings.Join(types, ", ")
		out = append(out, g.stayGroup)
	}
	return out
}

// writeStaysText writes why the final fleet's nodes stay, grouped by reason, or nothing when no
// node was explained; with the command that ran the report, how to see a change first.
func writeStaysText(b *strings.Builder, fleet []FleetNode, command string) {
	groups := stayGroups(fleet)
	if len(groups) == 0 {
		return
	}
	nodes := 0
	for _, g := range groups {
		nodes += g.Nodes
	}
	fmt.Fprintf(b, "\nWhy the %d %s at the end %s\n", nodes, plural(nodes, "node", "nodes"), plural(nodes, "stays", "stay"))
	changes := false
	for _, g := range groups {
		fmt.Fprintf(b, "  %s, $%.2f/hour: %s\n", g.Types, g.PerHour, g.Reason)
		if g.Change != "" {
			fmt.Fprintf(b, "      would change it: %s\n", g.Change)
			changes = true
		}
	}
	if changes && command != "" {
		fmt.Fprintf(b, "  To see a change first: %s --compare CHANGED.yaml runs the same timeline with the NodePools and EC2NodeClasses of CHANGED.yaml beside these; a feature gate goes in the workload's featureGates.\n", command)
	}
}
