package simulate

import (
	"fmt"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openkarpenter/karpenter/pkg/validation"
)

// The simulator's bounds: inputs past them are refused before anything runs, so that no file
// can make a run take hours or exhaust memory. They are far above what a cluster simulated
// on one machine needs (docs/simulate.md).
const (
	// MaxDuration bounds a run's simulated time (duration): 30 days.
	MaxDuration = 30 * 24 * time.Hour
	// MaxPodsPerWorkload bounds the pods of one deployment, scale or jobs event, and of one
	// workload of plain manifests (replicas, completions).
	MaxPodsPerWorkload = 100_000
	// MaxPodsPerRun bounds the pods a run makes, summed over its whole timeline: deployments,
	// scale-ups and jobs (or the replicas and completions of plain manifests).
	MaxPodsPerRun = 1_000_000
	// MaxStaticReplicas bounds a static NodePool's spec.replicas.
	MaxStaticReplicas = 10_000
)

// builtinProblems checks obj, a built-in Kubernetes object of kind gvk, as the API server
// would on create (validation.ValidateBuiltin) and returns its problems, none when it is
// valid or of a kind the API server's checks here do not cover.
func builtinProblems(obj runtime.Object, gvk schema.GroupVersionKind) field.ErrorList {
	if !validation.IsBuiltin(gvk.GroupKind()) {
		return nil
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk) // ValidateBuiltin works on a copy
	errs, err := validation.ValidateBuiltin(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return errs
}

// workloadProblems checks the Deployment or Job a workload file's deploy or jobs event stands
// for, as the API server would check it: name is the event's name, pods its replicas or
// count, tmpl its pod template.
func workloadProblems(name string, pods int, tmpl *corev1.PodTemplateSpec, job bool) field.ErrorList {
	// The event's own checks report a count out of range (negative, zero jobs, past the
	// bound) once; the API server's would report it again.
	count := int32(max(min(pods, MaxPodsPerWorkload), 1))
	meta := metav1.ObjectMeta{Name: name, Namespace: "default"}
	if job {
		t := tmpl.DeepCopy()
		if t.Spec.RestartPolicy == "" {
			t.Spec.RestartPolicy = corev1.RestartPolicyNever // as the simulator runs them
		}
		return builtinProblems(&batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Completions: &count, Parallelism: &count, Template: *t}},
			batchv1.SchemeGroupVersion.WithKind("Job"))
	}
	return builtinProblems(&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
		Replicas: &count, Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: *tmpl,
	}}, appsv1.SchemeGroupVersion.WithKind("Deployment"))
}

// shapeField is where, in a workload file's pod shape (the event's pod: block), the pod
// template's field path (spec.template.…, as the API server names it) was written: requests
// are cpu, memory and gpu, the other fields keep their names, a full template is template.…;
// a Deployment's or Job's own fields are the event's (replicas, count). The bool is false
// when the field is the event's rather than the pod's.
func shapeField(path string, template bool) (string, bool) {
	if template {
		if rest, ok := strings.CutPrefix(path, "spec.template."); ok {
			return "template." + rest, true
		}
	} else {
		for resourceName, shape := range map[string]string{"cpu": "cpu", "memory": "memory", "nvidia.com/gpu": "gpu"} {
			for _, list := range []string{"requests", "limits"} {
				if strings.HasPrefix(path, "spec.template.spec.containers[0].resources."+list+"["+resourceName+"]") {
					return shape, true
				}
			}
		}
		if rest, ok := strings.CutPrefix(path, "spec.template.spec."); ok {
			return rest, true
		}
		if rest, ok := strings.CutPrefix(path, "spec.template.metadata."); ok {
			return rest, true
		}
	}
	if strings.HasPrefix(path, "spec.selector") {
		// The Deployment's selector is the pods' labels.
		if template {
			return "template.metadata.labels", true
		}
		return "labels", true
	}
	switch path {
	case "spec.replicas", "spec.completions", "spec.parallelism":
		return "", false
	case "metadata.name":
		return "name", false
	}
	return path, true
}

// tooMany is the message for a count past a bound.
func tooMany(n, bound int, what string) string {
	return fmt.Sprintf("%d is more than the simulator's bound of %d %s", n, bound, what)
}

// tooManyInRun is the message for a run whose pods add up past MaxPodsPerRun.
func tooManyInRun(pods int) string {
	return fmt.Sprintf("the run's pods add up to %d here, more than the simulator's bound of %d pods per run (summed over deployments, scale-ups and jobs)", pods, MaxPodsPerRun)
}

// yamlNodes are YAML nodes by index, for lines of fields.
type yamlNodes []*yaml.Node

// at is the i-th node, nil when there is none.
func (n yamlNodes) at(i int) *yaml.Node {
	if i < len(n) {
		return n[i]
	}
	return nil
}

// countFields are the workload format's fields of whole numbers, which the YAML decoder would
// otherwise truncate (replicas: 4.5 read as 4).
var countFields = map[string]bool{"replicas": true, "count": true, "nodes": true, "gpu": true, "seed": true, "minAvailable": true}

// fractionalCounts reports each whole-number field of the workload under n written with a
// fraction, with its line. The manifests and pod templates are not walked: Kubernetes'
// decoder refuses fractions there itself.
func fractionalCounts(n *yaml.Node) []string {
	var out []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				key, value := n.Content[i].Value, n.Content[i+1]
				switch {
				case key == "template" || key == "manifests" || key == "apply":
				case countFields[key] && value.Kind == yaml.ScalarNode && value.Tag == "!!float":
					out = append(out, fmt.Sprintf("%d: %s: %s is not a whole number", value.Line, key, value.Value))
				default:
					walk(value)
				}
			}
		}
	}
	walk(n)
	return out
}
