// Package v1alpha1 holds the karpenter.sh/v1alpha1 API: NodeOverlay, which adjusts what
// Karpenter believes about the instance types its requirements select (a price, a price
// adjustment, extended resources added to their capacity) for scheduling and consolidation.
//
// The fields, markers and validation rules follow Karpenter v1.15's NodeOverlay, so its
// manifests apply unchanged. The package is inert: it imports nothing else of this project.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1alpha1
