package simulate

import (
	"bytes"
	"cmp"
	"encoding/json"
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
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/convert"
	"github.com/openkarpenter/karpenter/pkg/featuregate"
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
	"Service": true, "ConfigMap": true, "Secret": true, "ServiceAccount": true,
	"Role": true, "RoleBinding": true, "ClusterRole": true, "ClusterRoleBinding": true, "Ingress": true,
	"NetworkPolicy": true, "HorizontalPodAutoscaler": true, "PriorityClass": true, "LimitRange": true, "ResourceQuota": true,
}

// isPlainManifests reports whether data is Kubernetes documents rather than a workload file:
// its first document that is not empty has apiVersion and kind. It reads only the top-level
// keys of that document, without parsing it, so that telling the two apart costs nothing even
// for a hostile file (whichever reader then reads it refuses what it must). A document in flow
// style or JSON ({...}) is parsed with convert's reader.
func isPlainManifests(data []byte) bool {
	var apiVersion, kind, content bool
	for rest := data; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		trimmed := bytes.TrimSpace(line)
		switch {
		case bytes.HasPrefix(line, []byte("---")):
			if content {
				return apiVersion && kind
			}
		case len(trimmed) == 0 || trimmed[0] == '#' || trimmed[0] == '%':
		case line[0] == ' ' || line[0] == '\t':
			content = true
		case trimmed[0] == '{' || trimmed[0] == '[':
			if content {
				continue
			}
			sources, err := convert.ParseSources("", data, 1)
			return err != nil || (len(sources) > 0 && sources[0].APIVersion != "" && sources[0].Kind != "")
		default:
			content = true
			key, _, _ := bytes.Cut(trimmed, []byte(":"))
			switch string(bytes.Trim(bytes.TrimSpace(key), `"'`)) {
			case "apiVersion":
				apiVersion = true
			case "kind":
				kind = true
			}
		}
	}
	return apiVersion && kind
}

// document is one object of a stream of Kubernetes documents: where it was read, which names
// the line of each of its fields in messages, and its fields.
type document struct {
	src convert.Source
	raw map[string]any
}

// readDocuments splits YAML (or JSON) documents into objects with the reader convert uses
// (convert.ParseSources), skipping empty ones; a List (as kubectl get -o yaml prints) stands for
// its items. file names the stream in messages and firstLine is the line of file it starts on,
// so that each error names the line of its field in file.
func readDocuments(file string, text string, firstLine int) ([]document, []error) {
	sources, err := convert.ParseSources(file, []byte(text), firstLine)
	if err != nil {
		return nil, convert.AsErrors(err)
	}
	var docs []document
	var errs []error
	for _, src := range sources {
		raw := map[string]any{}
		if err := json.Unmarshal(src.JSON, &raw); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", src.At(""), src.Object(), err))
			continue
		}
		docs = append(docs, document{src: src, raw: raw})
	}
	return docs, errs
}

// errorf is a problem with a field of the document (the object itself when field is empty),
// at the field's line: `web.yaml:13: Deployment "web": spec.replicas: ...`.
func (d document) errorf(field, format string, args ...any) error {
	if field == "" {
		return fmt.Errorf("%s: %s: %s", d.src.At(""), d.src.Object(), fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("%s: %s: %s: %s", d.src.At(field), d.src.Object(), field, fmt.Sprintf(format, args...))
}

// duplicate reports a document whose kind and name an earlier one has.
func duplicate(doc, earlier document) error {
	return doc.errorf("metadata.name", "Duplicate value: %q: used by an earlier %s (%s); give each its own name", doc.src.Name, earlier.src.Kind, earlier.src.At(""))
}

// decode decodes the document strictly into obj: every unknown field (with the field it likely
// misspells) and every value of the wrong type is an error at its line.
func (d document) decode(obj kruntime.Object) []error {
	unknown, err := convert.DecodeStrict(d.src.JSON, obj)
	if err != nil {
		return []error{d.src.DecodeError(err, obj, d.src.JSON)}
	}
	var errs []error
	for _, f := range unknown {
		errs = append(errs, d.src.UnknownFieldError(f))
	}
	return errs
}

// namespace is the namespace the document names, "default" when it names none.
func (d document) namespace() string {
	return cmp.Or((&unstructured.Unstructured{Object: d.raw}).GetNamespace(), defaultNamespace)
}

// nonDefault is the namespace as a workload event holds it: empty for the default namespace.
func nonDefault(ns string) string {
	if ns == defaultNamespace {
		return ""
	}
	return ns
}

// isKarpenter reports whether a document is one of Karpenter's objects (NodePool,
// EC2NodeClass, ...) rather than a workload.
func (d document) isKarpenter() bool {
	group := (&unstructured.Unstructured{Object: d.raw}).GroupVersionKind().Group
	return group == "karpenter.sh" || group == "karpenter.k8s.aws"
}

// parsePlainManifests turns Kubernetes documents into a workload: NodePools and EC2NodeClasses
// are its manifests; Deployments, StatefulSets, ReplicaSets and Pods are deployed at the start,
// Jobs run at the start, DaemonSets run their pod on every node they select and tolerate, a
// PodDisruptionBudget with an integer minAvailable or maxUnavailable guards the deployments of
// its namespace whose pods it selects, Namespaces are created with their labels (for pod
// affinity's namespaceSelector), StorageClasses, PersistentVolumes and PersistentVolumeClaims
// are created for the pods' volumes (a StatefulSet's volumeClaimTemplates give each pod its
// own), and RuntimeClasses give the pods naming them their overhead and scheduling. Every
// object keeps the namespace it names (default "default"); a workload's name need only be
// unique within its namespace. The pods are made as the API server stores them (pods.go).
func parsePlainManifests(file string, data []byte) (*Workload, error) {
	docs, errs := readDocuments(file, string(data), 1)
	return plainWorkload(file, strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)), docs, errs)
}

