package simulate

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/openkarpenter/karpenter/pkg/apis/autoscaling/v1beta1"
	ec2v1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	karpv1alpha1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/expiration"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// This file holds Karpenter's side of a pass: provisioning when pods wait, and every
// controller's reconcile, run in the order the operator's would settle.

// maybeProvision runs the provisioner when a batch of pending pods is complete: no new pending
// pod for the idle window, or the max window since the batch began.
func (e *engine) maybeProvision(ctx context.Context, now time.Time) error {
	pods, err := e.unboundPods()
	if err != nil {
		return err
	}
	pending := 0
	for _, p := range pods {
		if state.IsProvisionable(p) {
			pending++
		}
	}
	if pending == 0 {
		e.batchStart, e.batchPending = time.Time{}, 0
		if e.provisionWanted {
			// The buffers' controller woke the provisioner (as its 30s resync does in a
			// cluster): their virtual pods are placed again, launching for those whose room
			// real pods took. Or a claim started deleting: its node's pods are placed.
			e.provisionWanted = false
			_, err = e.provisioner.Provision(ctx)
		}
		return err
	}
	if e.batchStart.IsZero() {
		e.batchStart, e.batchLastChange, e.batchPending = now, now, pending
		return nil
	}
	if pending != e.batchPending {
		e.batchLastChange, e.batchPending = now, pending
	}
	if now.Sub(e.batchLastChange) < e.opts.BatchIdleDuration && now.Sub(e.batchStart) < e.opts.BatchMaxDuration {
		return nil
	}
	e.batchStart, e.provisionWanted = time.Time{}, false
	_, err = e.provisioner.Provision(ctx)
	return err
}

// bufferTrigger is the provisioner's Trigger for the buffers' controller in a simulation.
type bufferTrigger struct{ e *engine }

// Trigger asks for a provisioning pass at the next pass.
func (t bufferTrigger) Trigger() { t.e.provisionWanted = true }

// reconcileBuffers resolves each CapacityBuffer when it is due: first seen, then after the
// controller's RequeueAfter, as its watch and resync would in a cluster.
func (e *engine) reconcileBuffers(ctx context.Context) error {
	var list autoscalingv1beta1.CapacityBufferList
	if err := e.kube.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	now := e.clock.Now()
	for _, cb := range list.Items {
		key := client.ObjectKeyFromObject(&cb)
		if due, ok := e.bufferDue[key]; ok && now.Before(due) {
			continue
		}
		res, err := e.buffers.Reconcile(ctx, reconcile.Request{NamespacedName: key})
		if err != nil {
			e.rec.warn(fmt.Sprintf("capacitybuffer %s: %v", cb.Name, err))
		}
		e.bufferDue[key] = now.Add(res.RequeueAfter)
		if res.RequeueAfter > 0 && (e.requeueAt.IsZero() || e.bufferDue[key].Before(e.requeueAt)) {
			e.requeueAt = e.bufferDue[key]
		}
	}
	return nil
}

// unboundPods returns the pods no node has taken yet (through the store's spec.nodeName index),
// read-only.
func (e *engine) unboundPods() ([]*corev1.Pod, error) {
	return e.pods(client.MatchingFields{"spec.nodeName": ""})
}

// pods returns the pods opts select, in List's order: the store's own, read-only (see
// state.ListPods).
func (e *engine) pods(opts ...client.ListOption) ([]*corev1.Pod, error) {
	return state.ListPods(context.Background(), e.kube, opts...)
}

