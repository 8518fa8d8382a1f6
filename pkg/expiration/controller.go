// Package expiration owns the expiry of NodeClaims: a NodeClaim that outlived its
// spec.expireAfter is deleted at once, as Karpenter v1.15's nodeclaim.expiration controller
// deletes it (pkg/controllers/nodeclaim/expiration/controller.go). Expiry is forceful: it is
// not a disruption method, so no disruption budget paces it, no replacement is launched first
// and neither karpenter.sh/do-not-disrupt nor a PodDisruptionBudget holds it beyond what the
// drain honours (package termination, until the claim's terminationGracePeriod). The pods of
// the expiring node are provisioned for while it drains (package provisioning). It also owns
// the end of NodeClaims in expiring capacity reservations (ReservationController), as the AWS
// provider v1.15.2's capacityreservation.expiration controller.
package expiration

import (
	"context"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/termination"
)

// ControllerName names the controller in logs and metrics: Karpenter's.
const ControllerName = "nodeclaim.expiration"

// DefaultExpireAfter is the expiry the NodeClaim CRD defaults spec.expireAfter to: a claim
// that carries none (one that did not pass through the API server's defaulting) expires then.
const DefaultExpireAfter = 720 * time.Hour

// Expiry is one NodeClaim the controller deleted, for observers.
type Expiry struct {
	// NodeClaim and Node name it (Node is empty for a claim not registered yet); NodePool is
	// its NodePool.
	NodeClaim, Node, NodePool string
	// ExpireAfter is the lifetime it outlived.
	ExpireAfter time.Duration
	// Pods is how many of its pods must move.
	Pods int
	// Reservation is the expiring capacity reservation the claim ran in, for a deletion by
	// ReservationController; empty for an expiry by expireAfter.
	Reservation string
}

// Controller deletes expired NodeClaims. Requests name NodeClaims; it is safe for concurrent
// reconciles of different claims.
type Controller struct {
	kube      client.Client
	clock     clock.Clock
	observers []func(Expiry)
}

// NewController returns the controller, reading and writing through kube and taking time from
// clk (the real clock when nil).
func NewController(kube client.Client, clk clock.Clock) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Controller{kube: kube, clock: clk}
}

// Observe adds fn to the functions told of each deletion (the simulator's log). Call it before
// the controller runs.
func (c *Controller) Observe(fn func(Expiry)) { c.observers = append(c.observers, fn) }

// Register watches NodeClaims under mgr.
func (c *Controller) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(ControllerName).For(&karpv1.NodeClaim{}).Complete(c)
}

// ExpiresAt is when the claim expires: its creation plus its spec.expireAfter (DefaultExpireAfter
// when unset); false for expireAfter Never.
func ExpiresAt(claim *karpv1.NodeClaim) (time.Time, bool) {
	after := DefaultExpireAfter
	if d := claim.Spec.ExpireAfter; !d.IsZero() {
		if d.IsNever() {
			return time.Time{}, false
		}
		after = *d.Duration
	}
	return claim.CreationTimestamp.Add(after), true
}

// Reconcile deletes the NodeClaim named by req if it has expired, and otherwise asks to be
// called when it does. Any claim expires, launched or not, initialized or not, in a dynamic or
// a static NodePool, as in Karpenter.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &karpv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if claim.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	at, ok := ExpiresAt(claim)
	if !ok {
		return reconcile.Result{}, nil
	}
	if wait := at.Sub(c.clock.Now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	// Counted before the delete: the drain starts moving them at once.
	pods := 0
	if node := claim.Status.NodeName; node != "" {
		n, err := termination.ReschedulablePodCount(ctx, c.kube, node)
		if err != nil {
			// Counted as none: the metric must not hold the expiry.
			log.FromContext(ctx).V(1).Info("listing reschedulable pods for the disruption metric", "error", err.Error())
		}
		pods = n
	}
	if err := c.kube.Delete(ctx, claim, client.Preconditions{UID: &claim.UID}); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	pool := claim.Labels[karpv1.NodePoolLabelKey]
	log.FromContext(ctx).V(1).Info("deleting expired nodeclaim", "nodeclaim", claim.Name, "node", claim.Status.NodeName,
		"nodepool", pool, "expireAfter", claim.Spec.ExpireAfter.String())
	reason, capacityType, mode := metrics.DisruptionReason(karpv1.DisruptionReasonExpired), claim.Labels[karpv1.CapacityTypeLabelKey], metrics.TerminationMode(claim)
	metrics.NodeClaimDisrupted(reason, pool, capacityType, "", mode)
	metrics.PodsDisruptionInitiated(pods, reason, pool, capacityType, "", mode)
	e := Expiry{NodeClaim: claim.Name, Node: claim.Status.NodeName, NodePool: pool, ExpireAfter: at.Sub(claim.CreationTimestamp.Time), Pods: pods}
	for _, fn := range c.observers {
		fn(e)
	}
	return reconcile.Result{}, nil
}
