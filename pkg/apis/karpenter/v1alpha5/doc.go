// Package v1alpha5 holds the legacy karpenter.sh/v1alpha5 Provisioner, which Karpenter v0.x
// (and kOps up to 1.33) used before NodePool. It is served so that old manifests still apply and
// read by `karpenter convert legacy`, which writes the v1 equivalents; the controllers do not
// act on it.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1alpha5
