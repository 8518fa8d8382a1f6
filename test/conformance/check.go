package conformance

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// The checker judges a scheduler's outcome on its own terms, with code of its own: Kubernetes'
// rules as the kube-scheduler and kubelet apply them to the nodes that would exist once the
// claims launch (each claim launched as its cheapest instance type in its cheapest offering).
// It imports neither scheduler.

// Rules a violation can break.
const (
	RuleRefusedByOursOnly      = "refused-by-ours-only"
	RuleRefusedByKarpenterOnly = "refused-by-karpenter-only"
	RuleNoReason               = "no-reason"
	RuleUnaccounted            = "unaccounted"
	RuleNodeSelection          = "node-selection"
	RuleTaints                 = "taints"
	RuleResources              = "resources"
	RuleHostPorts              = "host-ports"
	RuleSpread                 = "topology-spread"
	RulePodAffinity            = "pod-affinity"
	RulePodAntiAffinity        = "pod-anti-affinity"
	RuleVolumeZone             = "volume-zone"
	RuleClaimInstanceType      = "claim-instance-type"
	RuleMinValues              = "min-values"
	RuleLimits                 = "limits"
	RuleCost                   = "cost"
)

// Violation is one broken rule.
type Violation struct {
	// Rule broken (one of the Rule constants).
	Rule string
	// Scheduler whose outcome breaks it ("ours", "karpenter", or "both" for comparisons).
	Scheduler string
	// Pod concerned (namespace/name), if any.
	Pod string
	// Node or claim concerned, if any.
	Node string
	// Detail says how.
	Detail string
}

func (v Violation) String() string {
	parts := []string{v.Scheduler, v.Rule}
	if v.Pod != "" {
		parts = append(parts, "pod "+v.Pod)
	}
	if v.Node != "" {
		parts = append(parts, "node "+v.Node)
	}
	return strings.Join(parts, " ") + ": " + v.Detail
}

// world is the cluster once an outcome is carried out.
type world struct {
	c     *Case
	nodes []*checkNode
	// bound are the pods that were bound before the run.
	bound map[string]bool
}

type checkNode struct {
	name        string
	labels      map[string]string
	taints      []corev1.Taint
	allocatable corev1.ResourceList
	pods        []*corev1.Pod // bound before, then placed by the run
	daemons     []*corev1.Pod
	claim       *Claim
}

