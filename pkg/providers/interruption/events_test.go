package interruption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/test/eventlog"
)

// TestInterruptionEventTable holds the interruption Events to docs/events.md: on the NodeClaim
// and, when it has one, its Node, as Karpenter's AWS provider records them.
func TestInterruptionEventTable(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1", UID: "n"}}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", UID: "c"}}
	eventlog.CheckTable(t, []eventlog.Case{
		{Name: "spot interrupted", Events: interruptionEvents(claim, node, "Warning", EventReasonSpotInterrupted, "Spot interruption warning was triggered"), Want: [][5]string{
			{"NodeClaim", "default-abcde", "Warning", "SpotInterrupted", "Spot interruption warning was triggered"},
			{"Node", "ip-10-0-0-1", "Warning", "SpotInterrupted", "Spot interruption warning was triggered"}}},
		{Name: "without a node", Events: interruptionEvents(claim, nil, "Normal", EventReasonRebalanceRecommendation, "Spot rebalance recommendation was triggered"), Want: [][5]string{
			{"NodeClaim", "default-abcde", "Normal", "SpotRebalanceRecommendation", "Spot rebalance recommendation was triggered"}}},
		{Name: "terminating on interruption", Events: terminatingOnInterruptionEvents(claim, node), Want: [][5]string{
			{"NodeClaim", "default-abcde", "Warning", "TerminatingOnInterruption", "Interruption triggered termination for the NodeClaim"},
			{"Node", "ip-10-0-0-1", "Warning", "TerminatingOnInterruption", "Interruption triggered termination for the Node"}}},
	})
}
