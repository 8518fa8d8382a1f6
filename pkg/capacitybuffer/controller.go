package capacitybuffer

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/openkarpenter/karpenter/pkg/apis/autoscaling/v1beta1"
)

// ResyncPeriod is how often a buffer is resolved again though nothing it names changed, and
// the provisioner woken for it, as Karpenter's: real pods may have taken its room meanwhile.
const ResyncPeriod = 30 * time.Second

// Trigger wakes the provisioner (provisioning.Provisioner).
type Trigger interface {
	Trigger()
}

// Controller resolves CapacityBuffers into their status: the pod shape's PodTemplate and its
// generation, the number of chunks, the ReadyForProvisioning condition and the strategy.
type Controller struct {
	kube    client.Client
	clock   clock.PassiveClock
	trigger Trigger
}

// NewController returns the controller; trigger may be nil.
func NewController(kube client.Client, clk clock.PassiveClock, trigger Trigger) *Controller {
	return &Controller{kube: kube, clock: clk, trigger: trigger}
}

// Reconcile resolves one buffer, writes its status when it changed, and wakes the provisioner
// so it places the buffer's pods (or forgets them: a deleted or unresolvable buffer frees its
// nodes for consolidation).
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cb := &autoscalingv1beta1.CapacityBuffer{}
	if err := c.kube.Get(ctx, req.NamespacedName, cb); err != nil {
		if apierrors.IsNotFound(err) {
			c.wake()
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	stored := cb.DeepCopy()
	res, err := resolve(ctx, c.kube, cb)
	var nr *notReady
	switch {
	case errors.As(err, &nr):
		c.setReady(cb, metav1.ConditionFalse, nr.reason, nr.message)
	case err != nil:
		c.setReady(cb, metav1.ConditionFalse, ReasonResolutionFailed, err.Error())
	default:
		if res.podTemplate != "" {
			cb.Status.PodTemplateRef = &autoscalingv1beta1.LocalObjectRef{Name: res.podTemplate}
			cb.Status.PodTemplateGeneration = ptr.To(res.generation)
		} else {
			cb.Status.PodTemplateRef, cb.Status.PodTemplateGeneration = nil, nil
		}
		cb.Status.Replicas = ptr.To(res.replicas)
		c.setReady(cb, metav1.ConditionTrue, ReasonResolved, "Pod template resolved successfully")
	}
	cb.Status.ProvisioningStrategy = cb.Spec.ProvisioningStrategy
	if !equality.Semantic.DeepEqual(stored.Status, cb.Status) {
		if perr := c.kube.Status().Patch(ctx, cb, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); perr != nil {
			if apierrors.IsConflict(perr) || apierrors.IsNotFound(perr) {
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
			return reconcile.Result{}, fmt.Errorf("patching capacitybuffer status: %w", perr)
		}
	}
	if err != nil && nr == nil {
		return reconcile.Result{}, err
	}
	c.wake()
	return reconcile.Result{RequeueAfter: ResyncPeriod}, nil
}

func (c *Controller) wake() {
	if c.trigger != nil {
		c.trigger.Trigger()
	}
}

// setReady sets the ReadyForProvisioning condition; its transition time moves only when its
// status does.
func (c *Controller) setReady(cb *autoscalingv1beta1.CapacityBuffer, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&cb.Status.Conditions, metav1.Condition{
		Type: autoscalingv1beta1.ConditionReadyForProvisioning, Status: status, Reason: reason, Message: message,
		ObservedGeneration: cb.Generation, LastTransitionTime: metav1.NewTime(c.clock.Now()),
	})
}

// Register adds the controller to the manager. Besides the buffers themselves it watches what
// they name: PodTemplates, and the Deployments, StatefulSets and ReplicaSets whose spec
// changed (a template or replica count).
func (c *Controller) Register(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("capacitybuffer").
		For(&autoscalingv1beta1.CapacityBuffer{}).
		Watches(&corev1.PodTemplate{}, handler.EnqueueRequestsFromMapFunc(c.naming(""))).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(c.naming(autoscalingv1beta1.KindDeployment)), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(c.naming(autoscalingv1beta1.KindStatefulSet)), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&appsv1.ReplicaSet{}, handler.EnqueueRequestsFromMapFunc(c.naming(autoscalingv1beta1.KindReplicaSet)), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(c)
}

// naming maps an object to the buffers of its namespace that name it: by podTemplateRef when
// kind is "" (a PodTemplate), else by a scalableRef of that kind.
func (c *Controller) naming(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list autoscalingv1beta1.CapacityBufferList
		if err := c.kube.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, cb := range list.Items {
			if Names(&cb, kind, obj.GetName()) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&cb)})
			}
		}
		return out
	}
}

// Names reports whether the buffer takes its pods from the object of that kind and name in its
// namespace: a PodTemplate when kind is "", else a workload of the apps group.
func Names(cb *autoscalingv1beta1.CapacityBuffer, kind, name string) bool {
	if kind == "" {
		return cb.Spec.PodTemplateRef != nil && cb.Spec.PodTemplateRef.Name == name
	}
	ref := cb.Spec.ScalableRef
	return ref != nil && ref.Kind == kind && ref.Name == name && (ref.APIGroup == "" || ref.APIGroup == appsv1.GroupName)
}
