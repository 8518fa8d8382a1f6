package cloudprovider

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// RepairAction is what node repair does to a node a RepairPolicy finds unhealthy, as
// Karpenter v1.15's cloudprovider.RepairAction.
type RepairAction string

const (
	// RebootNode reboots the node's instance in place (InstanceRebooter): the node is drained,
	// its instance rebooted, and it rejoins with a new boot ID. The AWS provider v1.15.2 asks
	// for it under its RebootForRepair gate, for GPU faults a reboot clears.
	RebootNode RepairAction = "RebootNode"
	// ReplaceNode replaces the node: a replacement is launched and initialized where its pods
	// need one, then the node is drained and terminated.
	ReplaceNode RepairAction = "ReplaceNode"
)

// IsMoreDisruptiveThan reports whether a disrupts more than other: replacing more than
// rebooting. An unknown action ranks below both.
func (a RepairAction) IsMoreDisruptiveThan(other RepairAction) bool {
	return a.rank() > other.rank()
}

func (a RepairAction) rank() int {
	switch a {
	case ReplaceNode:
		return 2
	case RebootNode:
		return 1
	}
	return 0
}

// RepairPolicy is when and how node repair acts on a Node condition, as Karpenter v1.15's
// cloudprovider.RepairPolicy: a Node whose condition of ConditionType has had ConditionStatus
// (with a reason ReasonRegex matches) for longer than TolerationDuration, counted from the
// condition's lastTransitionTime, gets Action.
type RepairPolicy struct {
	// ConditionType is the Node condition to watch, such as Ready or KernelReady.
	ConditionType corev1.NodeConditionType
	// ConditionStatus is the status that is unhealthy: False or Unknown for the conditions
	// that report health as True.
	ConditionStatus corev1.ConditionStatus
	// ReasonRegex is a Go regular expression the condition's reason must match (anywhere in
	// it, as regexp.MatchString). Empty makes the policy the set's one default: it applies to
	// any condition type and status the set names when no policy of that type and status
	// matches the reason.
	ReasonRegex string
	// TolerationDuration is how long the condition may hold before the policy applies.
	TolerationDuration time.Duration
	// TerminationGracePeriod bounds the drain of a replaced node: nil leaves its NodeClaim's
	// terminationGracePeriod (if any) to bound it; a positive value bounds it to the least of
	// this and the NodeClaim's; zero terminates it at once, without draining.
	TerminationGracePeriod *time.Duration
	// Priority (0 to 100) orders the repair of nodes: higher first. Only the order of the
	// values counts.
	Priority int
	// Action is what repair does: ReplaceNode or RebootNode.
	Action RepairAction
}

// RepairPolicyProvider says which node conditions mean a node of this cloud must be repaired.
type RepairPolicyProvider interface {
	// RepairPolicies returns the cloud's repair policies, the same on every call; none means
	// the cloud offers no node repair. The slice is the caller's.
	RepairPolicies() []RepairPolicy
}

// LegacyRepairPolicyProvider is a cloud whose repair policies for Karpenter's legacy node
// repair controller (--legacy-node-repair) differ from RepairPolicies, as the AWS provider's
// WithLegacyRepairPolicies option makes them.
type LegacyRepairPolicyProvider interface {
	// LegacyRepairPolicies returns the policies the legacy controller repairs by.
	LegacyRepairPolicies() []RepairPolicy
}

// LegacyRepairPolicies returns the policies Karpenter's legacy node repair controller uses for
// the cloud: its LegacyRepairPolicies when it has them, else its RepairPolicies.
func LegacyRepairPolicies(cloud RepairPolicyProvider) RepairPolicyProvider {
	if l, ok := cloud.(LegacyRepairPolicyProvider); ok {
		return legacyPolicies{l}
	}
	return cloud
}

type legacyPolicies struct{ cloud LegacyRepairPolicyProvider }

func (l legacyPolicies) RepairPolicies() []RepairPolicy { return l.cloud.LegacyRepairPolicies() }

