package simulate

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	yaml "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/openkarpenter/karpenter/pkg/apis"
	autoscalingv1beta1 "github.com/openkarpenter/karpenter/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	karpv1alpha1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/kubeletcel"
	"github.com/openkarpenter/karpenter/pkg/featuregate"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/validation"
	"github.com/openkarpenter/karpenter/pkg/yamlpath"
)

// Workload is a simulation's input: the cluster's Karpenter objects and what happens over time.
type Workload struct {
	// Name describes the workload in reports.
	Name string `yaml:"name"`
	// Duration is how much virtual time to simulate (e.g. 24h).
	Duration Duration `yaml:"duration"`
	// Seed makes the cloud's random choices reproducible; the --seed flag overrides it.
	Seed int64 `yaml:"seed"`
	// Cloud configures the simulated cloud.
	Cloud CloudSettings `yaml:"cloud"`
	// FeatureGates are Karpenter's feature gates for the run, as FEATURE_GATES sets them in the
	// controller (SpotToSpotConsolidation: true), and the AWS provider's, as AWS_FEATURE_GATES
	// does (NodeClassCEL: true), checked against the same tables (package featuregate): an
	// unknown gate, or one turned on whose feature is not built, is refused. Static NodePools
	// (spec.replicas) need StaticCapacity: true, as in Karpenter; node repair (the unhealthy
	// timeline event) NodeRepair: true; CEL expressions in an EC2NodeClass's spec.kubelet
	// NodeClassCEL: true; reboots for the GPU faults a reboot clears RebootForRepair: true
	// (with NodeRepair).
	FeatureGates map[string]bool `yaml:"featureGates"`
	// LegacyNodeRepair runs, with the NodeRepair gate, Karpenter's legacy node repair
	// controller instead of repair as a disruption method, as the controller's
	// --legacy-node-repair (LEGACY_NODE_REPAIR): v1.14's policies, the node deleted at once,
	// no budgets, no replacement first, no reboots. Off by default, as in Karpenter v1.15.
	LegacyNodeRepair bool `yaml:"legacyNodeRepair"`
	// Manifests are Karpenter objects (NodePool, EC2NodeClass), the StorageClasses,
	// PersistentVolumes and PersistentVolumeClaims the pods' volumes need, CapacityBuffers
	// (autoscaling.x-k8s.io/v1beta1, with the CapacityBuffer feature gate) with the PodTemplates
	// they name, the RuntimeClasses (node.k8s.io/v1) the pods name, and Namespaces (whose
	// labels pod affinity's namespaceSelector matches), as YAML documents, exactly as they would
	// be applied to a cluster. Namespaced objects keep the namespace they name (default
	// "default").
	Manifests string `yaml:"manifests"`
	// Timeline is what happens when.
	Timeline []Event `yaml:"timeline"`

	// Objects are the decoded manifests.
	Objects []client.Object `yaml:"-"`
	file    string
	// setup, when set, runs once the engine has created Objects, before the first pass: a
	// cluster taken in by --from-cluster adopts its nodes and pods there (fromcluster.go).
	setup func(ctx context.Context, e *engine) error
	// namespacesUnknown says the Namespaces' labels were not read (a cluster's): a pod
	// affinity term's namespaceSelector then selects every namespace.
	namespacesUnknown bool
}

// CloudSettings tune the simulated cloud.
type CloudSettings struct {
	// Zones are the availability zones (default us-east-1a, -b, -c).
	Zones []string `yaml:"zones"`
	// LaunchLatency is the time from launch to a registered node (default 30s).
	LaunchLatency *Duration `yaml:"launchLatency"`
	// ReadyDelay is the time from registration to a Ready node (default 10s).
	ReadyDelay *Duration `yaml:"readyDelay"`
	// StartupTaintDelay is the time from a Ready node until the agents a NodePool's
	// startupTaints wait for (a CNI such as Cilium) lift them (default 5s).
	StartupTaintDelay *Duration `yaml:"startupTaintDelay"`
	// CreateErrorRate is the share of launches that fail transiently.
	CreateErrorRate float64 `yaml:"createErrorRate"`
	// RegisterWithTaints are taints every node registers with beyond its NodeClaim's, as a
	// kubelet started with --register-with-taints would: a way to try what happens when the
	// nodes Karpenter launches cannot take the pods they were launched for.
	RegisterWithTaints []any `yaml:"registerWithTaints"`
	// Reservations are the EC2 capacity reservations the account holds: On-Demand Capacity
	// Reservations and Capacity Blocks that EC2NodeClasses select with
	// capacityReservationSelectorTerms (the ReservedCapacity gate, on by default, as v1.15).
	Reservations []ReservationSetting `yaml:"reservations"`

	registerWithTaints []corev1.Taint
}

// ReservationSetting is one capacity reservation of the simulated account (sim.Reservation).
type ReservationSetting struct {
	// ID is the reservation's ID, such as cr-0123456789abcdef0, which terms may name.
	ID string `yaml:"id"`
	// InstanceType and Zone are what the reservation holds capacity for.
	InstanceType string `yaml:"instanceType"`
	Zone         string `yaml:"zone"`
	// Count is how many instances it takes at once.
	Count int `yaml:"count"`
	// Type is default (an On-Demand Capacity Reservation, the default) or capacity-block.
	Type string `yaml:"type"`
	// Interruptible says its owner may reclaim the capacity.
	Interruptible bool `yaml:"interruptible"`
	// InstanceMatchCriteria is targeted (the default) or open.
	InstanceMatchCriteria string `yaml:"instanceMatchCriteria"`
	// OwnerID is the owning account (default sim.Account).
	OwnerID string `yaml:"ownerID"`
	// Tags are its tags, which terms may select it by.
	Tags map[string]string `yaml:"tags"`
	// End, when set, is when the reservation ends, from the start of the simulation: a
	// Capacity Block's instances are reclaimed then, an On-Demand Capacity Reservation's run on
	// as on-demand instances.
	End *Duration `yaml:"end"`
}

// reservations are the settings' reservations for the simulated cloud.
func (c *CloudSettings) reservations() []sim.Reservation {
	var out []sim.Reservation
	for _, r := range c.Reservations {
		sr := sim.Reservation{ID: r.ID, InstanceType: r.InstanceType, Zone: r.Zone, Count: r.Count, Type: r.Type, Interruptible: r.Interruptible,
			InstanceMatchCriteria: r.InstanceMatchCriteria, OwnerID: r.OwnerID, Tags: r.Tags}
		if r.End != nil {
			sr.End = Start.Add(r.End.Duration)
		}
		out = append(out, sr)
	}
	return out
}

