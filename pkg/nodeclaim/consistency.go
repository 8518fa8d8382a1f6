package nodeclaim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/requeue"
)

// ConsistencyControllerName names the consistency controller in logs and metrics.
const ConsistencyControllerName = "nodeclaim.consistency"

// ConsistencyScanPeriod is how often a NodeClaim's Node is checked, as Karpenter: a claim is
// checked at most once in a period, however often it or its Node changes.
const ConsistencyScanPeriod = 10 * time.Minute

// Reasons of the ConsistentStateFound condition, as Karpenter's.
const (
	// ReasonConsistentStateFound: every check passed.
	ReasonConsistentStateFound = karpv1.ConditionTypeConsistentStateFound
	// ReasonConsistencyCheckFailed: a check found an issue (a FailedConsistencyCheck Event
	// names it).
	ReasonConsistencyCheckFailed = "ConsistencyCheckFailed"
)

// minShapeFraction is the least fraction of a resource the claim expected (status.capacity)
// that its Node may report before the node shape check fails.
const minShapeFraction = 0.90

// ConsistencyController checks that a launched NodeClaim's Node is what the claim expected, as
// Karpenter's nodeclaim.consistency controller does, and records the outcome in the claim's
// ConsistentStateFound condition: True when every check passes, False (reason
// ConsistencyCheckFailed) when one fails, with a FailedConsistencyCheck Warning Event per issue.
//
// There is one check, the node shape: for each resource the claim's pods requested
// (spec.resources.requests), an initialized, not deleting claim's Node must report at least 90%
// of the capacity the claim expected (status.capacity). A Node that comes up much smaller than
// its instance type (a wrong memory overhead, a disabled device) shows up here.
//
// Claims without a provider ID are left alone; those whose Node has not joined, or has several
// Nodes, are passed over until their next scan. Each claim is scanned at most once per
// ConsistencyScanPeriod (the first scan happens when it is first reconciled with a provider
// ID), and the scans are remembered in memory only, as Karpenter's.
type ConsistencyController struct {
	kube   client.Client
	clock  clock.Clock
	events *events.Recorder

	mu sync.Mutex
	// scanned is when each claim was last scanned; swept is when scans a period old were last
	// dropped from it.
	scanned map[types.UID]time.Time
	swept   time.Time
}

// NewConsistencyController returns a consistency controller that reads and writes through
// kube, takes time from clk (the real clock when nil) and records Events with rec (which may
// be nil).
func NewConsistencyController(kube client.Client, clk clock.Clock, rec record.EventRecorder) *ConsistencyController {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &ConsistencyController{kube: kube, clock: clk, events: events.NewRecorder(rec, clk), scanned: map[types.UID]time.Time{}}
}

// Register watches NodeClaims, and Nodes mapped to their NodeClaims, under mgr.
func (c *ConsistencyController) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(ConsistencyControllerName).
		For(&karpv1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(claimsForNode(c.kube))).
		WithOptions(controller.Options{MaxConcurrentReconciles: DefaultMaxConcurrentReconciles}).
		Complete(c)
}

// Reconcile scans the NodeClaim named by req unless it was scanned less than
// ConsistencyScanPeriod ago, in which case it asks to be called when the period ends.
func (c *ConsistencyController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &karpv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if claim.Status.ProviderID == "" {
		return reconcile.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("nodeclaim", claim.Name, "node", claim.Status.NodeName))
	if wait := c.untilNextScan(claim.UID); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	nodes, err := NodesByProviderID(ctx, c.kube, claim.Status.ProviderID)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("finding node: %w", err)
	}
	c.markScanned(claim.UID)
	if len(nodes) != 1 {
		// No Node yet, or several: the lifecycle controller reports the latter.
		return reconcile.Result{}, nil
	}

	stored := claim.DeepCopy()
	issues := nodeShapeIssues(nodes[0], claim)
	for _, issue := range issues {
		log.FromContext(ctx).Info("failed consistency check", "issue", issue)
		c.events.Publish(failedConsistencyCheckEvent(claim, issue))
	}
	switch {
	case len(issues) > 0:
		setCondition(claim, c.clock.Now(), karpv1.ConditionTypeConsistentStateFound, metav1.ConditionFalse, ReasonConsistencyCheckFailed, "Consistency Check Failed")
	case !isTrue(claim, karpv1.ConditionTypeConsistentStateFound):
		setCondition(claim, c.clock.Now(), karpv1.ConditionTypeConsistentStateFound, metav1.ConditionTrue, ReasonConsistentStateFound, "")
	}
	if !equality.Semantic.DeepEqual(stored.Status, claim.Status) {
		if err := c.kube.Status().Patch(ctx, claim, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			switch {
			case apierrors.IsNotFound(err):
				return reconcile.Result{}, nil
			case apierrors.IsConflict(err):
				// Scan again soon, on the claim as it is now.
				c.forget(claim.UID)
				return reconcile.Result{RequeueAfter: requeue.ConflictDelay}, nil
			}
			return reconcile.Result{}, fmt.Errorf("patching nodeclaim status: %w", err)
		}
	}
	return reconcile.Result{RequeueAfter: ConsistencyScanPeriod}, nil
}

// untilNextScan is how long the claim must wait for its next scan; zero when it is due.
func (c *ConsistencyController) untilNextScan(uid types.UID) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.scanned[uid]
	if !ok {
		return 0
	}
	if wait := ConsistencyScanPeriod - c.clock.Since(last); wait > 0 {
		return wait
	}
	return 0
}

// markScanned records a scan of the claim now. Once a period it forgets the scans a period old
// (those of claims that are gone among them), so that the map holds at most two periods of
// scans and each scan does not walk it.
func (c *ConsistencyController) markScanned(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if now.Sub(c.swept) >= ConsistencyScanPeriod {
		for k, at := range c.scanned {
			if now.Sub(at) >= ConsistencyScanPeriod {
				delete(c.scanned, k)
			}
		}
		c.swept = now
	}
	c.scanned[uid] = now
}

// forget drops the scan of the claim with uid, so that the next reconcile scans it. Scans of
// claims that are gone are dropped by markScanned.
func (c *ConsistencyController) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.scanned, uid)
}

// nodeShapeIssues is Karpenter's node shape check: for each resource the claim's pods requested,
// an initialized claim's Node must have at least 90% of the capacity the claim expected. It
// returns one issue per resource short of that, in Karpenter's words; none for a deleting or
// uninitialized claim.
func nodeShapeIssues(node *corev1.Node, claim *karpv1.NodeClaim) []string {
	if !claim.DeletionTimestamp.IsZero() || !claim.IsInitialized() {
		return nil
	}
	var issues []string
	for _, name := range slices.Sorted(maps.Keys(claim.Spec.Resources.Requests)) {
		requested := claim.Spec.Resources.Requests[name]
		expected := claim.Status.Capacity[name]
		if requested.IsZero() || expected.IsZero() {
			continue
		}
		found := node.Status.Capacity[name]
		fraction := found.AsApproximateFloat64() / expected.AsApproximateFloat64()
		if fraction < minShapeFraction {
			issues = append(issues, fmt.Sprintf("expected %s of resource %s, but found %s (%0.1f%% of expected)",
				expected.String(), name, found.String(), fraction*100))
		}
	}
	return issues
}
