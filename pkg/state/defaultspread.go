package state

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// SchedulerConfig is Karpenter v1.15's --scheduler-config (SCHEDULER_CONFIG): the parts of the
// cluster's kube-scheduler configuration the scheduling simulation must mirror. Its fields are
// shaped as the kube-scheduler's, so values copy over; today there is one.
type SchedulerConfig struct {
	// PodTopologySpread mirrors the kube-scheduler's PodTopologySpread plugin arguments.
	PodTopologySpread *PodTopologySpreadConfig `json:"podTopologySpread,omitempty"`
}

// PodTopologySpreadConfig mirrors the PodTopologySpread plugin arguments the simulation reads.
type PodTopologySpreadConfig struct {
	// DefaultConstraints apply to every pod that declares no topology spread constraint of its
	// own, each with the selector the kube-scheduler deduces for the pod (see
	// Cluster.DefaultConstraints). As in the kube-scheduler, none may carry a labelSelector or
	// matchLabelKeys.
	DefaultConstraints []corev1.TopologySpreadConstraint `json:"defaultConstraints,omitempty"`
}

// ParseSchedulerConfig reads a --scheduler-config document (YAML or JSON) and returns its
// default topology spread constraints; empty is no configuration. Unknown fields and the
// constraints the kube-scheduler's validation refuses are errors naming the field, as
// Karpenter refuses them at start.
func ParseSchedulerConfig(raw string) ([]corev1.TopologySpreadConstraint, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var config SchedulerConfig
	if err := yaml.UnmarshalStrict([]byte(raw), &config); err != nil {
		return nil, fmt.Errorf("decoding the scheduler configuration: %w", err)
	}
	if config.PodTopologySpread == nil {
		return nil, nil
	}
	constraints := config.PodTopologySpread.DefaultConstraints
	var errs []error
	for i, c := range constraints {
		field := fmt.Sprintf("podTopologySpread.defaultConstraints[%d]", i)
		if err := validateDefaultConstraint(c); err != nil {
			errs = append(errs, fmt.Errorf("%s%w", field, err))
		}
		for j := range constraints[:i] {
			if c.TopologyKey == constraints[j].TopologyKey && c.WhenUnsatisfiable == constraints[j].WhenUnsatisfiable {
				errs = append(errs, fmt.Errorf("%s repeats podTopologySpread.defaultConstraints[%d] (topologyKey %s, whenUnsatisfiable %s); keep one", field, j, c.TopologyKey, c.WhenUnsatisfiable))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return constraints, nil
}

// validateDefaultConstraint is the kube-scheduler's validation of one default constraint
// (ValidatePodTopologySpreadArgs), as Karpenter mirrors it: the error continues the field path.
func validateDefaultConstraint(c corev1.TopologySpreadConstraint) error {
	switch {
	case c.MaxSkew <= 0:
		return fmt.Errorf(".maxSkew %d: must be greater than 0", c.MaxSkew)
	case c.TopologyKey == "":
		return errors.New(".topologyKey: must be set")
	case c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway:
		return fmt.Errorf(".whenUnsatisfiable %q: must be %s or %s", c.WhenUnsatisfiable, corev1.DoNotSchedule, corev1.ScheduleAnyway)
	case c.LabelSelector != nil:
		return errors.New(".labelSelector: must not be set; the kube-scheduler deduces each pod's selector from its Services and controller")
	case len(c.MatchLabelKeys) > 0:
		return errors.New(".matchLabelKeys: must not be set; the kube-scheduler replaces the selector it would change with the deduced one")
	case c.MinDomains != nil && *c.MinDomains <= 0:
		return fmt.Errorf(".minDomains %d: must be greater than 0", *c.MinDomains)
	}
	if errs := validation.IsQualifiedName(c.TopologyKey); len(errs) > 0 {
		return fmt.Errorf(".topologyKey %q: not a label name: %s", c.TopologyKey, strings.Join(errs, "; "))
	}
	return nil
}

// The controllers whose selectors the kube-scheduler's default selector adds
// (helper.DefaultSelector): a pod controlled by anything else (a Job, a DaemonSet) adds none.
var (
	replicationControllerKind = corev1.SchemeGroupVersion.WithKind("ReplicationController")
	replicaSetKind            = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	statefulSetKind           = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// spreadDefaulter gives one snapshot's pods the default constraints, caching what pods of one
// namespace and workload share.
type spreadDefaulter struct {
	reader      client.Reader
	constraints []corev1.TopologySpreadConstraint
	// controllerSelector is Cluster.ControllerSelector.
	controllerSelector func(*corev1.Pod) *metav1.LabelSelector
	services           map[string][]corev1.Service
	owners             map[types.UID]*ownerSelector
	selectors          map[selectorKey]*metav1.LabelSelector
}

// ownerSelector is what a pod's controller adds to its default selector: a
// ReplicationController's labels overwrite the Services' (labels.Merge), a ReplicaSet's or
// StatefulSet's selector is ANDed to them (Selector.Add).
type ownerSelector struct {
	matchLabels      map[string]string
	matchExpressions []metav1.LabelSelectorRequirement
}

// selectorKey is what a pod's default selector depends on.
type selectorKey struct {
	namespace string
	owner     types.UID
	labels    string
}

// defaultSpread returns pods with each pod that has no topology spread constraint of its own
// replaced by a copy carrying the default constraints, under the selector the kube-scheduler
// deduces for it; a pod it deduces none for is left as it is, as the kube-scheduler leaves it
// unconstrained. The copies share everything else with the originals (read-only, as the
// snapshot's pods are). A copy in prev (the last snapshot's, by original) of the same pod
// object under the same selector is used again, so that what is cached per pod object (its
// requests, the scheduler's readings) stays cached. It also returns the copies, by original,
// and the UIDs of the pods, and of their controllers, that now carry a DoNotSchedule
// constraint.
func defaultSpread(ctx context.Context, reader client.Reader, constraints []corev1.TopologySpreadConstraint, controllerSelector func(*corev1.Pod) *metav1.LabelSelector,
	pods []*corev1.Pod, prev map[*corev1.Pod]*corev1.Pod) (out []*corev1.Pod, copies map[*corev1.Pod]*corev1.Pod, placedByKubeScheduler map[types.UID]bool) {
	d := spreadDefaulter{reader: reader, constraints: constraints, controllerSelector: controllerSelector, services: map[string][]corev1.Service{},
		owners: map[types.UID]*ownerSelector{}, selectors: map[selectorKey]*metav1.LabelSelector{}}
	out = make([]*corev1.Pod, len(pods))
	copies = map[*corev1.Pod]*corev1.Pod{}
	placedByKubeScheduler = map[types.UID]bool{}
	for i, pod := range pods {
		out[i] = pod
		if len(pod.Spec.TopologySpreadConstraints) > 0 {
			continue
		}
		selector := d.selector(ctx, pod)
		if selector == nil {
			continue
		}
		copied := prev[pod]
		if copied == nil || !equality.Semantic.DeepEqual(copied.Spec.TopologySpreadConstraints[0].LabelSelector, selector) {
			podCopy := *pod
			copied = &podCopy
			copied.Spec.TopologySpreadConstraints = make([]corev1.TopologySpreadConstraint, len(constraints))
			for j, c := range constraints {
				c.LabelSelector = selector
				copied.Spec.TopologySpreadConstraints[j] = c
			}
		}
		out[i], copies[pod] = copied, copied
		if scheduling.PlacedByKubeScheduler(copied) {
			placedByKubeScheduler[pod.UID] = true
			if owner := metav1.GetControllerOfNoCopy(pod); owner != nil {
				placedByKubeScheduler[owner.UID] = true
			}
		}
	}
	return out, copies, placedByKubeScheduler
}

// selector is the pod's default selector, shared by the pods of its namespace, controller and
// labels; nil when the kube-scheduler deduces none.
func (d *spreadDefaulter) selector(ctx context.Context, pod *corev1.Pod) *metav1.LabelSelector {
	key := selectorKey{namespace: pod.Namespace, labels: labels.Set(pod.Labels).String()}
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner != nil {
		key.owner = owner.UID
	}
	if s, ok := d.selectors[key]; ok {
		return s
	}
	// helper.DefaultSelector: the selectors of the namespace's Services that select the pod,
	// merged (a key of several takes the last one's value), then the controller's.
	matchLabels := map[string]string{}
	for _, svc := range d.namespaceServices(ctx, pod.Namespace) {
		// A nil selector selects nothing; an empty one selects every pod and adds nothing.
		if svc.Spec.Selector != nil && labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			maps.Copy(matchLabels, svc.Spec.Selector)
		}
	}
	var expressions []metav1.LabelSelectorRequirement
	switch {
	case owner != nil:
		if o := d.ownerSelector(ctx, pod.Namespace, owner); o != nil {
			maps.Copy(matchLabels, o.matchLabels)
			expressions = o.matchExpressions
		}
	case d.controllerSelector != nil:
		// As a ReplicaSet's or StatefulSet's selector, ANDed.
		expressions = selectorRequirements(d.controllerSelector(pod))
	}
	var s *metav1.LabelSelector
	// An empty selector would select every pod of the namespace: the kube-scheduler then
	// applies no default.
	if len(matchLabels) > 0 || len(expressions) > 0 {
		s = &metav1.LabelSelector{MatchExpressions: expressions}
		if len(matchLabels) > 0 {
			s.MatchLabels = matchLabels
		}
	}
	d.selectors[key] = s
	return s
}

// namespaceServices lists a namespace's Services once per snapshot. A failed list counts as no
// Services, logged, as the kube-scheduler proceeds without them.
func (d *spreadDefaulter) namespaceServices(ctx context.Context, namespace string) []corev1.Service {
	if s, ok := d.services[namespace]; ok {
		return s
	}
	var list corev1.ServiceList
	if err := d.reader.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "deducing default topology spread selectors without the namespace's Services", "namespace", namespace)
	}
	d.services[namespace] = list.Items
	return list.Items
}

// ownerSelector reads the pod's controller once per snapshot: nil when it is none of the
// kinds the kube-scheduler reads, or cannot be read (logged; the kube-scheduler proceeds
// without it).
func (d *spreadDefaulter) ownerSelector(ctx context.Context, namespace string, owner *metav1.OwnerReference) *ownerSelector {
	if o, ok := d.owners[owner.UID]; ok {
		return o
	}
	var o *ownerSelector
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	key := client.ObjectKey{Namespace: namespace, Name: owner.Name}
	if err == nil {
		switch gv.WithKind(owner.Kind) {
		case replicationControllerKind:
			var rc corev1.ReplicationController
			if err = d.reader.Get(ctx, key, &rc, client.UnsafeDisableDeepCopy); err == nil && len(rc.Spec.Selector) > 0 {
				o = &ownerSelector{matchLabels: maps.Clone(rc.Spec.Selector)}
			}
		case replicaSetKind:
			var rs appsv1.ReplicaSet
			if err = d.reader.Get(ctx, key, &rs, client.UnsafeDisableDeepCopy); err == nil {
				o = &ownerSelector{matchExpressions: selectorRequirements(rs.Spec.Selector)}
			}
		case statefulSetKind:
			var ss appsv1.StatefulSet
			if err = d.reader.Get(ctx, key, &ss, client.UnsafeDisableDeepCopy); err == nil {
				o = &ownerSelector{matchExpressions: selectorRequirements(ss.Spec.Selector)}
			}
		}
		if err != nil {
			log.FromContext(ctx).Error(err, "deducing a default topology spread selector without the pod's controller", "namespace", namespace, "kind", owner.Kind, "name", owner.Name)
		}
	}
	d.owners[owner.UID] = o
	return o
}

// selectorRequirements is a label selector as a list of requirements (each of its labels an
// In of one value), copied out of the object it belongs to.
func selectorRequirements(s *metav1.LabelSelector) []metav1.LabelSelectorRequirement {
	if s == nil {
		return nil
	}
	out := make([]metav1.LabelSelectorRequirement, 0, len(s.MatchLabels)+len(s.MatchExpressions))
	for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
		out = append(out, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{s.MatchLabels[k]}})
	}
	for _, e := range s.MatchExpressions {
		out = append(out, *e.DeepCopy())
	}
	return out
}

