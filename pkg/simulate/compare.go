package simulate

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	yaml "go.yaml.in/yaml/v3"
)

// WithManifests returns a copy of the workload whose NodePools and NodeClasses are those of
// path instead: either a workload file (its manifests are taken, the rest ignored) or a file of
// plain manifests (its Karpenter objects are taken, its workloads ignored). The workload's
// DaemonSets stay.
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
	var karpenter []document
	for _, doc := range docs {
		if doc.isKarpenter() {
			karpenter = append(karpenter, doc)
		}
	}
	objs, err := decodeObjects(karpenter)
	if err := errors.Join(append(errs, err)...); err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%s: no NodePool or EC2NodeClass", path)
	}
	// The workload's other objects (its DaemonSets) stay.
	for _, o := range w.Objects {
		if group := o.GetObjectKind().GroupVersionKind().Group; group != "karpenter.sh" && group != "karpenter.k8s.aws" {
			objs = append(objs, o)
		}
	}
	other := *w
	other.Objects = objs
	other.Name = w.Name + " with " + path
	return &other, nil
}

// WriteComparison prints two reports side by side with the difference.
func WriteComparison(out io.Writer, baseName, otherName string, base, other *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Comparing %s (A) with %s (B) over %s\n\n", baseName, otherName, base.Duration)
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tA\tB\tB − A\t")
	row := func(name string, a, bv float64, format string) {
		fmt.Fprintf(tw, "%s\t"+format+"\t"+format+"\t%+"+format[1:]+"\t\n", name, a, bv, bv-a)
	}
	row("total cost ($)", base.Cost.Total, other.Cost.Total, "%.2f")
	row("peak $/hour", base.Cost.PeakPerHour, other.Cost.PeakPerHour, "%.2f")
	row("final $/hour", base.Cost.FinalPerHour, other.Cost.FinalPerHour, "%.2f")
	row("nodes launched", float64(base.Nodes.Launched), float64(other.Nodes.Launched), "%.0f")
	row("peak nodes", float64(base.Nodes.Peak), float64(other.Nodes.Peak), "%.0f")
	row("pending mean (s)", base.Pods.PendingMeanS, other.Pods.PendingMeanS, "%.1f")
	row("pending p95 (s)", base.Pods.PendingP95S, other.Pods.PendingP95S, "%.1f")
	row("never scheduled", float64(base.Pods.NeverScheduled), float64(other.Pods.NeverScheduled), "%.0f")
	row("cpu requested (%)", 100*base.Util.CPUMean, 100*other.Util.CPUMean, "%.1f")
	row("memory requested (%)", 100*base.Util.MemoryMean, 100*other.Util.MemoryMean, "%.1f")
	if err := tw.Flush(); err != nil {
		return err
	}
	if base.Cost.Total > 0 {
		fmt.Fprintf(&b, "\nB costs %.1f%% %s than A.\n", 100*abs(other.Cost.Total-base.Cost.Total)/base.Cost.Total, map[bool]string{true: "less", false: "more"}[other.Cost.Total <= base.Cost.Total])
	}
	_, err := io.WriteString(out, b.String())
	return err
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
