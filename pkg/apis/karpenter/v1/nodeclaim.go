package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim is one node Karpenter asked for: the requirements it must meet and, once launched,
// the instance that meets them. NodePools create NodeClaims; a NodeClaim's lifecycle runs
// Launched → Registered → Initialized, and deleting it drains and terminates the node.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type",description=""
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=".metadata.labels.karpenter\\.sh/capacity-type",description=""
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone",description=""
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.nodeName",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="ImageID",type="string",JSONPath=".status.imageID",priority=1,description=""
// +kubebuilder:printcolumn:name="ID",type="string",JSONPath=".status.providerID",priority=1,description=""
// +kubebuilder:printcolumn:name="NodePool",type="string",JSONPath=".metadata.labels.karpenter\\.sh/nodepool",priority=1,description=""
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.nodeClassRef.name",priority=1,description=""
// +kubebuilder:printcolumn:name="Drifted",type="string",JSONPath=".status.conditions[?(@.type==\"Drifted\")].status",priority=1,description=""
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the node must be. It is immutable.
	// +required
	Spec NodeClaimSpec `json:"spec"`
	// Status is what was launched.
	Status NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimSpec is what a requested node must be.
//
// +kubebuilder:validation:XValidation:message="spec is immutable",rule="self == oldSelf"
type NodeClaimSpec struct {
	// Taints are put on the node. Keys and values are qualified names; the effect is
	// NoSchedule, PreferNoSchedule or NoExecute.
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on the node at creation, for another controller to remove.
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements the instance must meet; the cloud provider picks among the instance types
	// and offerings that do.
	// +kubebuilder:validation:XValidation:message="requirements with operator 'In' must have a value defined",rule="self.all(x, x.operator == 'In' ? (has(x.values) && x.values.size() != 0) : true)"
	// +kubebuilder:validation:XValidation:message="requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",rule="self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (has(x.values) && x.values.size() == 1 && int(x.values[0]) >= 0) : true)"
	// +kubebuilder:validation:XValidation:message="requirements with 'minValues' must have at least that many values specified in the 'values' field",rule="self.all(x, (x.operator == 'In' && has(x.minValues)) ? (has(x.values) && x.values.size() >= x.minValues) : true)"
	// +kubebuilder:validation:MaxItems:=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// Resources are the requests of the pods the claim was made for (plus daemonset overhead).
	// +optional
	Resources ResourceRequirements `json:"resources,omitzero"`
	// NodeClassRef names the NodeClass with the cloud settings.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod is the longest the node may take to drain; see NodeClaimTemplateSpec.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long the node may live before it is replaced, or "Never".
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:default:="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitzero"`
}

// ResourceRequirements holds the resources a NodeClaim must provide.
type ResourceRequirements struct {
	// Requests are the minimum resources the node must have allocatable.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// Operators of NodePool and NodeClaim requirements beyond Kubernetes' own (In, NotIn, Exists,
// DoesNotExist, Gt and Lt), as in Karpenter v1.9 and later. Pods' node affinity cannot use them.
const (
	// NodeSelectorOpGte: the label's value is an integer greater than or equal to the value.
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	// NodeSelectorOpLte: the label's value is an integer less than or equal to the value.
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)

// NodeSelectorRequirementWithMinValues is a node selector requirement that may also demand
// flexibility: at least MinValues distinct values of Key among the instance types chosen.
type NodeSelectorRequirementWithMinValues struct {
	// Key is the label the requirement is about.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +kubebuilder:validation:XValidation:message="label domain \"kubernetes.io\" is restricted",rule="self in ['beta.kubernetes.io/instance-type', 'failure-domain.beta.kubernetes.io/region', 'beta.kubernetes.io/os', 'beta.kubernetes.io/arch', 'failure-domain.beta.kubernetes.io/zone', 'topology.kubernetes.io/zone', 'topology.kubernetes.io/region', 'node.kubernetes.io/instance-type', 'kubernetes.io/arch', 'kubernetes.io/os', 'node.kubernetes.io/windows-build'] || self.find('^([^/]+)').endsWith('node.kubernetes.io') || self.find('^([^/]+)').endsWith('node-restriction.kubernetes.io') || !self.find('^([^/]+)').endsWith('kubernetes.io')"
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.sh\" is restricted",rule="self in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !self.find('^([^/]+)').endsWith('karpenter.sh')"
	// +kubebuilder:validation:XValidation:message="label \"kubernetes.io/hostname\" is restricted",rule="self != 'kubernetes.io/hostname'"
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.k8s.aws\" is restricted",rule="self in ['karpenter.k8s.aws/instance-tenancy', 'karpenter.k8s.aws/capacity-reservation-id', 'karpenter.k8s.aws/capacity-reservation-type', 'karpenter.k8s.aws/capacity-reservation-interruptible', 'karpenter.k8s.aws/ec2nodeclass', 'karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/instance-capability-flex', 'karpenter.k8s.aws/placement-group-id', 'karpenter.k8s.aws/placement-group-partition'] || !self.find('^([^/]+)').endsWith('karpenter.k8s.aws')"
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte
	// or Lte. Gt and Lt are exclusive integer bounds, Gte and Lte inclusive ones.
	// +kubebuilder:validation:Enum:={In,NotIn,Exists,DoesNotExist,Gt,Lt,Gte,Lte}
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values for In and NotIn (any number) and Gt, Lt, Gte and Lte (one non-negative integer).
	// In a NodePool they must be label values. A NodeClaim's are not limited: they may come
	// from pods' node affinity, whose values Kubernetes does not limit.
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
	// MinValues is the least number of distinct values of Key the chosen instance types must
	// span, so that a launch keeps that much flexibility.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// NodeClassReference names a cloud-specific NodeClass object.
type NodeClassReference struct {
	// Kind of the NodeClass, such as EC2NodeClass.
	// +kubebuilder:validation:XValidation:message="kind may not be empty",rule="self != ''"
	// +required
	Kind string `json:"kind"`
	// Name of the NodeClass.
	// +kubebuilder:validation:XValidation:message="name may not be empty",rule="self != ''"
	// +required
	Name string `json:"name"`
	// Group of the NodeClass, such as karpenter.k8s.aws.
	// +kubebuilder:validation:XValidation:message="group may not be empty",rule="self != ''"
	// +kubebuilder:validation:Pattern=`^[^/]*$`
	// +required
	Group string `json:"group"`
}

// NodeClaimStatus is what was launched for a NodeClaim.
type NodeClaimStatus struct {
	// NodeName is the name of the node that registered for the claim.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID identifies the instance, as the node's spec.providerID will.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID is the machine image the instance runs.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the instance's estimated capacity.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is the instance's estimated allocatable capacity.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Conditions: Launched, Registered, Initialized, Drifted, Consolidatable, Ready, …
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastPodEventTime is when a pod was last bound to or removed from the node; consolidation
	// waits consolidateAfter from it.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitzero"`
}

// NodeClaimList is a list of NodeClaims.
//
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the NodeClaims.
	Items []NodeClaim `json:"items"`
}

// IsRebooting reports whether the NodeClaim's Rebooting condition is True: node repair
// committed a reboot of its node that has not ended.
func (in *NodeClaim) IsRebooting() bool {
	return meta.IsStatusConditionTrue(in.Status.Conditions, ConditionTypeRebooting)
}

// IsInitialized reports whether the NodeClaim's Initialized condition is True: its Node is
// registered, Ready, without startup taints and with every extended resource it asked for.
func (in *NodeClaim) IsInitialized() bool {
	return meta.IsStatusConditionTrue(in.Status.Conditions, ConditionTypeInitialized)
}
