package cloudprovider

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
)

// TestInterruptionEventTable holds the interruption Events to docs/events.md: on the NodeClaim
// and, when it has one, its Node, as Karpenter's AWS provider records them.
func TestInterruptionEventTable(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1", UID: "n"}}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", UID: "c"}}
	for _, tc := range []struct {
		name string
		got  []events.Event
		want [][5]string
	}{
		{"spot interrupted", interruptionEvents(claim, node, "Warning", EventReasonSpotInterrupted, "Spot interruption warning was triggered"), [][5]string{
			{"NodeClaim", "default-abcde", "Warning", "SpotInterrupted", "Spot interruption warning was triggered"},
			{"Node", "ip-10-0-0-1", "Warning", "SpotInterrupted", "Spot interruption warning was triggered"}}},
		{"without a node", interruptionEvents(claim, nil, "Normal", EventReasonRebalanceRecommendation, "Spot rebalance recommendation was triggered"), [][5]string{
			{"NodeClaim", "default-abcde", "Normal", "SpotRebalanceRecommendation", "Spot rebalance recommendation was triggered"}}},
		{"terminating on interruption", terminatingOnInterruptionEvents(claim, node), [][5]string{
			{"NodeClaim", "default-abcde", "Warning", "TerminatingOnInterruption", "Interruption triggered termination for the NodeClaim"},
			{"Node", "ip-10-0-0-1", "Warning", "TerminatingOnInterruption", "Interruption triggered termination for the Node"}}},
	} {
		if got := events.FieldsOf(tc.got...); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got  %q\n want %q", tc.name, got, tc.want)
		}
	}
}