// Check judges one outcome and returns the rules it breaks.
func Check(c *Case, o *Outcome) []Violation {
	w := &world{c: c, bound: map[string]bool{}}
	var vs []Violation
	add := func(rule, pod, node, format string, args ...any) {
		vs = append(vs, Violation{Rule: rule, Scheduler: o.Scheduler, Pod: pod, Node: node, Detail: fmt.Sprintf(format, args...)})
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range c.Pods {
		pods[PodKey(p)] = p
	}
	byName := map[string]*checkNode{}
	for _, n := range c.Nodes {
		it := c.instanceType(n.InstanceType)
		cn := &checkNode{name: n.Name, labels: nodeLabels(n, it), taints: n.Taints, allocatable: it.Allocatable()}
		for _, p := range n.Pods {
			cn.pods = append(cn.pods, p)
			w.bound[PodKey(p)] = true
		}
		w.nodes = append(w.nodes, cn)
		byName[n.Name] = cn
	}
	placed := map[string]*checkNode{}
	for key, node := range o.Existing {
		n, ok := byName[node]
		if !ok || pods[key] == nil {
			add(RuleUnaccounted, key, node, "placed on an unknown node, or not a pending pod")
			continue
		}
		n.pods = append(n.pods, pods[key])
		placed[key] = n
	}
	for _, claim := range o.Claims {
		n, err := w.materialize(claim)
		if err != nil {
			add(RuleClaimInstanceType, "", claim.Name, "%v", err)
			continue
		}
		for _, key := range claim.Pods {
			if pods[key] == nil {
				add(RuleUnaccounted, key, claim.Name, "not a pending pod")
				continue
			}
			n.pods = append(n.pods, pods[key])
			placed[key] = n
		}
		w.nodes = append(w.nodes, n)
	}
	for _, n := range w.nodes {
		n.daemons = w.daemonPods(n.labels, n.taints)
	}
	for _, p := range c.Pods {
		key := PodKey(p)
		_, refused := o.Errors[key]
		switch {
		case placed[key] != nil && refused:
			add(RuleUnaccounted, key, placed[key].name, "both placed and refused")
		case placed[key] == nil && !refused:
			add(RuleUnaccounted, key, "", "neither placed nor refused")
		case refused && strings.TrimSpace(o.Errors[key]) == "":
			add(RuleNoReason, key, "", "refused without a reason")
		}
	}
	// Each placed pod against its node.
	for _, p := range c.Pods {
		n := placed[PodKey(p)]
		if n == nil {
			continue
		}
		key := PodKey(p)
		if err := nodeSelectionError(p, n.labels); err != nil {
			add(RuleNodeSelection, key, n.name, "%v", err)
		}
		if err := volumeZoneError(c, p, n.labels); err != nil {
			add(RuleVolumeZone, key, n.name, "%v", err)
		}
		if t, ok := untolerated(p.Spec.Tolerations, n.taints); !ok {
			add(RuleTaints, key, n.name, "taint %s=%s:%s not tolerated", t.Key, t.Value, t.Effect)
		}
		for _, msg := range w.spreadErrors(p, n) {
			add(RuleSpread, key, n.name, "%s", msg)
		}
		for _, msg := range w.affinityErrors(p, n) {
			add(RulePodAffinity, key, n.name, "%s", msg)
		}
		for _, msg := range w.antiAffinityErrors(p, n) {
			add(RulePodAntiAffinity, key, n.name, "%s", msg)
		}
	}
	// Each node's room and ports.
	for _, n := range w.nodes {
		if msg := fitError(append(append([]*corev1.Pod{}, n.pods...), n.daemons...), n.allocatable); msg != "" {
			add(RuleResources, "", n.name, "%s", msg)
		}
		if msg := hostPortConflict(append(append([]*corev1.Pod{}, n.daemons...), n.pods...)); msg != "" {
			add(RuleHostPorts, "", n.name, "%s", msg)
		}
	}
	// Each claim's instance types, NodePool minValues and limits.
	for _, claim := range o.Claims {
		for _, msg := range w.claimErrors(claim, pods) {
			add(RuleClaimInstanceType, "", claim.Name, "%s", msg)
		}
		if msg := w.minValuesError(claim); msg != "" {
			add(RuleMinValues, "", claim.Name, "%s", msg)
		}
	}
	for _, msg := range w.limitErrors(o) {
		add(RuleLimits, "", "", "%s", msg)
	}
	o.UnmetPreferences = w.unmetPreferences(c, placed)
	return vs
}

// unmetPreferences sums the weights of the placed pods' preferred terms the final cluster does
// not meet: a preferred node affinity term the node's labels miss; a preferred pod
// anti-affinity term with another matching pod in the pod's domain; a preferred pod affinity
// term with no other matching pod in its domain, while one runs elsewhere or the pod does not
// match its own term (the first of its group meets it, as the required rule reads); a
// ScheduleAnyway spread whose skew in the pod's domain exceeds maxSkew, at weight
// spreadPreferenceWeight (such a constraint has no weight of its own).
func (w *world) unmetPreferences(c *Case, placed map[string]*checkNode) int {
	unmet := 0
	for _, p := range c.Pods {
		n := placed[PodKey(p)]
		if n == nil {
			continue
		}
		unmet += spreadPreferenceWeight * len(w.skewErrors(p, n, corev1.ScheduleAnyway))
		a := p.Spec.Affinity
		if a == nil {
			continue
		}
		if a.NodeAffinity != nil {
			for _, t := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				if matchAll(t.Preference.MatchExpressions, n.labels) != nil {
					unmet += int(t.Weight)
				}
			}
		}
		if a.PodAntiAffinity != nil {
			for _, t := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				if w.sharesDomain(p, n, t.PodAffinityTerm) {
					unmet += int(t.Weight)
				}
			}
		}
		if a.PodAffinity != nil {
			for _, t := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				if !w.sharesDomain(p, n, t.PodAffinityTerm) && (w.matchesElsewhere(p, t.PodAffinityTerm) || !termMatches(t.PodAffinityTerm, p, p)) {
					unmet += int(t.Weight)
				}
			}
		}
	}
	return unmet
}

// spreadPreferenceWeight is what one pod's unmet ScheduleAnyway spread adds to the unmet
// preferences: the weight of the kube-scheduler's PodTopologySpread score in its default profile.
const spreadPreferenceWeight = 2

// sharesDomain reports whether another pod the term matches runs in p's domain of its key.
func (w *world) sharesDomain(p *corev1.Pod, n *checkNode, t corev1.PodAffinityTerm) bool {
	domain, ok := n.labels[t.TopologyKey]
	if !ok {
		return false
	}
	for _, m := range w.nodes {
		if m.labels[t.TopologyKey] != domain {
			continue
		}
		for _, q := range m.pods {
			if q != p && termMatches(t, p, q) {
				return true
			}
		}
	}
	return false
}

