// Package integration holds end-to-end tests that run Karpenter's controllers, as the
// controller binary wires them (pkg/operator), in one process against a real kube-apiserver and
// etcd, with the simulated cloud playing the instances and kubelets and a binder playing the
// kube-scheduler.
package integration
