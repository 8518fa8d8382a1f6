package metrics

import "github.com/prometheus/client_golang/prometheus"

// subsystemPodDeletionCost is the second word of the pod deletion cost metrics, as Karpenter's.
const subsystemPodDeletionCost = "pod_deletion_cost"

// LabelResult is an outcome: of a pod deletion cost annotation write, of a reboot.
const LabelResult = "result"

// Values of LabelResult, as Karpenter v1.15 names them.
const (
	// DeletionCostUpdated: the annotation was written (set to its rank, or removed).
	DeletionCostUpdated = "updated"
	// DeletionCostSkippedUnchanged: the pod already carried what was planned; nothing written.
	DeletionCostSkippedUnchanged = "skipped_unchanged"
	// DeletionCostSkippedNotFound: the pod was gone before the write.
	DeletionCostSkippedNotFound = "skipped_notfound"
	// DeletionCostSkippedConflict: the pod changed since it was read; the next pass looks again.
	DeletionCostSkippedConflict = "skipped_conflict"
	// DeletionCostError: the write failed otherwise and is retried.
	DeletionCostError = "error"
)

// The pod deletion cost metrics (the PodDeletionCostManagement gate, package deletioncost).
var (
	// PodDeletionCostNodesWithPendingAnnotationWrites is, after each ranking pass, the nodes
	// per NodePool with at least one pod whose annotation the pass queued a change of.
	PodDeletionCostNodesWithPendingAnnotationWrites = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemPodDeletionCost, Name: "nodes_with_pending_annotation_writes",
		Help: "Nodes with at least one pod whose controller.kubernetes.io/pod-deletion-cost change the last ranking pass queued, by nodepool.",
	}, []string{LabelNodePool})
	// PodDeletionCostPodAnnotationWritesTotal counts the attempts to write a pod's annotation,
	// by outcome (LabelResult).
	PodDeletionCostPodAnnotationWritesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystemPodDeletionCost, Name: "pod_annotation_writes_total",
		Help: "Attempts to write a pod's controller.kubernetes.io/pod-deletion-cost, by result (updated, skipped_unchanged, skipped_notfound, skipped_conflict, error).",
	}, []string{LabelResult})
)

func deletionCostMetrics() []prometheus.Collector {
	return []prometheus.Collector{PodDeletionCostNodesWithPendingAnnotationWrites, PodDeletionCostPodAnnotationWritesTotal}
}

// SetNodesWithPendingDeletionCostWrites replaces the gauge's series with one per NodePool
// counted (a NodePool whose count fell to zero loses its series, as in Karpenter).
func SetNodesWithPendingDeletionCostWrites(perNodePool map[string]int) {
	PodDeletionCostNodesWithPendingAnnotationWrites.Reset()
	for pool, n := range perNodePool {
		PodDeletionCostNodesWithPendingAnnotationWrites.WithLabelValues(pool).Set(float64(n))
	}
}

// DeletionCostWrite counts one annotation write attempt with its result.
func DeletionCostWrite(result string) {
	PodDeletionCostPodAnnotationWritesTotal.WithLabelValues(result).Inc()
}