// matchesElsewhere reports whether another pod the term matches runs anywhere.
func (w *world) matchesElsewhere(p *corev1.Pod, t corev1.PodAffinityTerm) bool {
	for _, m := range w.nodes {
		for _, q := range m.pods {
			if q != p && termMatches(t, p, q) {
				return true
			}
		}
	}
	return false
}

// materialize is the node a claim becomes when launched as its first (cheapest) instance type
// in that type's cheapest available offering its requirements allow.
func (w *world) materialize(claim *Claim) (*checkNode, error) {
	np := w.c.nodePool(claim.NodePool)
	if np == nil {
		return nil, fmt.Errorf("claim of unknown nodepool %q", claim.NodePool)
	}
	if len(claim.InstanceTypes) == 0 {
		return nil, fmt.Errorf("claim names no instance type")
	}
	it := w.c.instanceType(claim.InstanceTypes[0])
	if it == nil {
		return nil, fmt.Errorf("unknown instance type %q", claim.InstanceTypes[0])
	}
	o, ok := cheapestOffering(it, claim.Requirements)
	if !ok {
		return nil, fmt.Errorf("instance type %s has no available offering the claim's requirements allow", it.Name)
	}
	return &checkNode{
		name:        claim.Name,
		labels:      launchLabels(it, o, claim),
		taints:      np.Spec.Template.Spec.Taints,
		allocatable: it.Allocatable(),
		claim:       claim,
	}, nil
}

// launchLabels are the labels of a node launched for the claim as the offering: the instance
// type's, the offering's, the claim's own and its hostname.
func launchLabels(it *InstanceType, o Offering, claim *Claim) map[string]string {
	out := map[string]string{}
	for k, v := range claim.Labels {
		out[k] = v
	}
	for k, v := range it.Labels {
		out[k] = v
	}
	out[corev1.LabelTopologyZone] = o.Zone
	out[karpv1.CapacityTypeLabelKey] = o.CapacityType
	out[corev1.LabelHostname] = claim.Name
	out[karpv1.NodePoolLabelKey] = claim.NodePool
	return out
}

// cheapestOffering is the cheapest available offering whose zone and capacity type satisfy reqs.
func cheapestOffering(it *InstanceType, reqs []corev1.NodeSelectorRequirement) (Offering, bool) {
	best, found := Offering{Price: math.Inf(1)}, false
	for _, o := range it.Offerings {
		if !o.Available || o.Price >= best.Price {
			continue
		}
		labels := map[string]string{corev1.LabelTopologyZone: o.Zone, karpv1.CapacityTypeLabelKey: o.CapacityType}
		if matchesOn(reqs, labels, corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey) {
			best, found = o, true
		}
	}
	return best, found
}

// ClaimPrice is what a claim costs: the cheapest offering its requirements allow of any of its
// instance types, $/hour.
func ClaimPrice(c *Case, claim *Claim) float64 {
	best := math.Inf(1)
	for _, name := range claim.InstanceTypes {
		if it := c.instanceType(name); it != nil {
			if o, ok := cheapestOffering(it, claim.Requirements); ok {
				best = math.Min(best, o.Price)
			}
		}
	}
	return best
}

// Cost sums the outcome's claim prices.
func Cost(c *Case, o *Outcome) float64 {
	total := 0.0
	for _, claim := range o.Claims {
		total += ClaimPrice(c, claim)
	}
	return total
}

// matchesOn evaluates the requirements on the given keys only.
func matchesOn(reqs []corev1.NodeSelectorRequirement, labels map[string]string, keys ...string) bool {
	for _, r := range reqs {
		for _, k := range keys {
			if r.Key == k && !matchRequirement(r, labels) {
				return false
			}
		}
	}
	return true
}

// matchRequirement evaluates one node selector requirement against labels.
func matchRequirement(r corev1.NodeSelectorRequirement, labels map[string]string) bool {
	v, has := labels[r.Key]
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return has && contains(r.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !has || !contains(r.Values, v)
	case corev1.NodeSelectorOpExists:
		return has
	case corev1.NodeSelectorOpDoesNotExist:
		return !has
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, karpv1.NodeSelectorOpGte, karpv1.NodeSelectorOpLte:
		if !has || len(r.Values) != 1 {
			return false
		}
		a, err1 := strconv.ParseInt(v, 10, 64)
		b, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		switch r.Operator {
		case corev1.NodeSelectorOpGt:
			return a > b
		case karpv1.NodeSelectorOpGte:
			return a >= b
		case karpv1.NodeSelectorOpLte:
			return a <= b
		}
		return a < b
	}
	return false
}

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}

