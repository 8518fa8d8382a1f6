package scheduler

import (
	"reflect"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// Pending pods are counted by the zone their zonal constraints leave before the run: required
// zones, volume zones and the zones their topology groups admit, intersected; preferences do
// not narrow it.
func TestPendingPodsByEffectiveZone(t *testing.T) {
	inZones := func(zones ...string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones}}}},
		}}}
	}
	prefers := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
		Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone1}}}},
	}}}}
	app := map[string]string{"app": "api"}
	// Zone 1 already has two of app's pods: a spread pod with maxSkew 1 may go to zones 2 and 3.
	node := &Node{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: zone1},
		Available: builders.Resources("cpu", "0", "memory", "0", "pods", "0"),
		Pods:      builders.Pods(2, builders.PodOptions{Labels: app, CPU: "100m"})}
	plain := builders.Pods(2, builders.PodOptions{CPU: "1"})
	pinned := builders.Pod(builders.PodOptions{CPU: "1", NodeSelector: map[string]string{corev1.LabelTopologyZone: zone2}})
	twoZones := builders.Pod(builders.PodOptions{CPU: "1", Affinity: inZones(zone1, zone2)})
	preferring := builders.Pod(builders.PodOptions{CPU: "1", Affinity: prefers})
	// Of preferring's shape (the same requirements once its preference is held), but required.
	requiring := builders.Pod(builders.PodOptions{CPU: "1", NodeSelector: map[string]string{corev1.LabelTopologyZone: zone1}})
	volumeElsewhere := builders.Pod(builders.PodOptions{CPU: "1", Affinity: inZones(zone1)})
	volumeNarrows := builders.Pod(builders.PodOptions{CPU: "1", Affinity: inZones(zone1, zone3)})
	spread := builders.Pods(2, builders.PodOptions{Labels: app, CPU: "1", Spread: zonalSpread(app)})
	spreadInTwo := builders.Pod(builders.PodOptions{Labels: app, CPU: "2", Spread: zonalSpread(app), Affinity: inZones(zone1, zone3)})
	running := builders.Pod(builders.PodOptions{CPU: "1"})
	running.Status.Phase = corev1.PodRunning // a pod moved by a disruption simulation: not pending
	pods := append(append(plain, pinned, twoZones, preferring, requiring, volumeElsewhere, volumeNarrows, spreadInTwo, running), spread...)
	volumes := map[types.UID]scheduling.Requirements{
		volumeElsewhere.UID: scheduling.NewRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone2)),
		volumeNarrows.UID:   scheduling.NewRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone3)),
	}
	r := Solve(Input{Pods: pods, Nodes: []*Node{node}, NodePools: []*NodePool{onDemandPool("default")}, VolumeRequirements: volumes,
		Options: Options{CountEffectiveZones: true}})
	want := map[string]int{
		EffectiveZoneFlexible: 2 + 1 + 1 + 2, // plain, twoZones, preferring, spread (zones 2 and 3)
		zone1:                 1,             // requiring
		zone2:                 1,             // pinned
		zone3:                 2,             // volumeNarrows; spreadInTwo (zone 1 is over its skew)
		EffectiveZoneNone:     1,             // volumeElsewhere
	}
	if !reflect.DeepEqual(r.PendingByEffectiveZone, want) {
		t.Errorf("pending by effective zone = %v, want %v", r.PendingByEffectiveZone, want)
	}
	if r := Solve(Input{Pods: pods, Nodes: []*Node{node}, NodePools: []*NodePool{onDemandPool("default")}}); r.PendingByEffectiveZone != nil {
		t.Errorf("counted %v without being asked", r.PendingByEffectiveZone)
	}
}

// Progress reads, while the run goes on, how many pods it has not placed yet: all of them at
// the start, fewer and fewer, none at the end (failed pods count until they are given up).
func TestProgressCountsDownTheQueue(t *testing.T) {
	pods := benchmarkPods(3000, 1)
	pods = append(pods, builders.Pod(builders.PodOptions{CPU: "1", NodeSelector: map[string]string{corev1.LabelArchStable: "s390x"}}))
	progress := &Progress{}
	if got := progress.Queued(); got != 0 {
		t.Fatalf("queued %d before the run", got)
	}
	done := make(chan *Results)
	go func() {
		done <- Solve(Input{Pods: pods, NodePools: []*NodePool{{Name: "default", InstanceTypes: benchmarkTypes()}}, Progress: progress})
	}()
	var seen []int
	var results *Results
	for results == nil {
		select {
		case results = <-done:
		default:
			// Zero until the run starts, then the queue's depth.
			if q := progress.Queued(); len(seen) == 0 && q > 0 || len(seen) > 0 && seen[len(seen)-1] != q {
				seen = append(seen, q)
			}
			runtime.Gosched()
		}
	}
	if len(results.PodErrors) != 1 {
		t.Fatalf("%d pods unplaced, want the s390x one", len(results.PodErrors))
	}
	if got := progress.Queued(); got != 0 {
		t.Errorf("queued %d after the run, want 0", got)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] > seen[i-1] {
			t.Fatalf("the queue grew from %d to %d", seen[i-1], seen[i])
		}
	}
	intermediate := 0
	for _, q := range seen {
		if q > 0 && q < len(pods) {
			intermediate++
		}
	}
	if len(seen) == 0 || seen[0] > len(pods) || intermediate == 0 {
		t.Errorf("read queue depths %v while placing %d pods, want some between 0 and %d", seen, len(pods), len(pods))
	}
	var nilProgress *Progress
	if nilProgress.Queued() != 0 {
		t.Error("a nil Progress reads a queue")
	}
}
