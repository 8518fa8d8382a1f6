package view

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// testPrices price two made-up types: small at $0.10 on demand and $0.04 as spot in every zone,
// and large at $0.40 and $0.16 ($0.15 in zone-b).
var testPrices = priceTable{
	{"small", "", karpv1.CapacityTypeOnDemand}:   0.10,
	{"small", "", karpv1.CapacityTypeSpot}:       0.04,
	{"large", "", karpv1.CapacityTypeOnDemand}:   0.40,
	{"large", "", karpv1.CapacityTypeSpot}:       0.16,
	{"large", "zone-b", karpv1.CapacityTypeSpot}: 0.15,
}

type priceKey struct{ instanceType, zone, capacityType string }

// priceTable prices by type, zone and capacity type, falling back to an every-zone ("") price.
type priceTable map[priceKey]float64

func (p priceTable) Price(instanceType, zone, capacityType string) (float64, bool) {
	if v, ok := p[priceKey{instanceType, zone, capacityType}]; ok {
		return v, true
	}
	v, ok := p[priceKey{instanceType, "", capacityType}]
	return v, ok
}

// nodeOptions describe a test node; zero fields take defaults (a ready on-demand "small" node
// of NodePool default in zone-a, 2 cores and 8Gi, created at t0 − 1h).
type nodeOptions struct {
	instanceType, capacityType, zone, nodePool string
	cpu, memory                                string
	unmanaged, notReady, cordoned, deleting    bool
	disrupted                                  bool
	providerID                                 string
	created                                    time.Time
	labels                                     map[string]string
}

func testNode(name string, o nodeOptions) corev1.Node {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&o.instanceType, "small")
	def(&o.capacityType, karpv1.CapacityTypeOnDemand)
	def(&o.zone, "zone-a")
	def(&o.nodePool, "default")
	def(&o.cpu, "2")
	def(&o.memory, "8Gi")
	if o.created.IsZero() {
		o.created = t0.Add(-time.Hour)
	}
	l := map[string]string{
		corev1.LabelInstanceTypeStable: o.instanceType,
		corev1.LabelTopologyZone:       o.zone,
		karpv1.CapacityTypeLabelKey:    o.capacityType,
		karpv1.NodePoolLabelKey:        o.nodePool,
	}
	if o.unmanaged {
		delete(l, karpv1.NodePoolLabelKey)
		delete(l, karpv1.CapacityTypeLabelKey)
	}
	for k, v := range o.labels {
		l[k] = v
	}
	n := *builders.Node(name, l, builders.Resources("cpu", o.cpu, "memory", o.memory, "pods", "110"))
	n.CreationTimestamp = metav1.NewTime(o.created)
	n.Spec.ProviderID = o.providerID
	n.Spec.Unschedulable = o.cordoned
	if o.notReady {
		n.Status.Conditions[0].Status = corev1.ConditionFalse
	}
	if o.deleting {
		n.DeletionTimestamp = &metav1.Time{Time: t0}
	}
	if o.disrupted {
		n.Spec.Taints = []corev1.Taint{{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}}
	}
	return n
}

// claimOptions describe a test NodeClaim of NodePool default; labels are the launched ones,
// requirements pairs of key and values.
type claimOptions struct {
	labels       map[string]string
	requirements map[string][]string
	nodeName     string
	providerID   string
	deleting     bool
	created      time.Time
}

func testClaim(name string, o claimOptions) karpv1.NodeClaim {
	l := map[string]string{karpv1.NodePoolLabelKey: "default"}
	for k, v := range o.labels {
		l[k] = v
	}
	if o.created.IsZero() {
		o.created = t0.Add(-time.Minute)
	}
	c := karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, CreationTimestamp: metav1.NewTime(o.created)},
		Status:     karpv1.NodeClaimStatus{NodeName: o.nodeName, ProviderID: o.providerID},
	}
	for _, k := range []string{corev1.LabelInstanceTypeStable, karpv1.CapacityTypeLabelKey, corev1.LabelTopologyZone} {
		if v, ok := o.requirements[k]; ok {
			c.Spec.Requirements = append(c.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{Key: k, Operator: corev1.NodeSelectorOpIn, Values: v})
		}
	}
	if o.deleting {
		c.DeletionTimestamp = &metav1.Time{Time: t0}
	}
	return c
}

