package repair

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/test/eventlog"
)

// TestEventTable holds the package's Events to docs/events.md: object, type, reason and
// message of each, in Karpenter's words.
func TestEventTable(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1", UID: "n"}}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", UID: "c"}}
	pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "p"}}
	eventlog.CheckTable(t, []eventlog.Case{
		// Karpenter's dedupe: each object by its UID, for 15 minutes.
		{Name: "blocked in a nodepool", Events: blockedEvents(node, claim, pool, nodePoolBlockedMessage()), Want: [][5]string{
			{"Node", "ip-10-0-0-1", "Warning", "NodeRepairBlocked", "more than 20% nodes are unhealthy in the nodepool"},
			{"NodeClaim", "default-abcde", "Warning", "NodeRepairBlocked", "more than 20% nodes are unhealthy in the nodepool"},
			{"NodePool", "default", "Warning", "NodeRepairBlocked", "more than 20% nodes are unhealthy in the nodepool"}},
			Dedupe: [][]string{{"n"}, {"c"}, {"p"}}, DedupeTimeout: blockedDedupe},
		{Name: "blocked in the cluster", Events: blockedEvents(node, claim, nil, clusterBlockedMessage()), Want: [][5]string{
			{"Node", "ip-10-0-0-1", "Warning", "NodeRepairBlocked", "more then 20% nodes are unhealthy in the cluster"},
			{"NodeClaim", "default-abcde", "Warning", "NodeRepairBlocked", "more then 20% nodes are unhealthy in the cluster"}},
			Dedupe: [][]string{{"n"}, {"c"}}, DedupeTimeout: blockedDedupe},
		{Name: "terminating", Events: terminatingEvents(node, claim), Want: [][5]string{
			{"Node", "ip-10-0-0-1", "Normal", "DisruptionTerminating", "Disrupting Node: Unhealthy"},
			{"NodeClaim", "default-abcde", "Normal", "DisruptionTerminating", "Disrupting NodeClaim: Unhealthy"}}},
	})
}
