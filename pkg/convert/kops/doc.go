// Package kops translates a kOps Cluster and its InstanceGroups (the YAML `kops get -o yaml`
// prints) into the Karpenter objects kOps itself generates: for kOps 1.36, one EC2NodeClass and
// one NodePool per AWS InstanceGroup with `spec.manager: Karpenter` and role Node; with
// Options.Legacy, the v1alpha5 Provisioner and v1alpha1 AWSNodeTemplate of kOps ≤ 1.33.
//
// It owns the minimal kOps input types (decoded leniently: unknown kOps fields are ignored, the
// fields used must have the right types), kOps' validation rules for Karpenter clusters with
// their exact messages (machine types are checked against the EC2 catalog built into the
// binary, where kOps asks EC2), and the generation rules: AMI selector forms, instance profile,
// selectors, cloud tags, kubelet settings, the root volume, labels, taints and requirements.
// Each output field is traced to the InstanceGroup field it comes from, so that a value the
// CRDs refuse is reported there.
//
// What needs AWS is taken from Options instead and reported as a warning when guessed: the
// nodeup script (kOps writes it to the state store, igconfig/node/<ig>/nodeupscript.sh), the
// AMI's root device name (EC2 DescribeImages; default /dev/xvda) and, for the legacy output,
// the AMI's architecture.
package kops