func testPod(name, node, cpu, memory string, phase corev1.PodPhase) corev1.Pod {
	p := *builders.Pod(builders.PodOptions{Name: name, NodeName: node, CPU: cpu, Memory: memory})
	p.Status = corev1.PodStatus{Phase: phase}
	return p
}

func snapshot(objs Objects) Snapshot {
	return NewSnapshot(objs, Options{Now: t0, Prices: testPrices})
}

func rowNamed(t *testing.T, s Snapshot, name string) Row {
	t.Helper()
	for _, r := range s.Rows {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no row %q in %+v", name, s.Rows)
	return Row{}
}

func TestViewSnapshotStates(t *testing.T) {
	for _, tc := range []struct {
		name string
		node nodeOptions
		want State
	}{
		{"ready", nodeOptions{}, StateReady},
		{"not ready", nodeOptions{notReady: true}, StateNotReady},
		{"cordoned", nodeOptions{cordoned: true}, StateCordoned},
		{"not ready beats cordoned", nodeOptions{notReady: true, cordoned: true}, StateNotReady},
		{"deleting", nodeOptions{deleting: true}, StateDeleting},
		{"disrupted taint is deleting", nodeOptions{disrupted: true}, StateDeleting},
		{"deleting beats not ready", nodeOptions{deleting: true, notReady: true, cordoned: true}, StateDeleting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot(Objects{Nodes: []corev1.Node{testNode("n", tc.node)}})
			if got := rowNamed(t, s, "n").State; got != tc.want {
				t.Errorf("state = %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("claim being deleted deletes its node", func(t *testing.T) {
		s := snapshot(Objects{
			Nodes:      []corev1.Node{testNode("n", nodeOptions{})},
			NodeClaims: []karpv1.NodeClaim{testClaim("c", claimOptions{nodeName: "n", deleting: true})},
		})
		if len(s.Rows) != 1 || s.Rows[0].State != StateDeleting {
			t.Errorf("rows = %+v, want node n Deleting alone", s.Rows)
		}
	})
}

func TestViewSnapshotRequests(t *testing.T) {
	sidecar := corev1.ContainerRestartPolicyAlways
	withSidecar := testPod("sidecar", "n", "500m", "1Gi", corev1.PodRunning)
	withSidecar.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &sidecar,
		Resources: corev1.ResourceRequirements{Requests: builders.Resources("cpu", "100m", "memory", "128Mi")}}}
	withInit := *builders.Pod(builders.PodOptions{Name: "init", NodeName: "n", CPU: "250m", Memory: "256Mi", InitCPU: "1", InitMemory: "64Mi"})
	withInit.Status.Phase = corev1.PodRunning
	withOverhead := *builders.Pod(builders.PodOptions{Name: "overhead", NodeName: "n", CPU: "100m", Memory: "100Mi",
		Overhead: builders.Resources("cpu", "50m", "memory", "20Mi")})
	withOverhead.Status.Phase = corev1.PodRunning

	for _, tc := range []struct {
		name              string
		pods              []corev1.Pod
		wantCPU, wantPods int64
		wantMemory        string
	}{
		{"no pods", nil, 0, 0, "0"},
		{"running", []corev1.Pod{testPod("a", "n", "500m", "1Gi", corev1.PodRunning)}, 500, 1, "1Gi"},
		{"bound but pending counts", []corev1.Pod{testPod("a", "n", "500m", "1Gi", corev1.PodPending)}, 500, 1, "1Gi"},
		{"succeeded and failed do not count", []corev1.Pod{
			testPod("a", "n", "500m", "1Gi", corev1.PodRunning),
			testPod("b", "n", "1", "2Gi", corev1.PodSucceeded),
			testPod("c", "n", "1", "2Gi", corev1.PodFailed),
		}, 500, 1, "1Gi"},
		{"unknown phase counts", []corev1.Pod{testPod("a", "n", "100m", "", corev1.PodUnknown)}, 100, 1, "0"},
		{"other nodes' pods do not count", []corev1.Pod{testPod("a", "other", "500m", "1Gi", corev1.PodRunning)}, 0, 0, "0"},
		{"sidecar adds", []corev1.Pod{withSidecar}, 600, 1, "1152Mi"},
		{"init container peak", []corev1.Pod{withInit}, 1000, 1, "256Mi"},
		{"overhead adds", []corev1.Pod{withOverhead}, 150, 1, "120Mi"},
		{"no requests", []corev1.Pod{testPod("a", "n", "", "", corev1.PodRunning)}, 0, 1, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot(Objects{Nodes: []corev1.Node{testNode("n", nodeOptions{cpu: "2", memory: "8Gi"})}, Pods: tc.pods})
			r := rowNamed(t, s, "n")
			wantMemory := builders.Resources("m", tc.wantMemory)["m"]
			cpu, memory := r.Usage[0], r.Usage[1] // DefaultResources
			if cpu.Requested != tc.wantCPU || memory.Requested != wantMemory.Value() || int64(r.Pods) != tc.wantPods {
				t.Errorf("cpu %dm, memory %d, pods %d; want %dm, %d, %d", cpu.Requested, memory.Requested, r.Pods,
					tc.wantCPU, wantMemory.Value(), tc.wantPods)
			}
			if cpu.Allocatable != 2000 || memory.Allocatable != 8<<30 || r.MaxPods != 110 {
				t.Errorf("allocatable %dm, %d, %d pods; want 2000m, 8Gi, 110 pods", cpu.Allocatable, memory.Allocatable, r.MaxPods)
			}
			if !slices.Equal(s.Summary.Usage, r.Usage) {
				t.Errorf("summary %+v, want the one node's %+v", s.Summary.Usage, r.Usage)
			}
		})
	}
}