// Event is one timeline entry: at a time, exactly one action.
type Event struct {
	// At is when the event happens, from the start of the simulation.
	At Duration `yaml:"at"`
	// Deploy creates a Deployment (a set of identical long-running pods).
	Deploy *Deployment `yaml:"deploy"`
	// Scale changes a Deployment's replicas.
	Scale *Scale `yaml:"scale"`
	// Delete removes a Deployment or the Jobs of a name.
	Delete *Delete `yaml:"delete"`
	// Jobs runs a batch of pods that each finish after a while.
	Jobs *Jobs `yaml:"jobs"`
	// Interrupt sends spot interruption notices to some spot instances.
	Interrupt *Interrupt `yaml:"interrupt"`
	// CapacityShortage makes offerings run out of capacity for a while.
	CapacityShortage *CapacityShortage `yaml:"capacityShortage"`
	// Apply creates or updates NodePools and EC2NodeClasses, as kubectl apply would: a changed
	// template drifts the nodes launched before.
	Apply string `yaml:"apply"`
	// Annotate sets annotations on a deployment's pods or on nodes.
	Annotate *Annotate `yaml:"annotate"`
	// Unhealthy makes nodes report an unhealthy condition, for node repair (the NodeRepair
	// feature gate) to replace or reboot them.
	Unhealthy *Unhealthy `yaml:"unhealthy"`

	applied []client.Object

	line int
}

// PodShape is what a workload's pods look like: requests and scheduling constraints, or a
// full pod template.
type PodShape struct {
	// CPU and Memory are the requests of the pod's one container, such as "500m" and "1Gi".
	CPU    string `yaml:"cpu"`
	Memory string `yaml:"memory"`
	// GPU requests nvidia.com/gpu.
	GPU int `yaml:"gpu"`
	// Labels of the pods (default app: <name>).
	Labels map[string]string `yaml:"labels"`
	// NodeSelector, Tolerations, Affinity and TopologySpreadConstraints are as in a PodSpec.
	NodeSelector              map[string]string `yaml:"nodeSelector"`
	Tolerations               []any             `yaml:"tolerations"`
	Affinity                  any               `yaml:"affinity"`
	TopologySpreadConstraints []any             `yaml:"topologySpreadConstraints"`
	// Template, when set, is a full pod template (metadata and spec) and the fields above
	// must be empty.
	Template any `yaml:"template"`
}

// Deployment is a named set of identical pods kept at a replica count.
type Deployment struct {
	Name string `yaml:"name"`
	// Namespace is the namespace of the deployment and its pods (default "default"); a name
	// need only be unique within its namespace.
	Namespace string   `yaml:"namespace"`
	Replicas  int      `yaml:"replicas"`
	Pod       PodShape `yaml:"pod"`
	// MinAvailable, when set, adds a PodDisruptionBudget.
	MinAvailable *int `yaml:"minAvailable"`

	template *corev1.PodTemplateSpec
	// stateful is set for a StatefulSet of a plain-manifest workload.
	stateful *statefulSet
}

// namespace is the deployment's namespace: "default" when it names none.
func (d *Deployment) namespace() string { return cmp.Or(d.Namespace, defaultNamespace) }

// key is the deployment's qualified name (see qualified).
func (d *Deployment) key() string { return qualified(d.Namespace, d.Name) }

// Scale changes a Deployment's replicas.
type Scale struct {
	// Name is the deployment's name, or namespace/name when deployments of several namespaces
	// have that name.
	Name     string `yaml:"name"`
	Replicas int    `yaml:"replicas"`

	target string // the deployment's qualified name
}

// Delete removes a Deployment or Jobs by name.
type Delete struct {
	// Name is the deployment's or jobs' name, or namespace/name when several namespaces have
	// that name.
	Name string `yaml:"name"`

	target string // the qualified name of what it deletes
}

// Jobs runs Count pods that each finish Runtime after they start running.
type Jobs struct {
	Name string `yaml:"name"`
	// Namespace is the namespace of the jobs' pods (default "default").
	Namespace string   `yaml:"namespace"`
	Count     int      `yaml:"count"`
	Runtime   Duration `yaml:"runtime"`
	Pod       PodShape `yaml:"pod"`

	template *corev1.PodTemplateSpec
}

// namespace is the jobs' namespace: "default" when they name none.
func (j *Jobs) namespace() string { return cmp.Or(j.Namespace, defaultNamespace) }

// key is the jobs' qualified name (see qualified).
func (j *Jobs) key() string { return qualified(j.Namespace, j.Name) }

// String describes the event for the report's log, such as "scale web to 10".
func (e *Event) String() string {
	switch {
	case e.Deploy != nil:
		return fmt.Sprintf("deploy %s: %d replicas", e.Deploy.key(), e.Deploy.Replicas)
	case e.Scale != nil:
		return fmt.Sprintf("scale %s to %d", e.Scale.Name, e.Scale.Replicas)
	case e.Delete != nil:
		return "delete " + e.Delete.Name
	case e.Jobs != nil:
		return fmt.Sprintf("jobs %s: %d pods of %s", e.Jobs.key(), e.Jobs.Count, e.Jobs.Runtime)
	case e.Interrupt != nil:
		return fmt.Sprintf("interrupt %d spot instances", e.Interrupt.Count)
	case e.CapacityShortage != nil:
		c := e.CapacityShortage
		return fmt.Sprintf("capacity shortage for %s (instance type %q, zone %q, capacity type %q)", c.For, c.InstanceType, c.Zone, c.CapacityType)
	case e.Apply != "":
		names := make([]string, 0, len(e.applied))
		for _, obj := range e.applied {
			names = append(names, obj.GetObjectKind().GroupVersionKind().Kind+" "+obj.GetName())
		}
		return "apply " + strings.Join(names, ", ")
	case e.Annotate != nil:
		target := "deployment " + e.Annotate.Deployment
		if e.Annotate.Deployment == "" {
			target = fmt.Sprintf("the %d oldest nodes", e.Annotate.Nodes)
		}
		keys := slices.Sorted(maps.Keys(e.Annotate.Annotations))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + e.Annotate.Annotations[k]
		}
		return fmt.Sprintf("annotate %s: %s", target, strings.Join(parts, ", "))
	case e.Unhealthy != nil:
		u := e.Unhealthy
		target := plural(u.Count, "the oldest node", fmt.Sprintf("the %d oldest nodes", u.Count))
		if u.NodePool != "" {
			target += " of nodepool " + u.NodePool
		}
		what := fmt.Sprintf("%s %s: %s %s", target, plural(u.Count, "falls", "fall"), u.Condition, u.Status)
		if u.Reason != "" {
			what += " (" + u.Reason + ")"
		}
		return what
	}
	return "nothing"
}

// Annotate sets Annotations on every pod of a Deployment (those running and those it creates
// later), or on the Nodes oldest Nodes (with their NodeClaims), such as
// karpenter.sh/do-not-disrupt. Exactly one of Deployment and Nodes is set; Deployment is a
// name, or namespace/name when deployments of several namespaces have that name.
type Annotate struct {
	Deployment  string            `yaml:"deployment"`
	Nodes       int               `yaml:"nodes"`
	Annotations map[string]string `yaml:"annotations"`

	target string // the deployment's qualified name
}

