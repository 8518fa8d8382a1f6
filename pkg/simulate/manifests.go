package simulate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"
)

// Plain-manifest workloads: a file of Kubernetes documents, such as Karpenter's getting-started
// NodePool, EC2NodeClass and "inflate" Deployment, simulated as if applied at once.
const (
	// PlainManifestsDuration is how long a plain-manifest workload is simulated: long enough to
	// provision, settle and consolidate.
	PlainManifestsDuration = time.Hour
	// JobRuntimeAnnotation on a Job or its pod template sets how long each of its pods runs in
	// a plain-manifest workload (a Go duration; default DefaultJobRuntime).
	JobRuntimeAnnotation = "simulate.karpenter.sh/runtime"
	// DefaultJobRuntime is a Job pod's runtime when JobRuntimeAnnotation is absent.
	DefaultJobRuntime = 10 * time.Minute
)

// ignoredKinds make no pods and need no nodes; a plain-manifest workload skips them.
var ignoredKinds = map[string]bool{
	"Namespace": true, "Service": true, "ConfigMap": true, "Secret": true, "ServiceAccount": true,
	"Role": true, "RoleBinding": true, "ClusterRole": true, "ClusterRoleBinding": true, "Ingress": true,
	"NetworkPolicy": true, "HorizontalPodAutoscaler": true, "PriorityClass": true, "LimitRange": true, "ResourceQuota": true,
}

// isPlainManifests reports whether data is Kubernetes documents rather than a workload file:
// its first document has apiVersion and kind.
func isPlainManifests(data []byte) bool {
	for _, doc := range splitDocuments(string(data)) {
		head := map[string]any{}
		if err := sigsyaml.Unmarshal([]byte(doc), &head); err != nil || len(head) == 0 {
			continue
		}
		_, hasKind := head["kind"]
		_, hasAPIVersion := head["apiVersion"]
		return hasKind && hasAPIVersion
	}
	return false
}

func splitDocuments(text string) []string {
	var out []string
	for _, doc := range strings.Split("\n"+text, "\n---") {
		if strings.TrimSpace(doc) != "" {
			out = append(out, doc)
		}
	}
	return out
}

// document is one object of a file of Kubernetes documents, with where it is for messages.
type document struct {
	// where is "document 3", or "document 1, item 2" for an item of a List, after the name of
	// its file when it has one ("web.yaml: document 3").
	where string
	// file is the name of its file, or empty.
	file string
	raw  map[string]any
}

// readFileDocuments is readDocuments for the text of a file: each document and error names it.
func readFileDocuments(file, text string) ([]document, []error) {
	docs, errs := readDocuments(text)
	for i := range docs {
		docs[i].file, docs[i].where = file, file+": "+docs[i].where
	}
	for i, err := range errs {
		errs[i] = fmt.Errorf("%s: %w", file, err)
	}
	return docs, errs
}

// readDocuments splits YAML (or JSON) documents into objects, skipping empty ones. A List (as
// kubectl get -o yaml prints) stands for its items.
func readDocuments(text string) ([]document, []error) {
	var docs []document
	var errs []error
	for i, doc := range splitDocuments(text) {
		where := fmt.Sprintf("document %d", i+1)
		raw := map[string]any{}
		if err := sigsyaml.Unmarshal([]byte(doc), &raw); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		if len(raw) == 0 {
			continue
		}
		items, isList := raw["items"].([]any)
		if kind, _ := raw["kind"].(string); !isList || !strings.HasSuffix(kind, "List") {
			docs = append(docs, document{where: where, raw: raw})
			continue
		}
		for j, item := range items {
			itemWhere := fmt.Sprintf("%s, item %d", where, j+1)
			obj, ok := item.(map[string]any)
			if !ok {
				errs = append(errs, fmt.Errorf("%s: not an object", itemWhere))
				continue
			}
			docs = append(docs, document{where: itemWhere, raw: obj})
		}
	}
	return docs, errs
}