func matchAll(reqs []corev1.NodeSelectorRequirement, labels map[string]string) error {
	for _, r := range reqs {
		if !matchRequirement(r, labels) {
			return fmt.Errorf("%s %s %v not met (label %q)", r.Key, r.Operator, r.Values, labels[r.Key])
		}
	}
	return nil
}

// nodeSelectionError checks a pod's node selector and required node affinity.
func nodeSelectionError(p *corev1.Pod, labels map[string]string) error {
	for k, v := range p.Spec.NodeSelector {
		if labels[k] != v {
			return fmt.Errorf("nodeSelector %s=%s not met (label %q)", k, v, labels[k])
		}
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	var first error
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		err := matchAll(term.MatchExpressions, labels)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return fmt.Errorf("no required node affinity term met: %v", first)
}

// volumeZoneError checks that the node can mount the pod's volumes: a bound volume's node
// affinity, an unbound claim's StorageClass allowed topologies.
func volumeZoneError(c *Case, p *corev1.Pod, nodeLabels map[string]string) error {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		var pvc *corev1.PersistentVolumeClaim
		for _, x := range c.PersistentVolumeClaims {
			if x.Namespace == p.Namespace && x.Name == v.PersistentVolumeClaim.ClaimName {
				pvc = x
			}
		}
		if pvc == nil {
			continue
		}
		if pvc.Spec.VolumeName != "" {
			for _, pv := range c.PersistentVolumes {
				if pv.Name != pvc.Spec.VolumeName || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
					continue
				}
				ok := false
				for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
					ok = ok || matchAll(term.MatchExpressions, nodeLabels) == nil
				}
				if !ok {
					return fmt.Errorf("volume %s cannot attach in %s", pv.Name, nodeLabels[corev1.LabelTopologyZone])
				}
			}
			continue
		}
		for _, sc := range c.StorageClasses {
			if pvc.Spec.StorageClassName == nil || sc.Name != *pvc.Spec.StorageClassName || len(sc.AllowedTopologies) == 0 {
				continue
			}
			ok := false
			for _, term := range sc.AllowedTopologies {
				all := true
				for _, e := range term.MatchLabelExpressions {
					all = all && contains(e.Values, nodeLabels[e.Key])
				}
				ok = ok || all
			}
			if !ok {
				return fmt.Errorf("storage class %s does not provision in %s", sc.Name, nodeLabels[corev1.LabelTopologyZone])
			}
		}
	}
	return nil
}

// untolerated returns the first NoSchedule or NoExecute taint the tolerations do not tolerate.
func untolerated(tolerations []corev1.Toleration, taints []corev1.Taint) (corev1.Taint, bool) {
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for i := range tolerations {
			ok = ok || tolerates(tolerations[i], t)
		}
		if !ok {
			return t, false
		}
	}
	return corev1.Taint{}, true
}

// tolerates is the kube-scheduler's toleration rule: effects equal or the toleration's empty;
// keys equal, or the toleration's empty with Exists; values equal under Equal.
func tolerates(tol corev1.Toleration, t corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != t.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case corev1.TolerationOpEqual, "":
		return tol.Key != "" && tol.Value == t.Value
	}
	return false
}

// daemonPods are the pods of the daemonsets that would run on a node with these labels and
// taints.
func (w *world) daemonPods(labels map[string]string, taints []corev1.Taint) []*corev1.Pod {
	var out []*corev1.Pod
	for _, ds := range w.c.DaemonSets {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ds.Name, Namespace: ds.Namespace, Labels: ds.Spec.Template.Labels}, Spec: ds.Spec.Template.Spec}
		if _, ok := untolerated(p.Spec.Tolerations, taints); !ok {
			continue
		}
		if nodeSelectionError(p, labels) != nil {
			continue
		}
		out = append(out, p)
	}
	return out
}

