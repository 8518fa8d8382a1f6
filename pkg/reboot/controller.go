package reboot

import (
	"context"
	"fmt"
	"slices"
	"sync"
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
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// ControllerName names the controller in logs: Karpenter's.
const ControllerName = "nodeclaim.reboot"

// The reboot's timings, Karpenter v1.15.0's.
const (
	// ObservationWindow is how long after its issue a rebooted node has to report a new boot
	// ID and be Ready.
	ObservationWindow = 20 * time.Minute
	// PollInterval is how often a reboot under way is looked at.
	PollInterval = 15 * time.Second
	// IssuanceTimeout is how long the cloud is asked to accept the reboot, from the end of
	// the drain.
	IssuanceTimeout = 5 * time.Minute
	// MinDrainTime is the least a drain takes, a forceful one aside, so that pods bound late
	// are evicted too.
	MinDrainTime = 5 * time.Second
)

// Drainer drains a Node without deleting its NodeClaim (termination.Controller.Drain).
type Drainer interface {
	// Drain makes one pass of the drain and reports whether the Node is drained and, when it
	// is not, how soon to look again.
	Drain(ctx context.Context, claim *karpv1.NodeClaim, node *corev1.Node, deadline *time.Time) (bool, time.Duration, error)
}

// Controller carries out committed reboots; see the package documentation. Requests name
// NodeClaims. It is safe for concurrent reconciles of different NodeClaims.
type Controller struct {
	kube    client.Client
	cloud   cloudprovider.InstanceRebooter
	drainer Drainer
	clock   clock.Clock
	events  *events.Recorder

	// issuing is when each NodeClaim's drain ended and the cloud was first asked: the start of
	// its IssuanceTimeout. It is the process's own, as Karpenter's: after a restart the
	// timeout starts again.
	mu      sync.Mutex
	issuing map[types.UID]time.Time
}

// NewController returns a reboot controller that reads and writes through kubeClient, reboots
// through cloud, drains through drainer, takes all time from clk (the real clock when nil) and
// records Events with recorder (which may be nil).
func NewController(kubeClient client.Client, cloud cloudprovider.InstanceRebooter, drainer Drainer, clk clock.Clock, recorder record.EventRecorder) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Controller{kube: kubeClient, cloud: cloud, drainer: drainer, clock: clk, events: events.NewRecorder(recorder, clk), issuing: map[types.UID]time.Time{}}
}

// Register watches, under mgr, the NodeClaims that have a Rebooting condition.
func (c *Controller) Register(mgr manager.Manager) error {
	rebooting := predicate.NewPredicateFuncs(func(o client.Object) bool {
		claim, ok := o.(*karpv1.NodeClaim)
		return ok && meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeRebooting) != nil
	})
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(rebooting)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
}

// Reconcile moves the NodeClaim's reboot on one step; see the package documentation. It
// returns a RequeueAfter while the reboot is under way.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName(ControllerName).WithValues("nodeclaim", req.Name))
	claim := &karpv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	cond := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeRebooting)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return reconcile.Result{}, nil
	}
	if claim.DeletionTimestamp != nil {
		c.forget(claim.UID) // termination has it
		return reconcile.Result{}, nil
	}
	node, err := c.nodeOf(ctx, claim)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := c.clock.Now()
	if node == nil {
		// The Node may come back: wait for it until the phase's deadline (from the request
		// when the drain never ran for want of a Node).
		deadline, ok := c.deadline(claim, cond)
		if !ok {
			deadline = cond.LastTransitionTime.Add(IssuanceTimeout)
		}
		if now.After(deadline) {
			result, msg := deadlineResult(cond)
			return c.fail(ctx, claim, nil, cond, result, msg)
		}
		return reconcile.Result{RequeueAfter: PollInterval}, nil
	}
	if deadline, ok := c.deadline(claim, cond); ok && now.After(deadline) {
		result, msg := deadlineResult(cond)
		return c.fail(ctx, claim, node, cond, result, msg)
	}
	switch cond.Reason {
	case karpv1.RebootReasonRequested:
		return c.requested(ctx, claim, node, cond)
	case karpv1.RebootReasonIssued:
		return c.issued(ctx, claim, node, cond)
	}
	return reconcile.Result{}, nil
}

