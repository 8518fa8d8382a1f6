package v1alpha5

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Provisioner is the legacy (Karpenter v0.x) description of the nodes Karpenter may launch.
// Replaced by NodePool (karpenter.sh/v1) and EC2NodeClass; convert with `karpenter convert legacy`.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=provisioners,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="karpenter.sh/v1alpha5 Provisioner is replaced by karpenter.sh/v1 NodePool; run `karpenter convert legacy` to migrate"
// +kubebuilder:printcolumn:name="Template",type="string",JSONPath=".spec.providerRef.name"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type Provisioner struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired shape of the nodes.
	Spec ProvisionerSpec `json:"spec,omitempty"`
	// Status is what Karpenter v0.x observed.
	Status ProvisionerStatus `json:"status,omitempty"`
}

// ProvisionerSpec is the legacy node template, limits and deprovisioning settings.
type ProvisionerSpec struct {
	// Annotations are put on each node.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels are put on each node.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are put on each node.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on each node at creation, for another controller to remove.
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements narrow the nodes that may be launched.
	// +optional
	Requirements []corev1.NodeSelectorRequirement `json:"requirements,omitempty"`
	// KubeletConfiguration holds kubelet settings for the nodes.
	// +optional
	KubeletConfiguration *KubeletConfiguration `json:"kubeletConfiguration,omitempty"`
	// Provider is the inline cloud-provider configuration (for AWS, the fields of
	// karpenter.k8s.aws/v1alpha1 AWS). Mutually exclusive with ProviderRef.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Provider *runtime.RawExtension `json:"provider,omitempty"`
	// ProviderRef names an AWSNodeTemplate with the cloud-provider configuration.
	// +optional
	ProviderRef *MachineTemplateRef `json:"providerRef,omitempty"`
	// TTLSecondsAfterEmpty removes a node this long after its last workload pod left.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	TTLSecondsAfterEmpty *int64 `json:"ttlSecondsAfterEmpty,omitempty"`
	// TTLSecondsUntilExpired replaces a node this long after it was created.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	TTLSecondsUntilExpired *int64 `json:"ttlSecondsUntilExpired,omitempty"`
	// Limits caps the resources of all the Provisioner's nodes.
	// +optional
	Limits *Limits `json:"limits,omitempty"`
	// Weight orders Provisioners; the highest is tried first.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
	// Consolidation turns on removal and replacement of underused nodes.
	// +optional
	Consolidation *Consolidation `json:"consolidation,omitempty"`
}

// MachineTemplateRef names the provider template object.
type MachineTemplateRef struct {
	// Kind of the referent, AWSNodeTemplate by default.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the referent.
	// +required
	Name string `json:"name"`
	// APIVersion of the referent, karpenter.k8s.aws/v1alpha1 by default.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
}

// KubeletConfiguration is the legacy kubelet settings block.
type KubeletConfiguration struct {
	// ClusterDNS is the list of DNS server IPs.
	// +optional
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// ContainerRuntime was "dockerd" or "containerd".
	// +optional
	ContainerRuntime *string `json:"containerRuntime,omitempty"`
	// MaxPods caps the pods per node.
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`
	// PodsPerCore caps pods per vCPU.
	// +optional
	PodsPerCore *int32 `json:"podsPerCore,omitempty"`
	// SystemReserved resources for OS daemons.
	// +optional
	SystemReserved corev1.ResourceList `json:"systemReserved,omitempty"`
	// KubeReserved resources for Kubernetes daemons.
	// +optional
	KubeReserved corev1.ResourceList `json:"kubeReserved,omitempty"`
	// EvictionHard thresholds.
	// +optional
	EvictionHard map[string]string `json:"evictionHard,omitempty"`
	// EvictionSoft thresholds.
	// +optional
	EvictionSoft map[string]string `json:"evictionSoft,omitempty"`
	// EvictionSoftGracePeriod per soft threshold.
	// +optional
	EvictionSoftGracePeriod map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	// EvictionMaxPodGracePeriod in seconds.
	// +optional
	EvictionMaxPodGracePeriod *int32 `json:"evictionMaxPodGracePeriod,omitempty"`
	// ImageGCHighThresholdPercent triggers image garbage collection.
	// +optional
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent is what image garbage collection frees down to.
	// +optional
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// CPUCFSQuota enables CPU CFS quota enforcement.
	// +optional
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`
}

// Limits caps a Provisioner's total resources.
type Limits struct {
	// Resources maps resource names to the most the Provisioner's nodes may hold.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// Consolidation is the legacy consolidation switch.
type Consolidation struct {
	// Enabled turns consolidation on.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// ProvisionerStatus is what Karpenter v0.x observed.
type ProvisionerStatus struct {
	// LastScaleTime is when the Provisioner last launched or removed a node.
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
	// Conditions of the Provisioner.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Resources sums the capacity of the Provisioner's nodes.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// ProvisionerList is a list of Provisioners.
//
// +kubebuilder:object:root=true
type ProvisionerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Provisioners.
	Items []Provisioner `json:"items"`
}