// isKarpenter reports whether a document is one of Karpenter's objects (NodePool,
// EC2NodeClass, ...) rather than a workload.
func (d document) isKarpenter() bool {
	group := (&unstructured.Unstructured{Object: d.raw}).GroupVersionKind().Group
	return group == "karpenter.sh" || group == "karpenter.k8s.aws"
}

// parsePlainManifests turns Kubernetes documents into a workload: NodePools and EC2NodeClasses
// are its manifests; Deployments, StatefulSets, ReplicaSets and Pods are deployed at the start,
// Jobs run at the start, DaemonSets reserve their pods' room on new nodes, a
// PodDisruptionBudget with an integer minAvailable or maxUnavailable guards the deployment
// whose pods it selects, and StorageClasses, PersistentVolumes and PersistentVolumeClaims are
// created for the pods' volumes (a StatefulSet's volumeClaimTemplates give each pod its own).
func parsePlainManifests(file string, data []byte) (*Workload, error) {
	docs, errs := readFileDocuments(file, string(data))
	return plainWorkload(file, strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)), docs, errs)
}

// LoadManifests reads files of plain Kubernetes manifests, and the .yaml, .yml and .json files
// of directories (not of their subdirectories), as kubectl apply -f takes them, into one
// workload as parsePlainManifests does; errors name the file and document.
func LoadManifests(paths []string) (*Workload, error) {
	var files, names []string
	for _, path := range paths {
		names = append(names, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
		info, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, path)
			continue
		}
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		found := 0
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, filepath.Join(path, e.Name()))
				found++
			}
		}
		if found == 0 {
			return nil, fmt.Errorf("%s: a directory with no .yaml, .yml or .json file", path)
		}
	}
	var docs []document
	var errs []error
	seen := map[string]bool{}
	for _, file := range files {
		// A file named twice (itself and in its directory) is read once.
		if abs, err := filepath.Abs(file); err == nil {
			if seen[abs] {
				continue
			}
			seen[abs] = true
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		d, e := readFileDocuments(file, string(data))
		if len(d) > 0 && !isPlainManifests(data) {
			errs = append(errs, fmt.Errorf("%s: not Kubernetes manifests (apiVersion and kind): a workload file with a timeline is simulated on its own", file))
			continue
		}
		docs, errs = append(docs, d...), append(errs, e...)
	}
	return plainWorkload(strings.Join(paths, ", "), strings.Join(names, "+"), docs, errs)
}