// Unhealthy makes the Count oldest running nodes (of NodePool, when set) that do not report
// Condition yet report it with Status from now on, as their kubelet (Ready False or Unknown) or
// the EKS node monitoring agent (KernelReady, StorageReady, NetworkingReady,
// ContainerRuntimeReady, AcceleratedHardwareReady False) would. With the NodeRepair feature
// gate, node repair acts once the simulated cloud's repair policy (EC2's, as the AWS provider
// v1.15.2 declares them) has tolerated the condition long enough: 30 minutes, 10 for
// AcceleratedHardwareReady with a known GPU XID in its Reason. It acts as Karpenter v1.15's
// repair disruption method: within the NodePool's budgets for reason Unhealthy, replacement
// first, unless karpenter.sh/do-not-repair or more than 20% of the NodePool unhealthy stops
// it; with the AWS gate RebootForRepair, a GPU fault a reboot clears (XID 46, 48, 54, …)
// reboots the node in place, and a node rebooted twice within 24 hours is replaced instead.
// With legacyNodeRepair the legacy controller replaces the node at once, whatever the reason.
type Unhealthy struct {
	Count     int    `yaml:"count"`
	NodePool  string `yaml:"nodePool"`
	Condition string `yaml:"condition"`
	Status    string `yaml:"status"`
	// Reason is the condition's reason (default: the kubelet's or node lifecycle controller's
	// for Ready, SimulatedFault otherwise), such as NvidiaXID48Error: EC2's policies for
	// AcceleratedHardwareReady choose by it (a reboot-clearable XID, a fatal one, or neither).
	Reason string `yaml:"reason"`
}

// Interrupt sends interruption notices to Count running spot instances (oldest first).
type Interrupt struct {
	Count int `yaml:"count"`
}

// CapacityShortage makes matching offerings unavailable for a while; empty fields match all.
type CapacityShortage struct {
	InstanceType string   `yaml:"instanceType"`
	Zone         string   `yaml:"zone"`
	CapacityType string   `yaml:"capacityType"`
	For          Duration `yaml:"for"`
}

