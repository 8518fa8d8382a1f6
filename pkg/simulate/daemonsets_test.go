package simulate

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
)

// daemonSet is a DaemonSet manifest of pods requesting cpu, with extra lines of their pod spec
// (indented as the spec's fields).
func daemonSet(name, cpu, spec string) string {
	return `---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ` + name + `, namespace: monitoring}
spec:
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
` + spec + `
      containers:
      - name: ` + name + `
        image: ` + name + `
        resources: {requests: {cpu: ` + cpu + `}}
        ports: [{containerPort: 9100, hostPort: 9100}]
`
}

// deployment is a Deployment manifest of replicas pods requesting cpu, with extra lines of
// their container (indented as the container's fields).
func deployment(name string, replicas int, cpu, container string) string {
	return `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `}
spec:
  replicas: ` + string(rune('0'+replicas)) + `
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      containers:
      - name: ` + name + `
        image: ` + name + `
        resources: {requests: {cpu: "` + cpu + `"}}
` + container
}

// daemonPods watches the engine's store for the daemon pods created, by node.
func daemonPods(e *engine) func() map[string][]string {
	var mu sync.Mutex
	seen := map[string][]string{}
	e.kube.OnChange(func(ch memory.Change) {
		p, ok := ch.Object.(*corev1.Pod)
		if !ok || ch.Type != watch.Added {
			return
		}
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "DaemonSet" {
			mu.Lock()
			defer mu.Unlock()
			seen[p.Spec.NodeName] = append(seen[p.Spec.NodeName], p.Namespace+"/"+p.Name)
		}
	})
	return func() map[string][]string {
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// runWithDaemons runs plain manifests, watching the daemon pods created.
func runWithDaemons(t *testing.T, text string) (*Report, *engine, map[string][]string) {
	t.Helper()
	w, err := ParseWorkload("daemons.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := newEngine(ctx, w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	created := daemonPods(e)
	rep, err := e.run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rep, e, created()
}

// TestDaemonSetPodsRunOnEveryNode: each node runs one pod of every DaemonSet that selects it,
// owned by the DaemonSet, bound there, and the report counts its requests; a DaemonSet that
// selects no node runs nowhere.
func TestDaemonSetPodsRunOnEveryNode(t *testing.T) {
	rep, e, _ := runWithDaemons(t, namespacePool+deployment("inflate", 5, "1", "")+
		daemonSet("agent", "200m", "")+daemonSet("picky", "100m", "      nodeSelector: {accelerator: nvidia}"))
	if len(rep.Fleet) == 0 || rep.Pods.Scheduled != 5 {
		t.Fatalf("%d nodes, %d pods scheduled: want the 5 inflate pods on nodes", len(rep.Fleet), rep.Pods.Scheduled)
	}
	ctx := context.Background()
	requested := 0.0
	for _, n := range rep.Fleet {
		requested += n.CPURequested
		var pods corev1.PodList
		if err := e.kube.List(ctx, &pods, client.InNamespace("monitoring"), client.MatchingFields{"spec.nodeName": n.Name}); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 1 || pods.Items[0].Name != "agent-"+n.Name || pods.Items[0].Status.Phase != corev1.PodRunning {
			t.Errorf("node %s runs daemon pods %v, want agent-%s running", n.Name, pods.Items, n.Name)
			continue
		}
		if ref := metav1.GetControllerOf(&pods.Items[0]); ref == nil || ref.Kind != "DaemonSet" || ref.Name != "agent" {
			t.Errorf("pod %s is controlled by %v, want daemonset agent", pods.Items[0].Name, ref)
		}
	}
	if want := 5 + 0.2*float64(len(rep.Fleet)); math.Abs(requested-want) > 1e-6 {
		t.Errorf("fleet requests %.2f cpu, want %.2f: the inflate pods' and an agent per node", requested, want)
	}
}

// TestDaemonSetHostPortsAreTaken: a pod asking for hostPort 9100 never shares a node with the
// node-exporter DaemonSet's pod that holds it; with the DaemonSet only reserving room on new
// nodes, the kube-scheduler stand-in bound it beside the exporter.
func TestDaemonSetHostPortsAreTaken(t *testing.T) {
	rep, e, _ := runWithDaemons(t, namespacePool+deployment("base", 1, "1", "")+daemonSet("node-exporter", "100m", "")+
		deployment("scraper", 1, "100m", "        ports: [{containerPort: 9100, hostPort: 9100}]\n"))
	var pods corev1.PodList
	if err := e.kube.List(context.Background(), &pods, client.InNamespace("default"), client.MatchingLabels{"app": "scraper"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			t.Errorf("pod %s bound to %s, where node-exporter holds port 9100", p.Name, p.Spec.NodeName)
		}
	}
	if len(rep.Pods.Unscheduled) != 1 || rep.Pods.Unscheduled[0].Workload != "scraper" || !strings.Contains(rep.Pods.Unscheduled[0].Reason, "9100") {
		t.Errorf("unscheduled %+v: want scraper, for its port", rep.Pods.Unscheduled)
	}
}

// TestNodeWithOnlyDaemonPodsIsEmpty: once a node's job is done, it runs only its daemon pods,
// and consolidation removes it as empty.
func TestNodeWithOnlyDaemonPodsIsEmpty(t *testing.T) {
	job := `---
apiVersion: batch/v1
kind: Job
metadata: {name: crunch, annotations: {simulate.karpenter.sh/runtime: 10m}}
spec:
  completions: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
`
	rep, _, created := runWithDaemons(t, namespacePool+job+daemonSet("agent", "200m", ""))
	if len(rep.NodeHistory) != 1 {
		t.Fatalf("%d nodes launched, want 1", len(rep.NodeHistory))
	}
	node := rep.NodeHistory[0]
	if len(created[node.Name]) != 1 {
		t.Errorf("daemon pods created on %s: %v, want the agent's", node.Name, created)
	}
	if node.RemovedAt == nil || rep.Disruptions["Empty"] != 1 || len(rep.Fleet) != 0 {
		t.Errorf("node %s removed at %v, disruptions %v, %d nodes at the end: want it removed as empty", node.Name, node.RemovedAt, rep.Disruptions, len(rep.Fleet))
	}
}
