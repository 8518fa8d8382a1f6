package simulate

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
)

// largeWorkload is services×500 pods at the daily peak over 24 hours: services of 500 replicas
// at the peak, following a curve (night 20%, morning 60%, peak 100%, evening 50%). Twenty
// services make the 10,000-pod day, two hundred the 100,000-pod day.
func largeWorkload(services int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %d pods, one day\nduration: 24h\nseed: 1\n", services*500)
	b.WriteString(strings.Replace(nodePoolManifests, "values: [c, m]}", "values: [c, m]}\n          - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: [\"5\"]}", 1))
	b.WriteString("timeline:\n")
	sizes := []string{"{cpu: 250m, memory: 512Mi}", "{cpu: 500m, memory: 1Gi}", "{cpu: \"1\", memory: 2Gi}", "{cpu: 500m, memory: 4Gi}"}
	for i := range services {
		fmt.Fprintf(&b, "  - at: 0s\n    deploy: {name: svc-%d, replicas: 100, pod: %s}\n", i, sizes[i%len(sizes)])
	}
	for _, step := range []struct {
		at       string
		replicas int
	}{{"7h", 300}, {"9h", 500}, {"18h", 250}, {"22h", 100}} {
		for i := range services {
			fmt.Fprintf(&b, "  - at: %s\n    scale: {name: svc-%d, replicas: %d}\n", step.at, i, step.replicas)
		}
	}
	return b.String()
}

// BenchmarkSimulate10kPods24h runs the 10,000-pod day end to end (report wall time per run).
func BenchmarkSimulate10kPods24h(b *testing.B) { benchmarkDay(b, 20) }

// BenchmarkSimulate100kPods24h runs the 100,000-pod day end to end: 200 services, 20,000 pods
// at night and 100,000 at the peak.
func BenchmarkSimulate100kPods24h(b *testing.B) { benchmarkDay(b, 200) }

// benchmarkDay runs largeWorkload(services) as `karpenter simulate` would.
func benchmarkDay(b *testing.B, services int) {
	w, err := ParseWorkload("large.yaml", []byte(largeWorkload(services)))
	if err != nil {
		b.Fatal(err)
	}
	// As `karpenter simulate` runs it (cmd/karpenter tunes the collector the same way).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(3 << 30))
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
