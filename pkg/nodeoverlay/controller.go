package nodeoverlay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Reasons of a False ValidationSucceeded, as Karpenter writes them.
const (
	// ReasonRuntimeValidation: a check the CRD cannot make failed (RuntimeValidate).
	ReasonRuntimeValidation = "RuntimeValidation"
	// ReasonConflict: an overlay of the same weight already set a price or a resource the
	// overlay sets.
	ReasonConflict = "Conflict"
)

// Resync is how often the overlays are evaluated again without any change to them, to pick up
// instance types and prices the cloud changed, as Karpenter does.
const Resync = 6 * time.Hour

// Controller evaluates every NodeOverlay against every NodePool's instance types, fills the
// Store, and writes each overlay's ValidationSucceeded and Ready conditions. It works on the
// whole set at once, whatever object it is asked about.
type Controller struct {
	kube  client.Client
	types cloudprovider.InstanceTypeProvider
	store *Store
	clock clock.Clock
}

// NewController returns the controller. types must be the cloud's own instance types, not the
// decorated ones (Decorate), which already carry the overlays.
func NewController(kube client.Client, types cloudprovider.InstanceTypeProvider, store *Store, clk clock.Clock) *Controller {
	return &Controller{kube: kube, types: types, store: store, clock: clk}
}

// Register watches NodeOverlays, NodePools and EC2NodeClasses (whose changes change the
// instance types); every event evaluates the whole set again, one at a time.
func (c *Controller) Register(mgr manager.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "nodeoverlays"}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodeoverlay").
		Watches(&v1alpha1.NodeOverlay{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&karpv1.NodePool{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&awsv1.EC2NodeClass{}, all).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(c)
}

// Reconcile evaluates every overlay (see the package documentation), replaces the Store's
// table, and writes the overlays' conditions. A NodePool whose instance types cannot be listed
// stays unevaluated, and the error is returned so that it is retried.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	overlays := &v1alpha1.NodeOverlayList{}
	if err := c.kube.List(ctx, overlays); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeoverlays: %w", err)
	}
	pools := &karpv1.NodePoolList{}
	if err := c.kube.List(ctx, pools); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodepools: %w", err)
	}
	t, verdicts, listErr := c.evaluate(ctx, overlays.Items, pools.Items)
	c.store.replace(t)
	var errs []error
	for i := range overlays.Items {
		if err := c.writeStatus(ctx, &overlays.Items[i], verdicts[overlays.Items[i].Name]); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(append(errs, listErr)...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: Resync}, nil
}

// pool is a NodePool evaluated: its name, the labels every node of it has, its instance types.
type pool struct {
	name   string
	labels map[string]string
	types  []*cloudprovider.InstanceType
}

// selected is an instance type of a pool an overlay selects, and which of its offerings.
type selected struct {
	pool      string
	it        string
	offerings []offeringKey
}

// evaluate builds the table of the overlays over the NodePools, with each overlay's
// ValidationSucceeded verdict (nil: valid) and the errors of NodePools left unevaluated.
func (c *Controller) evaluate(ctx context.Context, overlays []v1alpha1.NodeOverlay, nodePools []karpv1.NodePool) (*table, map[string]*metav1.Condition, error) {
	t := newTable()
	var pools []pool
	var errs []error
	for i := range nodePools {
		np := &nodePools[i]
		its, err := c.types.GetInstanceTypes(ctx, np)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing instance types of nodepool %s: %w", np.Name, err))
			continue
		}
		labels := maps.Clone(np.Spec.Template.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[karpv1.NodePoolLabelKey] = np.Name
		pools = append(pools, pool{name: np.Name, labels: labels, types: its})
		t.evaluated[np.Name] = true
	}
	ordered := append([]v1alpha1.NodeOverlay(nil), overlays...)
	v1alpha1.OrderByWeight(ordered)
	verdicts := map[string]*metav1.Condition{}
	for i := range ordered {
		o := &ordered[i]
		if err := RuntimeValidate(o); err != nil {
			verdicts[o.Name] = &metav1.Condition{Reason: ReasonRuntimeValidation, Message: err.Error()}
			continue
		}
		reqs, err := requirements(o)
		if err != nil {
			verdicts[o.Name] = &metav1.Condition{Reason: ReasonRuntimeValidation, Message: err.Error()}
			continue
		}
		sel := selectTypes(pools, reqs)
		if msg := conflict(t, o, sel); msg != "" {
			verdicts[o.Name] = &metav1.Condition{Reason: ReasonConflict, Message: msg}
			log.FromContext(ctx).Info("nodeoverlay not applied", "nodeoverlay", o.Name, "reason", msg)
			continue
		}
		record(t, o, sel)
	}
	return t, verdicts, errors.Join(errs...)
}

