package nodeclaim

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// registration finds the claim's Node and, the first time, registers it. It returns the Node
// (nil when none has joined). A registered claim whose Node is deleting or gone is left to the
// termination controller, which deletes it (res.nodeGone).
func (c *LifecycleController) registration(ctx context.Context, claim *karpv1.NodeClaim, res *result) (*corev1.Node, error) {
	if claim.Status.ProviderID == "" {
		// As Karpenter's: no provider ID, no Node of it.
		c.setCondition(claim, karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, ReasonNodeNotFound, "Node not registered with cluster")
		return nil, nil
	}
	nodes, err := NodesByProviderID(ctx, c.kube, claim.Status.ProviderID)
	if err != nil {
		return nil, fmt.Errorf("finding node: %w", err)
	}
	registered := isTrue(claim, karpv1.ConditionTypeRegistered)
	if registered && (len(nodes) == 0 || allDeleting(nodes)) {
		res.nodeGone = true
		return nil, nil
	}
	switch {
	case len(nodes) == 0:
		c.setCondition(claim, karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, ReasonNodeNotFound, "Node not registered with cluster")
		return nil, nil
	case len(nodes) > 1:
		if !registered {
			c.setCondition(claim, karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, ReasonMultipleNodesFound,
				"nodes "+strings.Join(nodeNames(nodes), ", ")+" have provider id "+claim.Status.ProviderID)
		}
		return nil, fmt.Errorf("finding node: %d nodes have provider id %s", len(nodes), claim.Status.ProviderID)
	}
	node := nodes[0]
	if registered {
		return node, nil
	}
	if node.DeletionTimestamp != nil {
		// Never register a node on its way out; a new one may come.
		c.setCondition(claim, karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, ReasonNodeNotFound, "node "+node.Name+" is being deleted")
		return nil, nil
	}

	if _, synced := node.Labels[karpv1.NodeRegisteredLabelKey]; !synced && !hasUnregisteredTaint(node) {
		log.FromContext(ctx).Error(errors.New("missing taint prevents registration-related race conditions on Karpenter-managed nodes"),
			"node claim registration error", "taint", karpv1.UnregisteredTaintKey)
		c.events.Publish(unregisteredTaintMissingEvent(claim))
	}
	if c.opts.HoldRegistration != nil && c.clock.Since(node.CreationTimestamp.Time) < MaxRegistrationHold && c.opts.HoldRegistration(claim.Name) {
		// What BeforeRegister does while the claim waits need not be done when the batch
		// registers: the nodes then open to pods together, not one announcement apart.
		if c.opts.BeforeRegister != nil {
			c.opts.BeforeRegister(ctx, claim, node)
		}
		c.setCondition(claim, karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, ReasonAwaitingBatch,
			"node "+node.Name+" waits for the nodes launched with it, and the pods planned for it, to take pods together")
		res.requeue(min(registrationHoldPoll, MaxRegistrationHold-c.clock.Since(node.CreationTimestamp.Time)))
		return nil, nil
	}
	if c.opts.BeforeRegister != nil {
		c.opts.BeforeRegister(ctx, claim, node)
	}
	updated := node.DeepCopy()
	syncNode(updated, claim)
	if !equality.Semantic.DeepEqual(node, updated) {
		if err := c.kube.Update(ctx, updated); err != nil {
			return nil, fmt.Errorf("registering node %s: %w", node.Name, err)
		}
	}
	claim.Status.NodeName = updated.Name
	c.setCondition(claim, karpv1.ConditionTypeRegistered, metav1.ConditionTrue, ReasonRegistered, "")
	res.onWrite(func() {
		metrics.NodeRegistered(claim.Labels[karpv1.NodePoolLabelKey], updated.Labels[corev1.LabelTopologyZone])
		log.FromContext(ctx).Info("registered nodeclaim", "node", updated.Name)
		c.events.normal(claim, EventReasonRegistered, "Registered node %s", updated.Name)
		if c.opts.RegistrationHealth != nil {
			// The claim stays registered whatever happens here, so there is nothing to retry:
			// the NodePool's health misses one outcome.
			if err := c.opts.RegistrationHealth.Registered(ctx, claim); err != nil {
				log.FromContext(ctx).Error(err, "recording the registration in the nodepool's health")
			}
		}
	})
	return updated, nil
}

// syncNode makes node what a registered node of claim is: the claim's labels plus
// karpenter.sh/registered, the claim's taints and startup taints (unless the node opts out
// with karpenter.sh/do-not-sync-taints), no karpenter.sh/unregistered taint, the termination
// finalizer, and an owner reference to the claim.
//
// The owner reference is not a controller reference: the Node is created by its kubelet, not
// by Karpenter, and a cloud's own node controller may control it. It makes the Node show
// which claim it belongs to and lets Kubernetes' garbage collector delete the Node should the
// claim vanish without finalization.
func syncNode(node *corev1.Node, claim *karpv1.NodeClaim) {
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	for k, v := range claim.Labels {
		node.Labels[k] = v
	}
	node.Labels[karpv1.NodeRegisteredLabelKey] = "true"

	if node.Labels[karpv1.NodeDoNotSyncTaintsLabelKey] != "true" {
		for _, group := range [][]corev1.Taint{claim.Spec.Taints, claim.Spec.StartupTaints} {
			for _, t := range group {
				if !hasTaint(node.Spec.Taints, t) {
					node.Spec.Taints = append(node.Spec.Taints, t)
				}
			}
		}
	}
	kept := node.Spec.Taints[:0]
	for _, t := range node.Spec.Taints {
		if t.Key != karpv1.UnregisteredTaintKey {
			kept = append(kept, t)
		}
	}
	node.Spec.Taints = kept
	if len(node.Spec.Taints) == 0 {
		node.Spec.Taints = nil
	}

	controllerutil.AddFinalizer(node, karpv1.TerminationFinalizer)

	for _, ref := range node.OwnerReferences {
		if ref.UID == claim.UID {
			return
		}
	}
	node.OwnerReferences = append(node.OwnerReferences, metav1.OwnerReference{
		APIVersion: karpv1.SchemeGroupVersion.String(),
		Kind:       "NodeClaim",
		Name:       claim.Name,
		UID:        claim.UID,
	})
}

// hasTaint reports whether taints has one with t's key and effect (the value may differ, as
// Kubernetes matches taints).
func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for i := range taints {
		if taints[i].MatchTaint(&t) {
			return true
		}
	}
	return false
}

func allDeleting(nodes []*corev1.Node) bool {
	for _, n := range nodes {
		if n.DeletionTimestamp == nil {
			return false
		}
	}
	return true
}

// nodeNames returns the nodes' names, for messages.
func nodeNames(nodes []*corev1.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	return out
}

// hasUnregisteredTaint reports whether node carries the karpenter.sh/unregistered:NoExecute
// taint its kubelet registers it with.
func hasUnregisteredTaint(node *corev1.Node) bool {
	return hasTaint(node.Spec.Taints, corev1.Taint{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute})
}
