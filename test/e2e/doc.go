// Package e2e holds the end-to-end suite (build tag e2e, run by `make e2e`): a whole control
// plane on loopback (etcd, kube-apiserver, kube-controller-manager and kube-scheduler, built
// by hack/build-k8s.sh --full), the karpenter binary run as separate processes with the
// simulated cloud playing the kubelets, and tests that drive it only through the API, kubectl
// and the metrics endpoint, as a user would.
package e2e
