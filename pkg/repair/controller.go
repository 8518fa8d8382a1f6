package repair

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/termination"
)

// ControllerName names the controller in logs and metrics: Karpenter's.
const ControllerName = "node.health"

// Karpenter's safety valve and the wait before a blocked node is looked at again.
const (
	// AllowedUnhealthy is the most of a NodePool's nodes (of the cluster's, for a NodeClaim
	// without NodePool) that may be unhealthy for repair to go on, rounded up.
	AllowedUnhealthy = "20%"
	// BlockedRequeue is when a node whose repair the safety valve blocked is looked at again.
	BlockedRequeue = 5 * time.Minute
)

// Outcome is what the controller did about an unhealthy node, for observers.
type Outcome struct {
	// Node, NodeClaim and NodePool name the node ("" for a NodeClaim without NodePool).
	Node, NodeClaim, NodePool string
	// Condition is the node's condition that matched a repair policy; Toleration the policy's.
	Condition  corev1.NodeCondition
	Toleration time.Duration
	// Blocked is why the node was not repaired (the NodeRepairBlocked message); empty when its
	// NodeClaim was deleted.
	Blocked string
}

// Controller replaces the Nodes whose conditions match a repair policy for longer than it
// tolerates; see the package documentation. Requests name Nodes. It is safe for concurrent
// reconciles of different Nodes.
type Controller struct {
	kube     client.Client
	policies []replacePolicy
	clock    clock.Clock
	events   *events.Recorder

	mu      sync.Mutex
	observe []func(Outcome)
}

// replacePolicy is a repair policy that replaces the node, its reason pattern compiled (nil
// for any reason).
type replacePolicy struct {
	cloudprovider.RepairPolicy
	reason *regexp.Regexp
}

// matches reports whether the condition has the policy's status and, when the policy has a
// reason pattern, a reason it matches.
func (p replacePolicy) matches(c *corev1.NodeCondition) bool {
	return c.Status == p.ConditionStatus && (p.reason == nil || p.reason.MatchString(c.Reason))
}

// NewController returns a repair controller with the cloud's repair policies that reads and
// writes through kubeClient, takes all time from clk (the real clock when nil) and records
// Events with recorder (which may be nil). As Karpenter's legacy controller, it only replaces:
// it keeps the policies whose action is ReplaceNode (or unset) and skips those whose reason
// pattern does not compile. The operator gives it the cloud's
// cloudprovider.LegacyRepairPolicies.
func NewController(kubeClient client.Client, cloud cloudprovider.RepairPolicyProvider, clk clock.Clock, recorder record.EventRecorder) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	var policies []replacePolicy
	for _, p := range cloud.RepairPolicies() {
		if p.Action != cloudprovider.ReplaceNode && p.Action != "" {
			continue
		}
		rp := replacePolicy{RepairPolicy: p}
		if p.ReasonRegex != "" {
			re, err := regexp.Compile(p.ReasonRegex)
			if err != nil {
				continue
			}
			rp.reason = re
		}
		policies = append(policies, rp)
	}
	return &Controller{kube: kubeClient, policies: policies, clock: clk, events: events.NewRecorder(recorder, clk)}
}

// Observe calls fn with every repair the controller makes or the safety valve blocks, as it
// happens (the simulator reports them).
func (c *Controller) Observe(fn func(Outcome)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.observe = append(c.observe, fn)
}

func (c *Controller) notify(r Outcome) {
	c.mu.Lock()
	observers := c.observe
	c.mu.Unlock()
	for _, fn := range observers {
		fn(r)
	}
}

// Register watches, under mgr, the Nodes launched from an EC2NodeClass (those Karpenter
// manages): their creation, and their updates when a condition appears, goes, or changes
// status or transition time.
func (c *Controller) Register(mgr manager.Manager) error {
	managed := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[awsv1.LabelNodeClass]
		return ok
	})
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Node{}, builder.WithPredicates(managed, predicate.Funcs{UpdateFunc: conditionsChanged})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
}

// conditionsChanged reports whether an update added or removed a Node condition, or changed
// one's status or transition time; heartbeats alone are not news.
func conditionsChanged(e event.UpdateEvent) bool {
	before, ok1 := e.ObjectOld.(*corev1.Node)
	after, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 || len(before.Status.Conditions) != len(after.Status.Conditions) {
		return true
	}
	for _, old := range before.Status.Conditions {
		cur := findCondition(after, old.Type)
		if cur == nil || cur.Status != old.Status || !cur.LastTransitionTime.Equal(&old.LastTransitionTime) {
			return true
		}
	}
	return false
}