// requested fences and drains the Node, then asks the cloud to reboot it.
func (c *Controller) requested(ctx context.Context, claim *karpv1.NodeClaim, node *corev1.Node, cond *metav1.Condition) (reconcile.Result, error) {
	bound, err := drainBound(claim)
	if err != nil {
		return c.fail(ctx, claim, node, cond, metrics.RebootInvalidRequest, fmt.Sprintf("invalid reboot request: %v", err))
	}
	if node, err = c.setTaint(ctx, node, true); err != nil {
		return reconcile.Result{}, err
	}
	preBootID, issuing := claim.Annotations[karpv1.RebootPreBootIDAnnotationKey]
	if issuing {
		if node.Status.NodeInfo.BootID != preBootID {
			// It rebooted already: observe it, without asking again.
			return c.markIssued(ctx, claim, node, cond)
		}
		c.startIssuing(claim.UID) // again, after a restart
	} else {
		if res, done, err := c.drain(ctx, claim, node, cond, bound); err != nil || !done {
			return res, err
		}
		c.startIssuing(claim.UID)
		if node.Status.NodeInfo.BootID != "" {
			base := claim.DeepCopy()
			if claim.Annotations == nil {
				claim.Annotations = map[string]string{}
			}
			claim.Annotations[karpv1.RebootPreBootIDAnnotationKey] = node.Status.NodeInfo.BootID
			if err := c.kube.Patch(ctx, claim, client.MergeFrom(base)); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
		}
	}
	if err := c.cloud.Reboot(ctx, claim, operationID(claim, cond)); err != nil {
		switch {
		case cloudprovider.IsNodeRebootNotImplementedError(err):
			return c.fail(ctx, claim, node, cond, metrics.RebootProviderError, "reboot not implemented by the cloud provider")
		case cloudprovider.IsNodeRebootFailedError(err), cloudprovider.IsNodeClaimNotFoundError(err):
			return c.fail(ctx, claim, node, cond, metrics.RebootProviderError, fmt.Sprintf("reboot rejected by the cloud provider: %s", err))
		}
		return reconcile.Result{}, fmt.Errorf("issuing reboot: %w", err) // retried until IssuanceTimeout
	}
	return c.markIssued(ctx, claim, node, cond)
}

// drain drains the Node for the reboot: at least MinDrainTime from the request and, with a
// bound, at most that from the request (at least MinDrainTime), after which the pods left ride
// the reboot; a bound of zero skips it.
func (c *Controller) drain(ctx context.Context, claim *karpv1.NodeClaim, node *corev1.Node, cond *metav1.Condition, bound *time.Duration) (reconcile.Result, bool, error) {
	if bound != nil && *bound == 0 {
		return reconcile.Result{}, true, nil
	}
	requested := cond.LastTransitionTime.Time
	var deadline *time.Time
	if bound != nil {
		d := requested.Add(max(*bound, MinDrainTime))
		deadline = &d
	}
	drained, wait, err := c.drainer.Drain(ctx, claim, node, deadline)
	if err != nil {
		return reconcile.Result{}, false, fmt.Errorf("draining node %s: %w", node.Name, err)
	}
	now := c.clock.Now()
	if !drained {
		// Look again when the drain asks, at most a PollInterval on.
		next := PollInterval
		if wait > 0 {
			next = min(wait, PollInterval)
		}
		if deadline == nil {
			return reconcile.Result{RequeueAfter: next}, false, nil
		}
		if left := deadline.Sub(now); left > 0 {
			return reconcile.Result{RequeueAfter: min(next, left)}, false, nil
		}
		return reconcile.Result{}, true, nil // the bound is over: the pods left ride the reboot
	}
	if left := requested.Add(MinDrainTime).Sub(now); left > 0 {
		return reconcile.Result{RequeueAfter: left}, false, nil
	}
	return reconcile.Result{}, true, nil
}

