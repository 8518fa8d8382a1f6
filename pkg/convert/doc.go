// Package convert owns what the `karpenter convert` translators share: reading a YAML stream of
// input documents (expanding Lists and remembering where each came from), strict decoding that
// reports unknown fields, the list of input errors a converter returns all at once, and the
// rendering of the result as one YAML stream or as files in a directory (written in full or not
// at all).
//
// The translators themselves live in subpackages, each pure (no cloud, no cluster) and golden
// tested:
//
//	kops    kOps Cluster + InstanceGroups → EC2NodeClass + NodePool (as kOps 1.36 generates them),
//	        or the legacy Provisioner + AWSNodeTemplate of kOps ≤ 1.33
//	legacy  v1alpha5 Provisioner + v1alpha1 AWSNodeTemplate → v1 NodePool + EC2NodeClass
//	eksctl  eksctl ClusterConfig → Helm values, CloudFormation and a starter NodePool
//
// Imports point one way: the subpackages import this package and pkg/apis, nothing else of
// ours; this package imports only pkg/apis.
package convert
