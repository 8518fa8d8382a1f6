// Package convert owns what the `karpenter convert` translators share: reading a YAML stream of
// input documents (expanding Lists and remembering where each came from, down to the line of
// each field), telling their format, strict decoding that reports unknown fields and names the
// field of a wrong value, the list of input errors a converter returns all at once, the check of
// every output object against the project's CRDs (pkg/validation) with each refused value
// reported at the input field it was made from, and the rendering of the result as one YAML
// stream or as files in a directory (written in full or not at all).
//
// Hostile input is bounded: files of at most MaxInputBytes; YAML whose aliases expand too much,
// nested deeper than 10,000 levels, with duplicate keys, or with .nan or .inf is refused by the
// reader; every error names the file and, where there is one, the line.
//
// The translators themselves live in subpackages, each pure (no cloud, no cluster) and golden
// tested:
//
//	kops    kOps Cluster + InstanceGroups → EC2NodeClass + NodePool (as kOps 1.36 generates them),
//	        or the legacy Provisioner + AWSNodeTemplate of kOps ≤ 1.33
//	legacy  v1alpha5 Provisioner + v1alpha1 AWSNodeTemplate → v1 NodePool + EC2NodeClass
//	eksctl  eksctl ClusterConfig → Helm values, CloudFormation and a starter NodePool
//
// Imports point one way: the subpackages import this package and pkg/apis (and kops the EC2
// catalog, pkg/cloudprovider/catalog, for machine types); this package imports pkg/apis and
// pkg/validation.
package convert
