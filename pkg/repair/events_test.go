package repair

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
)

// TestEventTable holds the package's Events to docs/events.md: object, type, reason and
// message of each, in Karpenter's words.
func TestEventTable(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1", UID: "n"}}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", UID: "c"}}
	pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "p"}}
	for _, tc := range []struct {
		name string
		got  []events.Event
		want [][5]string
	}{
		{"blocked in a nodepool", blockedEvents(node, claim, pool, nodePoolBlockedMessage()), [][5]string{
			{"Node", "ip-10-0-0-1", "Warning", "NodeRepairBlocked", "more than 20% nodes are unhealthy in the nodepool"},
			{"NodeClaim", "default-abcde", "Warning", "NodeRepairBlocked", "more than 20% nodes are unhealthy in the nodepool"},
			{"NodePool", "default", "Warning", "NodeRepairBlocked", "more than 20% nodes are unhealthy in the nodepool"}}},
		{"blocked in the cluster", blockedEvents(node, claim, nil, clusterBlockedMessage()), [][5]string{
			{"Node", "ip-10-0-0-1", "Warning", "NodeRepairBlocked", "more then 20% nodes are unhealthy in the cluster"},
			{"NodeClaim", "default-abcde", "Warning", "NodeRepairBlocked", "more then 20% nodes are unhealthy in the cluster"}}},
		{"terminating", terminatingEvents(node, claim), [][5]string{
			{"Node", "ip-10-0-0-1", "Normal", "DisruptionTerminating", "Disrupting Node: Unhealthy"},
			{"NodeClaim", "default-abcde", "Normal", "DisruptionTerminating", "Disrupting NodeClaim: Unhealthy"}}},
	} {
		if got := events.FieldsOf(tc.got...); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got  %q\n want %q", tc.name, got, tc.want)
		}
	}
	// Karpenter's dedupe: each object by its UID, for 15 minutes.
	for _, e := range blockedEvents(node, claim, pool, "x") {
		if len(e.DedupeValues) != 1 || e.DedupeTimeout != blockedDedupe {
			t.Errorf("%s: dedupe %v for %s, want the object's UID for 15m", events.Fields(e), e.DedupeValues, e.DedupeTimeout)
		}
	}
}