// Reconcile repairs one Node when it is unhealthy past its policy's toleration, asks to be
// called again when a toleration will run out, and waits BlockedRequeue when the safety valve
// holds it.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	claims, err := nodeclaim.NodeClaimsByProviderID(ctx, c.kube, node.Spec.ProviderID)
	if err != nil || len(claims) != 1 {
		// Not Karpenter's, not registered yet, or ambiguous: nothing to repair.
		return reconcile.Result{}, err
	}
	claim := claims[0]
	cond, policy := c.unhealthy(node)
	if cond == nil {
		return reconcile.Result{}, nil
	}
	if left := cond.LastTransitionTime.Add(policy.TolerationDuration).Sub(c.clock.Now()); left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("node", node.Name, "nodeclaim", claim.Name))
	outcome := Outcome{Node: node.Name, NodeClaim: claim.Name, NodePool: claim.Labels[karpv1.NodePoolLabelKey], Condition: *cond, Toleration: policy.TolerationDuration}

	blocked, err := c.blocked(ctx, node, claim, outcome.NodePool)
	if err != nil {
		return reconcile.Result{}, err
	}
	if blocked != "" {
		log.FromContext(ctx).V(1).Info("node repair blocked", "reason", blocked)
		outcome.Blocked = blocked
		c.notify(outcome)
		return reconcile.Result{RequeueAfter: BlockedRequeue}, nil
	}
	if err := c.annotateTerminationTimestamp(ctx, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if claim.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	if err := c.kube.Delete(ctx, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("deleting nodeclaim of unhealthy node: %w", err))
	}
	log.FromContext(ctx).Info("deleting unhealthy node", "condition", cond.Type, "status", cond.Status, "since", cond.LastTransitionTime.Time, "toleration", policy.TolerationDuration.String())
	pods, err := termination.ReschedulablePodCount(ctx, c.kube, node.Name)
	if err != nil {
		// Counted as none: the metric must not hold the repair, which has happened.
		log.FromContext(ctx).V(1).Info("listing reschedulable pods for the disruption metric", "error", err.Error())
	}
	metrics.NodeClaimRepaired(string(cond.Type), node.Labels[karpv1.NodePoolLabelKey], node.Labels[karpv1.CapacityTypeLabelKey], claim.Status.ImageID, metrics.TerminationMode(claim), pods)
	c.events.Publish(terminatingEvents(node, claim)...)
	c.notify(outcome)
	return reconcile.Result{}, nil
}

// unhealthy returns the node's condition that matches a repair policy, and the policy, whose
// toleration runs out first; nil when none matches.
func (c *Controller) unhealthy(node *corev1.Node) (*corev1.NodeCondition, cloudprovider.RepairPolicy) {
	var worst *corev1.NodeCondition
	var policy cloudprovider.RepairPolicy
	var deadline time.Time
	for _, p := range c.policies {
		cond := findCondition(node, p.ConditionType)
		if cond == nil || !p.matches(cond) {
			continue
		}
		if at := cond.LastTransitionTime.Add(p.TolerationDuration); worst == nil || at.Before(deadline) {
			worst, policy, deadline = cond, p.RepairPolicy, at
		}
	}
	return worst, policy
}

// blocked returns why the safety valve holds the repair: more than AllowedUnhealthy of the
// NodePool's nodes (the cluster's, without NodePool) are unhealthy. It publishes the
// NodeRepairBlocked Events. It returns "" when the repair may go on.
func (c *Controller) blocked(ctx context.Context, node *corev1.Node, claim *karpv1.NodeClaim, nodePool string) (string, error) {
	// The nodes are only read: no copy of each cached Node on every reconcile of an unhealthy
	// one, as Karpenter lists them.
	opts := []client.ListOption{client.UnsafeDisableDeepCopy}
	if nodePool != "" {
		opts = append(opts, client.MatchingLabels{karpv1.NodePoolLabelKey: nodePool})
	}
	nodes := &corev1.NodeList{}
	if err := c.kube.List(ctx, nodes, opts...); err != nil {
		return "", fmt.Errorf("listing nodes: %w", err)
	}
	// A node is counted unhealthy when a condition matches a policy, however long it has held.
	unhealthy := 0
	for i := range nodes.Items {
		if cond, _ := c.unhealthy(&nodes.Items[i]); cond != nil {
			unhealthy++
		}
	}
	allowed := intstr.FromString(AllowedUnhealthy)
	threshold, err := intstr.GetScaledValueFromIntOrPercent(&allowed, len(nodes.Items), true)
	if err != nil {
		return "", err
	}
	if unhealthy <= threshold {
		return "", nil
	}
	if nodePool == "" {
		message := clusterBlockedMessage()
		c.events.Publish(blockedEvents(node, claim, nil, message)...)
		return message, nil
	}
	np := &karpv1.NodePool{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: nodePool}, np); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return "", fmt.Errorf("reading nodepool %s: %w", nodePool, err)
		}
		np = nil
	}
	message := nodePoolBlockedMessage()
	c.events.Publish(blockedEvents(node, claim, np, message)...)
	return message, nil
}

// annotateTerminationTimestamp makes the claim's termination forceful: its
// karpenter.sh/nodeclaim-termination-timestamp becomes now, unless it already holds an earlier
// time.
func (c *Controller) annotateTerminationTimestamp(ctx context.Context, claim *karpv1.NodeClaim) error {
	now := c.clock.Now()
	if v, ok := claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		if t, err := time.Parse(time.RFC3339, v); err == nil && t.Before(now) {
			return nil
		}
	}
	base := claim.DeepCopy()
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	stamp := now.UTC().Format(time.RFC3339)
	claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = stamp
	if err := c.kube.Patch(ctx, claim, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("annotating termination timestamp: %w", err)
	}
	log.FromContext(ctx).Info("annotated nodeclaim", karpv1.NodeClaimTerminationTimestampAnnotationKey, stamp)
	return nil
}

// findCondition returns the node's condition of the type, or nil.
func findCondition(node *corev1.Node, typ corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == typ {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}
