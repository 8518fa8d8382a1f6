package nodeclaim

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// initialization marks a registered claim Initialized, and its Node
// karpenter.sh/initialized=true, once the Node is Ready, free of the claim's startup taints and
// has every extended resource the claim's capacity lists. An initialized claim stays
// initialized, but for a reboot: initialization holds for one boot, so the reboot controller
// (package reboot) makes it Unknown once the reboot is issued, and it is taken afresh, as
// Karpenter's, once the reboot has ended, not while it is under way (the node, still up before
// it reboots, would pass the checks).
func (c *LifecycleController) initialization(ctx context.Context, claim *karpv1.NodeClaim, node *corev1.Node, res *result) error {
	if claim.IsInitialized() || claim.IsRebooting() {
		return nil
	}
	if node == nil || !isTrue(claim, karpv1.ConditionTypeRegistered) {
		// As Karpenter's, which leaves the condition as first set until registration.
		c.setCondition(claim, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, ReasonAwaitingReconciliation, "object is awaiting reconciliation")
		return nil
	}
	if reason, message := notInitialized(node, claim); reason != "" {
		c.setCondition(claim, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, reason, message)
		return nil
	}
	if node.Labels[karpv1.NodeInitializedLabelKey] != "true" {
		node = node.DeepCopy()
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[karpv1.NodeInitializedLabelKey] = "true"
		if err := c.kube.Update(ctx, node); err != nil {
			return fmt.Errorf("labelling node %s initialized: %w", node.Name, err)
		}
	}
	c.setCondition(claim, karpv1.ConditionTypeInitialized, metav1.ConditionTrue, ReasonInitialized, "")
	res.onWrite(func() {
		log.FromContext(ctx).Info("initialized nodeclaim", "node", node.Name)
		c.events.normal(claim, EventReasonInitialized, "Node %s is initialized", node.Name)
	})
	return nil
}

// notInitialized says why node is not yet an initialized node of claim, or returns an empty
// reason when it is. The checks, their order, reasons and messages are Karpenter's: Ready, then
// the claim's startup taints gone, then the taints every starting node sheds (the
// kube-controller-manager's not-ready taint among them: until it goes, the kube-scheduler
// turns pods away from the node), then the claim's extended resources allocatable.
func notInitialized(node *corev1.Node, claim *karpv1.NodeClaim) (reason, message string) {
	if !state.NodeReady(node) {
		return ReasonNodeNotReady, "Node status is NotReady"
	}
	for _, t := range claim.Spec.StartupTaints {
		for i := range node.Spec.Taints {
			if t.MatchTaint(&node.Spec.Taints[i]) {
				return ReasonStartupTaintsExist, fmt.Sprintf("StartupTaint %q still exists", node.Spec.Taints[i].ToString())
			}
		}
	}
	for _, t := range node.Spec.Taints {
		if scheduling.IsKnownEphemeralTaint(t) {
			return ReasonKnownEphemeralTaintsExist, fmt.Sprintf("KnownEphemeralTaint %q still exists", t.ToString())
		}
	}
	var missing []string
	for name, q := range claim.Status.Capacity {
		if !isExtendedResource(name) || q.IsZero() {
			continue
		}
		if got, ok := node.Status.Allocatable[name]; !ok || got.IsZero() {
			missing = append(missing, string(name))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return ReasonResourceNotRegistered, fmt.Sprintf("Resource %q was requested but not registered", missing[0])
	}
	return "", ""
}

// isExtendedResource reports whether a resource is one a device plugin or the cloud's node
// agent must register, rather than one every kubelet reports from the start.
func isExtendedResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
		return false
	}
	return true
}
