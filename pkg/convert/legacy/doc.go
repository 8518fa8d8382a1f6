// Package legacy translates Karpenter v0.x objects, the v1alpha5 Provisioner and the v1alpha1
// AWSNodeTemplate (or a Provisioner's inline spec.provider block), into the v1 NodePool and
// EC2NodeClass that mean the same.
//
// Every field is mapped or reported: requirements, labels and annotations (with the
// well-known renames, and the defaults v0.x added silently), taints, limits, weight,
// ttlSecondsAfterEmpty and consolidation (to a consolidation policy and consolidateAfter),
// ttlSecondsUntilExpired (to expireAfter), kubeletConfiguration (to the EC2NodeClass kubelet
// block), and the AWS settings (selectors to selector terms, amiFamily and amiSelector to AMI
// selector terms, instance profile, tags, block devices, metadata options, user data). What v1
// cannot express is a warning, one line per field; what would make the output wrong or invalid
// (a launch template, an Ubuntu or Custom family without an amiSelector, no instance profile,
// a negative TTL or limit, a TTL longer than a duration holds, a weight outside 1 to 100, a
// misspelled field, selectors that expand to more terms than v1 holds) is an error, and so is
// any value the v1 CRDs refuse, reported at the field it came from.
package legacy
