// Package v1 holds the karpenter.k8s.aws/v1 API: EC2NodeClass, the AWS settings of the nodes a
// NodePool launches (image, subnets, security groups, IAM, user data, kubelet, disks, metadata
// options, tags) and, in its status, what those selectors resolved to.
//
// Field names, defaults and validation follow Karpenter's AWS provider v1, so existing manifests
// apply unchanged. The package is inert: it imports nothing else of this project.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1
