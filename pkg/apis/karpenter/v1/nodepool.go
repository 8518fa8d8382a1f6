package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool says what nodes Karpenter may launch (a template of labels, taints and
// requirements, and the NodeClass with the cloud settings), how far it may scale (limits, or a
// fixed number of replicas), which NodePool wins when several fit (weight) and how nodes may be
// disrupted later.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.nodes
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.template.spec.nodeClassRef.name",description=""
// +kubebuilder:printcolumn:name="Nodes",type="string",JSONPath=".status.nodes",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1,description=""
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=".status.resources.cpu",priority=1,description=""
// +kubebuilder:printcolumn:name="Memory",type="string",JSONPath=".status.resources.memory",priority=1,description=""
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the NodePool allows.
	// +required
	Spec NodePoolSpec `json:"spec"`
	// Status is what Karpenter observed.
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolSpec is the desired shape of a NodePool's nodes and its scaling and disruption rules.
//
// +kubebuilder:validation:XValidation:message="Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes; delete and recreate the NodePool",rule="has(self.replicas) == has(oldSelf.replicas)"
// +kubebuilder:validation:XValidation:message="only 'limits.nodes' is supported on static NodePools (replicas set)",rule="!has(self.replicas) || !has(self.limits) || self.limits.all(k, k == 'nodes')"
// +kubebuilder:validation:XValidation:message="'weight' is not supported on static NodePools (replicas set)",rule="!has(self.replicas) || !has(self.weight)"
type NodePoolSpec struct {
	// Template describes the NodeClaims (and so the nodes) this NodePool creates.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// Disruption says when and how fast Karpenter may remove or replace this NodePool's nodes.
	// +kubebuilder:default:={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption,omitzero"`
	// Limits caps the total resources (cpu, memory, nvidia.com/gpu, … and "nodes") of all nodes
	// in the NodePool. Karpenter launches nothing that would exceed them.
	// +optional
	Limits Limits `json:"limits,omitempty"`
	// Weight orders NodePools: when several could fit a pod, the highest weight is tried first.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
	// Replicas makes the NodePool static: Karpenter keeps exactly this many nodes, whatever the
	// pods need. A NodePool cannot switch between static and dynamic; recreate it instead.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	Replicas *int64 `json:"replicas,omitempty"`
}

// Limits caps the resources a NodePool may hold, keyed by resource name ("cpu", "memory",
// "nodes", …).
type Limits corev1.ResourceList

// ConsolidationPolicy says which nodes consolidation may remove.
type ConsolidationPolicy string

// The consolidation policies.
const (
	// ConsolidationPolicyWhenEmpty removes only nodes without workload pods.
	ConsolidationPolicyWhenEmpty ConsolidationPolicy = "WhenEmpty"
	// ConsolidationPolicyWhenEmptyOrUnderutilized also removes or replaces underused nodes.
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	// ConsolidationPolicyBalanced is WhenEmptyOrUnderutilized, acting on underused nodes only when
	// the saving is worth the disruption (share of cost saved ÷ share of pods moved ≥ 0.5).
	ConsolidationPolicyBalanced ConsolidationPolicy = "Balanced"
)

// Disruption says when Karpenter may disrupt a NodePool's nodes and how many at once.
type Disruption struct {
	// ConsolidateAfter is how long a node must have seen no pod added or removed before
	// consolidation may act on it, or "Never".
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:default:="0s"
	// +optional
	ConsolidateAfter NillableDuration `json:"consolidateAfter,omitzero"`
	// ConsolidationPolicy says which nodes consolidation may act on.
	// +kubebuilder:default:=WhenEmptyOrUnderutilized
	// +kubebuilder:validation:Enum:={WhenEmpty,WhenEmptyOrUnderutilized,Balanced}
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// Budgets bound how many of the NodePool's nodes may be disrupting at once. When several
	// apply, the most restrictive wins. Defaults to one budget of 10%.
	// +kubebuilder:validation:XValidation:message="'schedule' must be set with 'duration'",rule="self.all(x, has(x.schedule) == has(x.duration))"
	// +kubebuilder:default:={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems=50
	// +optional
	// +listType=atomic
	Budgets []Budget `json:"budgets,omitempty"`
}

// Budget limits how many nodes may be disrupting at once, optionally only for some reasons and
// only during a recurring window.
type Budget struct {
	// Reasons limits the budget to these disruption reasons; empty means all of them.
	// Unhealthy paces node repair (the NodeRepair feature gate), as in Karpenter v1.15; the
	// legacy node repair controller (--legacy-node-repair) does not consult budgets.
	// +kubebuilder:validation:items:Enum:={Underutilized,Empty,Drifted,Unhealthy}
	// +kubebuilder:validation:MaxItems=50
	// +listType=set
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
	// Nodes is the most nodes that may be disrupting at once: a count ("5") or a percentage of
	// the NodePool's nodes ("10%", rounded up: 10% of 3 nodes is 1).
	// +kubebuilder:validation:Pattern:="^((100|[0-9]{1,2})%|[0-9]+)$"
	// +kubebuilder:default:="10%"
	Nodes string `json:"nodes"`
	// Schedule is a cron expression (UTC; @daily style macros allowed) for when the budget
	// starts to apply. It needs a duration.
	// +kubebuilder:validation:Pattern:=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`
	// +optional
	Schedule *string `json:"schedule,omitempty"`
	// Duration is how long the budget applies after each scheduled start, such as "8h" or "1h30m".
	// +kubebuilder:validation:Pattern=`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`
	// +kubebuilder:validation:Type="string"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// NodeClaimTemplate is the template of the NodeClaims a NodePool creates.
type NodeClaimTemplate struct {
	// ObjectMeta holds the labels and annotations put on each NodeClaim and its node.
	// +optional
	ObjectMeta `json:"metadata,omitempty"`
	// Spec is the NodeClaim spec, less the resources the provisioner fills in.
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// ObjectMeta is the part of object metadata a template may set.
type ObjectMeta struct {
	// Labels are added to each node. Keys in the karpenter.sh and karpenter.k8s.aws domains are
	// reserved (but for the well-known ones) and so is kubernetes.io/hostname.
	// +kubebuilder:validation:MaxProperties=100
	// +kubebuilder:validation:XValidation:message="label keys must be qualified names: an optional lower-case DNS subdomain and '/', then 1-63 characters [A-Za-z0-9-_.] starting and ending with an alphanumeric",rule="self.all(x, x.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$'))"
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.sh\" is restricted",rule="self.all(x, x in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !x.find('^([^/]+)').endsWith('karpenter.sh'))"
	// +kubebuilder:validation:XValidation:message="label \"karpenter.sh/nodepool\" is restricted",rule="self.all(x, x != 'karpenter.sh/nodepool')"
	// +kubebuilder:validation:XValidation:message="label \"kubernetes.io/hostname\" is restricted",rule="self.all(x, x != 'kubernetes.io/hostname')"
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.k8s.aws\" is restricted",rule="self.all(x, x in ['karpenter.k8s.aws/instance-tenancy', 'karpenter.k8s.aws/capacity-reservation-id', 'karpenter.k8s.aws/capacity-reservation-type', 'karpenter.k8s.aws/capacity-reservation-interruptible', 'karpenter.k8s.aws/ec2nodeclass', 'karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/instance-capability-flex', 'karpenter.k8s.aws/placement-group-id', 'karpenter.k8s.aws/placement-group-partition'] || !x.find('^([^/]+)').endsWith('karpenter.k8s.aws'))"
	// +optional
	// +mapType=atomic
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are added to each node.
	// +optional
	// +mapType=granular
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is the part of a NodeClaim spec a NodePool template sets.
type NodeClaimTemplateSpec struct {
	// Taints are put on each node; pods must tolerate them to be placed there. Keys and values
	// are qualified names; the effect is NoSchedule, PreferNoSchedule or NoExecute.
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on each node at creation and expected to be removed by another
	// controller (a CNI or a daemon) once the node is ready. Pods need not tolerate them. They
	// are limited as Taints.
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements narrow the nodes this NodePool may launch (instance types, zones, capacity
	// types, architectures, any label). A pod must be compatible with them to use the NodePool.
	// +kubebuilder:validation:XValidation:message="requirements with operator 'In' must have a value defined",rule="self.all(x, x.operator == 'In' ? (has(x.values) && x.values.size() != 0) : true)"
	// +kubebuilder:validation:XValidation:message="requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",rule="self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (has(x.values) && x.values.size() == 1 && x.values[0].matches('^[0-9]+$') && int(x.values[0]) >= 0) : true)"
	// +kubebuilder:validation:XValidation:message="requirements with operator 'Exists' or 'DoesNotExist' must not have values",rule="self.all(x, (x.operator == 'Exists' || x.operator == 'DoesNotExist') ? (!has(x.values) || x.values.size() == 0) : true)"
	// +kubebuilder:validation:XValidation:message="requirements with 'minValues' must have at least that many values specified in the 'values' field",rule="self.all(x, (x.operator == 'In' && has(x.minValues)) ? (has(x.values) && x.values.size() >= x.minValues) : true)"
	// +kubebuilder:validation:MaxItems:=100
	// +listType=atomic
	// +optional
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements,omitempty"`
	// NodeClassRef names the cloud-specific NodeClass (for AWS an EC2NodeClass) of the nodes.
	// +kubebuilder:validation:XValidation:message="nodeClassRef.group is immutable",rule="self.group == oldSelf.group"
	// +kubebuilder:validation:XValidation:message="nodeClassRef.kind is immutable",rule="self.kind == oldSelf.kind"
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod is the longest a node may take to drain once deletion starts;
	// after it, remaining pods are deleted (even past PDBs and do-not-disrupt) and the instance
	// terminated. Unset means drain for as long as it takes.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long a node may live before Karpenter replaces it, or "Never".
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:default:="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitzero"`
}

// NodePoolStatus is what Karpenter observed about a NodePool.
type NodePoolStatus struct {
	// Resources sums the capacity of the NodePool's nodes, including a "nodes" count.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Nodes is the number of nodes (NodeClaims) the NodePool has.
	// +optional
	// +kubebuilder:default:=0
	Nodes *int64 `json:"nodes,omitempty"`
	// NodeClassObservedGeneration is the generation of the referenced NodeClass last observed;
	// when the NodeClass's generation differs, the NodeRegistrationHealthy condition is reset.
	// +optional
	NodeClassObservedGeneration int64 `json:"nodeClassObservedGeneration,omitempty"`
	// Conditions: NodeClassReady, ValidationSucceeded, the roll-up Ready, and
	// NodeRegistrationHealthy.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodePoolList is a list of NodePools.
//
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the NodePools.
	Items []NodePool `json:"items"`
}
