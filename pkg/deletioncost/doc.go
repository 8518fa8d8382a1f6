// Package deletioncost owns pod deletion cost management (the PodDeletionCostManagement
// feature gate, Alpha, off by default), as Karpenter v1.15.0's pod.deletioncost controller
// (pkg/controllers/pod/deletioncost): it writes controller.kubernetes.io/pod-deletion-cost on
// the pods controlled by a ReplicaSet so that, when a Deployment scales down, the
// ReplicaSet controller removes first the pods of the nodes consolidation would disrupt
// first, and those nodes empty sooner.
//
// # The flow
//
// Every minute (every second while the cluster state is not synced) the Controller takes a
// snapshot of the cluster and, unless nothing consolidation counts changed since its last
// pass (disruption.ConsolidationClock, refreshed every 5 minutes as Karpenter's
// ConsolidationState), ranks the nodes Karpenter manages (Rank, pure):
//
//   - Disrupting (group A): nodes being deleted or tainted karpenter.sh/disrupted. Their pods
//     get math.MinInt32, the lowest cost, so they go first; no cap.
//   - Ranked (groups B and C): nodes consolidation may act on, drifted ones (their NodeClaim's
//     Drifted condition; not of a static NodePool) before the others, each part ordered as
//     consolidation orders candidates (savings ratio: price over reschedule cost, highest
//     first, names breaking ties), each NodePool's part bounded by its Drifted or
//     Underutilized budget. The i-th of n nodes gets -n+i: the first the lowest.
//   - Cleared (group D): every other managed node: not initialized, nominated, protected by
//     karpenter.sh/do-not-disrupt or a PodDisruptionBudget, hosting a pod nothing would
//     recreate (no ReplicaSet, Job or DaemonSet controls it, outside kube-system), without a
//     price for its instance type, of a NodePool with consolidateAfter Never, or past its
//     NodePool's budget. Their pods' annotation is removed.
//
// Only the pods a ReplicaSet controls are written (the ReplicaSet controller is the one
// reader of the annotation), and a node counts only when one of them differs from its plan.
// At most 50 nodes of groups B, C and D are written per pass (B and C first); group A is
// never capped. The writes go through the Queue: one merge patch per pod with the pod's
// resourceVersion, so a pod changed since it was read is skipped (skipped_conflict) and seen
// again next pass; a pod already as planned is not written (skipped_unchanged); other errors
// are retried with backoff. The annotation is Karpenter's to manage with the gate on, as in
// Karpenter: a value a user set is overwritten or removed. With the gate on, consolidation no
// longer reads the annotation as the pod's cost (disruption.ManagedEvictionCost).
//
// The metrics are Karpenter's: karpenter_pod_deletion_cost_nodes_with_pending_annotation_writes
// and karpenter_pod_deletion_cost_pod_annotation_writes_total (package metrics).
package deletioncost