// Duration is a time.Duration written as "90s", "1h30m".
type Duration struct{ time.Duration }

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: want a duration such as \"90s\" or \"2h\": %w", n.Line, err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (use forms such as \"90s\", \"15m\", \"2h\")", n.Line, s)
	}
	if v < 0 {
		return fmt.Errorf("line %d: duration %q is negative", n.Line, s)
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// LoadWorkload reads and validates a workload file of at most convert.MaxInputBytes. Every
// problem is reported with the file, line and field, and nothing is run unless the whole file
// is valid.
func LoadWorkload(path string) (*Workload, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return ParseWorkload(path, data)
}

// ParseWorkload parses and validates a workload; file names it in errors. A file of plain
// Kubernetes documents (NodePools, EC2NodeClasses, Deployments, Jobs, …) is accepted too, as
// if applied at the start of a PlainManifestsDuration run.
func ParseWorkload(file string, data []byte) (*Workload, error) {
	if isPlainManifests(data) {
		return parsePlainManifests(file, data)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlErrors(file, "invalid YAML: ", err)
	}
	if bad := fractionalCounts(&root); len(bad) > 0 {
		for i := range bad {
			bad[i] = file + ":" + bad[i]
		}
		return nil, errors.New(strings.Join(bad, "\n"))
	}
	w := &Workload{file: file}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(w); err != nil {
		return nil, yamlErrors(file, "", err)
	}
	events := findSequence(&root, "timeline")
	for i := range w.Timeline {
		if i < len(events) {
			w.Timeline[i].line = events[i].Line
		}
	}
	manifestsLine := lineOf(&root, "manifests") // the top of the file when there is none
	var errs []error
	add := func(line int, field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s: %s", file, line, field, fmt.Sprintf(format, args...)))
	}
	if w.Duration.Duration <= 0 {
		add(lineOf(&root, "duration"), "duration", "must be positive, such as 1h or 24h")
	}
	if w.Duration.Duration > MaxDuration {
		add(lineOf(&root, "duration"), "duration", "%s is longer than the simulator's bound of %s (30 days)", w.Duration, MaxDuration)
	}
	eventNodes := yamlNodes(events)
	// reportTemplate reports errs, problems of the Deployment or Job of timeline event i, at
	// the line of their field as written in the event.
	reportTemplate := func(i int, action, count string, errs field.ErrorList, template bool) {
		base := fmt.Sprintf("timeline[%d].%s", i, action)
		for _, fe := range errs {
			f, inPod := shapeField(fe.Field, template)
			switch {
			case inPod:
				f = "pod." + f
			case f == "":
				f = count
			}
			add(yamlpath.Line(eventNodes.at(i), action+"."+f), base+"."+f, "%s", fe.ErrorBody())
		}
	}
	// checkTemplate reports what the API server would refuse in the Deployment or Job that
	// timeline event i (action deploy or jobs) stands for; count is the name of the event's
	// pod count field. It returns the template as the API server stores the pods made of it
	// (pods.go), nil when the template is refused.
	var creation *validation.PodCreation // set once the manifests are read, before any event
	checkTemplate := func(i int, action, count, name string, pods int, tmpl *corev1.PodTemplateSpec, template, job bool) *corev1.PodTemplateSpec {
		if problems := workloadProblems(name, pods, tmpl, job); len(problems) > 0 {
			reportTemplate(i, action, count, problems, template)
			return nil
		}
		stored, problems := storedTemplate(creation, name, tmpl, job, nil)
		reportTemplate(i, action, count, underTemplate(problems, true), template)
		return stored
	}
	var objs []client.Object
	var err error
	if strings.TrimSpace(w.Manifests) != "" {
		objs, err = decodeManifests(file, w.Manifests, blockLine(findValue(&root, "manifests")))
		if err != nil {
			errs = append(errs, err)
		}
	}
	w.Objects = objs
	creation, creationErr := podCreation(objs)
	if creationErr != nil {
		return nil, creationErr
	}
	if !hasNodePool(objs) && err == nil {
		add(manifestsLine, "manifests", "no NodePool: add at least one NodePool and its EC2NodeClass")
	}
	errs = append(errs, w.Cloud.problems(file, &root)...)
	for i, v := range w.Cloud.RegisterWithTaints {
		field := fmt.Sprintf("cloud.registerWithTaints[%d]", i)
		line := lineOf(&root, "cloud")
		if items := findSequence(findValue(&root, "cloud"), "registerWithTaints"); i < len(items) {
			line = items[i].Line
		}
		var taint corev1.Taint
		if err := decodeValue(v, &taint); err != nil {
			add(line, field, "%v", err)
			continue
		}
		switch {
		case taint.Key == "":
			add(line, field+".key", "required")
		case taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectPreferNoSchedule && taint.Effect != corev1.TaintEffectNoExecute:
			add(line, field+".effect", "%q is not NoSchedule, PreferNoSchedule or NoExecute", taint.Effect)
		default:
			w.Cloud.registerWithTaints = append(w.Cloud.registerWithTaints, taint)
		}
	}
	staticCapacity := featuregate.Karpenter.Defaults().Enabled(featuregate.StaticCapacity)
	nodeOverlay := featuregate.Karpenter.Defaults().Enabled(featuregate.NodeOverlay)
	nodeClassCEL := featuregate.AWS.Defaults().Enabled(featuregate.NodeClassCEL)
	for _, name := range slices.Sorted(maps.Keys(w.FeatureGates)) {
		if _, aws := featuregate.AWS.Lookup(name); aws {
			if err := featuregate.AWS.Check(name, w.FeatureGates[name]); err != nil {
				add(lineOf(&root, "featureGates"), "featureGates."+name, "%v", err)
			} else if name == featuregate.NodeClassCEL {
				nodeClassCEL = w.FeatureGates[name]
			}
			continue
		}
		if err := featuregate.Karpenter.Check(name, w.FeatureGates[name]); err != nil {
			add(lineOf(&root, "featureGates"), "featureGates."+name, "%v", err)
		} else if name == featuregate.StaticCapacity {
			staticCapacity = w.FeatureGates[name]
		} else if name == featuregate.NodeOverlay {
			nodeOverlay = w.FeatureGates[name]
		}
	}
	for _, msg := range w.repairProblems() {
		add(lineOf(&root, msg[0]), msg[0]+msg[1], "%s", msg[2])
	}
	refuseStatic := func(line int, field string, objs []client.Object) {
		for _, p := range gateProblems(objs, nodeOverlay, staticCapacity) {
			add(line, field, "%s", p.message)
		}
	}
	refuseStatic(manifestsLine, "manifests", w.Objects)
	for _, msg := range bufferProblems(w.Objects, w.FeatureGates[featuregate.CapacityBuffer]) {
		add(manifestsLine, "manifests", "%s", msg)
	}
	for _, msg := range kubeletExpressionProblems(w.Objects, nodeClassCEL) {
		add(manifestsLine, "manifests", "%s", msg)
	}
	known := map[string]string{}  // qualified name -> "deployment" or "jobs"
	var applied []client.Object   // by apply events so far
	replicas := map[string]int{}  // of each deployment, as of the event
	pods, refusedPods := 0, false // of the run so far; whether the bound was reported
	// addPods adds pods made by event i to the run's, and reports once the bound they pass.
	addPods := func(i int, f, path string, n int) {
		if pods += max(n, 0); pods > MaxPodsPerRun && !refusedPods {
			refusedPods = true
			add(yamlpath.Line(eventNodes.at(i), path), f, "%s", tooManyInRun(pods))
		}
	}
	for i := range w.Timeline {
		e := &w.Timeline[i]
		field := fmt.Sprintf("timeline[%d]", i)
		actions := 0
		for _, set := range []bool{e.Deploy != nil, e.Scale != nil, e.Delete != nil, e.Jobs != nil, e.Interrupt != nil, e.CapacityShortage != nil, e.Apply != "", e.Annotate != nil, e.Unhealthy != nil} {
			if set {
				actions++
			}
		}
		if actions != 1 {
			add(e.line, field, "needs exactly one of deploy, scale, delete, jobs, interrupt, capacityShortage, apply, annotate, unhealthy (has %d)", actions)
			continue
		}
		if i > 0 && e.At.Duration < w.Timeline[i-1].At.Duration {
			add(e.line, field+".at", "%s is before the previous event's %s: keep the timeline in order", e.At, w.Timeline[i-1].At)
		}
		switch {
		case e.Deploy != nil:
			d := e.Deploy
			if d.Name == "" {
				add(e.line, field+".deploy.name", "required")
			} else if _, dup := known[d.key()]; dup {
				add(e.line, field+".deploy.name", "%q is already used by an earlier event%s", d.Name, inNamespace(d.Namespace))
			}
			for _, msg := range namespaceProblems(d.Namespace) {
				add(e.line, field+".deploy.namespace", "%q: %s", d.Namespace, msg)
			}
			known[d.key()] = "deployment"
			if d.Replicas < 0 {
				add(e.line, field+".deploy.replicas", "%d is negative", d.Replicas)
			}
			if d.MinAvailable != nil && *d.MinAvailable < 0 {
				// As the API server's PodDisruptionBudget validation: a count of pods.
				add(yamlpath.Line(eventNodes.at(i), "deploy.minAvailable"), field+".deploy.minAvailable",
					"%d is negative: the PodDisruptionBudget's minAvailable is how many pods must stay available, 0 or more", *d.MinAvailable)
			}
			if d.Replicas > MaxPodsPerWorkload {
				add(yamlpath.Line(eventNodes.at(i), "deploy.replicas"), field+".deploy.replicas", "%s", tooMany(d.Replicas, MaxPodsPerWorkload, "pods"))
			} else {
				addPods(i, field+".deploy.replicas", "deploy.replicas", d.Replicas)
			}
			replicas[d.key()] = d.Replicas
			tmpl, err := d.Pod.template(d.Name)
			if err != nil {
				add(shapeLine(eventNodes.at(i), "deploy", err), field+".deploy.pod", "%v", err)
			} else {
				tmpl = checkTemplate(i, "deploy", "replicas", d.Name, d.Replicas, tmpl, d.Pod.Template != nil, false)
			}
			d.template = tmpl
		case e.Scale != nil:
			target, problem := resolveTarget(known, e.Scale.Name, "deployment")
			if problem != "" {
				add(e.line, field+".scale.name", "%s", problem)
			}
			e.Scale.target = target
			if e.Scale.Replicas < 0 {
				add(e.line, field+".scale.replicas", "%d is negative", e.Scale.Replicas)
			}
			if e.Scale.Replicas > MaxPodsPerWorkload {
				add(yamlpath.Line(eventNodes.at(i), "scale.replicas"), field+".scale.replicas", "%s", tooMany(e.Scale.Replicas, MaxPodsPerWorkload, "pods"))
			} else {
				// A scale-up makes the pods it adds.
				addPods(i, field+".scale.replicas", "scale.replicas", e.Scale.Replicas-replicas[target])
			}
			replicas[target] = e.Scale.Replicas
		case e.Delete != nil:
			target, problem := resolveTarget(known, e.Delete.Name, "")
			if problem != "" {
				add(e.line, field+".delete.name", "%s", problem)
			}
			e.Delete.target = target
		case e.Jobs != nil:
			j := e.Jobs
			if j.Name == "" {
				add(e.line, field+".jobs.name", "required")
			}
			for _, msg := range namespaceProblems(j.Namespace) {
				add(e.line, field+".jobs.namespace", "%q: %s", j.Namespace, msg)
			}
			known[j.key()] = "jobs"
			if j.Count <= 0 {
				add(e.line, field+".jobs.count", "must be positive")
			}
			if j.Runtime.Duration <= 0 {
				add(e.line, field+".jobs.runtime", "must be positive, such as 30m")
			}
			if j.Count > MaxPodsPerWorkload {
				add(yamlpath.Line(eventNodes.at(i), "jobs.count"), field+".jobs.count", "%s", tooMany(j.Count, MaxPodsPerWorkload, "pods"))
			} else {
				addPods(i, field+".jobs.count", "jobs.count", j.Count)
			}
			tmpl, err := j.Pod.template(j.Name)
			if err != nil {
				add(shapeLine(eventNodes.at(i), "jobs", err), field+".jobs.pod", "%v", err)
			} else {
				tmpl = checkTemplate(i, "jobs", "count", j.Name, j.Count, tmpl, j.Pod.Template != nil, true)
			}
			j.template = tmpl
		case e.Interrupt != nil:
			if e.Interrupt.Count <= 0 {
				add(e.line, field+".interrupt.count", "must be positive")
			}
		case e.CapacityShortage != nil:
			c := e.CapacityShortage
			if c.For.Duration <= 0 {
				add(e.line, field+".capacityShortage.for", "must be positive, such as 1h")
			}
			node := eventNodes.at(i)
			if _, ok := catalog.Lookup(c.InstanceType); c.InstanceType != "" && !ok {
				add(yamlpath.Line(node, "capacityShortage.instanceType"), field+".capacityShortage.instanceType", "%q is not an EC2 instance type of the catalog (such as m6i.large); leave it out to match every type", c.InstanceType)
			}
			zones := w.Cloud.Zones
			if len(zones) == 0 {
				zones = sim.DefaultZones(sim.DefaultRegion)
			}
			if c.Zone != "" && !slices.Contains(zones, c.Zone) {
				add(yamlpath.Line(node, "capacityShortage.zone"), field+".capacityShortage.zone", "%q is not a zone of the simulated cloud (%s); leave it out to match every zone", c.Zone, strings.Join(zones, ", "))
			}
			if c.CapacityType != "" && c.CapacityType != karpv1.CapacityTypeSpot && c.CapacityType != karpv1.CapacityTypeOnDemand {
				add(yamlpath.Line(node, "capacityShortage.capacityType"), field+".capacityShortage.capacityType", "%q is not spot or on-demand; leave it out to match both", c.CapacityType)
			}
		case e.Apply != "":
			docs, docErrs := readDocuments(file, e.Apply, blockLine(yamlpath.MappingValue(eventNodes.at(i), "apply")))
			objs, err := decodeObjects(docs, append(slices.Clip(w.Objects), applied...)...)
			if err = errors.Join(append(docErrs, err)...); err != nil {
				errs = append(errs, err)
			}
			applied = append(applied, objs...)
			refuseStatic(e.line, field+".apply", objs)
			for _, obj := range objs {
				switch obj.(type) {
				case *karpv1.NodePool, *awsv1.EC2NodeClass:
					e.applied = append(e.applied, obj)
				default:
					add(e.line, field+".apply", "%s %s: only NodePools and EC2NodeClasses can be applied during a run", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName())
				}
			}
		case e.Annotate != nil:
			a := e.Annotate
			switch {
			case (a.Deployment == "") == (a.Nodes == 0):
				add(e.line, field+".annotate", "needs exactly one of deployment (a name) and nodes (a count of the oldest nodes)")
			case a.Deployment != "":
				target, problem := resolveTarget(known, a.Deployment, "deployment")
				if problem != "" {
					add(e.line, field+".annotate.deployment", "%s", problem)
				}
				a.target = target
			case a.Nodes < 0:
				add(e.line, field+".annotate.nodes", "%d is negative", a.Nodes)
			}
			if len(a.Annotations) == 0 {
				add(e.line, field+".annotate.annotations", "required, such as {karpenter.sh/do-not-disrupt: \"true\"}")
			}
		case e.Unhealthy != nil:
			for _, msg := range e.Unhealthy.problems(append(slices.Clip(w.Objects), applied...), w.repairPolicies()) {
				add(e.line, field+".unhealthy"+msg[0], "%s", msg[1])
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return w, nil
}

// inNamespace is " in namespace <ns>" for a namespace other than default, to end a message.
func inNamespace(ns string) string {
	if ns == "" || ns == defaultNamespace {
		return ""
	}
	return " in namespace " + ns
}

// namespaceProblems are what the API server would refuse in a namespace's name (none for
// empty: the default namespace).
func namespaceProblems(ns string) []string {
	if ns == "" {
		return nil
	}
	return k8svalidation.IsDNS1123Label(ns)
}

// resolveTarget finds what an event names among the deployments and jobs deployed before it
// (known, by qualified name): name is a bare name, or namespace/name. A bare name stands for
// the one workload of that name, whatever its namespace; when several namespaces hold one,
// the name is ambiguous and the problem says which to write. kind, when set, is the kind the
// target must be ("deployment"). It returns the target's qualified name, or a problem.
func resolveTarget(known map[string]string, name, kind string) (string, string) {
	what := "deployment or jobs"
	if kind != "" {
		what = kind
	}
	fits := func(key string) bool {
		k, ok := known[key]
		return ok && (kind == "" || k == kind)
	}
	if ns, bare, ok := strings.Cut(name, "/"); ok {
		if key := qualified(ns, bare); fits(key) {
			return key, ""
		}
		return "", fmt.Sprintf("no %s %q in namespace %s before this event", what, bare, ns)
	}
	var found []string
	for _, key := range slices.Sorted(maps.Keys(known)) {
		ns, bare, ok := strings.Cut(key, "/")
		if !ok {
			ns, bare = defaultNamespace, key
		}
		if bare == name && fits(key) {
			found = append(found, ns+"/"+bare)
		}
	}
	switch len(found) {
	case 0:
		if kind != "" {
			return "", fmt.Sprintf("no %s %q was deployed before this event", what, name)
		}
		return "", fmt.Sprintf("no %s %q exist before this event", what, name)
	case 1:
		ns, bare, _ := strings.Cut(found[0], "/")
		return qualified(ns, bare), ""
	}
	return "", fmt.Sprintf("%q is ambiguous: several namespaces have a %s of that name; write namespace/name, one of %s", name, what, strings.Join(found, ", "))
}

// problems are what is wrong with the simulated cloud's settings of the workload file (its
// YAML is root), each with the file, line and field.
func (c *CloudSettings) problems(file string, root *yaml.Node) []error {
	var errs []error
	add := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s: %s", file, yamlpath.Line(root, path), path, fmt.Sprintf(format, args...)))
	}
	if r := c.CreateErrorRate; math.IsNaN(r) || r < 0 || r > 1 {
		add("cloud.createErrorRate", "%v is not a share of launches from 0 to 1 (such as 0.1 for one in ten)", r)
	}
	if zones, _ := yamlpath.Find(root, "cloud.zones"); zones != nil && len(c.Zones) == 0 {
		add("cloud.zones", "empty: name at least one zone, or leave zones out for %s", strings.Join(sim.DefaultZones(sim.DefaultRegion), ", "))
	}
	for i, z := range c.Zones {
		path := fmt.Sprintf("cloud.zones[%d]", i)
		switch {
		case strings.TrimSpace(z) == "":
			add(path, "empty: name a zone such as us-east-1a")
		case slices.Index(c.Zones, z) < i:
			add(path, "%q is given twice (also at cloud.zones[%d])", z, slices.Index(c.Zones, z))
		}
	}
	zones := c.Zones
	if len(zones) == 0 {
		zones = sim.DefaultZones(sim.DefaultRegion)
	}
	reservations := c.reservations()
	for i, r := range c.Reservations {
		path := fmt.Sprintf("cloud.reservations[%d]", i)
		if _, ok := catalog.Lookup(r.InstanceType); !ok {
			add(path+".instanceType", "%q is not an EC2 instance type of the catalog (such as m6i.large)", r.InstanceType)
		}
		if r.End != nil && r.End.Duration <= 0 {
			add(path+".end", "must be positive, such as 6h from the start")
		}
		if j := slices.IndexFunc(c.Reservations[:i], func(o ReservationSetting) bool { return o.ID == r.ID }); j >= 0 {
			add(path+".id", "%q is given twice (also at cloud.reservations[%d])", r.ID, j)
		}
		if err := reservations[i].Validate(zones); err != nil {
			add(path, "%v", err)
		}
	}
	return errs
}

// kubeletExpressionProblems are the EC2NodeClasses among objs that hold CEL expressions in
// spec.kubelet and could not be Ready, each with why: with the AWS provider's NodeClassCEL gate
// off (enabled false), Karpenter's KubeletExpressionsDisabled message and how to turn the gate
// on; with it on, an expression that does not compile (KubeletExpressionInvalid) or fails for
// an instance type of the catalog (KubeletExpressionEvaluationFailed). The simulated cloud evaluates them as the AWS provider
// does, so with the gate on they size its instance types.
func kubeletExpressionProblems(objs []client.Object, enabled bool) []string {
	var out []string
	var entries []catalog.Entry
	for _, o := range objs {
		nc, ok := o.(*awsv1.EC2NodeClass)
		if !ok || nc.Spec.Kubelet == nil || len(nc.Spec.Kubelet.Expressions()) == 0 {
			continue
		}
		if !enabled {
			out = append(out, fmt.Sprintf("EC2NodeClass %q: spec.kubelet contains a CEL expression, but the NodeClassCEL feature gate is disabled (%s: the EC2NodeClass would never be Ready): add featureGates: {NodeClassCEL: true}, or give values",
				nc.Name, cloudprovider.ReasonKubeletExpressionsDisabled))
			continue
		}
		if entries == nil {
			var err error
			if entries, err = catalog.Load(); err != nil {
				return append(out, fmt.Sprintf("loading the instance-type catalog: %v", err))
			}
		}
		reason, err := cloudprovider.ValidateKubelet(nc, true)
		if err == nil {
			opts := cloudprovider.OptionsFromNodeClass(nc)
			opts.KubeletExpressions = true
			reason, err = cloudprovider.ReasonKubeletExpressionEvaluationFailed, opts.EvaluateKubelet(entries)
		}
		if err != nil {
			out = append(out, fmt.Sprintf("EC2NodeClass %q: %v (%s: the EC2NodeClass would never be Ready)", nc.Name, err, reason))
		}
	}
	return out
}

// gate says whether a gate of the table is on in set: its value there, else its default.
func gate(table *featuregate.Table, set map[string]bool, name string) bool {
	if v, ok := set[name]; ok {
		return v
	}
	g, _ := table.Lookup(name)
	return g.Default
}

// repairProblems are what is wrong with the workload's node repair settings, each as the
// top-level key whose line names it, the field under it and the message: a setting that would
// change nothing, or that the repair it selects cannot honour, is refused rather than ignored.
func (w *Workload) repairProblems() [][3]string {
	var out [][3]string
	nodeRepair := gate(&featuregate.Karpenter, w.FeatureGates, featuregate.NodeRepair)
	reboot := gate(&featuregate.AWS, w.FeatureGates, featuregate.RebootForRepair)
	terminateFirst := gate(&featuregate.Karpenter, w.FeatureGates, featuregate.TerminateFirstRepair)
	switch {
	case w.LegacyNodeRepair && !nodeRepair:
		out = append(out, [3]string{"legacyNodeRepair", "", "selects the legacy node repair controller, which runs only with the NodeRepair feature gate: add featureGates: {NodeRepair: true}, or remove legacyNodeRepair"})
	case w.LegacyNodeRepair && terminateFirst:
		out = append(out, [3]string{"featureGates", "." + featuregate.TerminateFirstRepair, "the legacy node repair controller (legacyNodeRepair: true) deletes an unhealthy node at once and never stages a replacement, so it has nothing to terminate first: remove legacyNodeRepair (repair as a disruption method honours TerminateFirstRepair) or the gate"})
	}
	switch {
	case reboot && !nodeRepair:
		out = append(out, [3]string{"featureGates", "." + featuregate.RebootForRepair, "reboots are node repair's: add featureGates: {NodeRepair: true}, or remove the gate"})
	case reboot && w.LegacyNodeRepair:
		out = append(out, [3]string{"featureGates", "." + featuregate.RebootForRepair, "the legacy node repair controller (legacyNodeRepair: true) never reboots, it replaces: remove legacyNodeRepair (repair as a disruption method reboots) or the gate"})
	}
	return out
}

// repairPolicies are the simulated cloud's repair policies the workload's node repair acts by:
// EC2's as the AWS provider v1.15.2 declares them (with its RebootForRepair gate), or, with
// legacyNodeRepair, the legacy controller's.
func (w *Workload) repairPolicies() []cloudprovider.RepairPolicy {
	if w.LegacyNodeRepair {
		return cloudprovider.LegacyEC2RepairPolicies()
	}
	return cloudprovider.EC2RepairPolicies(gate(&featuregate.AWS, w.FeatureGates, featuregate.RebootForRepair))
}

// problems are what is wrong with the event, each as the field (".count", …) and the
// message; objs are the NodePools it may name, policies the repair policies its condition
// must be unhealthy to (the workload's repairPolicies).
func (u *Unhealthy) problems(objs []client.Object, policies []cloudprovider.RepairPolicy) [][2]string {
	var out [][2]string
	if u.Count <= 0 {
		out = append(out, [2]string{".count", "must be positive"})
	}
	if u.NodePool != "" && !slices.ContainsFunc(objs, func(o client.Object) bool {
		_, ok := o.(*karpv1.NodePool)
		return ok && o.GetName() == u.NodePool
	}) {
		out = append(out, [2]string{".nodePool", fmt.Sprintf("no NodePool %q among the manifests or applied before this event", u.NodePool)})
	}
	known := describePolicies(policies)
	switch {
	case u.Condition == "" || u.Status == "":
		out = append(out, [2]string{"", "condition and status are required, one of: " + strings.Join(known, "; ")})
	case !slices.ContainsFunc(policies, func(p cloudprovider.RepairPolicy) bool {
		return string(p.ConditionType) == u.Condition && string(p.ConditionStatus) == u.Status
	}):
		out = append(out, [2]string{"", fmt.Sprintf("%s %s is not unhealthy to the simulated cloud's repair policies (EC2's): use one of %s", u.Condition, u.Status, strings.Join(known, "; "))})
	}
	return out
}

// describePolicies says, for each condition type and status the policies name (in their
// order), how long a node may report it before repair acts, and how: "Ready Unknown (30m0s)",
// or by reason, "AcceleratedHardwareReady False (10m0s, then a reboot, for a reason matching
// .*XID(46|…).*; …; else 30m0s)".
func describePolicies(policies []cloudprovider.RepairPolicy) []string {
	type key struct{ t, s string }
	var order []key
	byKey := map[key][]cloudprovider.RepairPolicy{}
	for _, p := range policies {
		k := key{string(p.ConditionType), string(p.ConditionStatus)}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], p)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		group := byKey[k]
		parts := make([]string, len(group))
		for i, p := range group {
			what := p.TolerationDuration.String()
			if p.Action == cloudprovider.RebootNode {
				what += ", then a reboot,"
			}
			switch {
			case p.ReasonRegex != "" && p.ReasonRegex != ".*":
				what += " for a reason matching " + p.ReasonRegex
			case len(group) > 1:
				what = "else " + what
			}
			parts[i] = strings.TrimSuffix(what, ",")
		}
		out = append(out, fmt.Sprintf("%s %s (%s)", k.t, k.s, strings.Join(parts, "; ")))
	}
	return out
}

// shapeLine is the line of the field of an event's pod shape that an error of template names
// first ("cpu: ..."), under the event's node at action.pod; the nearest line written when the
// error names no field.
func shapeLine(event *yaml.Node, action string, err error) int {
	path, _, _ := strings.Cut(err.Error(), ": ")
	if strings.Contains(path, " ") {
		path = ""
	}
	return yamlpath.Line(event, strings.TrimSuffix(action+".pod."+path, "."))
}

// template builds the pod template of a deployment or job.
func (s PodShape) template(name string) (*corev1.PodTemplateSpec, error) {
	if s.Template != nil {
		if s.CPU != "" || s.Memory != "" || s.GPU != 0 || s.NodeSelector != nil || s.Affinity != nil || s.Tolerations != nil || s.TopologySpreadConstraints != nil || s.Labels != nil {
			return nil, errors.New("template: the other pod fields must be empty when a template is given")
		}
		t := &corev1.PodTemplateSpec{}
		if err := decodeValue(s.Template, t); err != nil {
			return nil, fmt.Errorf("template: %w", err)
		}
		if len(t.Spec.Containers) == 0 {
			return nil, errors.New("template.spec.containers: at least one container is required")
		}
		if t.Labels == nil {
			t.Labels = map[string]string{"app": name}
		}
		return t, nil
	}
	requests := corev1.ResourceList{}
	for _, r := range []struct {
		name  corev1.ResourceName
		value string
	}{{corev1.ResourceCPU, s.CPU}, {corev1.ResourceMemory, s.Memory}} {
		if r.value == "" {
			continue
		}
		q, err := resource.ParseQuantity(r.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a quantity (use forms such as 500m, 2, 1Gi)", r.name, r.value)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%s: %q is negative", r.name, r.value)
		}
		requests[r.name] = q
	}
	if s.GPU < 0 {
		return nil, fmt.Errorf("gpu: %d is negative", s.GPU)
	}
	if s.GPU > 0 {
		requests["nvidia.com/gpu"] = *resource.NewQuantity(int64(s.GPU), resource.DecimalSI)
	}
	if len(requests) == 0 {
		return nil, errors.New("cpu or memory: give the pods' requests (or a full template)")
	}
	labels := s.Labels
	if labels == nil {
		labels = map[string]string{"app": name}
	}
	t := &corev1.PodTemplateSpec{}
	t.Labels = labels
	t.Spec.NodeSelector = s.NodeSelector
	t.Spec.Containers = []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: requests}}}
	if s.GPU > 0 {
		t.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": requests["nvidia.com/gpu"]}
	}
	for i := range s.Tolerations {
		var tol corev1.Toleration
		if err := decodeValue(s.Tolerations[i], &tol); err != nil {
			return nil, fmt.Errorf("tolerations[%d]: %w", i, err)
		}
		t.Spec.Tolerations = append(t.Spec.Tolerations, tol)
	}
	if s.Affinity != nil {
		t.Spec.Affinity = &corev1.Affinity{}
		if err := decodeValue(s.Affinity, t.Spec.Affinity); err != nil {
			return nil, fmt.Errorf("affinity: %w", err)
		}
	}
	for i := range s.TopologySpreadConstraints {
		var c corev1.TopologySpreadConstraint
		if err := decodeValue(s.TopologySpreadConstraints[i], &c); err != nil {
			return nil, fmt.Errorf("topologySpreadConstraints[%d]: %w", i, err)
		}
		t.Spec.TopologySpreadConstraints = append(t.Spec.TopologySpreadConstraints, c)
	}
	return t, nil
}

