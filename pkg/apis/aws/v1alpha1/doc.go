// Package v1alpha1 holds the legacy karpenter.k8s.aws/v1alpha1 AWSNodeTemplate and the AWS
// provider block that v1alpha5 Provisioners carried inline. Karpenter v0.x (and kOps up to 1.33)
// used them; `karpenter convert legacy` turns them into an EC2NodeClass. The controllers do not
// act on them.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1alpha1
