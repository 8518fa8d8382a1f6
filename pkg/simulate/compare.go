package simulate

import (
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"math"
	"strings"
	"text/tabwriter"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	autoscalingv1beta1 "github.com/openkarpenter/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/openkarpenter/karpenter/pkg/featuregate"
)

// WithManifests returns a copy of the workload whose NodePools, NodeClasses and
// CapacityBuffers (with their PodTemplates) are those of path instead: either a workload file
// (its manifests are taken, the rest ignored) or a file of plain manifests (its Karpenter
// objects are taken, its workloads ignored). The workload's DaemonSets and volumes stay.
func (w *Workload) WithManifests(path string) (*Workload, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	text, line := string(data), 1
	if !isPlainManifests(data) {
		var root yaml.Node
		if err := yaml.Unmarshal(data, &root); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		n := findValue(&root, "manifests")
		if n == nil || n.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s: neither Kubernetes manifests nor a workload file with manifests", path)
		}
		text, line = n.Value, blockLine(n)
	}
	// Only Karpenter's objects are taken: the workloads of a plain-manifest file are not.
	docs, errs := readDocuments(path, text, line)
	var karpenter, templates []document
	for _, doc := range docs {
		u := &unstructured.Unstructured{Object: doc.raw}
		switch {
		case doc.isKarpenter() || u.GroupVersionKind().Group == autoscalingv1beta1.Group:
			karpenter = append(karpenter, doc)
		case isPodTemplate(u.GetAPIVersion(), u.GetKind()):
			templates = append(templates, doc)
		}
	}
	objs, err := decodeObjects(karpenter)
	pts, templateErrs := decodePodTemplates(templates)
	objs = append(objs, pts...)
	if problems := bufferProblems(objs, w.FeatureGates[featuregate.CapacityBuffer]); len(problems) > 0 {
		errs = append(errs, fmt.Errorf("%s: %s", path, strings.Join(problems, "; ")))
	}
	if err := errors.Join(append(append(errs, err), templateErrs...)...); err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%s: no NodePool or EC2NodeClass", path)
	}
	// The workload's other objects (its DaemonSets) stay.
	for _, o := range w.Objects {
		gvk := o.GetObjectKind().GroupVersionKind()
		if g := gvk.Group; g != "karpenter.sh" && g != "karpenter.k8s.aws" && g != autoscalingv1beta1.Group && !isPodTemplate(gvk.GroupVersion().String(), gvk.Kind) {
			objs = append(objs, o)
		}
	}
	other := *w
	other.Objects = objs
	other.Name = w.Name + " with " + path
	return &other, nil
}

// Comparison is two runs of the same timeline with different NodePools: the figures that
// differ first, then both reports.
type Comparison struct {
	// A and B say what each run simulated.
	A string `json:"a"`
	B string `json:"b"`
	// Differences are the figures that differ and Unchanged those equal in both runs, each in
	// the same order: cost, nodes, pending time, utilization, launches refused, removals, node
	// repair's reboots and holds.
	Differences []Difference `json:"differences"`
	Unchanged   []Difference `json:"unchanged"`
	// Why says in one line why one run ends cheaper than the other, where their final fleets'
	// explanations tell it (FleetNode.StaysBecause); empty otherwise.
	Why  string  `json:"why,omitempty"`
	RunA *Report `json:"runA"`
	RunB *Report `json:"runB"`
}

// Difference is one figure in both runs.
type Difference struct {
	// Field names the figure stably, as a path into the report's JSON where it has one
	// ("cost.total", "removed.Empty"); Metric is its display label.
	Field  string  `json:"field"`
	Metric string  `json:"metric"`
	A      float64 `json:"a"`
	B      float64 `json:"b"`
	// Change is B − A.
	Change float64 `json:"change"`
}

// Relative is the change as a share of A, such as "+12.5%" ("new" when A is zero).
func (d Difference) Relative() string {
	if d.A == 0 {
		return "new"
	}
	return fmt.Sprintf("%+.1f%%", 100*d.Change/abs(d.A))
}

// Compare compares run B with run A.
func Compare(aName, bName string, a, b *Report) *Comparison {
	c := &Comparison{A: aName, B: bName, RunA: a, RunB: b, Differences: []Difference{}, Unchanged: []Difference{}, Why: whyEndsApart(a, b)}
	for _, f := range figures(a, b) {
		if f.A == f.B {
			c.Unchanged = append(c.Unchanged, f)
		} else {
			c.Differences = append(c.Differences, f)
		}
	}
	return c
}

