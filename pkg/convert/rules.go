package convert

import "strings"

// ReservedTag reports whether Karpenter refuses a tag key in an EC2NodeClass's tags: empty,
// kubernetes.io/cluster…, eks:eks-cluster-name, and the tags Karpenter sets itself
// (karpenter.sh/nodepool, karpenter.sh/nodeclaim, karpenter.k8s.aws/ec2nodeclass).
func ReservedTag(key string) bool {
	if key == "" || strings.HasPrefix(key, "kubernetes.io/cluster") {
		return true
	}
	switch key {
	case "eks:eks-cluster-name", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass":
		return true
	}
	return false
}
