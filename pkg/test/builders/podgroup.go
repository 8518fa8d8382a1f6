package builders

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodGroup is Count copies of a pod manifest, as the golden scenario files of the scheduler and
// of disruption write their pods.
type PodGroup struct {
	// Count is how many copies; 0 is one.
	Count int `json:"count"`
	// Pod is the manifest copied.
	Pod corev1.Pod `json:"pod"`
}

// Expand returns the copies, named NAME-0, NAME-1, … (NAME alone when there is one), in
// namespace default unless the manifest names one, each with its namespace/name as UID.
func (g PodGroup) Expand() []*corev1.Pod {
	count := max(g.Count, 1)
	out := make([]*corev1.Pod, count)
	for i := range out {
		pod := g.Pod.DeepCopy()
		if count > 1 {
			pod.Name = g.Pod.Name + "-" + strconv.Itoa(i)
		}
		if pod.Namespace == "" {
			pod.Namespace = "default"
		}
		pod.UID = types.UID(pod.Namespace + "/" + pod.Name)
		out[i] = pod
	}
	return out
}
