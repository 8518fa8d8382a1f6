package disruption

import (
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
)

// TestEventTable holds the package's Events to docs/events.md: object, type, reason and
// message of each, with Karpenter's wording where Karpenter has the Event.
func TestEventTable(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "p"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1", UID: "n"}}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", UID: "c"}}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "np"}}
	for _, tc := range []struct {
		name string
		got  []events.Event
		want [][5]string
	}{
		{"launching", []events.Event{launchingEvent(claim, karpv1.DisruptionReasonUnderutilized)}, [][5]string{
			{"NodeClaim", "default-abcde", "Normal", "DisruptionLaunching", "Launching NodeClaim: Underutilized"}}},
		{"waiting readiness", []events.Event{waitingOnReadinessEvent(claim)}, [][5]string{
			{"NodeClaim", "default-abcde", "Normal", "DisruptionWaitingReadiness", "Waiting on readiness to continue disruption"}}},
		{"terminating", terminatingEvents(node, claim, karpv1.DisruptionReasonDrifted), [][5]string{
			{"Node", "ip-10-0-0-1", "Normal", "DisruptionTerminating", "Disrupting Node: Drifted"},
			{"NodeClaim", "default-abcde", "Normal", "DisruptionTerminating", "Disrupting NodeClaim: Drifted"}}},
		{"unconsolidatable", unconsolidatableEvents(node, claim, noCheaperNode), [][5]string{
			{"Node", "ip-10-0-0-1", "Normal", "Unconsolidatable", "Can't replace with a cheaper node"},
			{"NodeClaim", "default-abcde", "Normal", "Unconsolidatable", "Can't replace with a cheaper node"}}},
		{"blocked", blockedEvents(node, claim, `Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=default/web-0)`), [][5]string{
			{"Node", "ip-10-0-0-1", "Normal", "DisruptionBlocked", `Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=default/web-0)`},
			{"NodeClaim", "default-abcde", "Normal", "DisruptionBlocked", `Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=default/web-0)`}}},
		{"nodepool blocked", []events.Event{nodePoolBlockedEvent(np, karpv1.DisruptionReasonEmpty)}, [][5]string{
			{"NodePool", "default", "Normal", "DisruptionBlocked", "No allowed disruptions for disruption reason Empty due to blocking budget"}}},
		{"invalid do-not-disrupt", []events.Event{invalidDoNotDisruptEvent(pod, errors.New(`invalid duration "forever"`))}, [][5]string{
			{"Pod", "web-0", "Warning", "InvalidDoNotDisruptAnnotation", `Invalid karpenter.sh/do-not-disrupt annotation: invalid duration "forever", ignoring annotation`}}},
		{"abandoned", []events.Event{abandonedEvent(node, "consolidating: deleting 1 node")}, [][5]string{
			{"Node", "ip-10-0-0-1", "Warning", "DisruptionAbandoned", "abandoned: consolidating: deleting 1 node"}}},
	} {
		if got := events.FieldsOf(tc.got...); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got  %q\n want %q", tc.name, got, tc.want)
		}
	}
}