// podRequests is what a pod reserves on its node: the larger of its containers (with
// restartable init containers, the sidecars) and any init container (with the sidecars started
// before it), plus its overhead.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	sum := corev1.ResourceList{}
	addTo := func(dst corev1.ResourceList, src corev1.ResourceList) {
		for name, q := range src {
			cur := dst[name]
			cur.Add(q)
			dst[name] = cur
		}
	}
	maxInto := func(dst corev1.ResourceList, src corev1.ResourceList) {
		for name, q := range src {
			if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
				dst[name] = q.DeepCopy()
			}
		}
	}
	for _, c := range p.Spec.Containers {
		addTo(sum, c.Resources.Requests)
	}
	sidecars := corev1.ResourceList{}
	inits := corev1.ResourceList{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addTo(sidecars, c.Resources.Requests)
			maxInto(inits, sidecars)
			continue
		}
		step := sidecars.DeepCopy()
		addTo(step, c.Resources.Requests)
		maxInto(inits, step)
	}
	addTo(sum, sidecars)
	maxInto(sum, inits)
	addTo(sum, p.Spec.Overhead)
	return sum
}

// fitError says which resource the pods overflow on the node, or "".
func fitError(pods []*corev1.Pod, allocatable corev1.ResourceList) string {
	total := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(len(pods)), resource.DecimalSI)}
	for _, p := range pods {
		for name, q := range podRequests(p) {
			cur := total[name]
			cur.Add(q)
			total[name] = cur
		}
	}
	names := make([]string, 0, len(total))
	for name := range total {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		q := total[corev1.ResourceName(name)]
		have := allocatable[corev1.ResourceName(name)]
		if q.Cmp(have) > 0 {
			return fmt.Sprintf("%s requested %s > allocatable %s (%d pods incl. daemonsets)", name, q.String(), have.String(), len(pods))
		}
	}
	return ""
}

// hostPortConflict reports two pods using one host port, or "".
func hostPortConflict(pods []*corev1.Pod) string {
	type use struct {
		ip, proto string
		port      int32
		pod       string
	}
	var used []use
	for _, p := range pods {
		for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			for _, port := range c.Ports {
				if port.HostPort == 0 {
					continue
				}
				proto := string(port.Protocol)
				if proto == "" {
					proto = "TCP"
				}
				u := use{ip: port.HostIP, proto: proto, port: port.HostPort, pod: p.Namespace + "/" + p.Name}
				for _, o := range used {
					if o.port == u.port && o.proto == u.proto && (wildcard(o.ip) || wildcard(u.ip) || o.ip == u.ip) {
						return fmt.Sprintf("host port %d/%s used by %s and %s", u.port, u.proto, o.pod, u.pod)
					}
				}
				used = append(used, u)
			}
		}
	}
	return ""
}

// signature identifies a pod up to its name: its labels and spec, each claim of its volumes
// replaced by the zone it allows.
func signature(c *Case, p *corev1.Pod) string {
	spec := p.Spec.DeepCopy()
	for i, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			zone := ""
			for _, z := range Zones {
				if volumeZoneError(c, &corev1.Pod{ObjectMeta: p.ObjectMeta, Spec: corev1.PodSpec{Volumes: []corev1.Volume{v}}}, map[string]string{corev1.LabelTopologyZone: z}) == nil {
					zone += z + ","
				}
			}
			spec.Volumes[i].PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "zones:" + zone}
		}
	}
	raw, _ := json.Marshal(struct {
		Labels map[string]string
		Spec   *corev1.PodSpec
	}{p.Labels, spec})
	return string(raw)
}

func wildcard(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }

// selectorOf is a term's selector with its matchLabelKeys added from the pod's labels.
func selectorOf(ls *metav1.LabelSelector, matchLabelKeys []string, p *corev1.Pod) labels.Selector {
	if ls == nil {
		return labels.Nothing()
	}
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing()
	}
	for _, k := range matchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			r, err := labels.NewRequirement(k, "=", []string{v})
			if err == nil {
				s = s.Add(*r)
			}
		}
	}
	return s
}

// spreadErrors checks the pod's DoNotSchedule spread constraints in the final cluster: the
// domain it landed in may exceed the least populated eligible domain by maxSkew at most (as
// every pod placed there later only raises the minimum, this holds for any valid order).
func (w *world) spreadErrors(p *corev1.Pod, n *checkNode) []string {
	return w.skewErrors(p, n, corev1.DoNotSchedule)
}

