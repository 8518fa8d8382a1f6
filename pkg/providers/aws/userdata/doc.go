// Package userdata renders the EC2 user data a Karpenter-launched node boots with, one format
// per AMI family, following the documented behaviour of Karpenter's AWS provider:
//
//   - AL2023: a MIME multi-part document for nodeadm. The parts of spec.userData come first
//     (a NodeConfig, a shell script, a cloud-config, or the parts of an already-MIME document),
//     then Karpenter's own NodeConfig (cluster, kubelet config, node labels, taints).
//   - AL2: a MIME multi-part document for cloud-init. The parts of spec.userData come first,
//     then a shell script running /etc/eks/bootstrap.sh with the cluster and kubelet settings.
//   - Bottlerocket: one TOML document. spec.userData is parsed as TOML and Karpenter's settings
//     are merged into it: the fields Karpenter owns (cluster-name, api-server,
//     cluster-certificate, its own node labels and taints, and the kubelet settings set on the
//     EC2NodeClass) replace the user's, everything else the user wrote is kept.
//   - Windows2019, Windows2022, Windows2025: one PowerShell script in a <powershell> block:
//     spec.userData as written, then the image's Start-EKSBootstrap.ps1 with the cluster and
//     the kubelet settings (node labels, taints, max pods and the EC2NodeClass kubelet
//     configuration as -KubeletExtraArgs, the cluster DNS address as -DNSClusterIP).
//   - Custom: spec.userData byte for byte (for example a kOps nodeup script); Karpenter adds
//     nothing.
//
// The package is pure: it takes everything through Options, does no I/O, and renders the same
// bytes for the same input (maps are sorted, the MIME boundary is fixed). It returns plain text;
// base64-encoding for the EC2 API is the caller's job. Errors about the user's input name the
// field it came from (spec.userData, spec.amiFamily) so they can be surfaced on the
// EC2NodeClass as they are.
package userdata
