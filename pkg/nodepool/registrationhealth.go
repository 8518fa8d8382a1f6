package nodepool

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/requeue"
)

// RegistrationHealthControllerName names the controller in logs and metrics.
const RegistrationHealthControllerName = "nodepool.registrationhealth"

// Karpenter's window of registration outcomes per NodePool, and the share of failures in it
// that makes the NodePool unhealthy.
const (
	// RegistrationHealthWindow is how many of a NodePool's latest outcomes are kept.
	RegistrationHealthWindow = 4
	// unhealthyFailures is how many failures among them make the NodePool unhealthy: half the
	// window, counted against the whole window even when fewer outcomes are known yet.
	unhealthyFailures = RegistrationHealthWindow / 2
)

// Reasons of the NodeRegistrationHealthy condition.
const (
	// ReasonNodeRegistrationHealthy: the latest outcomes are healthy.
	ReasonNodeRegistrationHealthy = karpv1.ConditionTypeNodeRegistrationHealthy
	// ReasonAwaitingReconciliation: the NodePool or its NodeClass changed, nothing is known of
	// registrations since (Karpenter's reason for a condition it resets).
	ReasonAwaitingReconciliation = "AwaitingReconciliation"
	// ReasonRegistrationFailed: launched NodeClaims failed to register. A NodeClaim that did
	// not launch gives its Launched condition's reason instead.
	ReasonRegistrationFailed = "RegistrationFailed"
)

// health is what a NodePool's outcomes say.
type health int

const (
	healthUnknown health = iota // no outcome known
	healthy
	unhealthy
)

// outcomes are a NodePool's latest registration outcomes, oldest first, at most
// RegistrationHealthWindow (true: registered).
type outcomes []bool

// add returns the outcomes with one more, the oldest dropped when the window is full; o is
// not changed.
func (o outcomes) add(registered bool) outcomes {
	out := append(make(outcomes, 0, len(o)+1), o...)
	out = append(out, registered)
	if len(out) > RegistrationHealthWindow {
		out = out[len(out)-RegistrationHealthWindow:]
	}
	return out
}

func (o outcomes) health() health {
	if len(o) == 0 {
		return healthUnknown
	}
	failures := 0
	for _, registered := range o {
		if !registered {
			failures++
		}
	}
	if failures >= unhealthyFailures {
		return unhealthy
	}
	return healthy
}

// outcomesFor are the outcomes that make health h, as Karpenter seeds them from a condition
// it finds after a restart.
func outcomesFor(h health) outcomes {
	switch h {
	case healthy:
		return outcomes{true}
	case unhealthy:
		return make(outcomes, unhealthyFailures)
	}
	return nil
}

// RegistrationHealth keeps each NodePool's NodeRegistrationHealthy condition, as Karpenter
// does: it remembers (in memory) whether each of the NodePool's last RegistrationHealthWindow
// NodeClaims registered, as the NodeClaim lifecycle reports it (Registered,
// RegistrationFailed). The condition is
//
//   - Unknown (AwaitingReconciliation) when the NodePool is new, or its spec or its NodeClass
//     changed (the outcomes are forgotten then): Reconcile sees to that;
//   - False once half the window has failed to launch or register in time (reason
//     RegistrationFailed, or the Launched condition's reason and message of a claim that did
//     not launch);
//   - True once a claim registers and fewer than half the window failed.
//
// Only NodeClaims owned by the NodePool (by UID) count. After a restart the outcomes are seeded
// from the condition found. The condition does not make the NodePool less Ready: it tells users
// that something in its configuration stops nodes from joining.
type RegistrationHealth struct {
	kube  client.Client
	clock clock.Clock

	mu       sync.Mutex
	outcomes map[types.UID]outcomes
}

// NewRegistrationHealth returns a RegistrationHealth that reads and writes NodePools through
// kube and takes time from clk (the real clock when nil).
func NewRegistrationHealth(kube client.Client, clk clock.Clock) *RegistrationHealth {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &RegistrationHealth{kube: kube, clock: clk, outcomes: map[types.UID]outcomes{}}
}

// Register adds the controller to mgr, named RegistrationHealthControllerName: it reconciles a
// NodePool when it changes and when the EC2NodeClass it references changes.
func (h *RegistrationHealth) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(RegistrationHealthControllerName).
		For(&karpv1.NodePool{}).
		Watches(&awsv1.EC2NodeClass{}, handler.EnqueueRequestsFromMapFunc(nodePoolsOfNodeClass(h.kube))).
		Complete(h)
}