// whyEndsApart says why one run ends cheaper than the other, in one line, when one reason its
// final nodes stay for (FleetNode.StaysBecause) holds more $/hour in the dearer run than in the
// cheaper one: the reason holding the most such $/hour. Empty when the runs end within a cent
// an hour of each other, or no reason tells them apart.
func whyEndsApart(a, b *Report) string {
	diff := b.Cost.FinalPerHour - a.Cost.FinalPerHour
	if math.Abs(diff) < 0.01 {
		return ""
	}
	cheaper, dearer, cheaperName, dearerName := b, a, "B", "A"
	if diff > 0 {
		cheaper, dearer, cheaperName, dearerName = a, b, "A", "B"
	}
	kept := func(rep *Report) map[string]float64 {
		out := map[string]float64{}
		for _, n := range rep.Fleet {
			if n.StaysBecause != "" {
				out[n.StaysBecause] += n.PricePerHour
			}
		}
		return out
	}
	inDearer, inCheaper := kept(dearer), kept(cheaper)
	best, margin := "", 0.0
	for _, reason := range sortedKeys(inDearer) {
		if m := inDearer[reason] - inCheaper[reason]; m > margin+1e-9 {
			best, margin = reason, m
		}
	}
	if best == "" {
		return ""
	}
	others := fmt.Sprintf("%s $%.2f/hour", cheaperName, inCheaper[best])
	if inCheaper[best] == 0 {
		others = cheaperName + " none"
	}
	return fmt.Sprintf("%s ends $%.2f/hour cheaper than %s: %s keeps $%.2f/hour of nodes at the end because %q, %s.",
		cheaperName, math.Abs(diff), dearerName, dearerName, inDearer[best], best, others)
}

// figures are the figures compared, rounded as printed.
func figures(a, b *Report) []Difference {
	var out []Difference
	add := func(field, metric string, av, bv float64, decimals int) {
		p := math.Pow(10, float64(decimals))
		av, bv = math.Round(av*p)/p, math.Round(bv*p)/p
		out = append(out, Difference{Field: field, Metric: metric, A: av, B: bv, Change: math.Round((bv-av)*p) / p})
	}
	add("cost.total", "total cost ($)", a.Cost.Total, b.Cost.Total, 2)
	add("cost.peakPerHour", "peak $/hour", a.Cost.PeakPerHour, b.Cost.PeakPerHour, 2)
	add("cost.finalPerHour", "final $/hour", a.Cost.FinalPerHour, b.Cost.FinalPerHour, 2)
	add("nodes.launched", "nodes launched", float64(a.Nodes.Launched), float64(b.Nodes.Launched), 0)
	add("nodes.peak", "peak nodes", float64(a.Nodes.Peak), float64(b.Nodes.Peak), 0)
	add("nodes.final", "final nodes", float64(a.Nodes.Final), float64(b.Nodes.Final), 0)
	add("nodes.launchedSpot", "spot nodes launched", float64(launched(a, "spot")), float64(launched(b, "spot")), 0)
	add("nodes.launchedOnDemand", "on-demand nodes launched", float64(launched(a, "on-demand")), float64(launched(b, "on-demand")), 0)
	add("pods.pendingMeanSeconds", "pending mean (s)", a.Pods.PendingMeanS, b.Pods.PendingMeanS, 1)
	add("pods.pendingP95Seconds", "pending p95 (s)", a.Pods.PendingP95S, b.Pods.PendingP95S, 1)
	add("pods.pendingMaxSeconds", "pending max (s)", a.Pods.PendingMaxS, b.Pods.PendingMaxS, 1)
	add("pods.neverScheduled", "never scheduled", float64(a.Pods.NeverScheduled), float64(b.Pods.NeverScheduled), 0)
	add("utilization.cpuMeanPercent", "cpu requested (%)", 100*a.Util.CPUMean, 100*b.Util.CPUMean, 1)
	add("utilization.memoryMeanPercent", "memory requested (%)", 100*a.Util.MemoryMean, 100*b.Util.MemoryMean, 1)
	add("failedLaunches", "launches refused", float64(len(a.FailedLaunches)), float64(len(b.FailedLaunches)), 0)
	for _, r := range RemovalReasons {
		if a.Disruptions[r]+b.Disruptions[r] > 0 {
			add("disruptions."+r, "removed "+r, float64(a.Disruptions[r]), float64(b.Disruptions[r]), 0)
		}
	}
	// Node repair's reboots and holds, when either run repaired: what a budget for reason
	// Unhealthy or the RebootForRepair gate changes beyond the nodes removed.
	if a.Repairs != nil || b.Repairs != nil {
		ra, rb := cmp.Or(a.Repairs, &RepairCounts{}), cmp.Or(b.Repairs, &RepairCounts{})
		add("repairs.reboots", "repair reboots", float64(ra.Reboots), float64(rb.Reboots), 0)
		add("repairs.blocked", "repairs held", float64(ra.Blocked), float64(rb.Blocked), 0)
	}
	return out
}

