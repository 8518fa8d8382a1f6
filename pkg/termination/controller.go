package termination

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/requeue"
)

// ControllerName names the termination controller in logs and metrics.
const ControllerName = "termination"

// Finalizer terminates a drained NodeClaim's instance and removes its finalizers.
// *nodeclaim.LifecycleController is one.
type Finalizer interface {
	// Finalize deletes the claim's Node, terminates its instance and, once the instance is
	// gone, removes the termination finalizer from the Node and the claim. It may ask to be
	// called again (RequeueAfter) while the instance terminates.
	Finalize(ctx context.Context, claim *karpv1.NodeClaim) (reconcile.Result, error)
}

// Controller cordons, drains and finalizes deleting NodeClaims (see the package documentation
// for the flow). Requests name NodeClaims. It is safe for concurrent reconciles of different
// claims.
type Controller struct {
	kube      client.Client
	finalizer Finalizer
	clock     clock.Clock
	events    *events.Recorder
	opts      Options
	refusals  refusals
}

// NewController returns a termination controller that reads and writes through kubeClient,
// hands drained claims to finalizer, takes all time from clk (the real clock when nil) and
// records Events with recorder (which may be nil). Zero options take their defaults; options
// that fail Validate are the caller's bug.
func NewController(kubeClient client.Client, finalizer Finalizer, clk clock.Clock, recorder record.EventRecorder, opts Options) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Controller{
		kube:      kubeClient,
		finalizer: finalizer,
		clock:     clk,
		events:    events.NewRecorder(recorder, clk),
		opts:      opts.withDefaults(),
	}
}

// Register watches NodeClaims, and Nodes mapped to their NodeClaims (by owner reference,
// status.nodeName or provider ID), under mgr. Call IndexFields (and nodeclaim.IndexFields) on
// the manager's field indexer beforehand so that finding a node's pods reads an index.
func (c *Controller) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&karpv1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.claimsForNode)).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.opts.MaxConcurrentReconciles}).
		Complete(c)
}

// Reconcile terminates one deleting NodeClaim: cordon, drain, finalize. A claim that is not
// deleting is only checked for a Node deleted under it, in which case the claim is deleted and
// terminated at once. It returns an error for controller-runtime to retry with backoff and a
// RequeueAfter while the drain or the instance's termination is in progress.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &karpv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("nodeclaim", claim.Name))
	if claim.DeletionTimestamp == nil {
		deleted, err := c.followNodeDeletion(ctx, claim)
		if err != nil || !deleted {
			return done(reconcile.Result{}, err)
		}
		if err := c.kube.Get(ctx, req.NamespacedName, claim); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	if claim.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(claim, karpv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	return done(c.terminate(ctx, claim))
}

// followNodeDeletion deletes claim when one of its Nodes, managed by Karpenter (holding the
// termination finalizer), is being deleted: a user deleted the Node directly, and the claim's
// termination is what drains it and lets it go. A registered claim whose Node is gone
// altogether is deleted too, so that its instance is terminated. This controller alone
// deletes a claim for its Node. It reports whether it deleted the claim.
func (c *Controller) followNodeDeletion(ctx context.Context, claim *karpv1.NodeClaim) (bool, error) {
	if claim.Status.ProviderID == "" && claim.Status.NodeName == "" {
		return false, nil
	}
	nodes, err := c.nodesOf(ctx, claim)
	if err != nil {
		return false, err
	}
	if len(nodes) == 0 && meta.IsStatusConditionTrue(claim.Status.Conditions, karpv1.ConditionTypeRegistered) {
		gone := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: claim.Status.NodeName}}
		if err := c.kube.Delete(ctx, claim); err != nil {
			return false, client.IgnoreNotFound(fmt.Errorf("deleting nodeclaim of deleted node %s: %w", gone.Name, err))
		}
		log.FromContext(ctx).Info("deleted nodeclaim of deleted node", "node", gone.Name)
		c.events.Publish(nodeDeletedEvent(claim, gone))
		return true, nil
	}
	for _, node := range nodes {
		if node.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(node, karpv1.TerminationFinalizer) {
			continue
		}
		if err := c.kube.Delete(ctx, claim); err != nil {
			return false, client.IgnoreNotFound(fmt.Errorf("deleting nodeclaim of deleted node %s: %w", node.Name, err))
		}
		log.FromContext(ctx).Info("deleted nodeclaim of deleted node", "node", node.Name)
		c.events.Publish(nodeDeletedEvent(claim, node))
		return true, nil
	}
	return false, nil
}

