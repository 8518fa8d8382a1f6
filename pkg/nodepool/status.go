package nodepool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/requeue"
)

// Reasons of a False NodeClassReady condition (and so of a False Ready).
const (
	// ReasonNodeClassNotFound: the NodeClass named by nodeClassRef does not exist.
	ReasonNodeClassNotFound = "NodeClassNotFound"
	// ReasonNodeClassNotReady: the NodeClass exists but its Ready condition is not True.
	ReasonNodeClassNotReady = "NodeClassNotReady"
	// ReasonNodeClassTerminating: the NodeClass is being deleted.
	ReasonNodeClassTerminating = "NodeClassTerminating"
	// ReasonUnsupportedNodeClass: nodeClassRef names a group and kind other than
	// karpenter.k8s.aws EC2NodeClass.
	ReasonUnsupportedNodeClass = "UnsupportedNodeClass"
)

// NodeClassKind is the kind of the one supported NodeClass, in group karpenter.k8s.aws.
const NodeClassKind = "EC2NodeClass"

// ResourceNodes is the resource name under which status.resources (and limits) count nodes.
const ResourceNodes corev1.ResourceName = "nodes"

// baseResources are always present in status.resources, at zero when no node has them, so
// that printers and limit checks see explicit zeros.
var baseResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage, ResourceNodes,
}

// StatusController keeps each NodePool's status up to date:
//
//   - status.resources sums status.capacity over the NodePool's NodeClaims (labelled
//     karpenter.sh/nodepool=<name>) that are not being deleted, with "nodes" their count;
//     status.nodes is the same count;
//   - NodeClassReady is True when the EC2NodeClass named by nodeClassRef exists, is not being
//     deleted and is Ready;
//   - ValidationSucceeded is True when Validate passes;
//   - Ready is True when both are, else False with the reason and message of the first that
//     is not (NodeClassReady first).
//
// Conditions carry the NodePool's generation and a lastTransitionTime from the injected clock
// that moves only when their status changes. The status is written through the status
// subresource and only when it changes. A condition turning False records a Warning Event on
// the NodePool with the condition's reason.
type StatusController struct {
	kubeClient client.Client
	clock      clock.Clock
	events     *events.Recorder
}

// NewStatusController returns a StatusController that reads and writes through kubeClient and
// takes time from clk. Events go through an events.Recorder writing to recorder, which may be
// nil, in which case no Events are recorded.
func NewStatusController(kubeClient client.Client, clk clock.Clock, recorder record.EventRecorder) *StatusController {
	return &StatusController{kubeClient: kubeClient, clock: clk, events: events.NewRecorder(recorder, clk)}
}

// Reconcile brings the status of the NodePool named by req up to date. A NodePool that no
// longer exists is ignored. A status write that loses a race with another writer is retried
// after a second.
func (c *StatusController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx).WithValues("nodepool", req.Name)
	np := &karpv1.NodePool{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: req.Name}, np); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting nodepool: %w", err)
	}
	// Read-only: only their capacity is summed.
	claims := &karpv1.NodeClaimList{}
	if err := c.kubeClient.List(ctx, claims, client.MatchingLabels{karpv1.NodePoolLabelKey: np.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims: %w", err)
	}
	nodeClassReady, err := c.nodeClassCondition(ctx, np)
	if err != nil {
		return reconcile.Result{}, err
	}

	stored := np.DeepCopy()
	resources, count := sumCapacity(claims.Items)
	np.Status.Resources = resources
	np.Status.Nodes = &count
	validated := validationCondition(np)
	now := metav1.NewTime(c.clock.Now()).Rfc3339Copy()
	for _, cond := range []metav1.Condition{nodeClassReady, validated, readyCondition(nodeClassReady, validated)} {
		cond.ObservedGeneration = np.Generation
		cond.LastTransitionTime = now
		meta.SetStatusCondition(&np.Status.Conditions, cond)
	}
	if equality.Semantic.DeepEqual(stored.Status, np.Status) {
		return reconcile.Result{}, nil
	}
	if err := c.kubeClient.Status().Patch(ctx, np, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			logger.V(1).Info("nodepool changed while its status was computed, retrying")
			return reconcile.Result{RequeueAfter: requeue.ConflictDelay}, nil
		}
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("patching nodepool status: %w", err)
	}
	for _, t := range []string{karpv1.ConditionTypeNodeClassReady, karpv1.ConditionTypeValidationSucceeded, karpv1.ConditionTypeReady} {
		before := meta.FindStatusCondition(stored.Status.Conditions, t)
		after := meta.FindStatusCondition(np.Status.Conditions, t)
		if after == nil || (before != nil && before.Status == after.Status) {
			continue
		}
		logger.Info("nodepool condition changed", "type", t, "status", after.Status, "reason", after.Reason, "message", after.Message)
		// Ready only turns False with one of the others, whose Event says why.
		if after.Status == metav1.ConditionFalse && t != karpv1.ConditionTypeReady {
			c.events.Publish(conditionFalseEvent(np, t, after.Reason, after.Message))
		}
	}
	return reconcile.Result{}, nil
}