// PlacedByKubeScheduler is scheduling.PlacedByKubeScheduler with the default constraints: a
// pod the last snapshot gave a DoNotSchedule default, or a new pod of a controller whose pods
// it gave one, is placed by the kube-scheduler alone too, so its nomination is not announced.
func (c *Cluster) PlacedByKubeScheduler(pod *corev1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.placedByKubeScheduler(pod)
}

// placedByKubeScheduler is PlacedByKubeScheduler with c.mu held.
func (c *Cluster) placedByKubeScheduler(pod *corev1.Pod) bool {
	if scheduling.PlacedByKubeScheduler(pod) {
		return true
	}
	if len(c.spreadPlaced) == 0 || len(pod.Spec.TopologySpreadConstraints) > 0 {
		return false
	}
	if c.spreadPlaced[pod.UID] {
		return true
	}
	owner := metav1.GetControllerOfNoCopy(pod)
	return owner != nil && c.spreadPlaced[owner.UID]
}

// DefaultSpread gives pods that are not the snapshot's (the provisioner's stand-ins for pods
// yet to be created, CapacityBuffers' virtual pods) the default constraints as a snapshot
// gives its own: it returns pods with those it defaults replaced by copies.
func (c *Cluster) DefaultSpread(ctx context.Context, pods []*corev1.Pod) []*corev1.Pod {
	return WithDefaultSpread(ctx, c.reader, c.DefaultConstraints, c.ControllerSelector, pods)
}

// WithDefaultSpread returns pods with those that declare no topology spread constraint of
// their own replaced by copies carrying constraints, under the selector the kube-scheduler
// deduces for each (from the Services reader lists and the pod's controller, or
// controllerSelector when set and the pod names none), as a Cluster's snapshots give them.
// The simulator's kube-scheduler stand-in gives its pods the constraints so.
func WithDefaultSpread(ctx context.Context, reader client.Reader, constraints []corev1.TopologySpreadConstraint, controllerSelector func(*corev1.Pod) *metav1.LabelSelector, pods []*corev1.Pod) []*corev1.Pod {
	if len(constraints) == 0 || len(pods) == 0 {
		return pods
	}
	out, _, _ := defaultSpread(ctx, reader, constraints, controllerSelector, pods, nil)
	return out
}