// terminate runs one pass of a deleting claim's termination.
func (c *Controller) terminate(ctx context.Context, claim *karpv1.NodeClaim) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	nodes, err := c.nodesOf(ctx, claim)
	if err != nil {
		return reconcile.Result{}, err
	}
	deadline, err := c.terminationDeadline(ctx, claim)
	if err != nil {
		return reconcile.Result{}, err
	}
	if deadline != nil {
		c.events.Publish(gracePeriodExpiringEvents(claim, nodes, claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey])...)
	}
	for _, node := range nodes {
		if err := c.cordon(ctx, claim, node); err != nil {
			return reconcile.Result{}, err
		}
	}
	if meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeDrained) == nil {
		if err := c.setCondition(ctx, claim, metav1.Condition{Type: karpv1.ConditionTypeDrained, Status: metav1.ConditionUnknown, Reason: ReasonDraining, Message: ReasonDraining}); err != nil {
			return reconcile.Result{}, err
		}
	}
	pods, err := podsOn(ctx, c.kube, nodeNames(nodes))
	if err != nil {
		return reconcile.Result{}, err
	}

	now := c.clock.Now()
	if deadline != nil && !now.Before(*deadline) {
		// The termination grace period is over: nothing may hold the node any longer.
		c.refusals.forget(claim.UID)
		if err := c.deleteRemaining(ctx, claim, pods, *deadline); err != nil {
			return reconcile.Result{}, err
		}
	} else {
		var due time.Duration
		if deadline != nil {
			if due, err = c.deleteExpiring(ctx, claim, pods, *deadline, now); err != nil {
				return reconcile.Result{}, err
			}
		}
		drained, wait, err := c.drain(ctx, claim, nodes, pods, deadline, now)
		if err != nil {
			return reconcile.Result{}, err
		}
		if !drained {
			if due > 0 && (wait == 0 || due < wait) {
				wait = due
			}
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}

	if err := c.markDrained(ctx, claim, nodes); err != nil {
		return reconcile.Result{}, err
	}
	if wait, err := c.awaitVolumeDetachment(ctx, claim, nodes, pods, deadline, c.clock.Now()); err != nil || wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, err
	}
	logger.V(1).Info("drained, finalizing")
	res, err := c.finalizer.Finalize(ctx, claim)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("finalizing nodeclaim: %w", err)
	}
	if !controllerutil.ContainsFinalizer(claim, karpv1.TerminationFinalizer) {
		logger.Info("terminated nodeclaim")
		c.events.Publish(terminatedEvents(claim, nodes)...)
	}
	return res, nil
}

// terminationDeadline returns when the claim's node must be gone, if ever: the time in the
// karpenter.sh/nodeclaim-termination-timestamp annotation, which it first writes as
// deletionTimestamp + spec.terminationGracePeriod when the claim has a grace period.
func (c *Controller) terminationDeadline(ctx context.Context, claim *karpv1.NodeClaim) (*time.Time, error) {
	if v, ok := claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		t, err := time.Parse(time.RFC3339, v)
		if err == nil {
			t = t.UTC()
			return &t, nil
		}
		log.FromContext(ctx).Error(err, "ignoring invalid termination timestamp", "value", v)
	}
	if claim.Spec.TerminationGracePeriod == nil {
		return nil, nil
	}
	t := claim.DeletionTimestamp.Add(claim.Spec.TerminationGracePeriod.Duration).UTC()
	base := claim.DeepCopy()
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = t.UTC().Format(time.RFC3339)
	if err := c.kube.Patch(ctx, claim, client.MergeFrom(base)); err != nil {
		return nil, fmt.Errorf("annotating termination timestamp: %w", err)
	}
	return &t, nil
}

// cordon adds the karpenter.sh/disrupted:NoSchedule taint to node, and announces the drain
// when it does.
func (c *Controller) cordon(ctx context.Context, claim *karpv1.NodeClaim, node *corev1.Node) error {
	for _, t := range node.Spec.Taints {
		if t.MatchTaint(&disruptedTaint) {
			return nil
		}
	}
	node.Spec.Taints = append(node.Spec.Taints, disruptedTaint)
	if err := c.kube.Update(ctx, node); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("tainting node %s: %w", node.Name, err))
	}
	log.FromContext(ctx).Info("cordoned node, draining", "node", node.Name)
	c.events.Publish(drainingEvents(claim, node)...)
	return nil
}

