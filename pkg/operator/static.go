package operator

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
)

// ReasonStaticCapacityDisabled is the reason of the Warning event on a static NodePool
// (spec.replicas set) while the StaticCapacity feature gate is off.
const ReasonStaticCapacityDisabled events.Reason = "StaticCapacityDisabled"

// staticCapacityOff stands in for the static NodePool controller while the StaticCapacity
// feature gate is off. Such a NodePool gets no nodes, as in Karpenter (the provisioner and
// disruption leave static NodePools to the static controller), so that it is not ignored
// silently each one gets a Warning event, when it is created or its spec changes (and at
// start), saying why and how to turn the gate on.
type staticCapacityOff struct {
	kubeClient client.Client
	events     *events.Recorder
}

// Register adds the controller to mgr, named "nodepool.staticcapacityoff".
func (c *staticCapacityOff) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named("nodepool.staticcapacityoff").
		For(&karpv1.NodePool{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}, predicate.NewPredicateFuncs(func(o client.Object) bool {
			np, ok := o.(*karpv1.NodePool)
			return ok && nodepool.IsStatic(np)
		}))).
		Complete(c)
}

// Reconcile records the Warning event on the NodePool when it is static.
func (c *staticCapacityOff) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &karpv1.NodePool{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nodepool.IsStatic(np) || !np.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	const message = "spec.replicas is set but the StaticCapacity feature gate is off, so no nodes are launched for this NodePool: " +
		"set FEATURE_GATES StaticCapacity=true (Helm: settings.featureGates.staticCapacity=true)"
	log.FromContext(ctx).Info("static nodepool ignored: the StaticCapacity feature gate is off", "nodepool", np.Name)
	// No DedupeValues: the Event is recorded at each creation or spec change of the NodePool
	// (and at start), which is when a user looks for it.
	c.events.Publish(events.Event{InvolvedObject: np, Type: corev1.EventTypeWarning, Reason: ReasonStaticCapacityDisabled, Message: message})
	return reconcile.Result{}, nil
}