// reconcileAll calls every controller for the objects of its kind, as their watches would (the
// NodeClaims through reconcileClaims, which passes over the settled ones).
func (e *engine) reconcileAll(ctx context.Context) error {
	// Only names are read from these lists: the controllers fetch their own copies.
	var classes ec2v1.EC2NodeClassList
	if err := e.kube.List(ctx, &classes, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for _, c := range classes.Items {
		if err := e.reconcile(ctx, e.classStatus, c.Name); err != nil {
			return fmt.Errorf("nodeclass %s: %w", c.Name, err)
		}
	}
	var pools karpv1.NodePoolList
	if err := e.kube.List(ctx, &pools, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	if err := e.reconcileOverlays(ctx, classes.Items, pools.Items); err != nil {
		return err
	}
	for _, np := range pools.Items {
		if err := e.reconcile(ctx, e.poolStatus, np.Name); err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("nodepool %s status: %w", np.Name, err)
		}
		if err := e.reconcile(ctx, e.poolStatic, np.Name); err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("nodepool %s replicas: %w", np.Name, err)
		}
	}
	if e.buffers != nil {
		if err := e.reconcileBuffers(ctx); err != nil {
			return err
		}
	}
	if e.repair != nil {
		// Before the claims: a claim repair deletes is terminated in the same pass.
		var nodes corev1.NodeList
		if err := e.kube.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		for _, n := range nodes.Items {
			if err := e.reconcile(ctx, e.repair, n.Name); err != nil && !apierrors.IsConflict(err) {
				e.rec.warn(fmt.Sprintf("repairing node %s: %v", n.Name, err))
			}
		}
	}
	return e.reconcileClaims(ctx)
}

// reconcileClaims calls the lifecycle and termination controllers for the NodeClaims, as their
// watches of NodeClaims and Nodes and their requeues would, and the reboot controller for the
// ones rebooting: a claim is reconciled unless it is settled, that is initialized, not being
// deleted nor rebooting, and neither it nor a Node of its provider ID changed since both
// controllers last returned with nothing to wait for (no error, no RequeueAfter). Such a reconcile would find nothing to do; at 100,000 pods, calling both
// controllers for every claim on every pass was a tenth of a simulated day.
func (e *engine) reconcileClaims(ctx context.Context) error {
	var claims karpv1.NodeClaimList
	if err := e.kube.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := e.kube.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	nodeVersions := make(map[string]string, len(nodes.Items))
	for _, n := range nodes.Items {
		if id := n.Spec.ProviderID; id != "" {
			nodeVersions[id] += n.Name + "@" + n.ResourceVersion + " "
		}
	}
	listed := make(map[string]bool, len(claims.Items))
	now := e.clock.Now()
	var nextExpiry time.Time
	for _, c := range claims.Items {
		listed[c.Name] = true
		version := c.ResourceVersion + " " + nodeVersions[c.Status.ProviderID]
		settles := c.DeletionTimestamp == nil && c.IsInitialized()
		// As the expiration controller's requeue at each claim's expiry: an expired claim is
		// deleted, and terminated from this pass on.
		if at, ok := expiration.ExpiresAt(&c); ok && c.DeletionTimestamp == nil {
			if now.Before(at) {
				if nextExpiry.IsZero() || at.Before(nextExpiry) {
					nextExpiry = at
				}
			} else {
				if _, err := e.expiration.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: c.Name}}); err != nil && !apierrors.IsConflict(err) {
					e.rec.warn(fmt.Sprintf("expiring nodeclaim %s: %v", c.Name, err))
				}
				settles = false
			}
		}
		// As the reboot controller's watch of the NodeClaims with a Rebooting condition: a
		// reboot under way moves on every pass (it asks to be looked at again while it lasts).
		rebooting := c.IsRebooting()
		if rebooting {
			settles = false
		}
		if settles && e.settled[c.Name] == version {
			continue
		}
		delete(e.settled, c.Name)
		before := e.requeueAt
		e.requeueAt = time.Time{}
		failed := false
		if rebooting {
			if err := e.stepReboot(ctx, &c); err != nil {
				failed = true
				if !apierrors.IsConflict(err) && !cloudprovider.IsRetryable(err) {
					e.rec.warn(fmt.Sprintf("rebooting nodeclaim %s: %v", c.Name, err))
				}
			}
		}
		if err := e.reconcile(ctx, e.lifecycle, c.Name); err != nil {
			failed = true
			if !apierrors.IsConflict(err) && !cloudprovider.IsRetryable(err) {
				e.rec.warn(fmt.Sprintf("nodeclaim %s: %v", c.Name, err))
			}
		}
		// Termination follows a deleted Node for every claim, and drains and finalizes the
		// deleting ones.
		if err := e.reconcile(ctx, e.termination, c.Name); err != nil {
			failed = true
			if !apierrors.IsConflict(err) {
				e.rec.warn(fmt.Sprintf("terminating nodeclaim %s: %v", c.Name, err))
			}
		}
		if settles && !failed && e.requeueAt.IsZero() {
			e.settled[c.Name] = version
		}
		if e.requeueAt.IsZero() || (!before.IsZero() && before.Before(e.requeueAt)) {
			e.requeueAt = before
		}
		if c.DeletionTimestamp != nil && !e.deletingSeen[c.Name] {
			// As the provisioner's NodeClaim watch: a claim starting to delete wakes it.
			e.deletingSeen[c.Name] = true
			e.provisionWanted = true
		}
		if c.DeletionTimestamp != nil {
			// As the provisioner's NodeClaim watch: a claim finalized now (a launch that failed
			// at once among them) releases its pods.
			if err := e.kube.Get(ctx, client.ObjectKey{Name: c.Name}, &karpv1.NodeClaim{}); apierrors.IsNotFound(err) {
				e.provisioner.ClaimDeleted(c.Name)
			}
		}
	}
	maps.DeleteFunc(e.settled, func(name, _ string) bool { return !listed[name] })
	maps.DeleteFunc(e.deletingSeen, func(name string, _ bool) bool { return !listed[name] })
	if !nextExpiry.IsZero() && (e.requeueAt.IsZero() || nextExpiry.Before(e.requeueAt)) {
		e.requeueAt = nextExpiry
	}
	return nil
}

