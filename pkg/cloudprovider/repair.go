package cloudprovider

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// RepairPolicy is a node condition that makes a node unhealthy, as Karpenter's node repair
// reads it: a Node whose condition of ConditionType has had ConditionStatus for longer than
// TolerationDuration (measured from the condition's lastTransitionTime) is beyond repair in
// place and is replaced.
type RepairPolicy struct {
	// ConditionType is the Node condition to watch, such as Ready or KernelReady.
	ConditionType corev1.NodeConditionType
	// ConditionStatus is the status that is unhealthy: False or Unknown for the conditions
	// that report health as True.
	ConditionStatus corev1.ConditionStatus
	// TolerationDuration is how long the condition may hold before the node is replaced.
	TolerationDuration time.Duration
}

// RepairPolicyProvider says which node conditions mean a node of this cloud must be replaced.
type RepairPolicyProvider interface {
	// RepairPolicies returns the cloud's repair policies, the same on every call; none means
	// the cloud offers no node repair. The slice is the caller's.
	RepairPolicies() []RepairPolicy
}

// EC2RepairPolicies are the repair policies of Karpenter's AWS provider (v1.14): the kubelet's
// Ready condition False or Unknown for 30 minutes, and the conditions the EKS node monitoring
// agent reports (accelerated hardware for 10 minutes; storage, networking, kernel and container
// runtime for 30). The AWS provider and the simulated cloud, which plays EC2, both declare them.
func EC2RepairPolicies() []RepairPolicy {
	return []RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 30 * time.Minute},
		{ConditionType: ConditionAcceleratedHardwareReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute},
		{ConditionType: ConditionStorageReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: ConditionNetworkingReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: ConditionKernelReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: ConditionContainerRuntimeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
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