func TestViewSnapshotPrices(t *testing.T) {
	for _, tc := range []struct {
		name       string
		node       nodeOptions
		wantPrice  float64
		wantPriced bool
	}{
		{"on-demand", nodeOptions{instanceType: "large"}, 0.40, true},
		{"spot", nodeOptions{instanceType: "large", capacityType: karpv1.CapacityTypeSpot}, 0.16, true},
		{"spot in a zone of its own price", nodeOptions{instanceType: "large", capacityType: karpv1.CapacityTypeSpot, zone: "zone-b"}, 0.15, true},
		{"unknown type", nodeOptions{instanceType: "mystery.large"}, 0, false},
		{"reserved is not priced", nodeOptions{capacityType: karpv1.CapacityTypeReserved}, 0, false},
		{"unmanaged without capacity type is on-demand", nodeOptions{unmanaged: true}, 0.10, true},
		{"EKS managed node group spot", nodeOptions{unmanaged: true, labels: map[string]string{eksCapacityTypeLabelKey: eksCapacityTypeSpot}}, 0.04, true},
		{"no type label", nodeOptions{labels: map[string]string{corev1.LabelInstanceTypeStable: ""}}, 0, false},
		{"beta type label", nodeOptions{labels: map[string]string{corev1.LabelInstanceTypeStable: "", corev1.LabelInstanceType: "large"}}, 0.40, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot(Objects{Nodes: []corev1.Node{testNode("n", tc.node), testNode("known", nodeOptions{})}})
			r := rowNamed(t, s, "n")
			if r.Priced != tc.wantPriced || math.Abs(r.Price-tc.wantPrice) > 1e-9 {
				t.Errorf("price %v (priced %v), want %v (%v)", r.Price, r.Priced, tc.wantPrice, tc.wantPriced)
			}
			wantTotal, wantUnpriced := 0.10+tc.wantPrice, 0
			if !tc.wantPriced {
				wantUnpriced = 1
			}
			if math.Abs(s.Summary.PricePerHour-wantTotal) > 1e-9 || s.Summary.Unpriced != wantUnpriced {
				t.Errorf("total $%v/hour with %d unpriced, want $%v with %d", s.Summary.PricePerHour, s.Summary.Unpriced, wantTotal, wantUnpriced)
			}
			if math.Abs(s.Summary.PricePerMonth()-wantTotal*730) > 1e-9 {
				t.Errorf("$%v/month, want %v", s.Summary.PricePerMonth(), wantTotal*730)
			}
		})
	}
	t.Run("no prices", func(t *testing.T) {
		s := NewSnapshot(Objects{Nodes: []corev1.Node{testNode("n", nodeOptions{})}}, Options{})
		if s.Rows[0].Priced || s.Summary.Unpriced != 1 {
			t.Errorf("row %+v priced without prices", s.Rows[0])
		}
	})
	t.Run("catalog", func(t *testing.T) {
		prices, err := catalog.DefaultPrices()
		if err != nil {
			t.Fatal(err)
		}
		entry, ok := catalog.Lookup("m5.large")
		if !ok {
			t.Fatal("m5.large not in the catalog")
		}
		s := NewSnapshot(Objects{Nodes: []corev1.Node{
			testNode("od", nodeOptions{instanceType: "m5.large", zone: "us-east-1a"}),
			testNode("spot", nodeOptions{instanceType: "m5.large", zone: "us-east-1a", capacityType: karpv1.CapacityTypeSpot}),
		}}, Options{Prices: prices})
		if od := rowNamed(t, s, "od"); od.Price != entry.OnDemandPrice {
			t.Errorf("on-demand m5.large $%v, want the catalog's $%v", od.Price, entry.OnDemandPrice)
		}
		if spot, want := rowNamed(t, s, "spot"), catalog.SpotPrice(entry.OnDemandPrice, "m5", "us-east-1a"); spot.Price != want {
			t.Errorf("spot m5.large $%v, want the modelled $%v", spot.Price, want)
		}
	})
}

