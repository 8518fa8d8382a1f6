package disruption

import (
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// perNodeRescheduleCost is what disrupting a node costs before its pods: Karpenter's
// PerNodeBaseDisruptionCost.
const perNodeRescheduleCost = 1.0

// EvictionCost is what evicting the pod costs, as Karpenter v1.15.0 weighs it with its
// PodDeletionCostManagement gate off (pkg/utils/disruption EvictionCost): 1, plus
// karpenter.sh/disruption-cost (else controller.kubernetes.io/pod-deletion-cost) over 2^27, plus
// the pod's priority over 2^25, clamped to [-10, 10]. An annotation that is not an int32 is
// ignored, as there. ManagedEvictionCost is the same with the gate on.
func EvictionCost(pod *corev1.Pod) float64 { return evictionCost(pod, false) }

// ManagedEvictionCost is EvictionCost with the PodDeletionCostManagement gate on, as Karpenter
// v1.15.0 weighs it then: controller.kubernetes.io/pod-deletion-cost is Karpenter's own ranking
// for ReplicaSet scale-down (package deletioncost), not what the user says a pod costs, so
// only karpenter.sh/disruption-cost is read.
func ManagedEvictionCost(pod *corev1.Pod) float64 { return evictionCost(pod, true) }

func evictionCost(pod *corev1.Pod, podDeletionCostManaged bool) float64 {
	cost := 1.0
	value, ok := pod.Annotations[karpv1.DisruptionCostAnnotationKey]
	if !ok && !podDeletionCostManaged {
		value, ok = pod.Annotations[corev1.PodDeletionCost]
	}
	if ok {
		if n, err := strconv.ParseInt(value, 10, 32); err == nil {
			cost += float64(n) / math.Pow(2, 27)
		}
	}
	if pod.Spec.Priority != nil {
		cost += float64(*pod.Spec.Priority) / math.Pow(2, 25)
	}
	return min(max(cost, -10), 10)
}

// RescheduleCost is what disrupting a node of these pods costs (Karpenter's
// ComputeRescheduleDisruptionCost): 1, plus each pod's eviction cost when positive
// (ManagedEvictionCost when podDeletionCostManaged, the PodDeletionCostManagement gate, else
// EvictionCost). A node whose pods add nothing is empty.
func RescheduleCost(pods []*corev1.Pod, podDeletionCostManaged bool) float64 {
	cost := perNodeRescheduleCost
	for _, p := range pods {
		cost += max(0, evictionCost(p, podDeletionCostManaged))
	}
	return cost
}
