// Package eksctl turns an eksctl ClusterConfig (eksctl.io/v1alpha5) with a karpenter section
// into what that cluster needs to run Karpenter, as `eksctl create cluster` would set it up:
// the Helm values (with the interruption queue under its current name, settings.interruptionQueue,
// which eksctl gets wrong for Karpenter ≥ 0.32), a CloudFormation template with the node IAM
// role and instance profile, the controller policy, and (with withSpotInterruptionQueue) the
// SQS queue and its four EventBridge rules, and a starter NodePool and EC2NodeClass selecting
// the cluster's karpenter.sh/discovery tags, which eksctl leaves to the user.
//
// It owns the minimal ClusterConfig types, eksctl's validation of the karpenter section with
// eksctl's messages, and eksctl's version comparison.
package eksctl
