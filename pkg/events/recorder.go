// Package events records Kubernetes Events as Karpenter does: each Event is built by a
// function of the package that emits it (with Karpenter's reason and message), and published
// through a Recorder that drops repeats of the same Event within its dedupe timeout and the
// Events its rate limiter refuses.
package events

import (
	"cmp"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// DefaultDedupeTimeout is how long an Event with DedupeValues is not recorded again when it
// sets no DedupeTimeout of its own: Karpenter's two minutes.
const DefaultDedupeTimeout = 2 * time.Minute

// Reason is an Event's reason: one word in CamelCase (Karpenter's where the situation is
// Karpenter's), declared as a constant in the events.go of the package that records it.
type Reason string

// Event is one Kubernetes Event to record.
type Event struct {
	// InvolvedObject is what the Event is about; a nil object (or a typed nil) is not recorded.
	InvolvedObject runtime.Object
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason is the Event's reason, the word users alert on.
	Reason Reason
	// Message is the Event's message.
	Message string
	// DedupeValues, with Reason, identify the Event for deduplication: an Event with the same
	// reason and values recorded within the dedupe timeout is dropped. None: never dropped.
	DedupeValues []string
	// DedupeTimeout replaces DefaultDedupeTimeout for this Event when it is not zero.
	DedupeTimeout time.Duration
	// RateLimiter, when set, drops the Event when it refuses a token.
	RateLimiter RateLimiter
}

// dedupeKey is Karpenter's: the reason in lower case and the dedupe values, joined by dashes.
func (e Event) dedupeKey() string {
	return fmt.Sprintf("%s-%s", strings.ToLower(string(e.Reason)), strings.Join(e.DedupeValues, "-"))
}

// Recorder publishes Events to a record.EventRecorder, deduplicating them by their
// DedupeValues against its clock. The zero value and a nil *Recorder record nothing; it is
// safe for concurrent use.
type Recorder struct {
	rec   record.EventRecorder
	clock clock.PassiveClock

	mu sync.Mutex
	// until is when each dedupe key may be recorded again.
	until map[string]time.Time
	// swept is when until was last cleared of expired keys.
	swept time.Time
}

// NewRecorder returns a Recorder writing to rec (nil: record nothing) and timing the dedupe
// windows with clk (the real clock when nil).
func NewRecorder(rec record.EventRecorder, clk clock.PassiveClock) *Recorder {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Recorder{rec: rec, clock: clk, until: map[string]time.Time{}}
}

// Publish records each Event unless it is a repeat within its dedupe timeout, its rate limiter
// refuses it, or it has no involved object.
func (r *Recorder) Publish(evts ...Event) {
	if r == nil || r.rec == nil {
		return
	}
	for _, e := range evts {
		if isNil(e.InvolvedObject) {
			continue
		}
		if len(e.DedupeValues) > 0 && !r.due(e.dedupeKey(), cmp.Or(e.DedupeTimeout, DefaultDedupeTimeout)) {
			continue
		}
		if e.RateLimiter != nil && !e.RateLimiter.TryAccept() {
			continue
		}
		r.rec.Event(e.InvolvedObject, e.Type, string(e.Reason), e.Message)
	}
}

// due reports whether an Event keyed key may be recorded now, and if so holds the key for
// timeout.
func (r *Recorder) due(key string, timeout time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	if now.Sub(r.swept) > DefaultDedupeTimeout {
		for k, t := range r.until {
			if !now.Before(t) {
				delete(r.until, k)
			}
		}
		r.swept = now
	}
	if t, ok := r.until[key]; ok && now.Before(t) {
		return false
	}
	r.until[key] = now.Add(timeout)
	return true
}

// isNil reports whether obj is nil or a typed nil pointer.
func isNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// RateLimiter limits how many Events are recorded; see NewRateLimiter.
type RateLimiter = flowcontrol.RateLimiter

// NewRateLimiter is a token bucket of qps tokens a second holding at most burst, timed by clk
// (the real clock when nil): Karpenter's limit on the Events of every pod a scheduling round
// or a failed launch touches is NewRateLimiter(5, 10, clk).
func NewRateLimiter(qps float32, burst int, clk clock.Clock) RateLimiter {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return flowcontrol.NewTokenBucketRateLimiterWithClock(qps, burst, clk)
}