// decodeValue decodes a value read from YAML strictly into a Kubernetes type, through JSON so
// the type's json tags apply.
func decodeValue(v any, into any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := sigsyaml.UnmarshalStrict(data, into); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "error unmarshaling JSON: while decoding JSON: "))
	}
	return nil
}

// decodeManifests reads YAML documents into the project's typed objects (CapacityBuffers among
// them), the storage objects, PodTemplates, RuntimeClasses and Namespaces, strictly; text
// starts on line firstLine of file.
func decodeManifests(file, text string, firstLine int) ([]client.Object, error) {
	docs, errs := readDocuments(file, text, firstLine)
	var karpenter, storage, templates, runtimeClasses, namespaceDocs []document
	for _, doc := range docs {
		switch {
		case doc.src.APIVersion == "v1" && doc.src.Kind == "Namespace":
			namespaceDocs = append(namespaceDocs, doc)
		case isStorageKind(doc.src.APIVersion, doc.src.Kind):
			storage = append(storage, doc)
		case isPodTemplate(doc.src.APIVersion, doc.src.Kind):
			templates = append(templates, doc)
		case isRuntimeClass(doc.src.APIVersion, doc.src.Kind):
			runtimeClasses = append(runtimeClasses, doc)
		default:
			karpenter = append(karpenter, doc)
		}
	}
	objs, err := decodeObjects(karpenter)
	more, storageErrs := storageObjects(storage, nil)
	pts, templateErrs := decodePodTemplates(templates)
	classes, classErrs := decodeRuntimeClasses(runtimeClasses)
	namespaces, namespaceErrs := decodeBuiltins(namespaceDocs, corev1.SchemeGroupVersion.WithKind("Namespace"), func() client.Object { return &corev1.Namespace{} })
	objs = append(append(append(append(namespaces, objs...), more...), pts...), classes...)
	return objs, errors.Join(append(append(append(append(append(errs, err), storageErrs...), templateErrs...), classErrs...), namespaceErrs...)...)
}

