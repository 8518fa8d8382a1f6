package provisioning

import (
	"errors"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
)

// TestEventTable holds the package's Events to docs/events.md: object, type, reason and
// message of each, with Karpenter's wording where Karpenter has the Event.
func TestEventTable(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "p"}}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "np"}}
	for _, tc := range []struct {
		name string
		got  []events.Event
		want [][5]string
	}{
		{"nominated to a new claim", []events.Event{nominatedEvent(pod, "default-abcde", "", nil)}, [][5]string{
			{"Pod", "web-0", "Normal", "Nominated", "Pod should schedule on: nodeclaim/default-abcde"}}},
		{"nominated to a node", []events.Event{nominatedEvent(pod, "default-abcde", "ip-10-0-0-1", nil)}, [][5]string{
			{"Pod", "web-0", "Normal", "Nominated", "Pod should schedule on: nodeclaim/default-abcde, node/ip-10-0-0-1"}}},
		{"nominated to an unmanaged node", []events.Event{nominatedEvent(pod, "", "ip-10-0-0-1", nil)}, [][5]string{
			{"Pod", "web-0", "Normal", "Nominated", "Pod should schedule on: node/ip-10-0-0-1"}}},
		{"failed scheduling", []events.Event{failedSchedulingEvent(pod, errors.New("incompatible with every nodepool"))}, [][5]string{
			{"Pod", "web-0", "Warning", "FailedScheduling", "Failed to schedule pod, incompatible with every nodepool"}}},
		{"no compatible instance types", []events.Event{noCompatibleInstanceTypesEvent(np, false)}, [][5]string{
			{"NodePool", "default", "Warning", "NoCompatibleInstanceTypes", "NodePool requirements filtered out all compatible available instance types"}}},
		{"no compatible instance types for minValues", []events.Event{noCompatibleInstanceTypesEvent(np, true)}, [][5]string{
			{"NodePool", "default", "Warning", "NoCompatibleInstanceTypes", "NodePool requirements filtered out all compatible available instance types due to minValues incompatibility"}}},
		{"refused", refusalEvents(pod, np, EventReasonNominationRefused, "node ip-10-0-0-1 did not take it"), [][5]string{
			{"Pod", "web-0", "Warning", "NominationRefused", "node ip-10-0-0-1 did not take it"},
			{"NodePool", "default", "Warning", "NominationRefused", "pod default/web-0: node ip-10-0-0-1 did not take it"}}},
	} {
		if got := events.FieldsOf(tc.got...); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got  %q\n want %q", tc.name, got, tc.want)
		}
	}
	// Dedupe as Karpenter's: per NodePool for a minute, whichever the message.
	for _, minValues := range []bool{false, true} {
		if e := noCompatibleInstanceTypesEvent(np, minValues); !reflect.DeepEqual(e.DedupeValues, []string{"np"}) || e.DedupeTimeout != time.Minute {
			t.Errorf("NoCompatibleInstanceTypes dedupe %q for %s, want the pool's UID for a minute", e.DedupeValues, e.DedupeTimeout)
		}
	}
	if e := failedSchedulingEvent(pod, errors.New("x")); !reflect.DeepEqual(e.DedupeValues, []string{"p"}) || e.DedupeTimeout != 5*time.Minute {
		t.Errorf("FailedScheduling dedupe %q for %s, want the pod's UID for 5 minutes", e.DedupeValues, e.DedupeTimeout)
	}
}
