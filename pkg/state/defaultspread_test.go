package state_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/apis"
	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// TestParseSchedulerConfig: a configuration the kube-scheduler accepts gives its default
// constraints; one it refuses, or with a field it lacks, is an error naming the field.
func TestParseSchedulerConfig(t *testing.T) {
	got, err := state.ParseSchedulerConfig(`podTopologySpread:
  defaultConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
  - maxSkew: 3
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule},
		{MaxSkew: 3, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("constraints %+v, want %+v", got, want)
	}
	for _, empty := range []string{"", "  ", "{}", "podTopologySpread: {}"} {
		if got, err := state.ParseSchedulerConfig(empty); err != nil || got != nil {
			t.Errorf("%q: want no constraints, got %v, %v", empty, got, err)
		}
	}
	for raw, want := range map[string]string{
		`{"podTopologySpread": {"defaultConstraints": [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}}`:                                                    "podTopologySpread.defaultConstraints[0].maxSkew 0: must be greater than 0",
		`podTopologySpread: {defaultConstraints: [{maxSkew: 1, whenUnsatisfiable: DoNotSchedule}]}`:                                                                                       "podTopologySpread.defaultConstraints[0].topologyKey: must be set",
		`podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: "a b", whenUnsatisfiable: DoNotSchedule}]}`:                                                                   `podTopologySpread.defaultConstraints[0].topologyKey "a b": not a label name`,
		`podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Never}]}`:                                                                            `podTopologySpread.defaultConstraints[0].whenUnsatisfiable "Never": must be DoNotSchedule or ScheduleAnyway`,
		`podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, matchLabelKeys: [app]}]}`:                                             "podTopologySpread.defaultConstraints[0].matchLabelKeys: must not be set",
		`podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}, {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}`: "podTopologySpread.defaultConstraints[1] repeats podTopologySpread.defaultConstraints[0]",
		`podTopologySpread: {defaultingType: List}`: `unknown field "defaultingType"`,
		`podTopologySpread: [`:                      "decoding the scheduler configuration",
	} {
		if _, err := state.ParseSchedulerConfig(raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want an error saying %q, got %v", raw, want, err)
		}
	}
}

// TestSnapshotDefaultSpread: a snapshot gives every pod with no topology spread constraint of
// its own the default constraints, under the selector the kube-scheduler's
// helper.DefaultSelector deduces: the selectors of the Services selecting it merged, then its
// ReplicationController's labels (overwriting) or its ReplicaSet's or StatefulSet's selector
// (ANDed). A pod with constraints of its own, or none deduced, is left as it is; a pod, or a
// new pod of a controller, given a DoNotSchedule default is placed by the kube-scheduler.
func TestSnapshotDefaultSpread(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	kube := memory.New(apis.NewScheme(), clk)
	yes := true
	owned := func(apiVersion, kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(kind + "-" + name), Controller: &yes}}
	}
	objects := []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "tier", Namespace: "default"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"tier": "front"}}},
		// No selector: selects no pod.
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "external", Namespace: "default"}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "ReplicaSet-web-1"},
			Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "1"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "pod-template-hash": "1"}}}}},
		&corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: "default", UID: "ReplicationController-legacy"},
			Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"tier": "back"}}},
	}
	pod := func(name string, labels map[string]string, owners []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: labels, OwnerReferences: owners},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	}
	own := []corev1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	pods := []*corev1.Pod{
		pod("web-a", map[string]string{"app": "web", "pod-template-hash": "1", "tier": "front"}, owned("apps/v1", "ReplicaSet", "web-1")),
		pod("legacy-a", map[string]string{"tier": "front"}, owned("v1", "ReplicationController", "legacy")),
		pod("job-a", map[string]string{"app": "web"}, owned("batch/v1", "Job", "nightly")),
		pod("bare", map[string]string{"app": "batch"}, nil),
		pod("own", map[string]string{"app": "web"}, nil),
	}
	pods[4].Spec.TopologySpreadConstraints = own
	for _, o := range objects {
		if err := kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods {
		if err := kube.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	cluster := state.NewCluster(kube, clk)
	defaults := []corev1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule},
		{MaxSkew: 3, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway},
	}
	cluster.DefaultConstraints = defaults
	snap, err := cluster.SyncSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	with := func(s *metav1.LabelSelector) []corev1.TopologySpreadConstraint {
		out := make([]corev1.TopologySpreadConstraint, len(defaults))
		for i, c := range defaults {
			c.LabelSelector = s
			out[i] = c
		}
		return out
	}
	want := map[string][]corev1.TopologySpreadConstraint{
		// Both Services' labels, and the ReplicaSet's selector as expressions.
		"web-a": with(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "front"}, MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}},
			{Key: "pod-template-hash", Operator: metav1.LabelSelectorOpIn, Values: []string{"1"}}}}),
		// The ReplicationController's label overwrites the Service's.
		"legacy-a": with(&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "back"}}),
		// A Job adds nothing; the web Service selects it.
		"job-a": with(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}),
		"bare":  nil,
		"own":   own,
	}
	got := map[string][]corev1.TopologySpreadConstraint{}
	for _, p := range snap.Pods {
		got[p.Name] = p.Spec.TopologySpreadConstraints
	}
	for name := range want {
		if !reflect.DeepEqual(got[name], want[name]) {
			t.Errorf("pod %s's constraints %+v, want %+v", name, got[name], want[name])
		}
	}
	// A second snapshot gives the same pod object the same copy.
	again, err := cluster.SyncSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range again.Pods {
		if len(p.Spec.TopologySpreadConstraints) > 0 && p != snap.Pods[i] {
			t.Errorf("pod %s: a new copy in the second snapshot", p.Name)
		}
	}
	var stored corev1.Pod
	if err := kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-a"}, &stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Spec.TopologySpreadConstraints) > 0 {
		t.Error("the stored pod was changed")
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want bool
	}{
		{&stored, true},
		{pod("web-b", nil, owned("apps/v1", "ReplicaSet", "web-1")), true}, // a new pod of web-1
		{pods[3], false},
		{pods[4], false},
	} {
		if got := cluster.PlacedByKubeScheduler(tc.pod); got != tc.want {
			t.Errorf("PlacedByKubeScheduler(%s) = %v, want %v", tc.pod.Name, got, tc.want)
		}
	}
	// Pods that are not the snapshot's (stand-ins, virtual pods) are defaulted alike.
	extra := cluster.DefaultSpread(ctx, []*corev1.Pod{pod("virtual", map[string]string{"tier": "front"}, nil)})
	if want := with(&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}); !reflect.DeepEqual(extra[0].Spec.TopologySpreadConstraints, want) {
		t.Errorf("DefaultSpread gave %+v, want %+v", extra[0].Spec.TopologySpreadConstraints, want)
	}
}
