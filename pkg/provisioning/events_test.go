package provisioning

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/test/eventlog"
)

// TestEventTable holds the package's Events to docs/events.md: object, type, reason and
// message of each, with Karpenter's wording where Karpenter has the Event.
func TestEventTable(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "p"}}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "np"}}
	eventlog.CheckTable(t, []eventlog.Case{
		{Name: "nominated to a new claim", Events: []events.Event{nominatedEvent(pod, "default-abcde", "", nil)}, Want: [][5]string{
			{"Pod", "web-0", "Normal", "Nominated", "Pod should schedule on: nodeclaim/default-abcde"}}},
		{Name: "nominated to a node", Events: []events.Event{nominatedEvent(pod, "default-abcde", "ip-10-0-0-1", nil)}, Want: [][5]string{
			{"Pod", "web-0", "Normal", "Nominated", "Pod should schedule on: nodeclaim/default-abcde, node/ip-10-0-0-1"}}},
		{Name: "nominated to an unmanaged node", Events: []events.Event{nominatedEvent(pod, "", "ip-10-0-0-1", nil)}, Want: [][5]string{
			{"Pod", "web-0", "Normal", "Nominated", "Pod should schedule on: node/ip-10-0-0-1"}}},
		// Dedupe as Karpenter's: FailedScheduling per pod for 5 minutes, NoCompatibleInstanceTypes
		// per NodePool for a minute, whichever the message.
		{Name: "failed scheduling", Events: []events.Event{failedSchedulingEvent(pod, errors.New("incompatible with every nodepool"))}, Want: [][5]string{
			{"Pod", "web-0", "Warning", "FailedScheduling", "Failed to schedule pod, incompatible with every nodepool"}},
			Dedupe: [][]string{{"p"}}, DedupeTimeout: 5 * time.Minute},
		// Ours before Karpenter's words: the existing nodes that refused the pod, by reason.
		{Name: "failed scheduling, nodes refused", Events: []events.Event{failedSchedulingEvent(pod, &scheduler.UnschedulableError{
			Nodes: []scheduler.NodeRefusals{
				{Stage: scheduler.StageTaints, Count: 2, Reason: "did not tolerate taint dedicated=db:NoSchedule"},
				{Stage: scheduler.StageRoom, Count: 1, Reason: "too little memory"},
			},
			Reasons: []error{errors.New("nodepool default: no instance type has enough resources")},
		})}, Want: [][5]string{
			{"Pod", "web-0", "Warning", "FailedScheduling", "Failed to schedule pod, 3 nodes refused: 2 taints: did not tolerate taint dedicated=db:NoSchedule, 1 too little memory; " +
				"incompatible with every nodepool: nodepool default: no instance type has enough resources"}},
			Dedupe: [][]string{{"p"}}, DedupeTimeout: 5 * time.Minute},
		{Name: "no compatible instance types", Events: []events.Event{noCompatibleInstanceTypesEvent(np, false)}, Want: [][5]string{
			{"NodePool", "default", "Warning", "NoCompatibleInstanceTypes", "NodePool requirements filtered out all compatible available instance types"}},
			Dedupe: [][]string{{"np"}}, DedupeTimeout: time.Minute},
		{Name: "no compatible instance types for minValues", Events: []events.Event{noCompatibleInstanceTypesEvent(np, true)}, Want: [][5]string{
			{"NodePool", "default", "Warning", "NoCompatibleInstanceTypes", "NodePool requirements filtered out all compatible available instance types due to minValues incompatibility"}},
			Dedupe: [][]string{{"np"}}, DedupeTimeout: time.Minute},
		{Name: "refused", Events: refusalEvents(pod, np, EventReasonNominationRefused, "node ip-10-0-0-1 did not take it"), Want: [][5]string{
			{"Pod", "web-0", "Warning", "NominationRefused", "node ip-10-0-0-1 did not take it"},
			{"NodePool", "default", "Warning", "NominationRefused", "pod default/web-0: node ip-10-0-0-1 did not take it"}}},
	})
}
