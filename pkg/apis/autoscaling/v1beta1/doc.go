// Package v1beta1 holds the autoscaling.x-k8s.io/v1beta1 API: CapacityBuffer, spare capacity an
// autoscaler keeps ready ahead of demand, in the shape of a pod template or of a workload's
// pods. It is the API the Kubernetes autoscalers share (Cluster Autoscaler defines it); Karpenter
// v1.15 serves this version, v1beta1, alone, with the same schema, so a buffer written for
// either applies unchanged here. The package is inert: it imports nothing else of this project.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1beta1
