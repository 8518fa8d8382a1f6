// Package kubeletcel compiles and evaluates the CEL expressions an EC2NodeClass's spec.kubelet
// may hold instead of values, behind the AWS provider's NodeClassCEL feature gate (Karpenter's
// AWS provider v1.15.2, its pkg/cel): maxPods as a string, and a kubeReserved or
// systemReserved value that is not a resource quantity. An expression is evaluated once per
// instance type against that type's facts (Vars): vcpus, memory_mib, default_enis,
// ips_per_eni, max_pods (int) and instance_type (string), with min and max over ints and
// doubles. It must return an int or a double; a double is truncated towards zero.
//
// The package is pure: no I/O, no clock, no goroutines; package cloudprovider calls it where it
// builds instance types and renders a node's kubelet configuration, so capacity, overhead and
// user data use the same values.
package kubeletcel
