package scheduling

import corev1 "k8s.io/api/core/v1"

// PlacedByKubeScheduler reports whether the kube-scheduler alone decides which of the nodes
// planned for a pod it binds the pod to: a pod with a DoNotSchedule topology spread constraint.
// Its planned node cannot be announced to the kube-scheduler (status.nominatedNodeName): the
// kube-scheduler counts the pods nominated to a node in that node's domain but not those
// nominated to nodes of other domains, so a batch nominated over several zones looks skewed
// from every node and none of its pods would bind. Such a pod holds no room on the node it
// was planned on; it is planned again on every pass, as Karpenter plans every pending pod.
func PlacedByKubeScheduler(pod *corev1.Pod) bool {
	for _, tsc := range pod.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	return false
}
