package provisioning_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// TestSchedulerConfigDefaultSpread: with --scheduler-config's default zonal constraint, the
// pods of a ReplicaSet and the pods a Service selects are spread over the zones, as the
// kube-scheduler configured alike spreads them, while pods no selector is deduced for are
// planned as they are; the spread pods' nominations are not announced (the kube-scheduler
// places them).
func TestSchedulerConfigDefaultSpread(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	ctx := context.Background()
	var err error
	if f.cluster.DefaultConstraints, err = state.ParseSchedulerConfig("podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]}"); err != nil {
		t.Fatal(err)
	}
	web := ownedPods(replicaSet(t, "web", 3, false), 0, 3)
	create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "api"}, Ports: []corev1.ServicePort{{Port: 80}}}})
	t.Cleanup(func() { env.Purge(t, []client.ObjectList{&corev1.ServiceList{}}, "default") })
	api := builders.Pods(3, builders.PodOptions{Name: "api", CPU: "500m", Memory: "1Gi", Labels: map[string]string{"app": "api"}})
	batch := builders.Pods(3, builders.PodOptions{Name: "batch", CPU: "500m", Memory: "1Gi", Labels: map[string]string{"app": "batch"}})
	for _, p := range web {
		p.Spec.Containers[0].Resources.Requests = api[0].Spec.Containers[0].Resources.Requests
	}
	pending(t, slices.Concat(web, api, batch)...)
	decision, err := f.provisioner.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(decision.Results.PodErrors) > 0 {
		t.Fatalf("unplaced: %v", decision.Results.PodErrors[0].Err)
	}
	zoneOf := map[string]string{} // pod name → its claim's zone, when the claim has one
	planned := map[string]*corev1.Pod{}
	for i, c := range decision.Results.NewClaims {
		reqs, err := scheduling.FromNodePoolRequirements(decision.Created[i].Spec.Requirements...)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range c.Pods {
			planned[p.Name] = p
			if z, ok := reqs.Get(corev1.LabelTopologyZone); ok && z.Len() == 1 {
				zoneOf[p.Name] = z.Values()[0]
			}
		}
	}
	for name, pods := range map[string][]*corev1.Pod{"ReplicaSet web": web, "Service api": api} {
		zones := map[string]bool{}
		for _, p := range pods {
			zones[zoneOf[p.Name]] = true
			if f.cluster.PlacedByKubeScheduler(p) != true {
				t.Errorf("pod %s: its nomination would be announced", p.Name)
			}
		}
		if len(zones) != 3 || zones[""] {
			t.Errorf("%s's pods went to zones %v, want three", name, slices.Sorted(maps.Keys(zones)))
		}
	}
	for _, p := range batch {
		if got := planned[p.Name]; got == nil || len(got.Spec.TopologySpreadConstraints) > 0 {
			t.Errorf("batch pod %s, with no deduced selector, was planned with constraints", p.Name)
		}
	}
	if f.cluster.PlacedByKubeScheduler(batch[0]) {
		t.Error("a batch pod's nomination would not be announced")
	}
}
