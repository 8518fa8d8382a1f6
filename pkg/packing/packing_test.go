package packing

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// pool has two types without overhead: small (2 cores, 8Gi, $0.10) and large (8 cores, 32Gi,
// $0.40), on demand in one zone.
func pool(taints ...corev1.Taint) *scheduler.NodePool {
	var its []*cloudprovider.InstanceType
	for _, t := range []struct {
		name  string
		cpu   int64
		price float64
	}{{"small", 2, 0.10}, {"large", 8, 0.40}} {
		its = append(its, builders.InstanceType(builders.InstanceTypeOptions{Name: t.name, CPU: t.cpu, MemoryGiB: 4 * t.cpu, PricePerHour: t.price,
			Offerings: []cloudprovider.Offering{{Zone: "test-zone-1", CapacityType: karpv1.CapacityTypeOnDemand, Price: t.price, Available: true}}}))
	}
	return &scheduler.NodePool{Name: "default", Requirements: scheduling.NewRequirements(), InstanceTypes: its, Taints: taints}
}

func pods(n int, cpu, memory string) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = builders.Pod(builders.PodOptions{Name: fmt.Sprintf("p%d-%s", i, cpu), CPU: cpu, Memory: memory})
	}
	return out
}

// TestCompute: five one-core pods need two and a half smalls at least ($0.25/hour), three
// whole ones to place; on four smalls ($0.40/hour) the fleet is 1.6× the bound.
func TestCompute(t *testing.T) {
	r := Compute(Input{Pools: []Pool{{NodePool: pool(), Pods: pods(5, "1", "1Gi"), Current: 0.40, Nodes: 4}}})
	if len(r.Pools) != 1 || r.Nodes != 4 || r.Unplaced != 0 {
		t.Fatalf("result %+v", r)
	}
	if math.Abs(r.Bound-0.25) > 1e-6 || math.Abs(r.Repacked-0.30) > 1e-9 || r.RepackedNodes != 3 {
		t.Errorf("bound $%.4f, re-packed $%.4f on %d nodes; want $0.25, $0.30 on 3", r.Bound, r.Repacked, r.RepackedNodes)
	}
	if math.Abs(r.Ratio()-1.6) > 1e-6 || math.Abs(r.RepackRatio()-0.40/0.30) > 1e-9 {
		t.Errorf("ratio %.4f, re-pack ratio %.4f", r.Ratio(), r.RepackRatio())
	}
	if p, ok := r.Pool("default"); !ok || p.Ratio() != r.Ratio() {
		t.Errorf("Pool(default) = %+v, %v", p, ok)
	}
	if r.Bound > r.Repacked {
		t.Errorf("the bound $%.4f exceeds a real packing $%.4f", r.Bound, r.Repacked)
	}
}

// TestComputeLeavesOutWhatFitsNowhere: a pod bigger than every type is unplaced and counts in
// neither figure; a NodePool without pods has no bound; the ratios of zero are zero.
func TestComputeLeavesOutWhatFitsNowhere(t *testing.T) {
	r := Compute(Input{Pools: []Pool{
		{NodePool: pool(), Pods: append(pods(2, "1", "1Gi"), pods(1, "16", "1Gi")...), Current: 0.2, Nodes: 2},
	}})
	if r.Unplaced != 1 || math.Abs(r.Bound-0.10) > 1e-6 || math.Abs(r.Repacked-0.10) > 1e-9 {
		t.Errorf("unplaced %d, bound $%.4f, re-packed $%.4f; want 1, $0.10, $0.10", r.Unplaced, r.Bound, r.Repacked)
	}
	empty := Compute(Input{Pools: []Pool{{NodePool: pool(), Current: 0.1, Nodes: 1}}})
	if empty.Bound != 0 || empty.Ratio() != 0 || empty.RepackRatio() != 0 {
		t.Errorf("no pods: %+v, ratio %v", empty, empty.Ratio())
	}
}

// TestBoundCountsDaemonsOnEveryNode: a daemon that runs on every node takes its requests from
// every type's capacity; one that selects some nodes, or does not tolerate the NodePool's
// taint, is left out (which keeps the bound a bound).
func TestBoundCountsDaemonsOnEveryNode(t *testing.T) {
	work := pods(8, "1", "1Gi")
	bare := Bound(pool(), work, nil)
	everywhere := builders.Pod(builders.PodOptions{Name: "agent", CPU: "1", Memory: "1Gi"})
	selective := builders.Pod(builders.PodOptions{Name: "gpu-agent", CPU: "1", Memory: "1Gi"})
	selective.Spec.NodeSelector = map[string]string{awsv1.LabelInstanceGPUCount: "1"}
	// Eight one-core pods: $0.40 bare; with a one-core daemon on every node, a large holds 7,
	// a small 1, so the LP pays $0.40/7 or $0.10 per pod: 8 × 0.40/7.
	if math.Abs(bare-0.40) > 1e-6 {
		t.Errorf("bare bound $%.4f, want $0.40", bare)
	}
	if got, want := Bound(pool(), work, []*corev1.Pod{everywhere, selective}), 8*0.40/7; math.Abs(got-want) > 1e-6 {
		t.Errorf("bound with a daemon everywhere $%.4f, want $%.4f", got, want)
	}
	tainted := pool(corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule})
	if got := Bound(tainted, work, []*corev1.Pod{everywhere}); math.Abs(got-bare) > 1e-6 {
		t.Errorf("bound with a daemon that does not tolerate the taint $%.4f, want $%.4f", got, bare)
	}
}

// TestBoundLeavesOutReservations: a reservation's slots are few and its offering priced near
// nothing; the bound prices each type at its cheapest offering outside reservations, else the
// LP would fill the reservation without end and the bound would be nearly nothing.
func TestBoundLeavesOutReservations(t *testing.T) {
	np := pool()
	for _, it := range np.InstanceTypes {
		o := it.Offerings[0]
		it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: o.Zone, CapacityType: karpv1.CapacityTypeReserved, ReservationID: "cr-1",
			Price: o.Price / 10_000_000, Available: true})
	}
	if got := Bound(np, pods(5, "1", "1Gi"), nil); math.Abs(got-0.25) > 1e-6 {
		t.Errorf("bound $%.7f, want $0.25 (the on-demand offerings')", got)
	}
}
