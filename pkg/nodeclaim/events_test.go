package nodeclaim

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/test/eventlog"
)

// TestEventTable holds the package's Events that Karpenter has to docs/events.md: object,
// type, reason and message, in Karpenter's wording.
func TestEventTable(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "p"}}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", UID: "c"}}
	ice := errors.New("all requested instance types were unavailable during launch")
	eventlog.CheckTable(t, []eventlog.Case{
		// Each deduped as Karpenter's, for the default timeout.
		{Name: "insufficient capacity", Events: []events.Event{insufficientCapacityErrorEvent(claim, ice)}, Want: [][5]string{
			{"NodeClaim", "default-abcde", "Warning", "InsufficientCapacityError", "NodeClaim default-abcde event: all requested instance types were unavailable during launch"}},
			Dedupe: [][]string{{"c"}}},
		{Name: "insufficient capacity, pod", Events: []events.Event{insufficientCapacityErrorPodEvent(pod, claim, ice, nil)}, Want: [][5]string{
			{"Pod", "web-0", "Warning", "InsufficientCapacityError", "NodeClaim default-abcde nominated for this pod failed to launch: all requested instance types were unavailable during launch"}},
			Dedupe: [][]string{{"p"}}},
		{Name: "nodeclass not ready", Events: []events.Event{nodeClassNotReadyEvent(claim, errors.New(`EC2NodeClass "default" is not ready`))}, Want: [][5]string{
			{"NodeClaim", "default-abcde", "Warning", "NodeClassNotReady", `NodeClaim default-abcde event: EC2NodeClass "default" is not ready`}},
			Dedupe: [][]string{{"c"}}},
		{Name: "failed consistency check", Events: []events.Event{failedConsistencyCheckEvent(claim, "expected 128Gi of resource memory, but found 64Gi (50.0% of expected)")}, Want: [][5]string{
			{"NodeClaim", "default-abcde", "Warning", "FailedConsistencyCheck", "expected 128Gi of resource memory, but found 64Gi (50.0% of expected)"}},
			Dedupe: [][]string{{"c", "expected 128Gi of resource memory, but found 64Gi (50.0% of expected)"}}},
		{Name: "unregistered taint missing", Events: []events.Event{unregisteredTaintMissingEvent(claim)}, Want: [][5]string{
			{"NodeClaim", "default-abcde", "Warning", "UnregisteredTaintMissing", "Missing karpenter.sh/unregistered taint which prevents registration related race conditions on Karpenter-managed nodes"}},
			Dedupe: [][]string{{"c"}}},
	})
	long := insufficientCapacityErrorEvent(claim, errors.New(strings.Repeat("x", 2000)))
	if len(long.Message) != maxEventMessageLength || !strings.HasSuffix(long.Message, "...") {
		t.Errorf("a long error's message is %d long, want %d ending in ...", len(long.Message), maxEventMessageLength)
	}
}
