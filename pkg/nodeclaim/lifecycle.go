package nodeclaim

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/requeue"
)

// LifecycleControllerName names the lifecycle controller in logs and metrics.
const LifecycleControllerName = "nodeclaim.lifecycle"

// LifecycleController launches, registers, initializes, times out and finalizes NodeClaims
// (see the package documentation for the order and the rules). Requests name NodeClaims. It is
// safe for concurrent reconciles of different claims.
type LifecycleController struct {
	kube        client.Client
	cloud       cloudprovider.InstanceLifecycle
	unavailable *cloudprovider.UnavailableOfferings
	clock       clock.Clock
	events      recorder
	opts        LifecycleOptions
	launches    *launchCache
	// podEvents limits the InsufficientCapacityError Events on pods, across claims.
	podEvents events.RateLimiter
}

// NewLifecycleController returns a lifecycle controller that reads and writes through kube,
// launches and terminates instances through cloud, marks offerings that ran out of capacity in
// unavailable (which may be nil), takes all time from clk (the real clock when nil) and records
// Events with rec (which may be nil). Zero options take their defaults; options that fail
// Validate are the caller's bug.
func NewLifecycleController(kube client.Client, cloud cloudprovider.InstanceLifecycle, unavailable *cloudprovider.UnavailableOfferings,
	clk clock.Clock, rec record.EventRecorder, opts LifecycleOptions) *LifecycleController {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &LifecycleController{
		kube:        kube,
		cloud:       cloud,
		unavailable: unavailable,
		clock:       clk,
		events:      recorder{events.NewRecorder(rec, clk)},
		opts:        opts.withDefaults(),
		launches:    newLaunchCache(clk),
		podEvents:   events.NewRateLimiter(5, 10, clk),
	}
}

// Register watches NodeClaims, and Nodes mapped to their NodeClaims (by owner reference or
// provider ID), under mgr. Call IndexFields on the manager's field indexer beforehand so that
// lookups by provider ID use the cache's index instead of listing every Node.
func (c *LifecycleController) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(LifecycleControllerName).
		For(&karpv1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(claimsForNode(c.kube))).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.opts.MaxConcurrentReconciles}).
		Complete(c)
}

// Reconcile moves one NodeClaim along its lifecycle. It returns an error for controller-runtime
// to retry with backoff, and a RequeueAfter when it waits for time to pass (a NodeClass to
// become ready, an instance to terminate, the registration TTL to run out).
func (c *LifecycleController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &karpv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("nodeclaim", claim.Name))

	if claim.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // termination drains it and calls Finalize
	}

	if !controllerutil.ContainsFinalizer(claim, karpv1.TerminationFinalizer) {
		controllerutil.AddFinalizer(claim, karpv1.TerminationFinalizer)
		if err := c.kube.Update(ctx, claim); err != nil {
			return c.done(result{}, client.IgnoreNotFound(fmt.Errorf("adding termination finalizer: %w", err)))
		}
	}

	persisted := claim.Status.DeepCopy()
	var res result

	// Launch, and record a launch at once: the provider ID is what prevents a second one.
	launched, err := c.launch(ctx, claim, &res)
	if res.deleted {
		return reconcile.Result{}, err
	}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if launched {
		if err := c.writeStatus(ctx, claim, persisted, &res); err != nil {
			return c.done(res, err)
		}
	}

	node, err := c.registration(ctx, claim, &res)
	if res.nodeGone {
		return reconcile.Result{}, err
	}
	if err != nil {
		errs = append(errs, err)
	}
	if err := c.initialization(ctx, claim, node, &res); err != nil {
		errs = append(errs, err)
	}
	c.setReady(claim)
	if err := c.writeStatus(ctx, claim, persisted, &res); err != nil {
		errs = append(errs, err)
	}

	if err := c.liveness(ctx, claim, &res); err != nil {
		errs = append(errs, err)
	}
	return c.done(res, errs...)
}

// done turns the outcome of a reconcile into its result. Conflicts (a stale read, usually from
// the cache) are not errors worth a backoff and a log line: they requeue shortly instead.
func (c *LifecycleController) done(res result, errs ...error) (reconcile.Result, error) {
	var kept []error
	for _, err := range errs {
		if requeue.IsConflict(err) {
			res.requeue(requeue.ConflictDelay)
			continue
		}
		kept = append(kept, err)
	}
	if err := errors.Join(kept...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: res.requeueAfter}, nil
}

// result gathers what the steps of one reconcile decided.
type result struct {
	// deleted: the claim was deleted; nothing more is done with it.
	deleted bool
	// nodeGone: the registered claim's Node is deleting or gone; the termination controller
	// deletes the claim, and nothing more is done with it here.
	nodeGone bool
	// requeueAfter is the soonest time a step wants to look again; zero means none.
	requeueAfter time.Duration
	// announce are the Events and log lines of transitions made in memory, to be emitted once
	// the status that records them is written (so a lost write does not announce twice).
	announce []func()
}

// onWrite queues an announcement for after the next successful status write.
func (r *result) onWrite(fn func()) { r.announce = append(r.announce, fn) }

func (r *result) requeue(d time.Duration) {
	if d > 0 && (r.requeueAfter == 0 || d < r.requeueAfter) {
		r.requeueAfter = d
	}
}

// writeStatus writes claim's status when it differs from persisted, remembers it as persisted
// and makes the announcements queued in res.
func (c *LifecycleController) writeStatus(ctx context.Context, claim *karpv1.NodeClaim, persisted *karpv1.NodeClaimStatus, res *result) error {
	if !equality.Semantic.DeepEqual(claim.Status, *persisted) {
		if err := c.kube.Status().Update(ctx, claim); err != nil {
			res.announce = nil
			return fmt.Errorf("updating nodeclaim status: %w", err)
		}
		*persisted = *claim.Status.DeepCopy()
	}
	for _, fn := range res.announce {
		fn()
	}
	res.announce = nil
	return nil
}

// deleteClaim deletes the claim; one already gone is no error.
func (c *LifecycleController) deleteClaim(ctx context.Context, claim *karpv1.NodeClaim) error {
	if err := c.kube.Delete(ctx, claim); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting nodeclaim: %w", err)
	}
	return nil
}

// claimsForNode maps a Node to the NodeClaims it belongs to: those its owner references name,
// else those with its provider ID (looked up through kube).
func claimsForNode(kube client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		node, ok := o.(*corev1.Node)
		if !ok {
			return nil
		}
		var reqs []reconcile.Request
		for _, ref := range node.OwnerReferences {
			if ref.Kind == "NodeClaim" && ref.APIVersion == karpv1.SchemeGroupVersion.String() {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: ref.Name}})
			}
		}
		if len(reqs) > 0 || node.Spec.ProviderID == "" {
			return reqs
		}
		claims, err := NodeClaimsByProviderID(ctx, kube, node.Spec.ProviderID)
		if err != nil {
			log.FromContext(ctx).Error(err, "mapping node to nodeclaims", "node", node.Name)
			return nil
		}
		for _, claim := range claims {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: claim.Name}})
		}
		return reqs
	}
}