// skewErrors checks the pod's spread constraints of one kind (DoNotSchedule rules or
// ScheduleAnyway preferences) as spreadErrors describes.
func (w *world) skewErrors(p *corev1.Pod, n *checkNode, kind corev1.UnsatisfiableConstraintAction) []string {
	var out []string
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != kind {
			continue
		}
		domain, ok := n.labels[c.TopologyKey]
		if !ok {
			out = append(out, fmt.Sprintf("spread on %s: the node has no such label", c.TopologyKey))
			continue
		}
		sel := selectorOf(c.LabelSelector, c.MatchLabelKeys, p)
		honorAffinity := c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
		honorTaints := c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
		counts := map[string]int{}
		// own counts, in the pod's domain, the bound pods and the run's pods that carry this
		// constraint: a matching pod placed by the run without it may have come after the last
		// one with it.
		own := 0
		for _, m := range w.nodes {
			d, ok := m.labels[c.TopologyKey]
			if !ok {
				continue
			}
			if m != n {
				if honorAffinity && nodeSelectionError(p, m.labels) != nil {
					continue
				}
				if _, tolerated := untolerated(p.Spec.Tolerations, m.taints); honorTaints && !tolerated {
					continue
				}
			}
			if _, seen := counts[d]; !seen {
				counts[d] = 0
			}
			for _, q := range m.pods {
				if q.Namespace != p.Namespace || !sel.Matches(labels.Set(q.Labels)) {
					continue
				}
				counts[d]++
				if d == domain && (w.bound[PodKey(q)] || carriesSpread(q, kind, c.TopologyKey, sel)) {
					own++
				}
			}
		}
		lowest := math.MaxInt
		for _, k := range counts {
			lowest = min(lowest, k)
		}
		if c.MinDomains != nil && len(counts) < int(*c.MinDomains) {
			lowest = 0
		}
		if skew := own - lowest; skew > int(c.MaxSkew) {
			out = append(out, fmt.Sprintf("spread on %s: domain %s has %d matching pods bound or spread alike, least %d, skew %d > maxSkew %d (domains %v)", c.TopologyKey, domain, own, lowest, skew, c.MaxSkew, counts))
		}
	}
	return out
}

// carriesSpread says whether a pod has a spread constraint of the kind on the key with the
// same selector.
func carriesSpread(q *corev1.Pod, kind corev1.UnsatisfiableConstraintAction, key string, sel labels.Selector) bool {
	for _, c := range q.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == kind && c.TopologyKey == key && selectorOf(c.LabelSelector, c.MatchLabelKeys, q).String() == sel.String() {
			return true
		}
	}
	return false
}

// termNamespaces is the set of namespaces a pod affinity term selects (nil: all).
func termNamespaces(t corev1.PodAffinityTerm, p *corev1.Pod) map[string]bool {
	if len(t.Namespaces) == 0 && t.NamespaceSelector != nil {
		return nil
	}
	out := map[string]bool{}
	for _, ns := range t.Namespaces {
		out[ns] = true
	}
	if len(out) == 0 {
		out[p.Namespace] = true
	}
	return out
}

func termMatches(t corev1.PodAffinityTerm, owner, q *corev1.Pod) bool {
	ns := termNamespaces(t, owner)
	return (ns == nil || ns[q.Namespace]) && selectorOf(t.LabelSelector, t.MatchLabelKeys, owner).Matches(labels.Set(q.Labels))
}

// affinityErrors checks required pod affinity: another matching pod shares the domain; or,
// when none was bound before the run, the pod matches its own term (the first of its group).
func (w *world) affinityErrors(p *corev1.Pod, n *checkNode) []string {
	a := p.Spec.Affinity
	if a == nil || a.PodAffinity == nil {
		return nil
	}
	var out []string
	for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		domain, ok := n.labels[t.TopologyKey]
		if !ok {
			out = append(out, fmt.Sprintf("affinity on %s: the node has no such label", t.TopologyKey))
			continue
		}
		found, boundAnywhere := false, false
		for _, m := range w.nodes {
			for _, q := range m.pods {
				if q == p || !termMatches(t, p, q) {
					continue
				}
				if w.bound[PodKey(q)] {
					boundAnywhere = true
				}
				if m.labels[t.TopologyKey] == domain {
					found = true
				}
			}
		}
		if !found && (boundAnywhere || !termMatches(t, p, p)) {
			out = append(out, fmt.Sprintf("affinity on %s: no matching pod in %s", t.TopologyKey, domain))
		}
	}
	return out
}