func TestViewSnapshotClaims(t *testing.T) {
	launched := map[string]string{corev1.LabelInstanceTypeStable: "large", karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeSpot, corev1.LabelTopologyZone: "zone-b"}
	for _, tc := range []struct {
		name                        string
		claim                       claimOptions
		wantRow                     bool
		wantType, wantCapacity      string
		wantState                   State
		wantPrice                   float64
		wantPriced                  bool
		wantLaunching, wantUnpriced int
	}{
		{name: "registered by node name", claim: claimOptions{nodeName: "n"}},
		{name: "registered by provider id", claim: claimOptions{providerID: "sim:///zone-a/i-1"}},
		{name: "launched, no node yet", claim: claimOptions{labels: launched, providerID: "sim:///zone-b/i-2"}, wantRow: true,
			wantType: "large", wantCapacity: karpv1.CapacityTypeSpot, wantState: StateLaunching, wantPrice: 0.15, wantPriced: true, wantLaunching: 1},
		{name: "not launched, one type allowed", claim: claimOptions{requirements: map[string][]string{
			corev1.LabelInstanceTypeStable: {"small"}, karpv1.CapacityTypeLabelKey: {karpv1.CapacityTypeOnDemand}}}, wantRow: true,
			wantType: "small", wantCapacity: karpv1.CapacityTypeOnDemand, wantState: StateLaunching, wantPrice: 0.10, wantPriced: true, wantLaunching: 1},
		{name: "not launched, several types allowed", claim: claimOptions{requirements: map[string][]string{
			corev1.LabelInstanceTypeStable: {"small", "large"}}}, wantRow: true,
			wantState: StateLaunching, wantLaunching: 1, wantUnpriced: 1},
		{name: "deleted before its node came", claim: claimOptions{labels: launched, deleting: true}, wantRow: true,
			wantType: "large", wantCapacity: karpv1.CapacityTypeSpot, wantState: StateDeleting, wantPrice: 0.15, wantPriced: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot(Objects{
				Nodes:      []corev1.Node{testNode("n", nodeOptions{providerID: "sim:///zone-a/i-1"})},
				NodeClaims: []karpv1.NodeClaim{testClaim("c", tc.claim)},
			})
			if !tc.wantRow {
				if len(s.Rows) != 1 || s.Rows[0].Name != "n" || s.Rows[0].Claim {
					t.Fatalf("rows %+v, want only node n", s.Rows)
				}
				return
			}
			r := rowNamed(t, s, "c")
			if !r.Claim || r.InstanceType != tc.wantType || r.CapacityType != tc.wantCapacity || r.State != tc.wantState ||
				r.Priced != tc.wantPriced || math.Abs(r.Price-tc.wantPrice) > 1e-9 || r.NodePool != "default" {
				t.Errorf("row %+v, want claim of %q %q %s at %v (%v)", r, tc.wantType, tc.wantCapacity, tc.wantState, tc.wantPrice, tc.wantPriced)
			}
			if s.Summary.Launching != tc.wantLaunching || s.Summary.Nodes != 1 || s.Summary.Unpriced != tc.wantUnpriced {
				t.Errorf("summary %+v, want 1 node, %d launching, %d unpriced", s.Summary, tc.wantLaunching, tc.wantUnpriced)
			}
			if math.Abs(s.Summary.PricePerHour-(0.10+tc.wantPrice)) > 1e-9 {
				t.Errorf("total $%v/hour, want the node's and the claim's $%v", s.Summary.PricePerHour, 0.10+tc.wantPrice)
			}
			if s.Summary.Usage[0].Allocatable != 2000 {
				t.Errorf("a claim added to the allocatable: %+v", s.Summary.Usage)
			}
		})
	}
}