// nodeClassCondition is the NodeClassReady condition (without generation and time). It fails
// only when the NodeClass cannot be read for a reason other than its absence.
func (c *StatusController) nodeClassCondition(ctx context.Context, np *karpv1.NodePool) (metav1.Condition, error) {
	cond := metav1.Condition{Type: karpv1.ConditionTypeNodeClassReady, Status: metav1.ConditionFalse}
	ref := np.Spec.Template.Spec.NodeClassRef
	switch {
	case ref == nil:
		cond.Reason, cond.Message = ReasonNodeClassNotFound, "spec.template.spec.nodeClassRef is not set"
		return cond, nil
	case ref.Group != awsv1.Group || ref.Kind != NodeClassKind:
		cond.Reason = ReasonUnsupportedNodeClass
		cond.Message = fmt.Sprintf("nodeClassRef group %q kind %q is not supported; use group %q kind %q", ref.Group, ref.Kind, awsv1.Group, NodeClassKind)
		return cond, nil
	}
	nodeClass := &awsv1.EC2NodeClass{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: ref.Name}, nodeClass); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			cond.Reason, cond.Message = ReasonNodeClassNotFound, fmt.Sprintf("%s %q not found", NodeClassKind, ref.Name)
			return cond, nil
		}
		return cond, fmt.Errorf("getting nodeclass: %w", err)
	}
	if !nodeClass.DeletionTimestamp.IsZero() {
		cond.Reason, cond.Message = ReasonNodeClassTerminating, fmt.Sprintf("%s %q is being deleted", NodeClassKind, ref.Name)
		return cond, nil
	}
	ready := meta.FindStatusCondition(nodeClass.Status.Conditions, awsv1.ConditionTypeReady)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		cond.Reason, cond.Message = ReasonNodeClassNotReady, fmt.Sprintf("%s %q is not ready", NodeClassKind, ref.Name)
		if ready != nil && (ready.Reason != "" || ready.Message != "") {
			cond.Message += ": " + strings.TrimPrefix(ready.Reason+": "+ready.Message, ": ")
		}
		return cond, nil
	}
	cond.Status, cond.Reason = metav1.ConditionTrue, karpv1.ConditionTypeNodeClassReady
	return cond, nil
}

// validationCondition is the ValidationSucceeded condition (without generation and time).
func validationCondition(np *karpv1.NodePool) metav1.Condition {
	if err := Validate(np); err != nil {
		reason := ReasonRequirementsInvalid
		var verr *ValidationError
		if errors.As(err, &verr) {
			reason = verr.Reason
		}
		return metav1.Condition{Type: karpv1.ConditionTypeValidationSucceeded, Status: metav1.ConditionFalse, Reason: reason, Message: err.Error()}
	}
	return metav1.Condition{Type: karpv1.ConditionTypeValidationSucceeded, Status: metav1.ConditionTrue, Reason: karpv1.ConditionTypeValidationSucceeded}
}

// readyCondition rolls the others up: True when all are, else the first False one's reason
// and message.
func readyCondition(deps ...metav1.Condition) metav1.Condition {
	for _, d := range deps {
		if d.Status != metav1.ConditionTrue {
			return metav1.Condition{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: d.Reason, Message: d.Message}
		}
	}
	return metav1.Condition{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: karpv1.ConditionTypeReady}
}

// sumCapacity adds up the capacity of the claims not being deleted and counts them; the sum
// has every base resource and "nodes".
func sumCapacity(claims []karpv1.NodeClaim) (corev1.ResourceList, int64) {
	out := make(corev1.ResourceList, len(baseResources))
	for _, name := range baseResources {
		out[name] = resource.MustParse("0")
	}
	var count int64
	for i := range claims {
		if !claims[i].DeletionTimestamp.IsZero() {
			continue
		}
		count++
		for name, q := range claims[i].Status.Capacity {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	out[ResourceNodes] = *resource.NewQuantity(count, resource.DecimalSI)
	return out, count
}

// Register adds the controller to mgr, named "nodepool.status". It reconciles a NodePool when
// it changes, when one of its NodeClaims changes, and when the EC2NodeClass it references
// changes.
func (c *StatusController) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named("nodepool.status").
		For(&karpv1.NodePool{}).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(nodePoolOfClaim)).
		Watches(&awsv1.EC2NodeClass{}, handler.EnqueueRequestsFromMapFunc(nodePoolsOfNodeClass(c.kubeClient))).
		Complete(c)
}

// nodePoolOfClaim maps a NodeClaim to its NodePool, by the karpenter.sh/nodepool label.
func nodePoolOfClaim(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[karpv1.NodePoolLabelKey]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}

// nodePoolsOfNodeClass maps an EC2NodeClass to every NodePool that references it, by name,
// listing NodePools through kube.
func nodePoolsOfNodeClass(kube client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		nodePools := &karpv1.NodePoolList{}
		if err := kube.List(ctx, nodePools); err != nil {
			log.FromContext(ctx).Error(err, "listing nodepools for nodeclass", "nodeclass", o.GetName())
			return nil
		}
		var out []reconcile.Request
		for i := range nodePools.Items {
			ref := nodePools.Items[i].Spec.Template.Spec.NodeClassRef
			if ref != nil && ref.Group == awsv1.Group && ref.Kind == NodeClassKind && ref.Name == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: nodePools.Items[i].Name}})
			}
		}
		slices.SortFunc(out, func(a, b reconcile.Request) int { return strings.Compare(a.Name, b.Name) })
		return out
	}
}