// antiAffinityErrors checks the pod's required anti-affinity, and the required anti-affinity
// of the pods bound before the run (the symmetric rule; terms of pods placed in the run are
// checked as their own).
func (w *world) antiAffinityErrors(p *corev1.Pod, n *checkNode) []string {
	var out []string
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			domain, ok := n.labels[t.TopologyKey]
			if !ok {
				continue
			}
			for _, m := range w.nodes {
				if m.labels[t.TopologyKey] != domain {
					continue
				}
				for _, q := range m.pods {
					if q != p && termMatches(t, p, q) {
						out = append(out, fmt.Sprintf("anti-affinity on %s: %s/%s shares %s", t.TopologyKey, q.Namespace, q.Name, domain))
					}
				}
			}
		}
	}
	for _, m := range w.nodes {
		for _, q := range m.pods {
			if !w.bound[PodKey(q)] || q.Spec.Affinity == nil || q.Spec.Affinity.PodAntiAffinity == nil {
				continue
			}
			for _, t := range q.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				d, ok := m.labels[t.TopologyKey]
				if ok && n.labels[t.TopologyKey] == d && termMatches(t, q, p) {
					out = append(out, fmt.Sprintf("anti-affinity of bound %s/%s on %s excludes it from %s", q.Namespace, q.Name, t.TopologyKey, d))
				}
			}
		}
	}
	return out
}

// claimErrors checks every instance type a claim names: it satisfies the NodePool's
// requirements and the claim's pods (labels, volume zones) in some available offering the
// claim allows, and has room for the pods and the daemonsets that would run beside them.
func (w *world) claimErrors(claim *Claim, pods map[string]*corev1.Pod) []string {
	np := w.c.nodePool(claim.NodePool)
	if np == nil {
		return nil
	}
	var out []string
	for _, name := range claim.InstanceTypes {
		it := w.c.instanceType(name)
		if it == nil {
			out = append(out, fmt.Sprintf("unknown instance type %s", name))
			continue
		}
		var reasons []string
		ok := false
		for _, o := range it.Offerings {
			if !o.Available {
				continue
			}
			labels := launchLabels(it, o, claim)
			reason := ""
			switch {
			case !matchesOn(claim.Requirements, labels, corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey):
				reason = "offering outside the claim's requirements"
			case nodePoolRequirementsError(np, labels) != nil:
				reason = nodePoolRequirementsError(np, labels).Error()
			default:
				for _, key := range claim.Pods {
					p := pods[key]
					if p == nil {
						continue
					}
					if err := nodeSelectionError(p, labels); err != nil {
						reason = fmt.Sprintf("pod %s: %v", key, err)
						break
					}
					if err := volumeZoneError(w.c, p, labels); err != nil {
						reason = fmt.Sprintf("pod %s: %v", key, err)
						break
					}
				}
			}
			if reason == "" {
				var ps []*corev1.Pod
				for _, key := range claim.Pods {
					if pods[key] != nil {
						ps = append(ps, pods[key])
					}
				}
				ps = append(ps, w.daemonPods(labels, np.Spec.Template.Spec.Taints)...)
				reason = fitError(ps, it.Allocatable())
			}
			if reason == "" {
				ok = true
				break
			}
			reasons = append(reasons, o.Zone+"/"+o.CapacityType+": "+reason)
		}
		if !ok {
			out = append(out, fmt.Sprintf("instance type %s fits no offering: %s", name, strings.Join(reasons, "; ")))
		}
	}
	return out
}

// nodePoolRequirementsError checks a launched node's labels against its NodePool's
// requirements. Requirements on keys the node does not carry as a fact of its instance type or
// offering (custom keys) are met by the claim's labels, or not at all when it has none.
func nodePoolRequirementsError(np *karpv1.NodePool, labels map[string]string) error {
	for _, r := range np.Spec.Template.Spec.Requirements {
		req := corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values}
		if _, has := labels[r.Key]; !has && !isInstanceFact(r.Key) {
			continue
		}
		if !matchRequirement(req, labels) {
			return fmt.Errorf("nodepool requirement %s %s %v not met (label %q)", r.Key, r.Operator, r.Values, labels[r.Key])
		}
	}
	return nil
}

// isInstanceFact says whether a key is a label every node gets from its instance type or
// offering (so its absence is a fact too).
func isInstanceFact(key string) bool {
	switch key {
	case corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey, corev1.LabelInstanceTypeStable, corev1.LabelArchStable, corev1.LabelOSStable:
		return true
	}
	return contains(instanceLabelKeys, key)
}