func TestViewSnapshotSummary(t *testing.T) {
	objs := Objects{
		Nodes: []corev1.Node{
			testNode("a", nodeOptions{cpu: "4", memory: "16Gi"}),
			testNode("b", nodeOptions{cpu: "2", memory: "8Gi", unmanaged: true}),
		},
		NodeClaims: []karpv1.NodeClaim{testClaim("c", claimOptions{})},
		Pods: []corev1.Pod{
			testPod("on-a", "a", "1", "2Gi", corev1.PodRunning),
			testPod("on-b", "b", "500m", "1Gi", corev1.PodRunning),
			testPod("pending-1", "", "1", "1Gi", corev1.PodPending),
			testPod("pending-2", "", "1", "1Gi", corev1.PodPending),
			testPod("unbound-failed", "", "1", "1Gi", corev1.PodFailed),
		},
	}
	s := snapshot(objs)
	want := Summary{
		Nodes: 2, Unmanaged: 1, Launching: 1, PendingPods: 2, PricePerHour: 0.20, Unpriced: 1,
		Usage: []Usage{{Requested: 1500, Allocatable: 6000}, {Requested: 3 << 30, Allocatable: 24 << 30}}, Unsettled: true,
	}
	got := s.Summary
	if math.Abs(got.PricePerHour-want.PricePerHour) > 1e-9 {
		t.Errorf("$%v/hour, want $%v", got.PricePerHour, want.PricePerHour)
	}
	got.PricePerHour = want.PricePerHour
	if !reflect.DeepEqual(got, want) {
		t.Errorf("summary\n%+v, want\n%+v", got, want)
	}
	if s.Now != t0 {
		t.Errorf("now %v, want %v", s.Now, t0)
	}
}

func TestViewSnapshotSelector(t *testing.T) {
	objs := Objects{
		Nodes: []corev1.Node{
			testNode("a", nodeOptions{nodePool: "web"}),
			testNode("b", nodeOptions{nodePool: "batch"}),
		},
		NodeClaims: []karpv1.NodeClaim{
			testClaim("web-claim", claimOptions{labels: map[string]string{karpv1.NodePoolLabelKey: "web"}}),
			testClaim("batch-claim", claimOptions{labels: map[string]string{karpv1.NodePoolLabelKey: "batch"}}),
			// b's claim: b is hidden by the selector, yet the claim has a node.
			testClaim("b-claim", claimOptions{nodeName: "b", labels: map[string]string{karpv1.NodePoolLabelKey: "web"}}),
		},
		Pods: []corev1.Pod{
			testPod("on-a", "a", "1", "1Gi", corev1.PodRunning),
			testPod("on-b", "b", "1", "1Gi", corev1.PodRunning),
			testPod("pending", "", "1", "1Gi", corev1.PodPending),
		},
	}
	s := NewSnapshot(objs, Options{Now: t0, Prices: testPrices, Selector: labels.SelectorFromSet(labels.Set{karpv1.NodePoolLabelKey: "web"}), Sort: SortName})
	var names []string
	for _, r := range s.Rows {
		names = append(names, r.Name)
	}
	if len(names) != 2 || names[0] != "a" || names[1] != "web-claim" {
		t.Errorf("rows %v, want [a web-claim]", names)
	}
	if s.Summary.Nodes != 1 || s.Summary.Launching != 1 || s.Summary.PendingPods != 1 || s.Summary.Usage[0].Requested != 1000 {
		t.Errorf("summary %+v, want 1 node, 1 launching, 1 pending pod, 1 core requested", s.Summary)
	}
}

func TestViewSnapshotRequestsCache(t *testing.T) {
	pod := testPod("a", "n", "500m", "1Gi", corev1.PodRunning)
	pod.ResourceVersion = "1"
	objs := Objects{Nodes: []corev1.Node{testNode("n", nodeOptions{})}, Pods: []corev1.Pod{pod}}
	opts := Options{Now: t0}
	for _, cached := range []bool{false, true} {
		if cached {
			opts.Requests = new(scheduling.RequestsCache)
		}
		for range 2 {
			if got := NewSnapshot(objs, opts).Rows[0].Usage[0].Requested; got != 500 {
				t.Errorf("cached %v: %dm requested, want 500m", cached, got)
			}
		}
	}
}