// reconcileOverlays evaluates the NodeOverlays again, as the controller's watches would, when
// an overlay or a NodePool changed generation or an EC2NodeClass changed at all since the last
// evaluation (or it left a NodePool unevaluated), before the NodePools are used.
func (e *engine) reconcileOverlays(ctx context.Context, classes []ec2v1.EC2NodeClass, pools []karpv1.NodePool) error {
	if e.overlays == nil {
		return nil
	}
	var overlays karpv1alpha1.NodeOverlayList
	if err := e.kube.List(ctx, &overlays, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	var seen strings.Builder
	for _, o := range overlays.Items {
		fmt.Fprintf(&seen, "o/%s/%d ", o.Name, o.Generation)
	}
	for _, np := range pools {
		fmt.Fprintf(&seen, "p/%s/%d ", np.Name, np.Generation)
	}
	for _, c := range classes {
		fmt.Fprintf(&seen, "c/%s/%s ", c.Name, c.ResourceVersion)
	}
	if seen.String() == e.overlaysSeen {
		return nil
	}
	if _, err := e.overlays.Reconcile(ctx, request("nodeoverlays")); err != nil {
		// A NodePool whose NodeClass is not ready yet is evaluated again next pass.
		e.overlaysSeen = ""
		if apierrors.IsConflict(err) {
			return nil
		}
		if msg := fmt.Sprintf("evaluating nodeoverlays: %v", err); msg != e.overlaysWarned {
			e.rec.warn(msg)
			e.overlaysWarned = msg
		}
		return nil
	}
	e.overlaysSeen = seen.String()
	return nil
}

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
}

// reconcile calls a controller for the object of that name, as its watch would, and notes when
// it asked to look again (its RequeueAfter): the engine wakes then even if nothing else is due.
func (e *engine) reconcile(ctx context.Context, r reconcile.Reconciler, name string) error {
	res, err := r.Reconcile(ctx, request(name))
	if res.RequeueAfter > 0 {
		if at := e.clock.Now().Add(res.RequeueAfter); e.requeueAt.IsZero() || at.Before(e.requeueAt) {
			e.requeueAt = at
		}
	}
	return err
}
