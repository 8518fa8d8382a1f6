package simulate

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
)

// largeWorkload is 10,000 pods over 24 hours: 20 services of 500 replicas at the daily peak,
// following a curve (night 20%, morning 60%, peak 100%, evening 50%).
func largeWorkload() string {
	var b strings.Builder
	b.WriteString("name: 10000 pods, one day\nduration: 24h\nseed: 1\n")
	b.WriteString(strings.Replace(nodePoolManifests, "values: [c, m]}", "values: [c, m]}\n          - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: [\"5\"]}", 1))
	b.WriteString("timeline:\n")
	sizes := []string{"{cpu: 250m, memory: 512Mi}", "{cpu: 500m, memory: 1Gi}", "{cpu: \"1\", memory: 2Gi}", "{cpu: 500m, memory: 4Gi}"}
	for i := range 20 {
		fmt.Fprintf(&b, "  - at: 0s\n    deploy: {name: svc-%d, replicas: 100, pod: %s}\n", i, sizes[i%len(sizes)])
	}
	for _, step := range []struct {
		at       string
		replicas int
	}{{"7h", 300}, {"9h", 500}, {"18h", 250}, {"22h", 100}} {
		for i := range 20 {
			fmt.Fprintf(&b, "  - at: %s\n    scale: {name: svc-%d, replicas: %d}\n", step.at, i, step.replicas)
		}
	}
	return b.String()
}

// BenchmarkSimulate10kPods24h runs the large workload end to end (report wall time per run).
func BenchmarkSimulate10kPods24h(b *testing.B) {
	w, err := ParseWorkload("large.yaml", []byte(largeWorkload()))
	if err != nil {
		b.Fatal(err)
	}
	// As `karpenter simulate` runs it (cmd/karpenter tunes the collector the same way).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	for b.Loop() {
		rep, err := Run(context.Background(), w, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Pods.NeverScheduled > 0 {
			b.Fatalf("%d pods never scheduled", rep.Pods.NeverScheduled)
		}
		b.ReportMetric(float64(rep.Nodes.Peak), "peak-nodes")
		b.ReportMetric(rep.Cost.Total, "total-$")
	}
}
