package v1

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodDoNotDisrupt(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(value string, started bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{DoNotDisruptAnnotationKey: value}}}
		if started {
			p.Status.StartTime = &metav1.Time{Time: start}
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		at      time.Duration
		active  bool
		until   time.Duration // from start; 0 for none
		invalid string
	}{
		{name: "absent", pod: &corev1.Pod{}},
		{name: "true protects for good", pod: pod("true", true), at: 1000 * time.Hour, active: true},
		{name: "duration running", pod: pod("2h", true), at: 21 * time.Minute, active: true, until: 2 * time.Hour},
		{name: "duration ended", pod: pod("2h", true), at: 2 * time.Hour, until: 2 * time.Hour},
		{name: "not started yet", pod: pod("30m", false), at: 5 * time.Hour, active: true},
		{name: "false is invalid", pod: pod("false", true), invalid: `failed to parse "false" as a duration: time: invalid duration "false"`},
		{name: "garbage is invalid", pod: pod("forever", true), invalid: `failed to parse "forever" as a duration: time: invalid duration "forever"`},
		{name: "zero is invalid", pod: pod("0s", true), invalid: `duration "0s" must be positive`},
		{name: "negative is invalid", pod: pod("-1h", true), invalid: `duration "-1h" must be positive`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PodDoNotDisrupt(tc.pod, start.Add(tc.at))
			if got.Active != tc.active {
				t.Errorf("active %v, want %v", got.Active, tc.active)
			}
			var until time.Time
			if tc.until > 0 {
				until = start.Add(tc.until)
			}
			if !got.Until.Equal(until) {
				t.Errorf("until %s, want %s", got.Until, until)
			}
			if (got.Invalid != nil) != (tc.invalid != "") || got.Invalid != nil && !strings.Contains(got.Invalid.Error(), tc.invalid) {
				t.Errorf("invalid %v, want %q", got.Invalid, tc.invalid)
			}
		})
	}
}