// nodesOf returns the claim's Nodes, sorted by name: those with its provider ID and the one
// its status.nodeName names.
func (c *Controller) nodesOf(ctx context.Context, claim *karpv1.NodeClaim) ([]*corev1.Node, error) {
	nodes, err := nodeclaim.NodesByProviderID(ctx, c.kube, claim.Status.ProviderID)
	if err != nil {
		return nil, fmt.Errorf("finding nodes: %w", err)
	}
	if name := claim.Status.NodeName; name != "" && !slices.ContainsFunc(nodes, func(n *corev1.Node) bool { return n.Name == name }) {
		node := &corev1.Node{}
		switch err := c.kube.Get(ctx, client.ObjectKey{Name: name}, node); {
		case err == nil:
			nodes = append(nodes, node)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("getting node %s: %w", name, err)
		}
	}
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return nodes, nil
}

func nodeNames(nodes []*corev1.Node) []string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return names
}

// claimsForNode maps a Node to its NodeClaims: those its owner references name and those whose
// status.nodeName or status.providerID is the Node's, sorted by name. It runs on every Node
// event, so it reads the field indexes rather than listing every NodeClaim.
func (c *Controller) claimsForNode(ctx context.Context, o client.Object) []reconcile.Request {
	node, ok := o.(*corev1.Node)
	if !ok {
		return nil
	}
	names := map[string]bool{}
	for _, ref := range node.OwnerReferences {
		if ref.Kind == "NodeClaim" && ref.APIVersion == karpv1.SchemeGroupVersion.String() {
			names[ref.Name] = true
		}
	}
	byID, err := nodeclaim.NodeClaimsByProviderID(ctx, c.kube, node.Spec.ProviderID)
	if err != nil {
		log.FromContext(ctx).Error(err, "mapping node to nodeclaims", "node", node.Name)
	}
	byName, err := nodeclaim.NodeClaimsByNodeName(ctx, c.kube, node.Name)
	if err != nil {
		log.FromContext(ctx).Error(err, "mapping node to nodeclaims", "node", node.Name)
	}
	for _, claim := range append(byID, byName...) {
		names[claim.Name] = true
	}
	reqs := make([]reconcile.Request, 0, len(names))
	for name := range names {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	}
	slices.SortFunc(reqs, func(a, b reconcile.Request) int { return strings.Compare(a.Name, b.Name) })
	return reqs
}

// done turns the outcome of a reconcile into its result (requeue.OnConflict).
func done(res reconcile.Result, err error) (reconcile.Result, error) {
	return requeue.OnConflict(res, err)
}

// ReasonDraining is the reason (and message) of the Drained condition while the drain runs
// (Unknown), as Karpenter's.
const ReasonDraining = "Draining"

// markDrained sets the claim's Drained condition True, as Karpenter's, the first time its drain
// completes, and counts the node drained then (once: the condition remembers it across
// restarts).
func (c *Controller) markDrained(ctx context.Context, claim *karpv1.NodeClaim, nodes []*corev1.Node) error {
	if meta.IsStatusConditionTrue(claim.Status.Conditions, karpv1.ConditionTypeDrained) {
		return nil
	}
	if err := c.setCondition(ctx, claim, metav1.Condition{Type: karpv1.ConditionTypeDrained, Status: metav1.ConditionTrue, Reason: karpv1.ConditionTypeDrained}); err != nil {
		return err
	}
	for _, node := range nodes {
		metrics.NodeDrained(node.Labels[karpv1.NodePoolLabelKey])
	}
	return nil
}

// setCondition writes cond (its transition time from the clock) on the claim's status when it
// changes the condition's status, reason or message; a claim already gone is no error.
func (c *Controller) setCondition(ctx context.Context, claim *karpv1.NodeClaim, cond metav1.Condition) error {
	if old := meta.FindStatusCondition(claim.Status.Conditions, cond.Type); old != nil &&
		old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message {
		return nil
	}
	patch := client.MergeFromWithOptions(claim.DeepCopy(), client.MergeFromWithOptimisticLock{})
	cond.LastTransitionTime, cond.ObservedGeneration = metav1.NewTime(c.clock.Now()), claim.Generation
	meta.SetStatusCondition(&claim.Status.Conditions, cond)
	if err := c.kube.Status().Patch(ctx, claim, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("setting condition %s of nodeclaim: %w", cond.Type, err)
	}
	return nil
}