// launched counts the nodes of a capacity type a run launched.
func launched(rep *Report, capacityType string) int {
	n := 0
	for _, tc := range rep.Nodes.ByType {
		if tc.CapacityType == capacityType {
			n += tc.Count
		}
	}
	return n
}

// text writes the figures side by side, those that differ first, and how much more or less B
// costs.
func (c *Comparison) text(b *strings.Builder) {
	fmt.Fprintf(b, "Comparing %s (A) with %s (B) over %s\n\n", c.A, c.B, c.RunA.Duration)
	tw := tabwriter.NewWriter(b, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tA\tB\tB − A\t\t")
	for _, d := range c.Differences {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", d.Metric, trim(d.A), trim(d.B), signedTrim(d.Change), d.Relative())
	}
	_ = tw.Flush() // a strings.Builder does not fail
	if len(c.Differences) == 0 {
		b.WriteString("No difference.\n")
	}
	if len(c.Unchanged) > 0 {
		fmt.Fprintf(b, "\nThe same in both: %s.\n", strings.Join(c.UnchangedNames(), ", "))
	}
	if base, other := c.RunA.Cost.Total, c.RunB.Cost.Total; base > 0 {
		fmt.Fprintf(b, "\nB costs %.1f%% %s than A.\n", 100*abs(other-base)/base, map[bool]string{true: "less", false: "more"}[other <= base])
	}
	if c.Why != "" {
		fmt.Fprintf(b, "%s\n", c.Why)
	}
}

// UnchangedNames are the figures equal in both runs, with their value.
func (c *Comparison) UnchangedNames() []string {
	out := make([]string, len(c.Unchanged))
	for i, d := range c.Unchanged {
		out[i] = fmt.Sprintf("%s %s", d.Metric, trim(d.A))
	}
	return out
}

func signedTrim(v float64) string {
	if v > 0 {
		return "+" + trim(v)
	}
	return trim(v)
}

// pageTemplate draws the comparison on one page: the differences first, then both runs on
// the same charts (A solid, B in pink), then each run's report side by side.
func (c *Comparison) pageTemplate() (name string, data any) {
	pageData := struct {
		*Comparison
		Charts       []template.HTML
		ViewA, ViewB *view
	}{Comparison: c, ViewA: newView(c.RunA), ViewB: newView(c.RunB)}
	// The two runs share the timeline, so A's markers are B's.
	ms := pageData.ViewA.Markers
	both := func(title, unit string, f func(Sample) float64) template.HTML {
		xs := hours(c.RunA.Series)
		if len(c.RunB.Series) > len(c.RunA.Series) {
			xs = hours(c.RunB.Series)
		}
		return lineChart(title, unit, xs, ms, []series{
			{"A: " + c.A, colorNodes, resample(c.RunA.Series, xs, f), false}, {"B: " + c.B, colorB, resample(c.RunB.Series, xs, f), false}})
	}
	pageData.Charts = []template.HTML{
		both("Nodes", "nodes", func(s Sample) float64 { return float64(s.Nodes) }),
		both("Cost", "$/hour", func(s Sample) float64 { return s.CostPerHour }),
		both("Pending pods", "pods", func(s Sample) float64 { return float64(s.Pending) }),
		both("Spot nodes", "nodes", func(s Sample) float64 { return float64(s.SpotNodes) }),
		both("Requested share of allocatable cpu", "%", func(s Sample) float64 { return 100 * s.CPUUtil }),
	}
	return "compare", pageData
}

// resample reads a run's series at the given hours: the value of the last sample at or
// before each (the runs sample at their own moments).
func resample(samples []Sample, xs []float64, f func(Sample) float64) []float64 {
	out := make([]float64, len(xs))
	j := -1
	for i, x := range xs {
		for j+1 < len(samples) && float64(samples[j+1].AtSeconds)/3600 <= x {
			j++
		}
		if j >= 0 {
			out[i] = f(samples[j])
		}
	}
	return out
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
