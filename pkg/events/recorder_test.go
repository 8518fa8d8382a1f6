package events

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// drain returns the events recorded so far, as "Type Reason Message".
func drain(rec *record.FakeRecorder) []string {
	var out []string
	for len(rec.Events) > 0 {
		out = append(out, <-rec.Events)
	}
	return out
}

func TestRecorderDedupesWithinTimeout(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	fake := record.NewFakeRecorder(100)
	r := NewRecorder(fake, clk)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", UID: "u2"}}
	evt := func(p *corev1.Pod, msg string) Event {
		return Event{InvolvedObject: p, Type: corev1.EventTypeNormal, Reason: "Nominated", Message: msg, DedupeValues: []string{string(p.UID)}}
	}

	r.Publish(evt(pod, "first"), evt(pod, "second"), evt(other, "third"))
	if got := drain(fake); len(got) != 2 || got[0] != "Normal Nominated first" || got[1] != "Normal Nominated third" {
		t.Fatalf("events = %q, want the first of p and the one of q", got)
	}
	clk.Step(DefaultDedupeTimeout - time.Second)
	r.Publish(evt(pod, "again"))
	if got := drain(fake); len(got) != 0 {
		t.Fatalf("events within the timeout = %q, want none", got)
	}
	clk.Step(time.Second)
	r.Publish(evt(pod, "again"))
	if got := drain(fake); len(got) != 1 {
		t.Fatalf("events after the timeout = %q, want one", got)
	}

	long := Event{InvolvedObject: pod, Type: corev1.EventTypeNormal, Reason: "Unconsolidatable", Message: "m", DedupeValues: []string{"u1"}, DedupeTimeout: 15 * time.Minute}
	r.Publish(long)
	clk.Step(10 * time.Minute)
	r.Publish(long)
	if got := drain(fake); len(got) != 1 {
		t.Fatalf("events with a 15 minute timeout 10 minutes apart = %q, want one", got)
	}
	clk.Step(5 * time.Minute)
	r.Publish(long)
	if got := drain(fake); len(got) != 1 {
		t.Fatalf("events with a 15 minute timeout 15 minutes apart = %q, want one", got)
	}
}

func TestRecorderWithoutDedupeValuesRecordsEach(t *testing.T) {
	fake := record.NewFakeRecorder(10)
	r := NewRecorder(fake, clocktesting.NewFakeClock(time.Unix(0, 0)))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	e := Event{InvolvedObject: node, Type: corev1.EventTypeWarning, Reason: "R", Message: "m"}
	r.Publish(e, e)
	if got := drain(fake); len(got) != 2 {
		t.Errorf("events = %q, want both", got)
	}
}

func TestRecorderRateLimits(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	fake := record.NewFakeRecorder(100)
	r := NewRecorder(fake, clk)
	limiter := NewRateLimiter(5, 10, clk)
	for i := range 20 {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: types.UID(fmt.Sprint("u", i))}}
		r.Publish(Event{InvolvedObject: pod, Type: corev1.EventTypeNormal, Reason: "Nominated", Message: "m", DedupeValues: []string{string(pod.UID)}, RateLimiter: limiter})
	}
	if got := drain(fake); len(got) != 10 {
		t.Errorf("%d events at once, want the burst of 10", len(got))
	}
}

func TestRecorderSkipsNilObjects(t *testing.T) {
	fake := record.NewFakeRecorder(10)
	r := NewRecorder(fake, nil)
	var node *corev1.Node
	r.Publish(Event{InvolvedObject: node, Type: corev1.EventTypeNormal, Reason: "R", Message: "m"}, Event{Type: corev1.EventTypeNormal, Reason: "R"})
	if got := drain(fake); len(got) != 0 {
		t.Errorf("events = %q, want none", got)
	}
	var nilRecorder *Recorder
	nilRecorder.Publish(Event{InvolvedObject: &corev1.Node{}, Reason: "R"})
	NewRecorder(nil, nil).Publish(Event{InvolvedObject: &corev1.Node{}, Reason: "R"})
}
