package nodeclaim

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
)

// TestEventTable holds the package's Events that Karpenter has to docs/events.md: object,
// type, reason and message, in Karpenter's wording.
func TestEventTable(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "p"}}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", UID: "c"}}
	ice := errors.New("all requested instance types were unavailable during launch")
	for _, tc := range []struct {
		name string
		got  events.Event
		want [5]string
		// dedupe are the Event's dedupe values, as Karpenter's (its timeout is the default).
		dedupe []string
	}{
		{"insufficient capacity", insufficientCapacityErrorEvent(claim, ice),
			[5]string{"NodeClaim", "default-abcde", "Warning", "InsufficientCapacityError", "NodeClaim default-abcde event: all requested instance types were unavailable during launch"}, []string{"c"}},
		{"insufficient capacity, pod", insufficientCapacityErrorPodEvent(pod, claim, ice, nil),
			[5]string{"Pod", "web-0", "Warning", "InsufficientCapacityError", "NodeClaim default-abcde nominated for this pod failed to launch: all requested instance types were unavailable during launch"}, []string{"p"}},
		{"nodeclass not ready", nodeClassNotReadyEvent(claim, errors.New(`EC2NodeClass "default" is not ready`)),
			[5]string{"NodeClaim", "default-abcde", "Warning", "NodeClassNotReady", `NodeClaim default-abcde event: EC2NodeClass "default" is not ready`}, []string{"c"}},
		{"failed consistency check", failedConsistencyCheckEvent(claim, "expected 128Gi of resource memory, but found 64Gi (50.0% of expected)"),
			[5]string{"NodeClaim", "default-abcde", "Warning", "FailedConsistencyCheck", "expected 128Gi of resource memory, but found 64Gi (50.0% of expected)"}, []string{"c", "expected 128Gi of resource memory, but found 64Gi (50.0% of expected)"}},
		{"unregistered taint missing", unregisteredTaintMissingEvent(claim),
			[5]string{"NodeClaim", "default-abcde", "Warning", "UnregisteredTaintMissing", "Missing karpenter.sh/unregistered taint which prevents registration related race conditions on Karpenter-managed nodes"}, []string{"c"}},
	} {
		if got := events.Fields(tc.got); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got  %q\n want %q", tc.name, got, tc.want)
		}
		if !reflect.DeepEqual(tc.got.DedupeValues, tc.dedupe) || tc.got.DedupeTimeout != 0 {
			t.Errorf("%s: dedupe %q for %s, want %q for the default", tc.name, tc.got.DedupeValues, tc.got.DedupeTimeout, tc.dedupe)
		}
	}
	long := insufficientCapacityErrorEvent(claim, errors.New(strings.Repeat("x", 2000)))
	if len(long.Message) != maxEventMessageLength || !strings.HasSuffix(long.Message, "...") {
		t.Errorf("a long error's message is %d long, want %d ending in ...", len(long.Message), maxEventMessageLength)
	}
}