// yamlLine finds the line a YAML parser's message names ("line 6: "), and unknownYAMLField
// its words for a field the workload does not have.
var (
	yamlLine         = regexp.MustCompile(`^line (\d+): `)
	unknownYAMLField = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
)

// yamlErrors gives a YAML parser's errors in the project's form, one per line: file:LINE: what
// (with prefix), instead of "yaml: line LINE: what" and "yaml: unmarshal errors:" lists.
func yamlErrors(file, prefix string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	var out []string
	for _, line := range strings.Split(msg, "\n") {
		line = strings.TrimSpace(line)
		if m := yamlLine.FindStringSubmatch(line); m != nil {
			what := unknownYAMLField.ReplaceAllString(strings.TrimPrefix(line, m[0]), "$1: unknown field")
			out = append(out, fmt.Sprintf("%s:%s: %s%s", file, m[1], prefix, what))
		} else if line != "" {
			out = append(out, fmt.Sprintf("%s: %s%s", file, prefix, line))
		}
	}
	return errors.New(strings.Join(out, "\n"))
}

// gateProblem is an object Karpenter would not run as it asks with the feature gates given:
// the field concerned ("" for the whole object) and a message that names the object and the fix.
type gateProblem struct {
	object  client.Object
	field   string
	message string
}

// gateProblems says which of objs Karpenter would not run as they ask with the NodeOverlay and
// StaticCapacity feature gates as given: without the NodeOverlay gate Karpenter does not read
// NodeOverlays, and without StaticCapacity it launches nothing for a static NodePool; the
// simulator refuses them rather than run as if the gates were otherwise. A static NodePool past
// MaxStaticReplicas is refused too.
func gateProblems(objs []client.Object, nodeOverlay, staticCapacity bool) []gateProblem {
	var out []gateProblem
	for _, o := range objs {
		switch o := o.(type) {
		case *karpv1alpha1.NodeOverlay:
			if !nodeOverlay {
				out = append(out, gateProblem{o, "", fmt.Sprintf("NodeOverlay %s needs the NodeOverlay feature gate, which is off by default as in Karpenter: add featureGates: {NodeOverlay: true}, or remove the NodeOverlay", o.Name)})
			}
		case *karpv1.NodePool:
			switch {
			case o.Spec.Replicas == nil:
			case !staticCapacity:
				out = append(out, gateProblem{o, "spec.replicas", fmt.Sprintf("NodePool %s sets spec.replicas (a static NodePool), which needs the StaticCapacity feature gate: add featureGates: {StaticCapacity: true}, or remove spec.replicas", o.Name)})
			case *o.Spec.Replicas > MaxStaticReplicas:
				out = append(out, gateProblem{o, "spec.replicas", fmt.Sprintf("NodePool %s: spec.replicas: %s", o.Name, tooMany(int(*o.Spec.Replicas), MaxStaticReplicas, "nodes"))})
			}
		}
	}
	return out
}

