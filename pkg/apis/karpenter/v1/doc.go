// Package v1 holds the karpenter.sh/v1 API: NodePool, which says what nodes Karpenter may
// create and how it may disrupt them, and NodeClaim, one requested node and its lifecycle.
//
// The field names, defaults and validation rules follow Karpenter v1, so manifests written for
// Karpenter apply unchanged. The package is inert: it imports nothing else of this project.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1
