package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CapacityBuffer asks for spare capacity: room for a number of pods of one shape, kept free on
// the cluster's nodes so that pods which arrive later start at once instead of waiting for a
// node to launch. The autoscaler places the buffer's pods as if they were pending (launching
// nodes for them when they fit nowhere) but never creates them; real pods take their room.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=capacitybuffers,scope=Namespaced,shortName=cb,categories=autoscaling
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Strategy",type="string",JSONPath=".spec.provisioningStrategy",description="The strategy to be used."
// +kubebuilder:printcolumn:name="PodTemplate",type="string",JSONPath=".status.podTemplateRef.name",description="The name of the PodTemplate used."
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".status.replicas",description="The actual number of buffer chunks."
// +kubebuilder:printcolumn:name="ConditionsType",type="string",JSONPath=".status.conditions[*].type",description="List of all condition types."
// +kubebuilder:printcolumn:name="ConditionsStatus",type="string",JSONPath=".status.conditions[*].status",description="List of all condition statuses."
// +kubebuilder:printcolumn:name="ConditionsReason",type="string",JSONPath=".status.conditions[*].reason",description="List of all condition reasons."
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="The age of the CapacityBuffer."
type CapacityBuffer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says how much spare capacity to keep, and in what shape.
	// +required
	Spec CapacityBufferSpec `json:"spec"`

	// status is what the autoscaler made of the spec: the pod shape and count it keeps room
	// for, and whether that room exists.
	// +optional
	Status CapacityBufferStatus `json:"status,omitempty"`
}

// Limits bound a buffer by the total requests of its pods, per resource.
type Limits corev1.ResourceList

// LocalObjectRef names an object in the buffer's namespace.
type LocalObjectRef struct {
	// name of the object.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ScalableRef names a workload with a scale subresource (a Deployment, StatefulSet or
// ReplicaSet) in the buffer's namespace.
type ScalableRef struct {
	// apiGroup of the workload; empty means the core group, and apps is the group of the
	// kinds autoscalers resolve.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`

	// kind of the workload: Deployment, StatefulSet or ReplicaSet.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// name of the workload.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// CapacityBufferSpec is the spare capacity wanted: the shape of one chunk (a pod), from a
// PodTemplate or a workload, and how many chunks.
// +kubebuilder:validation:XValidation:rule="!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",message="If podTemplateRef is set, replicas or limits must also be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.podTemplateRef) && has(self.scalableRef))",message="You must define either PodTemplateRef or ScalableRef, but not both"
type CapacityBufferSpec struct {
	// provisioningStrategy says how the buffer is kept. "buffer.x-k8s.io/active-capacity"
	// (the default, and the one Karpenter acts on) keeps nodes running with room for the
	// buffer's pods.
	// +default="buffer.x-k8s.io/active-capacity"
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`

	// podTemplateRef names a PodTemplate in the buffer's namespace whose pod is one chunk of
	// the buffer. Set it or scalableRef, not both.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`

	// scalableRef names a workload whose pod template is one chunk of the buffer, and whose
	// replica count a percentage is of. Set it or podTemplateRef, not both.
	// +optional
	ScalableRef *ScalableRef `json:"scalableRef,omitempty"`

	// replicas is the number of chunks. With percentage too, the larger of the two counts;
	// limits, when set, caps the result.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:ExclusiveMinimum=false
	Replicas *int32 `json:"replicas,omitempty"`

	// percentage is the number of chunks as a percentage of the scalableRef workload's
	// replicas, rounded up, and at least 1 when both are above zero. It applies only with
	// scalableRef.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:ExclusiveMinimum=false
	Percentage *int32 `json:"percentage,omitempty"`

	// limits bound the chunks by their total requests: as many as fit within every limit that
	// names a resource the pod requests. Alone, they set the count.
	// +optional
	Limits Limits `json:"limits,omitempty"`
}

// CapacityBufferStatus is the buffer as the autoscaler resolved it.
type CapacityBufferStatus struct {
	// podTemplateRef is the PodTemplate the buffer's chunks were read from (unset for a
	// scalableRef buffer).
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`

	// replicas is the number of chunks the autoscaler keeps room for.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// podTemplateGeneration is the metadata.generation of the PodTemplate read, so a reader
	// can tell whether the status follows the template's latest version.
	// +optional
	PodTemplateGeneration *int64 `json:"podTemplateGeneration,omitempty"`

	// conditions: ReadyForProvisioning (the shape and count were resolved) and Provisioning
	// (whether the buffer fits the existing capacity or needs new nodes).
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// provisioningStrategy is the strategy the status was resolved under.
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
}

// CapacityBufferList is a list of CapacityBuffers.
// +kubebuilder:object:root=true
type CapacityBufferList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the CapacityBuffers.
	Items []CapacityBuffer `json:"items"`
}
