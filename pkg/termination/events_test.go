package termination

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/test/eventlog"
)

// TestEventTable holds the package's Events to docs/events.md: object, type, reason and
// message of each, with Karpenter's wording where Karpenter has the Event.
func TestEventTable(t *testing.T) {
	grace := int64(30)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "p"}, Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1", UID: "n"}}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", UID: "c"}}
	deadline := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-1"}}
	vas := []*storagev1.VolumeAttachment{va, va, va, va, va, va}
	nodes := []*corev1.Node{node}
	eventlog.CheckTable(t, []eventlog.Case{
		{Name: "evicted", Events: []events.Event{evictedEvent(pod, "Underutilized")}, Want: [][5]string{
			{"Pod", "web-0", "Normal", "Evicted", "Evicted pod: Underutilized"}}},
		{Name: "disrupted", Events: []events.Event{disruptedEvent(pod, 12, deadline)}, Want: [][5]string{
			{"Pod", "web-0", "Normal", "Disrupted", "Deleting the pod to accommodate the terminationTime 2026-01-02 03:04:05 +0000 UTC of the node. The pod was granted 12 seconds of grace-period of its 30 terminationGracePeriodSeconds. This bypasses the PDB of the pod and the do-not-disrupt annotation."}}},
		{Name: "failed draining, waiting", Events: failedDrainingEvents(claim, nodes, nil, waitingForEvictionDetail(3)), Want: [][5]string{
			{"NodeClaim", "default-abcde", "Warning", "FailedDraining", "Failed to drain node, 3 pods are waiting to be evicted"},
			{"Node", "ip-10-0-0-1", "Warning", "FailedDraining", "Failed to drain node, 3 pods are waiting to be evicted"}}},
		{Name: "failed draining, pdb", Events: failedDrainingEvents(claim, nil, pod, podDetail(pdbViolationDetail, pod, "PodDisruptionBudget", "default/web")), Want: [][5]string{
			{"NodeClaim", "default-abcde", "Warning", "FailedDraining", "Failed to drain node, evicting pod violates a PDB (Pod=default/web-0, PodDisruptionBudget=default/web)"}}},
		{Name: "failed draining, multiple pdbs", Events: failedDrainingEvents(claim, nil, pod, podDetail(multiplePDBsDetail, pod)), Want: [][5]string{
			{"NodeClaim", "default-abcde", "Warning", "FailedDraining", "Failed to drain node, eviction does not support multiple PDBs (Pod=default/web-0)"}}},
		{Name: "grace period expiring", Events: gracePeriodExpiringEvents(claim, nodes, "2026-01-02T03:04:05Z"), Want: [][5]string{
			{"NodeClaim", "default-abcde", "Warning", "TerminationGracePeriodExpiring", "All pods will be deleted by 2026-01-02T03:04:05Z"},
			{"Node", "ip-10-0-0-1", "Warning", "TerminationGracePeriodExpiring", "All pods will be deleted by 2026-01-02T03:04:05Z"}}},
		{Name: "awaiting volume detachment", Events: []events.Event{awaitingVolumeDetachmentEvent(node, vas)}, Want: [][5]string{
			{"Node", "ip-10-0-0-1", "Normal", "AwaitingVolumeDetachment", "Awaiting deletion of bound volumeattachments (csi-1, csi-1, csi-1, csi-1, csi-1 and 1 other(s))"}}},
		{Name: "draining", Events: drainingEvents(claim, node), Want: [][5]string{
			{"NodeClaim", "default-abcde", "Normal", "Draining", "Draining node ip-10-0-0-1"},
			{"Node", "ip-10-0-0-1", "Normal", "Draining", "Draining node ip-10-0-0-1"}}},
		{Name: "node deleted", Events: []events.Event{nodeDeletedEvent(claim, node)}, Want: [][5]string{
			{"NodeClaim", "default-abcde", "Normal", "NodeDeleted", "Node ip-10-0-0-1 was deleted; terminating its nodeclaim"}}},
		{Name: "terminated", Events: terminatedEvents(claim, nodes), Want: [][5]string{
			{"NodeClaim", "default-abcde", "Normal", "Terminated", "Terminated nodeclaim default-abcde"},
			{"Node", "ip-10-0-0-1", "Normal", "Terminated", "Terminated node ip-10-0-0-1"}}},
	})
}
