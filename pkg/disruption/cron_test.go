package disruption

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestScheduleActive(t *testing.T) {
	for _, tc := range []struct {
		expr     string
		duration time.Duration
		now      string
		want     bool
	}{
		{"0 9 * * 1-5", 8 * time.Hour, "2026-03-02T09:00:00Z", true},  // Monday, at the firing
		{"0 9 * * 1-5", 8 * time.Hour, "2026-03-02T16:59:59Z", true},  // end of window
		{"0 9 * * 1-5", 8 * time.Hour, "2026-03-02T17:00:00Z", false}, // window is half-open
		{"0 9 * * 1-5", 8 * time.Hour, "2026-03-01T10:00:00Z", false}, // Sunday
		{"0 9 * * mon-fri", 8 * time.Hour, "2026-03-06T12:00:00Z", true},
		{"@daily", time.Hour, "2026-03-02T00:30:00Z", true},
		{"@daily", time.Hour, "2026-03-02T01:30:00Z", false},
		{"*/15 * * * *", 5 * time.Minute, "2026-03-02T10:17:00Z", true},
		{"*/15 * * * *", 5 * time.Minute, "2026-03-02T10:20:00Z", false},
		{"0 22 * * *", 4 * time.Hour, "2026-03-03T01:00:00Z", true}, // spans midnight
		{"@yearly", 48 * time.Hour, "2026-01-02T12:00:00Z", true},
		{"@yearly", 48 * time.Hour, "2026-01-03T12:00:00Z", false},
		{"0 0 1 * 0", 24 * time.Hour, "2026-03-01T05:00:00Z", true}, // dom or dow: the 1st
		{"0 0 1 * 0", 24 * time.Hour, "2026-03-08T05:00:00Z", true}, // dom or dow: a Sunday
		{"0 0 1 * 0", 24 * time.Hour, "2026-03-09T05:00:00Z", false},
		{"0 0 * * 7", 24 * time.Hour, "2026-03-08T05:00:00Z", true}, // 7 is Sunday
	} {
		s, err := ParseSchedule(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if got := s.ActiveAt(at(tc.now), tc.duration); got != tc.want {
			t.Errorf("%q for %s at %s: active = %v, want %v", tc.expr, tc.duration, tc.now, got, tc.want)
		}
	}
}

func TestParseScheduleErrors(t *testing.T) {
	for _, expr := range []string{"", "* * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * * 13 *", "* * * * 8", "5-1 * * * *", "*/0 * * * *", "@often"} {
		if _, err := ParseSchedule(expr); err == nil {
			t.Errorf("%q parsed", expr)
		}
	}
}

func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"0 9 * * 1-5", "@daily", "*/7 1-5,9 */2 jan-mar sun"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := ParseSchedule(expr)
		if err != nil {
			return
		}
		now := at("2026-03-02T09:00:00Z")
		if fire, ok := s.Prev(now, 48*time.Hour); ok && (!s.Matches(fire) || fire.After(now)) {
			t.Fatalf("%q: Prev = %s", expr, fire)
		}
	})
}

func TestAllowedDisruptions(t *testing.T) {
	sched, dur := "0 9 * * *", &metav1.Duration{Duration: 8 * time.Hour}
	for _, tc := range []struct {
		name              string
		budgets           []karpv1.Budget
		reason            karpv1.DisruptionReason
		total, disrupting int
		now               string
		want              int
	}{
		{"default 10% rounds up", nil, karpv1.DisruptionReasonEmpty, 25, 0, "2026-03-02T12:00:00Z", 3},
		{"10% of a small pool is still one node", nil, karpv1.DisruptionReasonEmpty, 3, 0, "2026-03-02T12:00:00Z", 1},
		{"count less disrupting", []karpv1.Budget{{Nodes: "5"}}, karpv1.DisruptionReasonDrifted, 100, 3, "2026-03-02T12:00:00Z", 2},
		{"never negative", []karpv1.Budget{{Nodes: "1"}}, karpv1.DisruptionReasonDrifted, 100, 3, "2026-03-02T12:00:00Z", 0},
		{"most restrictive wins", []karpv1.Budget{{Nodes: "50%"}, {Nodes: "3"}}, karpv1.DisruptionReasonEmpty, 10, 0, "2026-03-02T12:00:00Z", 3},
		{"reason filter", []karpv1.Budget{{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonUnderutilized}}}, karpv1.DisruptionReasonDrifted, 10, 0, "2026-03-02T12:00:00Z", Unbounded},
		{"window active", []karpv1.Budget{{Nodes: "0", Schedule: &sched, Duration: dur}, {Nodes: "100%"}}, karpv1.DisruptionReasonEmpty, 10, 0, "2026-03-02T12:00:00Z", 0},
		{"window inactive", []karpv1.Budget{{Nodes: "0", Schedule: &sched, Duration: dur}, {Nodes: "100%"}}, karpv1.DisruptionReasonEmpty, 10, 0, "2026-03-02T18:00:00Z", 10},
	} {
		np := builders.NodePool(builders.NodePoolOptions{Name: "p", Ready: true}, func(np *karpv1.NodePool) { np.Spec.Disruption.Budgets = tc.budgets })
		got, err := AllowedDisruptions(np, tc.reason, tc.total, tc.disrupting, at(tc.now))
		if err != nil || got != tc.want {
			t.Errorf("%s: allowed = %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}
