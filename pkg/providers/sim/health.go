package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// NodeCondition is a condition the Node of a simulated instance reports because of a fault, as
// its kubelet or the EKS node monitoring agent would: Ready False or Unknown (a failing or
// vanished kubelet), KernelReady False (a kernel fault), AcceleratedHardwareReady False (a GPU
// fault), and so on. The Kubelet writes it onto the Node, with Since as its lastTransitionTime.
type NodeCondition struct {
	// Type and Status are the condition's, such as KernelReady and False.
	Type   corev1.NodeConditionType
	Status corev1.ConditionStatus
	// Reason and Message explain it; empty ones take a default (for Ready Unknown the node
	// lifecycle controller's NodeStatusUnknown, "Kubelet stopped posting node status.").
	Reason, Message string
	// Since is when the Node began reporting it; zero means when the fault is injected.
	Since time.Time
}

// Default reasons and messages of NodeCondition.
const (
	// ReasonNodeStatusUnknown is the node lifecycle controller's reason for Ready Unknown.
	ReasonNodeStatusUnknown = "NodeStatusUnknown"
	// ReasonKubeletNotReady is the kubelet's reason for Ready False.
	ReasonKubeletNotReady = "KubeletNotReady"
	// ReasonSimulatedFault is the reason of any other injected condition.
	ReasonSimulatedFault = "SimulatedFault"
)

// withDefaults fills an empty reason and message.
func (c NodeCondition) withDefaults() NodeCondition {
	switch {
	case c.Reason != "":
	case c.Type == corev1.NodeReady && c.Status == corev1.ConditionUnknown:
		c.Reason, c.Message = ReasonNodeStatusUnknown, "Kubelet stopped posting node status."
	case c.Type == corev1.NodeReady:
		c.Reason = ReasonKubeletNotReady
	default:
		c.Reason = ReasonSimulatedFault
	}
	if c.Message == "" {
		c.Message = fmt.Sprintf("the simulated cloud reports %s %s", c.Type, c.Status)
	}
	return c
}

// validate reports a condition without a type or with a status other than True, False or
// Unknown.
func (c NodeCondition) validate() error {
	if c.Type == "" {
		return errors.New("node condition: type is required")
	}
	switch c.Status {
	case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		return nil
	}
	return fmt.Errorf("node condition %s: status %q is not True, False or Unknown", c.Type, c.Status)
}

// RepairPolicies returns the policies of Karpenter's AWS provider v1.15.2
// (cloudprovider.EC2RepairPolicies): the simulated cloud plays EC2, whose nodes report the same
// conditions (a fault injected with MakeUnhealthy or the fault plan), so node repair treats
// them as on AWS: Ready False or Unknown replaced after 30 minutes, drained for at most 10;
// AcceleratedHardwareReady False after 10 minutes (drain 5) when its reason names a known GPU
// XID error, else 30 (drain 10); StorageReady, NetworkingReady, KernelReady and
// ContainerRuntimeReady False after 30 (drain 10). With Options.RebootForRepair the GPU faults a
// reboot clears reboot the node (Reboot) instead of replacing it.
func (c *Cloud) RepairPolicies() []cloudprovider.RepairPolicy {
	return cloudprovider.EC2RepairPolicies(c.rebootForRepair)
}

// LegacyRepairPolicies returns the AWS provider's policies for the legacy node repair
// controller (--legacy-node-repair): cloudprovider.LegacyEC2RepairPolicies.
func (c *Cloud) LegacyRepairPolicies() []cloudprovider.RepairPolicy {
	return cloudprovider.LegacyEC2RepairPolicies()
}

// MakeUnhealthy makes the Node of the live instance with the provider ID report cond from
// cond.Since (now when zero) on, replacing an earlier fault of the same condition type: the
// Kubelet writes it at its next step, and a Ready fault also stops the Node taking or starting
// pods (and, when Unknown, finishing the deletion of its pods, as a vanished kubelet would).
// It returns *NodeClaimNotFoundError when there is no such live instance, and an error for a
// condition without a type, with a status other than True, False or Unknown, or from the
// future.
func (c *Cloud) MakeUnhealthy(providerID string, cond NodeCondition) error {
	if err := cond.validate(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	c.syncLocked(now)
	in := c.liveByProviderIDLocked(providerID)
	if in == nil {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("no instance %q", providerID))
	}
	if cond.Since.IsZero() {
		cond.Since = now
	}
	if cond.Since.After(now) {
		return fmt.Errorf("node condition %s: since %s is after now (%s)", cond.Type, cond.Since.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	cond = cond.withDefaults()
	in.conditions = append(slices.DeleteFunc(in.conditions, func(o NodeCondition) bool { return o.Type == cond.Type }), cond)
	c.dirty = true
	return nil
}

// Reboot reboots the claim's live instance in place, as EC2's RebootInstances; see
// cloudprovider.InstanceRebooter. For Options.RebootDuration its Node reports Ready False, then
// rejoins with a new boot ID. The reboot clears the faults its Node reported (those injected
// with MakeUnhealthy, and the fault plan's node failure once it has happened): every simulated
// fault is one a reboot clears; inject it again to model one that it does not. A repeated
// request for the same operationID reboots nothing. It returns *NodeClaimNotFoundError when
// there is no such live instance, and a retryable error while the instance is not running yet.
func (c *Cloud) Reboot(ctx context.Context, claim *karpv1.NodeClaim, operationID string) error {
	if claim == nil {
		return errors.New("rebooting: nil nodeclaim")
	}
	if err := c.throttle("Reboot"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.restoreLocked(ctx); err != nil {
		return err
	}
	now := c.clock.Now()
	c.syncLocked(now)
	in := c.liveByProviderIDLocked(claim.Status.ProviderID)
	if in == nil {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("rebooting: no instance %q", claim.Status.ProviderID))
	}
	if in.state(now) != InstanceStateRunning {
		return fmt.Errorf("rebooting instance %s: it is %s, not running", in.id, in.state(now))
	}
	if operationID != "" && operationID == in.rebootOperation {
		return nil
	}
	in.reboots++
	in.rebootedUntil = now.Add(c.rebootDuration)
	in.rebootOperation = operationID
	in.conditions = nil
	if !in.failAt.IsZero() && !now.Before(in.failAt) {
		in.failAt = time.Time{}
	}
	c.dirty = true
	return nil
}

// defaultNodeFailure is the condition of FaultPlan.NodeFailure's zero value: Ready Unknown, a
// node whose kubelet stopped posting its status.
var defaultNodeFailure = NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}

// nodeConditions are the faults the instance's Node reports at now: those injected, and the
// fault plan's node failure once its time has come (unless a fault of the same type was
// injected).
func (in *instance) nodeConditions(now time.Time, failure NodeCondition) []NodeCondition {
	out := slices.Clone(in.conditions)
	if !in.failAt.IsZero() && !now.Before(in.failAt) &&
		!slices.ContainsFunc(out, func(o NodeCondition) bool { return o.Type == failure.Type }) {
		failure.Since = in.failAt
		out = append(out, failure.withDefaults())
	}
	return out
}

// findFault returns the fault of the condition type, or nil.
func findFault(faults []NodeCondition, typ corev1.NodeConditionType) *NodeCondition {
	for i := range faults {
		if faults[i].Type == typ {
			return &faults[i]
		}
	}
	return nil
}
