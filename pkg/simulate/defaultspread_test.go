package simulate

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// spreadWorkload is a Deployment of six small pods and a Job of three, on gettingStarted's
// NodePool.
var spreadWorkload = namespacePool + `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: web, resources: {requests: {cpu: 500m, memory: 512Mi}}}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  completions: 3
  parallelism: 3
  template:
    metadata: {labels: {app: batch}}
    spec:
      restartPolicy: Never
      containers: [{name: batch, image: batch, resources: {requests: {cpu: 500m, memory: 512Mi}}}]
`

// TestSchedulerConfigSpreadsWorkloads: with --scheduler-config's default zonal constraint
// (maxSkew 1, DoNotSchedule), the provisioner plans, and the kube-scheduler stand-in binds, a
// Deployment's pods two to a zone over the three zones, as a cluster whose kube-scheduler has
// that default spreads its ReplicaSet's pods; the Job's pods, whose controller the
// kube-scheduler deduces nothing from, are not held to it. No pod is stored with the
// constraints. Without it, the six pods share a zone.
func TestSchedulerConfigSpreadsWorkloads(t *testing.T) {
	zonesOf := func(config string) (web, batch map[string]int) {
		t.Helper()
		w, err := ParseWorkload("spread.yaml", []byte(spreadWorkload))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		e, err := newEngine(ctx, w, Options{SchedulerConfig: config})
		if err != nil {
			t.Fatal(err)
		}
		// Five minutes: the pods are placed, the Job's still running.
		w.Duration.Duration = 5 * time.Minute
		if _, err := e.run(ctx); err != nil {
			t.Fatal(err)
		}
		// The Job's pods are not held to the default: their controller adds nothing to a
		// selector, and no Service is simulated.
		for _, owner := range []struct {
			name string
			nil  bool
		}{{"web", false}, {"batch", true}} {
			pod := &corev1.Pod{}
			pod.Labels = map[string]string{ownerLabel: owner.name}
			if got := e.controllerSelector(pod); (got == nil) != owner.nil {
				t.Errorf("the controller selector of a pod of %s: %v", owner.name, got)
			}
		}
		var nodes corev1.NodeList
		var pods corev1.PodList
		if err := e.kube.List(ctx, &nodes); err != nil {
			t.Fatal(err)
		}
		if err := e.kube.List(ctx, &pods); err != nil {
			t.Fatal(err)
		}
		zone := map[string]string{}
		for _, n := range nodes.Items {
			zone[n.Name] = n.Labels[corev1.LabelTopologyZone]
		}
		web, batch = map[string]int{}, map[string]int{}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				t.Errorf("pod %s unbound", p.Name)
				continue
			}
			if len(p.Spec.TopologySpreadConstraints) > 0 {
				t.Errorf("pod %s was stored with the default constraints", p.Name)
			}
			switch p.Labels["app"] {
			case "web":
				web[zone[p.Spec.NodeName]]++
			case "batch":
				batch[zone[p.Spec.NodeName]]++
			}
		}
		return web, batch
	}
	web, _ := zonesOf("")
	if len(web) != 1 {
		t.Errorf("without defaults, the web pods are in zones %v, want one", web)
	}
	web, batch := zonesOf("podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]}")
	if len(web) != 3 || slices.Max(slices.Collect(maps.Values(web))) != 2 {
		t.Errorf("under the default zonal spread, the web pods are in zones %v, want two in each of three", web)
	}
	if n := web[""] + batch[""]; n > 0 {
		t.Errorf("%d pods on nodes without a zone", n)
	}
	t.Logf("batch pods by zone: %v", batch)
}