// decodeObjects decodes documents into the project's typed objects, strictly, with the CRDs'
// defaults and validation; each error names the line of its field. known are objects read
// before, which a NodePool's nodeClassRef may name.
func decodeObjects(docs []document, known ...client.Object) ([]client.Object, error) {
	scheme := apis.NewScheme()
	validator, err := crdValidator()
	if err != nil {
		return nil, err
	}
	var out []client.Object
	var errs []error
	seen := map[string]document{} // kind/namespace/name -> the first
	for _, doc := range docs {
		gvk := (&unstructured.Unstructured{Object: doc.raw}).GroupVersionKind()
		obj, err := scheme.New(gvk)
		if err != nil {
			errs = append(errs, doc.errorf("kind", "unknown kind %s; use NodePool (karpenter.sh/v1), EC2NodeClass (karpenter.k8s.aws/v1), NodeOverlay (karpenter.sh/v1alpha1), for volumes StorageClass (storage.k8s.io/v1), PersistentVolume and PersistentVolumeClaim (v1), for spare capacity CapacityBuffer (autoscaling.x-k8s.io/v1beta1) and PodTemplate (v1), RuntimeClass (node.k8s.io/v1), and Namespace (v1) for pod affinity's namespaceSelector", gvk.GroupKind()))
			continue
		}
		if decodeErrs := doc.decode(obj); len(decodeErrs) > 0 {
			errs = append(errs, decodeErrs...)
			continue
		}
		co, ok := obj.(client.Object)
		if !ok {
			errs = append(errs, doc.errorf("kind", "%s is not an object", gvk.Kind))
			continue
		}
		if _, ok := co.(*autoscalingv1beta1.CapacityBuffer); ok && co.GetNamespace() == "" {
			co.SetNamespace(defaultNamespace)
		}
		// The same schema, defaults and CEL rules the API server would apply.
		if err := validator.DefaultObject(co); err != nil {
			errs = append(errs, doc.src.StatusErrors(err)...)
			continue
		}
		if err := validator.ValidateObjectForUser(co); err != nil {
			errs = append(errs, doc.src.StatusErrors(err)...)
			continue
		}
		// The API server takes any kubelet configuration; the controller refuses what
		// Karpenter's would (the NodeClass would never be Ready), so a run refuses it at once.
		// CEL expressions are left to kubeletExpressionProblems, which knows whether the
		// workload turns the NodeClassCEL gate on: here the rest is checked as with the gate.
		if nc, ok := co.(*awsv1.EC2NodeClass); ok {
			if reason, field, err := cloudprovider.ValidateSimulated(nc); err != nil {
				errs = append(errs, doc.errorf(field, "%s (%s: the EC2NodeClass would never be Ready)", strings.TrimPrefix(err.Error(), field+": "), reason))
				continue
			}
			if reason, err := cloudprovider.ValidateKubelet(nc, true); err != nil && reason != cloudprovider.ReasonKubeletExpressionInvalid {
				var each interface{ Unwrap() []error }
				causes := []error{err}
				if errors.As(err, &each) {
					causes = each.Unwrap()
				}
				for _, cause := range causes {
					field, detail := "spec.kubelet", cause.Error()
					var ke *awsv1.KubeletError
					var fe *kubeletcel.FieldError
					if errors.As(cause, &ke) {
						field, detail = ke.Field, ke.Detail
					} else if errors.As(cause, &fe) {
						field, detail = fe.Field, fe.Err.Error()
					}
					errs = append(errs, doc.errorf(field, "%s (%s: the EC2NodeClass would never be Ready)", detail, reason))
				}
				continue
			}
		}
		id := gvk.Kind + "/" + co.GetNamespace() + "/" + co.GetName()
		if earlier, dup := seen[id]; dup {
			errs = append(errs, duplicate(doc, earlier))
			continue
		}
		seen[id] = doc
		co.GetObjectKind().SetGroupVersionKind(gvk)
		out = append(out, co)
	}
	if len(errs) == 0 { // then out[i] is docs[i]
		errs = append(errs, missingNodeClasses(out, docs, known)...)
	}
	return out, errors.Join(errs...)
}