// plainWorkload makes the workload of plain-manifest documents; source names them all in
// messages, name in reports.
func plainWorkload(source, name string, docs []document, errs []error) (*Workload, error) {
	file := source
	w := &Workload{file: file, Name: name, Duration: Duration{PlainManifestsDuration}}
	var karpenter, storage []document
	var pdbs []*policyv1.PodDisruptionBudget
	var daemonSets []client.Object
	add := func(doc document, kind, name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s (%s %s): %s", doc.where, kind, name, fmt.Sprintf(format, args...)))
	}
	used := map[string]bool{}
	// claim reserves a workload's name and completes its pod template (already checked as the
	// API server checks it), or reports why not.
	claim := func(i document, kind, name string, tmpl *corev1.PodTemplateSpec) bool {
		if used[name] {
			add(i, kind, name, "metadata.name: %q is used by an earlier document; give each workload its own name", name)
			return false
		}
		used[name] = true
		if tmpl.Labels == nil {
			tmpl.Labels = map[string]string{"app": name}
		}
		return true
	}
	deploy := func(i document, kind, name string, replicas *int32, tmpl corev1.PodTemplateSpec, stateful *statefulSet) {
		if !claim(i, kind, name, &tmpl) {
			return
		}
		n := 1
		if replicas != nil {
			n = int(*replicas)
		}
		if n > MaxPodsPerWorkload {
			add(i, kind, name, "spec.replicas: %s", tooMany(n, MaxPodsPerWorkload, "pods"))
			return
		}
		w.Timeline = append(w.Timeline, Event{Deploy: &Deployment{Name: name, Replicas: n, template: &tmpl, stateful: stateful}})
	}
	for _, doc := range docs {
		i, raw := doc, doc.raw
		u := &unstructured.Unstructured{Object: raw}
		kind, name := u.GetKind(), u.GetName()
		if convertible(u.GetAPIVersion(), kind) {
			add(i, kind, name, "an older or foreign format: convert the file first (karpenter convert %s > nodepools.yaml) and simulate the NodePools it prints", doc.file)
			continue
		}
		if doc.isKarpenter() {
			karpenter = append(karpenter, doc)
			continue
		}
		if isStorageKind(u.GetAPIVersion(), kind) {
			storage = append(storage, doc)
			continue
		}
		if ignoredKinds[kind] {
			continue
		}
		decode := func(into kruntime.Object) bool {
			if err := decodeValue(raw, into); err != nil {
				add(i, kind, name, "%v", err)
				return false
			}
			// What the API server would refuse is refused here too.
			problems := builtinProblems(into, u.GroupVersionKind())
			for _, fe := range problems {
				add(i, kind, name, "%s", fe.Error())
			}
			return len(problems) == 0
		}
		switch u.GetAPIVersion() + "/" + kind {
		case "apps/v1/Deployment":
			var d appsv1.Deployment
			if decode(&d) {
				deploy(i, kind, name, d.Spec.Replicas, d.Spec.Template, nil)
			}
		case "apps/v1/StatefulSet":
			var s appsv1.StatefulSet
			if !decode(&s) {
				continue
			}
			stateful, err := newStatefulSet(&s)
			if err != nil {
				add(i, kind, name, "%v", err)
				continue
			}
			deploy(i, kind, name, s.Spec.Replicas, s.Spec.Template, stateful)
		case "apps/v1/ReplicaSet":
			var r appsv1.ReplicaSet
			if decode(&r) {
				deploy(i, kind, name, r.Spec.Replicas, r.Spec.Template, nil)
			}
		case "v1/Pod":
			var p corev1.Pod
			if decode(&p) {
				one := int32(1)
				deploy(i, kind, name, &one, corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}, nil)
			}
		case "batch/v1/Job":
			var j batchv1.Job
			if !decode(&j) {
				continue
			}
			count := int32(1)
			if j.Spec.Completions != nil {
				count = *j.Spec.Completions
			} else if j.Spec.Parallelism != nil {
				count = *j.Spec.Parallelism
			}
			runtime := DefaultJobRuntime
			text := j.Annotations[JobRuntimeAnnotation]
			if text == "" {
				text = j.Spec.Template.Annotations[JobRuntimeAnnotation]
			}
			if text != "" {
				d, err := time.ParseDuration(text)
				if err != nil || d <= 0 {
					add(i, kind, name, "metadata.annotations[%s]: %q is not a positive duration such as 30m", JobRuntimeAnnotation, text)
					continue
				}
				runtime = d
			}
			if count <= 0 {
				add(i, kind, name, "spec.completions: must be positive")
				continue
			}
			if count > MaxPodsPerWorkload {
				add(i, kind, name, "spec.completions: %s", tooMany(int(count), MaxPodsPerWorkload, "pods"))
				continue
			}
			tmpl := j.Spec.Template
			if !claim(i, kind, name, &tmpl) {
				continue
			}
			w.Timeline = append(w.Timeline, Event{Jobs: &Jobs{Name: name, Count: int(count), Runtime: Duration{runtime}, template: &tmpl}})
		case "apps/v1/DaemonSet":
			// No pods are made for it, but its pods' requests reserve room on every new node.
			var ds appsv1.DaemonSet
			if decode(&ds) {
				if ds.Namespace == "" {
					ds.Namespace = "kube-system"
				}
				ds.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("DaemonSet"))
				daemonSets = append(daemonSets, &ds)
			}
		case "policy/v1/PodDisruptionBudget":
			var p policyv1.PodDisruptionBudget
			if decode(&p) {
				pdbs = append(pdbs, &p)
			}
		default:
			add(i, kind, name, "not simulated; use NodePool, EC2NodeClass, Deployment, StatefulSet, ReplicaSet, DaemonSet, Pod, Job, PodDisruptionBudget, StorageClass, PersistentVolume or PersistentVolumeClaim")
		}
	}
	objs, err := decodeObjects(karpenter)
	if err != nil {
		errs = append(errs, err)
	}
	volumes, storageErrs := storageObjects(storage, w)
	errs = append(errs, storageErrs...)
	w.Objects = append(append(objs, daemonSets...), volumes...)
	if !hasNodePool(objs) && err == nil {
		errs = append(errs, fmt.Errorf("%s: no NodePool: add at least one NodePool (karpenter.sh/v1) and its EC2NodeClass", file))
	}
	for _, p := range pdbs {
		if err := guard(w, p); err != nil {
			errs = append(errs, fmt.Errorf("%s: PodDisruptionBudget %s: %w", file, p.Name, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return w, nil
}

func hasNodePool(objs []client.Object) bool {
	for _, o := range objs {
		if o.GetObjectKind().GroupVersionKind().Kind == "NodePool" {
			return true
		}
	}
	return false
}

// guard applies a PodDisruptionBudget to the deployments whose pods it selects, as the
// minimum of their replicas that must stay available.
func guard(w *Workload, p *policyv1.PodDisruptionBudget) error {
	if p.Spec.Selector == nil {
		return errors.New("spec.selector: required")
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
	if err != nil {
		return fmt.Errorf("spec.selector: %w", err)
	}
	matched := false
	for _, e := range w.Timeline {
		d := e.Deploy
		if d == nil || !sel.Matches(labels.Set(d.template.Labels)) {
			continue
		}
		matched = true
		var minAvailable int
		switch {
		case p.Spec.MinAvailable != nil && p.Spec.MinAvailable.Type == intstr.Int:
			minAvailable = p.Spec.MinAvailable.IntValue()
		case p.Spec.MaxUnavailable != nil && p.Spec.MaxUnavailable.Type == intstr.Int:
			minAvailable = max(d.Replicas-p.Spec.MaxUnavailable.IntValue(), 0)
		case p.Spec.MinAvailable != nil || p.Spec.MaxUnavailable != nil:
			v := p.Spec.MinAvailable
			if v == nil {
				v = p.Spec.MaxUnavailable
			}
			scaled, err := intstr.GetScaledValueFromIntOrPercent(v, d.Replicas, true)
			if err != nil {
				return err
			}
			minAvailable = scaled
			if p.Spec.MinAvailable == nil {
				minAvailable = max(d.Replicas-scaled, 0)
			}
		default:
			return errors.New("spec: set minAvailable or maxUnavailable")
		}
		d.MinAvailable = &minAvailable
	}
	if !matched {
		return errors.New("spec.selector: selects no Deployment, StatefulSet, ReplicaSet or Pod of this file")
	}
	return nil
}

// convertible reports whether `karpenter convert` turns this kind into v1 objects: legacy
// Provisioners and AWSNodeTemplates, kOps Clusters and InstanceGroups, eksctl ClusterConfigs.
func convertible(apiVersion, kind string) bool {
	group := strings.Split(apiVersion, "/")[0]
	switch {
	case apiVersion == "karpenter.sh/v1alpha5", apiVersion == "karpenter.k8s.aws/v1alpha1":
		return true
	case group == "kops.k8s.io" && (kind == "Cluster" || kind == "InstanceGroup"):
		return true
	case group == "eksctl.io" && kind == "ClusterConfig":
		return true
	}
	return false
}