// Reconcile resets the named NodePool's NodeRegistrationHealthy condition to Unknown, and
// forgets its outcomes, when the condition is missing or the NodePool's generation or its
// NodeClass's differs from the one the condition was set for; it records the NodeClass's
// generation in status.nodeClassObservedGeneration. NodePools whose NodeClass does not exist,
// or is not an EC2NodeClass, are left alone.
func (h *RegistrationHealth) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &karpv1.NodePool{}
	if err := h.kube.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil || ref.Group != awsv1.Group || ref.Kind != NodeClassKind {
		return reconcile.Result{}, nil
	}
	nodeClass := &awsv1.EC2NodeClass{}
	if err := h.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, nodeClass); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting nodeclass: %w", err)
	}
	stored := np.DeepCopy()
	cond := meta.FindStatusCondition(np.Status.Conditions, karpv1.ConditionTypeNodeRegistrationHealthy)

	h.mu.Lock()
	// After a restart, the outcomes start from what the condition says.
	if h.outcomes[np.UID].health() == healthUnknown && cond != nil {
		switch cond.Status {
		case metav1.ConditionTrue:
			h.outcomes[np.UID] = outcomesFor(healthy)
		case metav1.ConditionFalse:
			h.outcomes[np.UID] = outcomesFor(unhealthy)
		}
	}
	if cond == nil || np.Status.NodeClassObservedGeneration != nodeClass.Generation || cond.ObservedGeneration != np.Generation {
		h.setCondition(np, metav1.ConditionUnknown, ReasonAwaitingReconciliation, "object is awaiting reconciliation")
		delete(h.outcomes, np.UID)
	}
	h.mu.Unlock()

	np.Status.NodeClassObservedGeneration = nodeClass.Generation
	if err := h.patchStatus(ctx, stored, np); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: requeue.ConflictDelay}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return reconcile.Result{}, nil
}

// Registered records that the NodePool's claim registered, and sets NodeRegistrationHealthy
// True unless half the window failed. A claim of no NodePool, or whose NodePool is gone or was
// recreated, counts for nothing.
func (h *RegistrationHealth) Registered(ctx context.Context, claim *karpv1.NodeClaim) error {
	return h.record(ctx, claim, true, func(np *karpv1.NodePool, after health) {
		if after == healthy {
			h.setCondition(np, metav1.ConditionTrue, ReasonNodeRegistrationHealthy, "")
		}
	})
}

// RegistrationFailed records that the NodePool's claim is deleted for not launching or not
// registering in time, and sets NodeRegistrationHealthy False when that makes half the window
// failures: with reason RegistrationFailed when the claim launched, else its Launched
// condition's reason and message. A claim of no NodePool, or whose NodePool is gone or was
// recreated, counts for nothing.
func (h *RegistrationHealth) RegistrationFailed(ctx context.Context, claim *karpv1.NodeClaim) error {
	return h.record(ctx, claim, false, func(np *karpv1.NodePool, after health) {
		if after != unhealthy || meta.IsStatusConditionFalse(np.Status.Conditions, karpv1.ConditionTypeNodeRegistrationHealthy) {
			return
		}
		reason, message := ReasonRegistrationFailed, "Failed to register node"
		if launched := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeLaunched); launched == nil || launched.Status != metav1.ConditionTrue {
			reason, message = "LaunchFailed", ""
			if launched != nil {
				reason, message = launched.Reason, launched.Message
			}
		}
		h.setCondition(np, metav1.ConditionFalse, reason, message)
	})
}

// record adds an outcome of claim to its NodePool's window, after applying update (given the
// NodePool and the health the window would have with the outcome) and writing the NodePool's
// status when that changed it. The outcome is added only once the status is written, so that
// a failed write may be retried by the caller without counting twice.
func (h *RegistrationHealth) record(ctx context.Context, claim *karpv1.NodeClaim, registered bool, update func(np *karpv1.NodePool, after health)) error {
	name := claim.Labels[karpv1.NodePoolLabelKey]
	if name == "" {
		return nil
	}
	var uid types.UID
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		np := &karpv1.NodePool{}
		if err := h.kube.Get(ctx, types.NamespacedName{Name: name}, np); err != nil {
			return err
		}
		if !ownedBy(claim, np) {
			uid = ""
			return nil
		}
		uid = np.UID
		stored := np.DeepCopy()
		h.mu.Lock()
		after := h.outcomes[np.UID].add(registered).health()
		h.mu.Unlock()
		update(np, after)
		return h.patchStatus(ctx, stored, np)
	})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("recording registration health of nodepool %s: %w", name, err)
	}
	if uid != "" {
		h.mu.Lock()
		h.outcomes[uid] = h.outcomes[uid].add(registered)
		h.mu.Unlock()
	}
	return nil
}

// setCondition sets the NodeRegistrationHealthy condition at the NodePool's generation; its
// transition time moves only when its status changes.
func (h *RegistrationHealth) setCondition(np *karpv1.NodePool, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&np.Status.Conditions, metav1.Condition{
		Type:               karpv1.ConditionTypeNodeRegistrationHealthy,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: np.Generation,
		LastTransitionTime: metav1.NewTime(h.clock.Now()).Rfc3339Copy(),
	})
}

// patchStatus writes np's status when it differs from stored's, failing on a conflicting
// write by someone else.
func (h *RegistrationHealth) patchStatus(ctx context.Context, stored, np *karpv1.NodePool) error {
	if equality.Semantic.DeepEqual(stored.Status, np.Status) {
		return nil
	}
	return h.kube.Status().Patch(ctx, np, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
}

// ownedBy reports whether claim's owner references name np (by UID): a claim of an earlier
// NodePool of the same name does not count for this one.
func ownedBy(claim *karpv1.NodeClaim, np *karpv1.NodePool) bool {
	for _, ref := range claim.OwnerReferences {
		if ref.Kind == "NodePool" && ref.UID == np.UID {
			return true
		}
	}
	return false
}
