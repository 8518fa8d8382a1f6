package view

import (
	"fmt"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// benchCluster is nodes m5.xlarge nodes, a third of them spot, with podsPerNode pods each, ten
// NodeClaims launching and a hundred pending pods.
func benchCluster(nodes, podsPerNode int) Objects {
	var objs Objects
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	for i := range nodes {
		capacity := karpv1.CapacityTypeOnDemand
		if i%3 == 0 {
			capacity = karpv1.CapacityTypeSpot
		}
		name := fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", i/250, i%250)
		objs.Nodes = append(objs.Nodes, testNode(name, nodeOptions{
			instanceType: "m5.xlarge", capacityType: capacity, zone: zones[i%3], cpu: "3920m", memory: "14Gi",
			created: t0.Add(-time.Duration(i) * time.Minute),
		}))
		for j := range podsPerNode {
			p := testPod(fmt.Sprintf("%s-%d", name, j), name, "100m", "256Mi", corev1.PodRunning)
			p.UID, p.ResourceVersion = types.UID(p.Name), "1"
			objs.Pods = append(objs.Pods, p)
		}
	}
	for i := range 10 {
		objs.NodeClaims = append(objs.NodeClaims, testClaim(fmt.Sprintf("default-%d", i), claimOptions{}))
	}
	for i := range 100 {
		objs.Pods = append(objs.Pods, testPod(fmt.Sprintf("pending-%d", i), "", "1", "1Gi", corev1.PodPending))
	}
	return objs
}

func benchmarkFrame(b *testing.B, nodes int, cached bool) {
	prices, err := catalog.DefaultPrices()
	if err != nil {
		b.Fatal(err)
	}
	objs := benchCluster(nodes, 30)
	opts := Options{Now: t0, Prices: prices, Sort: SortPrice}
	if cached {
		opts.Requests = &scheduling.RequestsCache{}
	}
	b.ReportAllocs()
	for b.Loop() {
		s := NewSnapshot(objs, opts)
		if cached {
			opts.Requests.Prune()
		}
		if err := Render(io.Discard, s, RenderOptions{Color: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkViewFrame builds and renders one frame of a cluster of 30 pods per node, computing
// every pod's requests (a --once frame) or remembering them across frames (a live view).
func BenchmarkViewFrame(b *testing.B) {
	for _, nodes := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d/once", nodes), func(b *testing.B) { benchmarkFrame(b, nodes, false) })
		b.Run(fmt.Sprintf("nodes=%d/live", nodes), func(b *testing.B) { benchmarkFrame(b, nodes, true) })
	}
}

// BenchmarkViewRender renders a snapshot of 1000 nodes.
func BenchmarkViewRender(b *testing.B) {
	prices, err := catalog.DefaultPrices()
	if err != nil {
		b.Fatal(err)
	}
	s := NewSnapshot(benchCluster(1000, 30), Options{Now: t0, Prices: prices})
	b.ReportAllocs()
	for b.Loop() {
		if err := Render(io.Discard, s, RenderOptions{Color: true}); err != nil {
			b.Fatal(err)
		}
	}
}
