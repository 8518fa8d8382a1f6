package simulate

import (
	"errors"
	"fmt"
	"io"
	"os"
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
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	text := string(data)
	var probe map[string]any
	if yaml.Unmarshal(data, &probe) == nil {
		if m, ok := probe["manifests"].(string); ok {
			text = m
		}
	}
	// Only Karpenter's objects are taken: the workloads of a plain-manifest file are not.
	docs, errs := readDocuments(text)
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
		errs = append(errs, errors.New(strings.Join(problems, "; ")))
	}
	if err := errors.Join(append(append(errs, err), templateErrs...)...); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
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