// LoadManifests reads files of plain Kubernetes manifests, and the .yaml, .yml and .json files
// of directories (not of their subdirectories), as kubectl apply -f takes them, into one
// workload as parsePlainManifests does; errors name the file and line. Each file holds at most
// convert.MaxInputBytes.
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
		data, err := readFile(file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d, e := readDocuments(file, string(data), 1)
		if len(d) > 0 && !isPlainManifests(data) {
			errs = append(errs, fmt.Errorf("%s: not Kubernetes manifests (apiVersion and kind): a workload file with a timeline is simulated on its own", file))
			continue
		}
		docs, errs = append(docs, d...), append(errs, e...)
	}
	return plainWorkload(strings.Join(paths, ", "), strings.Join(names, "+"), docs, errs)
}

// readFile reads a file of at most convert.MaxInputBytes.
func readFile(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return convert.ReadLimited(file, f)
}

// plainWorkload makes the workload of plain-manifest documents; source names them all in
// messages, name in reports.
func plainWorkload(source, name string, docs []document, errs []error) (*Workload, error) {
	file := source
	w := &Workload{file: file, Name: name, Duration: Duration{PlainManifestsDuration}}
	var karpenter, storage, runtimeClasses []document
	// made are the pod templates of the workloads, to be made as the API server stores their
	// pods once every RuntimeClass is read.
	type made struct {
		doc      document
		tmpl     *corev1.PodTemplateSpec
		job      bool
		stateful *statefulSet
	}
	var templates []made
	type pdb struct {
		doc document
		pdb *policyv1.PodDisruptionBudget
	}
	var pdbs []pdb
	var daemonSets, namespaces []client.Object
	add := func(doc document, field, format string, args ...any) {
		errs = append(errs, doc.errorf(field, format, args...))
	}
	used := map[string]document{} // by qualified name
	pods := 0                     // of the whole run
	// claim reserves a workload's name and completes its pod template (already checked as the
	// API server checks it), or reports why not.
	claim := func(i document, tmpl *corev1.PodTemplateSpec) bool {
		name := i.src.Name
		key := qualified(i.namespace(), name)
		if earlier, ok := used[key]; ok {
			add(i, "metadata.name", "Duplicate value: %q: used by an earlier %s (%s); give each workload of a namespace its own name", name, earlier.src.Kind, earlier.src.At(""))
			return false
		}
		used[key] = i
		if tmpl.Labels == nil {
			tmpl.Labels = map[string]string{"app": name}
		}
		return true
	}
	// count adds a workload's pods to the run's, or reports the bound it passes.
	count := func(i document, field string, n int) bool {
		if n > MaxPodsPerWorkload {
			add(i, field, "%s", tooMany(n, MaxPodsPerWorkload, "pods"))
			return false
		}
		if pods += n; pods > MaxPodsPerRun {
			add(i, field, "%s", tooManyInRun(pods))
			return false
		}
		return true
	}
	deploy := func(i document, replicas *int32, tmpl corev1.PodTemplateSpec, stateful *statefulSet) {
		n := 1
		if replicas != nil {
			n = int(*replicas)
		}
		if !count(i, "spec.replicas", n) || !claim(i, &tmpl) {
			return
		}
		w.Timeline = append(w.Timeline, Event{Deploy: &Deployment{Name: i.src.Name, Namespace: nonDefault(i.namespace()), Replicas: n, template: &tmpl, stateful: stateful}})
		templates = append(templates, made{doc: i, tmpl: &tmpl, stateful: stateful})
	}
	for _, doc := range docs {
		i, raw := doc, doc.raw
		u := &unstructured.Unstructured{Object: raw}
		kind, name := u.GetKind(), u.GetName()
		if convertible(u.GetAPIVersion(), kind) {
			add(i, "", "an older or foreign format: convert the file first (karpenter convert %s > nodepools.yaml) and simulate the NodePools it prints", doc.src.File)
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
		if isRuntimeClass(u.GetAPIVersion(), kind) {
			runtimeClasses = append(runtimeClasses, doc)
			continue
		}
		if ignoredKinds[kind] {
			continue
		}
		decode := func(into kruntime.Object) bool {
			if decodeErrs := i.decode(into); len(decodeErrs) > 0 {
				errs = append(errs, decodeErrs...)
				return false
			}
			// What the API server would refuse is refused here too.
			problems := builtinProblems(into, u.GroupVersionKind())
			errs = append(errs, i.src.FieldErrors(problems)...)
			return len(problems) == 0
		}
		switch u.GetAPIVersion() + "/" + kind {
		case "apps/v1/Deployment":
			var d appsv1.Deployment
			if decode(&d) {
				deploy(i, d.Spec.Replicas, d.Spec.Template, nil)
			}
		case "apps/v1/StatefulSet":
			var s appsv1.StatefulSet
			if !decode(&s) {
				continue
			}
			stateful, err := newStatefulSet(&s)
			if err != nil {
				add(i, "", "%v", err)
				continue
			}
			deploy(i, s.Spec.Replicas, s.Spec.Template, stateful)
		case "apps/v1/ReplicaSet":
			var r appsv1.ReplicaSet
			if decode(&r) {
				deploy(i, r.Spec.Replicas, r.Spec.Template, nil)
			}
		case "v1/Pod":
			var p corev1.Pod
			if decode(&p) {
				one := int32(1)
				deploy(i, &one, corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}, nil)
			}
		case "batch/v1/Job":
			var j batchv1.Job
			if !decode(&j) {
				continue
			}
			n, countField := int32(1), "spec.completions"
			if j.Spec.Completions != nil {
				n = *j.Spec.Completions
			} else if j.Spec.Parallelism != nil {
				n, countField = *j.Spec.Parallelism, "spec.parallelism"
			}
			runtime := DefaultJobRuntime
			text := j.Annotations[JobRuntimeAnnotation]
			if text == "" {
				text = j.Spec.Template.Annotations[JobRuntimeAnnotation]
			}
			if text != "" {
				d, err := time.ParseDuration(text)
				if err != nil || d <= 0 {
					field := "metadata.annotations[" + JobRuntimeAnnotation + "]"
					if j.Annotations[JobRuntimeAnnotation] == "" {
						field = "spec.template." + field
					}
					add(i, field, "%q is not a positive duration such as 30m", text)
					continue
				}
				runtime = d
			}
			if n <= 0 {
				add(i, countField, "must be positive")
				continue
			}
			tmpl := j.Spec.Template
			if !count(i, countField, int(n)) || !claim(i, &tmpl) {
				continue
			}
			w.Timeline = append(w.Timeline, Event{Jobs: &Jobs{Name: name, Namespace: nonDefault(i.namespace()), Count: int(n), Runtime: Duration{runtime}, template: &tmpl}})
			templates = append(templates, made{doc: i, tmpl: &tmpl, job: true})
		case "apps/v1/DaemonSet":
			// Its pod runs on every node it selects and tolerates (engine.syncDaemonSets).
			var ds appsv1.DaemonSet
			if decode(&ds) {
				ds.Namespace = cmp.Or(ds.Namespace, defaultNamespace)
				ds.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("DaemonSet"))
				daemonSets = append(daemonSets, &ds)
			}
		case "v1/Namespace":
			var ns corev1.Namespace
			if decode(&ns) {
				ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
				namespaces = append(namespaces, &ns)
			}
		case "policy/v1/PodDisruptionBudget":
			var p policyv1.PodDisruptionBudget
			if decode(&p) {
				pdbs = append(pdbs, pdb{doc: i, pdb: &p})
			}
		default:
			add(i, "", "not simulated; use NodePool, EC2NodeClass, Deployment, StatefulSet, ReplicaSet, DaemonSet, Pod, Job, PodDisruptionBudget, Namespace, StorageClass, PersistentVolume, PersistentVolumeClaim or RuntimeClass")
		}
	}
	objs, err := decodeObjects(karpenter)
	if err != nil {
		errs = append(errs, err)
	}
	// Plain manifests run with Karpenter's default feature gates, checked as a workload's.
	const defaultGates = " (plain manifests run with Karpenter's default feature gates: to set one, put them under a workload file's manifests: beside its featureGates, as examples/node-overlay.yaml does)"
	defaults := featuregate.Karpenter.Defaults()
	for _, p := range gateProblems(objs, defaults.Enabled(featuregate.NodeOverlay), defaults.Enabled(featuregate.StaticCapacity)) {
		for _, doc := range karpenter {
			if doc.src.Kind == p.object.GetObjectKind().GroupVersionKind().Kind && doc.src.Name == p.object.GetName() {
				errs = append(errs, doc.errorf(p.field, "%s", p.message+defaultGates))
				break
			}
		}
	}
	for _, msg := range bufferProblems(objs, defaults.Enabled(featuregate.CapacityBuffer)) {
		errs = append(errs, fmt.Errorf("%s: %s%s", file, msg, defaultGates))
	}
	volumes, storageErrs := storageObjects(storage, w)
	errs = append(errs, storageErrs...)
	classes, classErrs := decodeRuntimeClasses(runtimeClasses)
	errs = append(errs, classErrs...)
	w.Objects = append(append(append(append(namespaces, objs...), daemonSets...), volumes...), classes...)
	// The pods as the API server stores them, once the objects they may name are all valid.
	if len(errs) == 0 {
		creation, err := podCreation(w.Objects)
		if err != nil {
			return nil, err
		}
		for _, m := range templates {
			stored, problems := storedTemplate(creation, m.doc.src.Name, m.tmpl, m.job, m.stateful)
			if len(problems) > 0 {
				errs = append(errs, m.doc.src.FieldErrors(underTemplate(problems, m.doc.src.Kind != "Pod"))...)
				continue
			}
			*m.tmpl = *stored
		}
	}
	if !hasNodePool(objs) && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: no NodePool: add at least one NodePool (karpenter.sh/v1) and its EC2NodeClass", file))
	}
	// A budget is matched to the workloads once they are all valid: one refused would make it
	// seem to select nothing.
	valid := len(errs) == 0
	for _, p := range pdbs {
		if !valid {
			break
		}
		if fe := guard(w, p.pdb); fe != nil {
			errs = append(errs, p.doc.src.FieldError(fe))
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

// guard applies a PodDisruptionBudget to the deployments of its namespace whose pods it
// selects, as the minimum of their replicas that must stay available.
func guard(w *Workload, p *policyv1.PodDisruptionBudget) *field.Error {
	if p.Spec.Selector == nil {
		return field.Required(field.NewPath("spec", "selector"), "a PodDisruptionBudget of the simulator selects the pods it guards")
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
	if err != nil {
		return field.Invalid(field.NewPath("spec", "selector"), p.Spec.Selector, err.Error())
	}
	matched := false
	for _, e := range w.Timeline {
		d := e.Deploy
		if d == nil || d.namespace() != cmp.Or(p.Namespace, defaultNamespace) || !sel.Matches(labels.Set(d.template.Labels)) {
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
				return field.Invalid(field.NewPath("spec", "minAvailable"), v.String(), err.Error())
			}
			minAvailable = scaled
			if p.Spec.MinAvailable == nil {
				minAvailable = max(d.Replicas-scaled, 0)
			}
		default:
			return field.Required(field.NewPath("spec", "minAvailable"), "set minAvailable or maxUnavailable")
		}
		d.MinAvailable = &minAvailable
	}
	if !matched {
		return field.Invalid(field.NewPath("spec", "selector"), metav1.FormatLabelSelector(p.Spec.Selector), "selects no Deployment, StatefulSet, ReplicaSet or Pod of this file"+inNamespace(p.Namespace))
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