// EC2RepairPolicies are the repair policies of Karpenter's AWS provider v1.15.2
// (pkg/cloudprovider CloudProvider.RepairPolicies), all of priority 0; rebootForRepair is its
// RebootForRepair gate:
//
//   - the kubelet's Ready False or Unknown, for 30 minutes: replace, the drain bounded to 10;
//   - the EKS node monitoring agent's AcceleratedHardwareReady False with a reason naming a
//     GPU XID error a reboot clears (46, 48, 54, 62, 63, 95, 109, 110, 136, 140, 143, 155,
//     156, 158), for 10 minutes: reboot with rebootForRepair, else replace, the drain bounded
//     to 5;
//   - AcceleratedHardwareReady False naming a fatal XID (64, 74, 79, 119, 120), for 10
//     minutes: replace, drain 5;
//   - AcceleratedHardwareReady False with any other reason, for 30 minutes: replace, drain
//     10 (the set's default policy);
//   - StorageReady, NetworkingReady, KernelReady and ContainerRuntimeReady False, for 30
//     minutes: replace, drain 10.
func EC2RepairPolicies(rebootForRepair bool) []RepairPolicy {
	replace := func(t corev1.NodeConditionType, s corev1.ConditionStatus, regex string, toleration, drain time.Duration) RepairPolicy {
		return RepairPolicy{ConditionType: t, ConditionStatus: s, ReasonRegex: regex, TolerationDuration: toleration,
			TerminationGracePeriod: &drain, Action: ReplaceNode}
	}
	rebootClearable := replace(ConditionAcceleratedHardwareReady, corev1.ConditionFalse, `.*XID(46|48|54|62|63|95|109|110|136|140|143|155|156|158).*`, 10*time.Minute, 5*time.Minute)
	if rebootForRepair {
		rebootClearable.Action = RebootNode
	}
	return []RepairPolicy{
		replace(corev1.NodeReady, corev1.ConditionFalse, ".*", 30*time.Minute, 10*time.Minute),
		replace(corev1.NodeReady, corev1.ConditionUnknown, ".*", 30*time.Minute, 10*time.Minute),
		rebootClearable,
		replace(ConditionAcceleratedHardwareReady, corev1.ConditionFalse, `.*XID(64|74|79|119|120).*`, 10*time.Minute, 5*time.Minute),
		replace(ConditionAcceleratedHardwareReady, corev1.ConditionFalse, "", 30*time.Minute, 10*time.Minute),
		replace(ConditionStorageReady, corev1.ConditionFalse, ".*", 30*time.Minute, 10*time.Minute),
		replace(ConditionNetworkingReady, corev1.ConditionFalse, ".*", 30*time.Minute, 10*time.Minute),
		replace(ConditionKernelReady, corev1.ConditionFalse, ".*", 30*time.Minute, 10*time.Minute),
		replace(ConditionContainerRuntimeReady, corev1.ConditionFalse, ".*", 30*time.Minute, 10*time.Minute),
	}
}

// LegacyEC2RepairPolicies are the repair policies of Karpenter's AWS provider before node
// repair became a disruption method (v1.14), which v1.15.2 keeps for the legacy controller
// (--legacy-node-repair): Ready False or Unknown for 30 minutes, the node monitoring agent's
// AcceleratedHardwareReady False for 10, StorageReady, NetworkingReady, KernelReady and
// ContainerRuntimeReady False for 30; any reason, no drain bound (the legacy controller
// terminates forcefully), all replacing the node.
func LegacyEC2RepairPolicies() []RepairPolicy {
	replace := func(t corev1.NodeConditionType, s corev1.ConditionStatus, toleration time.Duration) RepairPolicy {
		return RepairPolicy{ConditionType: t, ConditionStatus: s, TolerationDuration: toleration, Action: ReplaceNode}
	}
	return []RepairPolicy{
		replace(corev1.NodeReady, corev1.ConditionFalse, 30*time.Minute),
		replace(corev1.NodeReady, corev1.ConditionUnknown, 30*time.Minute),
		replace(ConditionAcceleratedHardwareReady, corev1.ConditionFalse, 10*time.Minute),
		replace(ConditionStorageReady, corev1.ConditionFalse, 30*time.Minute),
		replace(ConditionNetworkingReady, corev1.ConditionFalse, 30*time.Minute),
		replace(ConditionKernelReady, corev1.ConditionFalse, 30*time.Minute),
		replace(ConditionContainerRuntimeReady, corev1.ConditionFalse, 30*time.Minute),
	}
}

// The Node conditions the EKS node monitoring agent reports, each True while its part of the
// node is healthy.
const (
	// ConditionAcceleratedHardwareReady: the GPUs or Neuron devices (NVIDIA XID errors, …).
	ConditionAcceleratedHardwareReady corev1.NodeConditionType = "AcceleratedHardwareReady"
	// ConditionStorageReady: the disks and file systems (I/O errors, a read-only root, …).
	ConditionStorageReady corev1.NodeConditionType = "StorageReady"
	// ConditionNetworkingReady: the interfaces, routes and the CNI (IPAMD, …).
	ConditionNetworkingReady corev1.NodeConditionType = "NetworkingReady"
	// ConditionKernelReady: the kernel (soft lockups, a full conntrack table, …).
	ConditionKernelReady corev1.NodeConditionType = "KernelReady"
	// ConditionContainerRuntimeReady: containerd and the kubelet's view of it.
	ConditionContainerRuntimeReady corev1.NodeConditionType = "ContainerRuntimeReady"
)