// markIssued records that the cloud accepted the reboot: Rebooting's reason RebootIssued, and
// Initialized Unknown (Rebooting) for the NodeClaim and the Node.
func (c *Controller) markIssued(ctx context.Context, claim *karpv1.NodeClaim, node *corev1.Node, cond *metav1.Condition) (reconcile.Result, error) {
	base := claim.DeepCopy()
	now := metav1.NewTime(c.clock.Now())
	issued := *cond
	issued.Reason = karpv1.RebootReasonIssued
	meta.SetStatusCondition(&claim.Status.Conditions, issued)
	meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionUnknown,
		Reason: karpv1.RebootReasonRebooting, Message: "node is rebooting", ObservedGeneration: claim.Generation, LastTransitionTime: now})
	if err := c.kube.Status().Patch(ctx, claim, client.MergeFrom(base)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if _, err := c.dropInitializedLabel(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	log.FromContext(ctx).Info("issued node reboot", "node", node.Name)
	return reconcile.Result{RequeueAfter: PollInterval}, nil
}

// issued watches the rebooted Node come back: a new boot ID lifts the fence, and Ready too
// ends the reboot.
func (c *Controller) issued(ctx context.Context, claim *karpv1.NodeClaim, node *corev1.Node, cond *metav1.Condition) (reconcile.Result, error) {
	node, err := c.dropInitializedLabel(ctx, node) // again, after a restart
	if err != nil {
		return reconcile.Result{}, err
	}
	rebooted := node.Status.NodeInfo.BootID != claim.Annotations[karpv1.RebootPreBootIDAnnotationKey]
	if !rebooted {
		return reconcile.Result{RequeueAfter: PollInterval}, nil
	}
	if node, err = c.setTaint(ctx, node, false); err != nil {
		return reconcile.Result{}, err
	}
	c.events.Publish(rebootEvent(claim, cond, corev1.EventTypeNormal, EventReasonRebootObserved, "New boot observed (bootID changed); awaiting node readiness"))
	if !state.NodeReady(node) {
		return reconcile.Result{RequeueAfter: PollInterval}, nil
	}
	now := c.clock.Now()
	recovery := time.Duration(-1)
	if init := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeInitialized); init != nil && init.Status == metav1.ConditionUnknown {
		recovery = now.Sub(init.LastTransitionTime.Time)
	}
	if err := c.end(ctx, claim, karpv1.RebootReasonSucceeded, "node rebooted and rejoined the cluster"); err != nil {
		return reconcile.Result{}, err
	}
	metrics.RebootEnded(metrics.RebootSucceeded, now.Sub(cond.LastTransitionTime.Time), recovery)
	log.FromContext(ctx).Info("node rebooted", "node", node.Name)
	return reconcile.Result{}, nil
}

// fail ends a failed reboot: its fence lifted and, but for an invalid request, the node
// replaced (its NodeClaim deleted, its drain bounded by the reboot's), as Karpenter's.
func (c *Controller) fail(ctx context.Context, claim *karpv1.NodeClaim, node *corev1.Node, cond *metav1.Condition, result, msg string) (reconcile.Result, error) {
	if node != nil {
		if _, err := c.setTaint(ctx, node, false); err != nil {
			return reconcile.Result{}, err
		}
	}
	now := c.clock.Now()
	if result == metrics.RebootInvalidRequest {
		if err := c.end(ctx, claim, karpv1.RebootReasonFailed, msg); err != nil {
			return reconcile.Result{}, err
		}
	} else {
		if bound, err := drainBound(claim); err == nil && bound != nil {
			if err := nodeclaim.TightenTerminationTimestamp(ctx, c.kube, claim, now.Add(*bound)); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			// The deletion below is of the claim as bounded.
			if err := c.kube.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
		}
		if err := c.kube.Delete(ctx, claim, client.Preconditions{ResourceVersion: &claim.ResourceVersion}); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		c.forget(claim.UID)
		log.FromContext(ctx).Info("reboot failed, replacing node", "result", result, "reason", msg)
	}
	c.events.Publish(rebootEvent(claim, cond, corev1.EventTypeWarning, EventReasonRebootFailed, msg))
	metrics.RebootEnded(result, now.Sub(cond.LastTransitionTime.Time), -1)
	return reconcile.Result{}, nil
}