// minValuesError checks the NodePool's minValues against the claim's instance types.
func (w *world) minValuesError(claim *Claim) string {
	np := w.c.nodePool(claim.NodePool)
	if np == nil {
		return ""
	}
	for _, r := range np.Spec.Template.Spec.Requirements {
		if r.MinValues == nil {
			continue
		}
		values := map[string]bool{}
		for _, name := range claim.InstanceTypes {
			if it := w.c.instanceType(name); it != nil {
				if v, ok := it.Labels[r.Key]; ok {
					values[v] = true
				}
			}
		}
		if len(values) < *r.MinValues {
			return fmt.Sprintf("%s has %d values among the claim's instance types, minValues %d", r.Key, len(values), *r.MinValues)
		}
	}
	return ""
}

// limitErrors checks each NodePool's limits against its existing nodes and its claims each
// launched as their first instance type, and against each instance type a claim names
// launched alone beside the existing nodes.
func (w *world) limitErrors(o *Outcome) []string {
	var out []string
	for _, np := range w.c.NodePools {
		if len(np.Spec.Limits) == 0 {
			continue
		}
		used := corev1.ResourceList{}
		addCap := func(dst corev1.ResourceList, it *InstanceType) {
			for name, q := range it.Capacity {
				cur := dst[name]
				cur.Add(q)
				dst[name] = cur
			}
		}
		for _, n := range w.c.Nodes {
			if n.NodePool == np.Name {
				addCap(used, w.c.instanceType(n.InstanceType))
			}
		}
		all := used.DeepCopy()
		claims := 0
		for _, claim := range o.Claims {
			if claim.NodePool != np.Name || len(claim.InstanceTypes) == 0 {
				continue
			}
			claims++
			if it := w.c.instanceType(claim.InstanceTypes[0]); it != nil {
				addCap(all, it)
			}
			for _, name := range claim.InstanceTypes {
				one := used.DeepCopy()
				if it := w.c.instanceType(name); it != nil {
					addCap(one, it)
				}
				for res, limit := range np.Spec.Limits {
					if q := one[res]; q.Cmp(limit) > 0 {
						out = append(out, fmt.Sprintf("nodepool %s: %s %s launched alone exceeds limit %s %s", np.Name, claim.Name, name, res, limit.String()))
					}
				}
			}
		}
		for res, limit := range np.Spec.Limits {
			if q := all[res]; claims > 0 && q.Cmp(limit) > 0 {
				out = append(out, fmt.Sprintf("nodepool %s: %s %s in use once its claims launch (cheapest types) > limit %s", np.Name, res, q.String(), limit.String()))
			}
		}
	}
	return out
}

// Compare checks the two outcomes against each other: the same pods placed and refused, and
// ours costing no more than Karpenter's when both place the same pods. Pods that differ only by
// name are interchangeable: of a workload's identical replicas, each scheduler may refuse
// different ones, as long as it refuses as many.
func Compare(c *Case, ours, theirs *Outcome) []Violation {
	var vs []Violation
	oursRefused, theirsRefused := map[string][]string{}, map[string][]string{}
	var order []string
	for _, p := range c.Pods {
		key, sig := PodKey(p), signature(c, p)
		if _, ok := oursRefused[sig]; !ok {
			order = append(order, sig)
			oursRefused[sig], theirsRefused[sig] = []string{}, []string{}
		}
		if _, refused := ours.Errors[key]; refused {
			oursRefused[sig] = append(oursRefused[sig], key)
		}
		if _, refused := theirs.Errors[key]; refused {
			theirsRefused[sig] = append(theirsRefused[sig], key)
		}
	}
	for _, sig := range order {
		o, t := oursRefused[sig], theirsRefused[sig]
		for i := len(t); i < len(o); i++ {
			vs = append(vs, Violation{Rule: RuleRefusedByOursOnly, Scheduler: "both", Pod: o[i], Detail: fmt.Sprintf("ours refuses %d of the workload, karpenter %d: %s", len(o), len(t), ours.Errors[o[i]])})
		}
		for i := len(o); i < len(t); i++ {
			vs = append(vs, Violation{Rule: RuleRefusedByKarpenterOnly, Scheduler: "both", Pod: t[i], Detail: fmt.Sprintf("karpenter refuses %d of the workload, ours %d: %s", len(t), len(o), theirs.Errors[t[i]])})
		}
	}
	if len(vs) > 0 {
		return vs
	}
	if oc, tc := Cost(c, ours), Cost(c, theirs); oc > tc*1.0001+1e-9 {
		vs = append(vs, Violation{Rule: RuleCost, Scheduler: "both", Detail: fmt.Sprintf("ours $%.4f/h (%d claims) > karpenter $%.4f/h (%d claims)", oc, len(ours.Claims), tc, len(theirs.Claims))})
	}
	return vs
}
