package conformance

import (
	"context"
	"fmt"

	"sigs.k8s.io/yaml"
)

// Result is a case's verdict: both outcomes and the violations no divergence excuses, plus
// the excused ones by divergence name.
type Result struct {
	Ours, Karpenter *Outcome
	Violations      []Violation
	Excused         map[string][]Violation
}

// Failed reports whether the case broke a rule no divergence excuses.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// Run schedules a case with both schedulers and judges the outcomes.
func Run(ctx context.Context, c *Case) (*Result, error) {
	ours, err := RunOurs(ctx, c)
	if err != nil {
		return nil, err
	}
	theirs, err := RunKarpenter(ctx, c)
	if err != nil {
		return nil, err
	}
	r := &Result{Ours: ours, Karpenter: theirs, Excused: map[string][]Violation{}}
	var all []Violation
	theirsBroken := Check(c, theirs)
	all = append(all, Check(c, ours)...)
	all = append(all, theirsBroken...)
	all = append(all, Compare(c, ours, theirs)...)
	for i, v := range all {
		if v.Rule != RuleCost {
			continue
		}
		if len(theirsBroken) > 0 {
			// Karpenter's answer puts pods where the kube-scheduler would not bind them: its
			// price is not one a valid answer could meet.
			all[i].Detail += fmt.Sprintf("; %s (%d)", karpenterBreaksRulesNote, len(theirsBroken))
			continue
		}
		if ours.UnmetPreferences >= theirs.UnmetPreferences {
			continue
		}
		// Ours is dearer and keeps more of the preferences: is keeping them the whole cost?
		relaxed, err := runOurs(ctx, c, true)
		if err != nil {
			return nil, err
		}
		if len(Compare(c, relaxed, theirs)) == 0 {
			all[i].Detail += fmt.Sprintf("; %s (unmet weight ours %d, karpenter %d; ours without preferences $%.4f/h)",
				keptPreferencesNote, ours.UnmetPreferences, theirs.UnmetPreferences, Cost(c, relaxed))
		}
	}
	for _, v := range all {
		if name := divergenceOf(c, v); name != "" {
			r.Excused[name] = append(r.Excused[name], v)
			continue
		}
		r.Violations = append(r.Violations, v)
	}
	return r, nil
}

// YAML renders a case as a reproduction: NodePools, instance types, daemonsets, nodes, pods
// and storage, as one document.
func YAML(c *Case) string {
	out, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Sprintf("# cannot render: %v\n", err)
	}
	return string(out)
}

// LoadYAML reads a case written by YAML.
func LoadYAML(data []byte) (*Case, error) {
	c := &Case{}
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Shrink removes pods, workloads' siblings, nodes, NodePools, daemonsets and instance types
// one at a time while the case still fails with a violation of the same rule by the same
// scheduler, and returns the
// smallest case found.
func Shrink(ctx context.Context, c *Case, rule, scheduler string) *Case {
	still := func(x *Case) bool {
		r, err := Run(ctx, x)
		if err != nil {
			return false
		}
		for _, v := range r.Violations {
			if v.Rule == rule && v.Scheduler == scheduler {
				return true
			}
		}
		return false
	}
	cur := c
	for changed := true; changed; {
		changed = false
		for _, cand := range smaller(cur) {
			if still(cand) {
				cur, changed = cand, true
				break
			}
		}
	}
	return cur
}

// smaller lists the cases with one element less.
func smaller(c *Case) []*Case {
	var out []*Case
	clone := func() *Case { x := *c; return &x }
	for i := range c.Pods {
		x := clone()
		x.Pods = append(append(x.Pods[:0:0], c.Pods[:i]...), c.Pods[i+1:]...)
		out = append(out, x)
	}
	for i := range c.Nodes {
		x := clone()
		x.Nodes = append(append(x.Nodes[:0:0], c.Nodes[:i]...), c.Nodes[i+1:]...)
		out = append(out, x)
	}
	for i, n := range c.Nodes {
		for j := range n.Pods {
			x := clone()
			m := *n
			m.Pods = append(append(m.Pods[:0:0], n.Pods[:j]...), n.Pods[j+1:]...)
			x.Nodes = append(x.Nodes[:0:0], c.Nodes...)
			x.Nodes[i] = &m
			out = append(out, x)
		}
	}
	if len(c.NodePools) > 1 {
		for i := range c.NodePools {
			x := clone()
			x.NodePools = append(append(x.NodePools[:0:0], c.NodePools[:i]...), c.NodePools[i+1:]...)
			drop := c.NodePools[i].Name
			x.Nodes = nil
			for _, n := range c.Nodes {
				if n.NodePool != drop {
					x.Nodes = append(x.Nodes, n)
				}
			}
			out = append(out, x)
		}
	}
	for i := range c.DaemonSets {
		x := clone()
		x.DaemonSets = append(append(x.DaemonSets[:0:0], c.DaemonSets[:i]...), c.DaemonSets[i+1:]...)
		out = append(out, x)
	}
	if len(c.InstanceTypes) > 1 {
		for i := range c.InstanceTypes {
			used := false
			for _, n := range c.Nodes {
				used = used || n.InstanceType == c.InstanceTypes[i].Name
			}
			if used {
				continue
			}
			x := clone()
			x.InstanceTypes = append(append(x.InstanceTypes[:0:0], c.InstanceTypes[:i]...), c.InstanceTypes[i+1:]...)
			out = append(out, x)
		}
	}
	return out
}