// end turns Rebooting False with the reason, drops the pre-boot ID and, since the disruption is
// over, the DisruptionReason condition; both writes are optimistically locked, so a stale
// reconcile does not end a reboot twice.
func (c *Controller) end(ctx context.Context, claim *karpv1.NodeClaim, reason, msg string) error {
	c.forget(claim.UID)
	if _, ok := claim.Annotations[karpv1.RebootPreBootIDAnnotationKey]; ok {
		base := claim.DeepCopy()
		delete(claim.Annotations, karpv1.RebootPreBootIDAnnotationKey)
		if err := c.kube.Patch(ctx, claim, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	base := claim.DeepCopy()
	meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeRebooting, Status: metav1.ConditionFalse,
		Reason: reason, Message: msg, ObservedGeneration: claim.Generation, LastTransitionTime: metav1.NewTime(c.clock.Now())})
	meta.RemoveStatusCondition(&claim.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
	if err := c.kube.Status().Patch(ctx, claim, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	log.FromContext(ctx).Info("reboot ended", "reason", reason)
	return nil
}

// nodeOf is the claim's Node, nil when it has none.
func (c *Controller) nodeOf(ctx context.Context, claim *karpv1.NodeClaim) (*corev1.Node, error) {
	nodes, err := nodeclaim.NodesByProviderID(ctx, c.kube, claim.Status.ProviderID)
	if err != nil {
		return nil, fmt.Errorf("finding the node of nodeclaim %s: %w", claim.Name, err)
	}
	if len(nodes) == 0 {
		return nil, nil
	}
	return nodes[0], nil
}

// rebootingTaint fences a rebooting Node.
var rebootingTaint = corev1.Taint{Key: karpv1.RebootingTaintKey, Effect: corev1.TaintEffectNoSchedule}

// setTaint adds (or removes) the karpenter.sh/rebooting taint, and returns the Node as written.
func (c *Controller) setTaint(ctx context.Context, node *corev1.Node, add bool) (*corev1.Node, error) {
	has := slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&rebootingTaint) })
	if has == add {
		return node, nil
	}
	base := node.DeepCopy()
	node = node.DeepCopy()
	if add {
		node.Spec.Taints = append(node.Spec.Taints, rebootingTaint)
	} else {
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&rebootingTaint) })
	}
	if err := c.kube.Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return node, nil
		}
		return nil, fmt.Errorf("fencing node %s for its reboot: %w", node.Name, err)
	}
	return node, nil
}

// dropInitializedLabel removes the Node's karpenter.sh/initialized label.
func (c *Controller) dropInitializedLabel(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	if _, ok := node.Labels[karpv1.NodeInitializedLabelKey]; !ok {
		return node, nil
	}
	base := node.DeepCopy()
	node = node.DeepCopy()
	delete(node.Labels, karpv1.NodeInitializedLabelKey)
	if err := c.kube.Patch(ctx, node, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("unlabelling node %s initialized: %w", node.Name, err)
	}
	return node, nil
}

// deadline is the end of the reboot's phase: ObservationWindow after its issue (the
// Initialized condition's turn to Unknown) once issued, else IssuanceTimeout after the cloud
// was first asked; false while there is none yet (draining).
func (c *Controller) deadline(claim *karpv1.NodeClaim, cond *metav1.Condition) (time.Time, bool) {
	if cond.Reason == karpv1.RebootReasonIssued {
		if init := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeInitialized); init != nil && init.Status == metav1.ConditionUnknown {
			return init.LastTransitionTime.Add(ObservationWindow), true
		}
		return time.Time{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	started, ok := c.issuing[claim.UID]
	return started.Add(IssuanceTimeout), ok
}

// deadlineResult is the result and message of a phase that ran out of time.
func deadlineResult(cond *metav1.Condition) (string, string) {
	if cond.Reason == karpv1.RebootReasonIssued {
		return metrics.RebootRecoveryTimeout, "node did not recover within the observation window"
	}
	return metrics.RebootProviderError, "reboot was not issued within the issuance timeout"
}

func (c *Controller) startIssuing(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.issuing[uid]; !ok {
		c.issuing[uid] = c.clock.Now()
	}
}

func (c *Controller) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.issuing, uid)
}

// drainBound reads the karpenter.sh/reboot-termination-grace-period annotation: nil when absent
// (an unbounded drain), zero to skip the drain.
func drainBound(claim *karpv1.NodeClaim) (*time.Duration, error) {
	v, ok := claim.Annotations[karpv1.RebootTerminationGracePeriodAnnotationKey]
	if !ok {
		return nil, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return nil, fmt.Errorf("parsing reboot termination grace period %q: %w", v, err)
	}
	if d < 0 {
		return nil, fmt.Errorf("reboot termination grace period must be non-negative, got %q", v)
	}
	return &d, nil
}

// operationID names one reboot, the same across retries and restarts.
func operationID(claim *karpv1.NodeClaim, cond *metav1.Condition) string {
	return fmt.Sprintf("%s-%d-%s", claim.UID, cond.LastTransitionTime.UnixNano(), claim.Annotations[karpv1.RebootPreBootIDAnnotationKey])
}
