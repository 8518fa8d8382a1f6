package eventlog

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openkarpenter/karpenter/pkg/events"
)

// failures is a testing.TB that keeps what Errorf reports.
type failures struct {
	testing.TB
	errs []string
}

func (f *failures) Helper() {}
func (f *failures) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func TestCheckTable(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", UID: "p"}}
	var nilNode *corev1.Node
	evicted := events.Event{InvolvedObject: pod, Type: "Normal", Reason: "Evicted", Message: "Evicted pod",
		DedupeValues: []string{"p"}, DedupeTimeout: time.Minute}
	row := [5]string{"Pod", "web-0", "Normal", "Evicted", "Evicted pod"}
	for _, tc := range []struct {
		name  string
		c     Case
		fails int
	}{
		{"matching", Case{Name: "x", Events: []events.Event{evicted}, Want: [][5]string{row},
			Dedupe: [][]string{{"p"}}, DedupeTimeout: time.Minute}, 0},
		{"dedupe not checked", Case{Name: "x", Events: []events.Event{evicted}, Want: [][5]string{row}}, 0},
		{"no object", Case{Name: "x", Events: []events.Event{{InvolvedObject: nilNode, Type: "Normal", Reason: "R", Message: "m"}},
			Want: [][5]string{{"", "", "Normal", "R", "m"}}}, 0},
		{"other message", Case{Name: "x", Events: []events.Event{evicted}, Want: [][5]string{{"Pod", "web-0", "Normal", "Evicted", "other"}}}, 1},
		{"one event too many", Case{Name: "x", Events: []events.Event{evicted, evicted}, Want: [][5]string{row}}, 1},
		{"other dedupe values", Case{Name: "x", Events: []events.Event{evicted}, Want: [][5]string{row},
			Dedupe: [][]string{{"q"}}, DedupeTimeout: time.Minute}, 1},
		{"other dedupe timeout", Case{Name: "x", Events: []events.Event{evicted}, Want: [][5]string{row},
			Dedupe: [][]string{{"p"}}}, 1},
	} {
		f := &failures{TB: t}
		CheckTable(f, []Case{tc.c})
		if len(f.errs) != tc.fails {
			t.Errorf("%s: %d failures %q, want %d", tc.name, len(f.errs), f.errs, tc.fails)
		}
	}
}
