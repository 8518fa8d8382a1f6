package nodeclaim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// Finalize terminates a deleting claim's instance and lets the claim go: it deletes the claim's
// Node (which stays until its finalizer is removed), asks the cloud provider to delete the
// instance until the provider reports it gone (meanwhile the claim has InstanceTerminating=True
// and the result asks to be called again), then removes the karpenter.sh/termination finalizer
// from the Node and from the claim. It does nothing to a claim without that finalizer.
//
// Reconcile leaves deleting claims alone: the termination controller drains the node first
// and then calls Finalize. Calling it again after it has finished is harmless. A write that loses an
// optimistic-concurrency race (a stale claim or node) is retried shortly rather than reported.
func (c *LifecycleController) Finalize(ctx context.Context, claim *karpv1.NodeClaim) (reconcile.Result, error) {
	res, err := c.finalize(ctx, claim)
	if err != nil {
		return c.done(result{}, err)
	}
	return res, nil
}

func (c *LifecycleController) finalize(ctx context.Context, claim *karpv1.NodeClaim) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(claim, karpv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	logger := log.FromContext(ctx)
	providerID := claim.Status.ProviderID
	if providerID == "" {
		// Launched, but the status write was lost or is not visible yet.
		providerID = c.launches.providerID(claim.UID)
	}

	nodes, err := NodesByProviderID(ctx, c.kube, providerID)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("finding node: %w", err)
	}
	for _, node := range nodes {
		if node.DeletionTimestamp != nil {
			continue
		}
		if err := c.kube.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("deleting node %s: %w", node.Name, err)
		}
		logger.Info("deleted node", "node", node.Name)
	}

	if providerID != "" {
		target := claim
		if claim.Status.ProviderID != providerID {
			target = claim.DeepCopy()
			target.Status.ProviderID = providerID
		}
		err := c.cloud.Delete(ctx, target)
		switch {
		case err == nil:
			// Terminating, not yet gone.
			if !isTrue(claim, karpv1.ConditionTypeInstanceTerminating) {
				var res result
				persisted := claim.Status.DeepCopy()
				c.setCondition(claim, karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, ReasonInstanceTerminating, "waiting for instance "+providerID+" to terminate")
				res.onWrite(func() {
					logger.Info("terminating instance", "provider-id", providerID)
					c.events.normal(claim, EventReasonTerminatingInstance, "Terminating instance %s", providerID)
				})
				if err := c.writeStatus(ctx, claim, persisted, &res); err != nil {
					return reconcile.Result{}, client.IgnoreNotFound(err)
				}
			}
			return reconcile.Result{RequeueAfter: InstanceTerminatingRequeue}, nil
		case !cloudprovider.IsNodeClaimNotFoundError(err):
			return reconcile.Result{}, fmt.Errorf("terminating instance %s: %w", providerID, err)
		}
	}

	// The instance is gone: nothing is left for the finalizers to guard.
	for _, node := range nodes {
		if err := releaseNode(ctx, c.kube, c.clock.Now(), node.Name, claim.DeletionTimestamp); err != nil {
			return reconcile.Result{}, err
		}
	}
	if controllerutil.RemoveFinalizer(claim, karpv1.TerminationFinalizer) {
		err := c.kube.Update(ctx, claim)
		if client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("removing finalizer from nodeclaim: %w", err)
		}
		if err == nil {
			now := c.clock.Now()
			var terminating, instanceTerminating time.Duration
			if claim.DeletionTimestamp != nil {
				terminating = now.Sub(claim.DeletionTimestamp.Time)
			}
			if cond := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeInstanceTerminating); cond != nil && cond.Status == metav1.ConditionTrue {
				instanceTerminating = now.Sub(cond.LastTransitionTime.Time)
			}
			metrics.NodeClaimTerminated(claim.Labels[karpv1.NodePoolLabelKey], claim.Labels[karpv1.CapacityTypeLabelKey], claim.Labels[corev1.LabelTopologyZone],
				terminating, instanceTerminating)
			// Once per claim: a reconcile of a stale copy that still shows the finalizer
			// fails its update (conflict or not found) and records nothing.
			logger.Info("finalized nodeclaim", "provider-id", providerID)
			c.events.normal(claim, EventReasonFinalized, "Instance %s is terminated", providerID)
		}
	}
	c.launches.forget(claim.UID)
	return reconcile.Result{}, nil
}

// releaseNode removes the termination finalizer from the named Node and, when it did, records
// the Node terminated: terminating since the Node's deletion (or, when only its claim was
// deleted, claimDeleted; nil when there is no claim), as Karpenter measures it.
func releaseNode(ctx context.Context, kube client.Client, now time.Time, name string, claimDeleted *metav1.Time) error {
	node, err := removeNodeFinalizer(ctx, kube, name)
	if node == nil || err != nil {
		return err
	}
	since := claimDeleted
	if node.DeletionTimestamp != nil {
		since = node.DeletionTimestamp
	}
	var terminating time.Duration
	if since != nil {
		terminating = now.Sub(since.Time)
	}
	metrics.NodeTerminated(node.Labels[karpv1.NodePoolLabelKey], node.Labels[corev1.LabelTopologyZone], terminating, now.Sub(node.CreationTimestamp.Time))
	return nil
}

// removeNodeFinalizer removes the termination finalizer from the named Node, read afresh
// (deleting it changed it); a Node already gone is no error.
func removeNodeFinalizer(ctx context.Context, kube client.Client, name string) (*corev1.Node, error) {
	node := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !controllerutil.RemoveFinalizer(node, karpv1.TerminationFinalizer) {
		return nil, nil
	}
	err := kube.Update(ctx, node)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("removing finalizer from node %s: %w", name, err)
	}
	return node, nil
}

// TightenTerminationTimestamp sets the claim's karpenter.sh/nodeclaim-termination-timestamp
// to deadline unless it already holds an earlier one: a drain bound (node repair's, a failed
// reboot's) may shorten a deadline, never lengthen it, as Karpenter's
// TightenTerminationTimestampAnnotation. The claim is read afresh and written with optimistic
// locking; a claim gone is no error.
func TightenTerminationTimestamp(ctx context.Context, kube client.Client, claim *karpv1.NodeClaim, deadline time.Time) error {
	var stored karpv1.NodeClaim
	if err := kube.Get(ctx, client.ObjectKeyFromObject(claim), &stored); err != nil {
		return client.IgnoreNotFound(err)
	}
	if v, ok := stored.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		if t, err := time.Parse(time.RFC3339, v); err == nil && !t.After(deadline) {
			return nil
		}
	}
	base := stored.DeepCopy()
	if stored.Annotations == nil {
		stored.Annotations = map[string]string{}
	}
	stored.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = deadline.UTC().Format(time.RFC3339)
	if err := kube.Patch(ctx, &stored, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("bounding the drain of nodeclaim %s: %w", claim.Name, err)
	}
	return nil
}