// selectTypes returns the instance types, and their offerings, that reqs select: an offering is
// selected when reqs match the labels a node launched as it would carry.
func selectTypes(pools []pool, reqs scheduling.Requirements) []selected {
	var out []selected
	for _, p := range pools {
		for _, it := range p.types {
			labels := make(map[string]string, len(p.labels)+len(it.Labels)+2)
			maps.Copy(labels, p.labels)
			maps.Copy(labels, it.Labels)
			var keys []offeringKey
			for _, o := range it.Offerings {
				labels["topology.kubernetes.io/zone"], labels[karpv1.CapacityTypeLabelKey] = o.Zone, o.CapacityType
				if reqs.Matches(labels) == nil {
					keys = append(keys, offeringKey{o.Zone, o.CapacityType})
				}
			}
			if len(keys) > 0 {
				out = append(out, selected{pool: p.name, it: it.Name, offerings: keys})
			}
		}
	}
	return out
}

// conflict says how o conflicts with an overlay of the same weight evaluated before it, or ""
// when it does not. Overlays are evaluated by descending weight, so what is set at another
// weight was set by a heavier overlay, which o does not override.
func conflict(t *table, o *v1alpha1.NodeOverlay, sel []selected) string {
	w, change := weightOf(o), change(o)
	for _, s := range sel {
		u := t.lookup(s.pool, s.it)
		if u == nil {
			continue
		}
		if change != "" {
			for _, k := range s.offerings {
				if p, ok := u.prices[k]; ok && p.weight == w {
					return fmt.Sprintf("conflicts with NodeOverlay %s of the same weight %d: both price the %s offering of %s in %s of NodePool %s; give them different weights or requirements that do not overlap",
						p.by, w, k.capacityType, s.it, k.zone, s.pool)
				}
			}
		}
		for name := range o.Spec.Capacity {
			if a, ok := u.capacity[name]; ok && a.weight == w {
				return fmt.Sprintf("conflicts with NodeOverlay %s of the same weight %d: both set capacity %s of %s of NodePool %s; give them different weights or requirements that do not overlap",
					a.by, w, name, s.it, s.pool)
			}
		}
	}
	return ""
}

// record adds o's changes to t where no heavier overlay made them.
func record(t *table, o *v1alpha1.NodeOverlay, sel []selected) {
	w, change := weightOf(o), change(o)
	if change == "" && len(o.Spec.Capacity) == 0 {
		return
	}
	for _, s := range sel {
		u := t.updateFor(s.pool, s.it)
		if change != "" {
			for _, k := range s.offerings {
				if _, ok := u.prices[k]; !ok {
					u.prices[k] = priced{change: change, weight: w, by: o.Name}
				}
			}
		}
		for name, q := range o.Spec.Capacity {
			if _, ok := u.capacity[name]; !ok {
				u.capacity[name] = added{quantity: q, weight: w, by: o.Name}
			}
		}
	}
}

// weightOf is the overlay's weight, 0 when unset.
func weightOf(o *v1alpha1.NodeOverlay) int32 {
	if o.Spec.Weight == nil {
		return 0
	}
	return *o.Spec.Weight
}

// writeStatus sets ValidationSucceeded (True, or False as verdict says) and Ready, and patches
// the status when they changed. A NodeOverlay deleted meanwhile is no error.
func (c *Controller) writeStatus(ctx context.Context, o *v1alpha1.NodeOverlay, verdict *metav1.Condition) error {
	before := o.DeepCopy()
	now := metav1.NewTime(c.clock.Now())
	valid := metav1.Condition{Type: v1alpha1.ConditionTypeValidationSucceeded, Status: metav1.ConditionTrue, Reason: v1alpha1.ConditionTypeValidationSucceeded}
	ready := metav1.Condition{Type: v1alpha1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ConditionTypeReady}
	if verdict != nil {
		valid.Status, valid.Reason, valid.Message = metav1.ConditionFalse, verdict.Reason, verdict.Message
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "UnhealthyDependents", v1alpha1.ConditionTypeValidationSucceeded+"=False"
	}
	for _, cond := range []metav1.Condition{valid, ready} {
		cond.ObservedGeneration, cond.LastTransitionTime = o.Generation, now
		meta.SetStatusCondition(&o.Status.Conditions, cond)
	}
	if equalConditions(before.Status.Conditions, o.Status.Conditions) {
		return nil
	}
	if err := c.kube.Status().Patch(ctx, o, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("updating status of nodeoverlay %s: %w", o.Name, err)
	}
	return nil
}

// equalConditions compares conditions but for their transition times, which SetStatusCondition
// keeps when the status does not change.
func equalConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
