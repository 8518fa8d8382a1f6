package clustermetrics_test

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/apis"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/clustermetrics"
	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

const (
	benchNodes = 1000
	benchPods  = 10000
)

// benchCluster is an in-memory cluster of benchNodes launched nodes of one NodePool with
// benchPods pods spread over them, one of every ten a daemonset pod.
func benchCluster(b *testing.B) *state.Cluster {
	b.Helper()
	ctx := context.Background()
	kube := memory.New(apis.NewScheme(), clock.RealClock{})
	create := func(obj client.Object) {
		if err := kube.Create(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Limits = karpv1.Limits(builders.Resources("cpu", "10000"))
	create(np)
	for i := range benchNodes {
		it, zone, capacityType := "small", "zone-1", karpv1.CapacityTypeOnDemand
		if i%2 == 1 {
			it, zone, capacityType = "large", "zone-2", karpv1.CapacityTypeSpot
		}
		node, claim := launched(fmt.Sprintf("node-%04d", i), it, capacityType, zone,
			builders.Resources("cpu", "4", "memory", "16Gi", "pods", "110", "ephemeral-storage", "100Gi"),
			builders.Resources("cpu", "4", "memory", "17Gi", "pods", "110", "ephemeral-storage", "110Gi"))
		create(node)
		create(claim)
	}
	for i := range benchPods {
		owner := "ReplicaSet"
		if i%10 == 0 {
			owner = "DaemonSet"
		}
		pod := bound(fmt.Sprintf("pod-%05d", i), fmt.Sprintf("node-%04d", i%benchNodes), "100m", "200m", owner)
		pod.UID = types.UID(pod.Name)
		pod.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = builders.Resources("m", "256Mi")["m"]
		create(pod)
	}
	return state.NewCluster(kube, clock.RealClock{})
}

// snapshotSource serves one snapshot taken beforehand.
type snapshotSource struct{ snap *state.Snapshot }

func (s snapshotSource) SyncSnapshot(context.Context) (*state.Snapshot, error) { return s.snap, nil }

// BenchmarkCollect measures building the gauges from a snapshot already taken: 1000 nodes and
// 10,000 pods.
func BenchmarkCollect(b *testing.B) {
	snap, err := benchCluster(b).SyncSnapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	c := clustermetrics.NewCollector(snapshotSource{snap}, catalog)
	b.ReportAllocs()
	series := 0
	for b.Loop() {
		ch := make(chan prometheus.Metric, 1024)
		go func() { c.Collect(ch); close(ch) }()
		series = 0
		for range ch {
			series++
		}
	}
	b.ReportMetric(float64(series), "series")
}

// BenchmarkScrape measures what one scrape of /metrics costs with 1000 nodes and 10,000 pods:
// the snapshot of an in-memory cluster, the gauges, the registry's gathering and sorting, and
// the text encoding.
func BenchmarkScrape(b *testing.B) {
	c := clustermetrics.NewCollector(benchCluster(b), catalog)
	r := prometheus.NewRegistry()
	if err := r.Register(c); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var size int64
	for b.Loop() {
		families, err := r.Gather()
		if err != nil {
			b.Fatal(err)
		}
		w := &countingWriter{}
		enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, f := range families {
			if err := enc.Encode(f); err != nil {
				b.Fatal(err)
			}
		}
		size = w.n
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB/scrape")
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countingWriter)(nil)