// missingNodeClasses names each NodePool whose nodeClassRef has no EC2NodeClass among objs: in
// a cluster it would wait, never ready, and its pods would never be scheduled, so a simulation
// says so up front. docs are where objs were read, one for each.
func missingNodeClasses(objs []client.Object, docs []document, known []client.Object) []error {
	classes := map[string]bool{}
	for _, o := range append(slices.Clip(known), objs...) {
		if _, ok := o.(*awsv1.EC2NodeClass); ok {
			classes[o.GetName()] = true
		}
	}
	var errs []error
	for i, o := range objs {
		np, ok := o.(*karpv1.NodePool)
		if !ok || np.Spec.Template.Spec.NodeClassRef == nil {
			continue
		}
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref.Kind == "EC2NodeClass" && !classes[ref.Name] {
			errs = append(errs, docs[i].errorf("spec.template.spec.nodeClassRef.name", "EC2NodeClass %q is not among the manifests; add it (as in examples/getting-started.yaml), or the NodePool never becomes ready", ref.Name))
		}
	}
	return errs
}

var _ runtime.Object = (*corev1.Pod)(nil)

// crdValidator is built once: it compiles the CRDs' schemas and CEL rules.
var crdValidator = sync.OnceValues(validation.New)

// blockLine is the line of its file that the text of a YAML string starts on: the line after
// the indicator of a literal block (manifests: |), whose lines are the file's one for one, else
// the line of the string (0 for nil).
func blockLine(n *yaml.Node) int {
	switch {
	case n == nil:
		return 0
	case n.Style&yaml.LiteralStyle != 0:
		return n.Line + 1
	}
	return n.Line
}

// findValue returns the value node of a top-level key.
func findValue(root *yaml.Node, key string) *yaml.Node {
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == key {
			return doc.Content[i+1]
		}
	}
	return nil
}

func findSequence(root *yaml.Node, key string) []*yaml.Node {
	if n := findValue(root, key); n != nil && n.Kind == yaml.SequenceNode {
		return n.Content
	}
	return nil
}

func lineOf(root *yaml.Node, key string) int {
	if n := findValue(root, key); n != nil {
		return n.Line
	}
	return 1
}

// names of the events' targets, sorted, for reports.
func (w *Workload) names() []string {
	set := map[string]bool{}
	for _, e := range w.Timeline {
		switch {
		case e.Deploy != nil:
			set[e.Deploy.key()] = true
		case e.Jobs != nil:
			set[e.Jobs.key()] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
