package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// reservedType is an instance type offered on-demand in zone1 at price, and through a
// capacity reservation with slots free instances there at the on-demand price / 10,000,000,
// as the AWS provider v1.15.2 prices a reserved offering.
func reservedType(name string, cpu, memGiB int64, price float64, reservation string, slots int) *cloudprovider.InstanceType {
	offerings := []cloudprovider.Offering{
		{Zone: zone1, CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true},
	}
	if reservation != "" {
		offerings = append(offerings, cloudprovider.Offering{Zone: zone1, CapacityType: karpv1.CapacityTypeReserved,
			Price: price / 1e7, Available: slots > 0, ReservationID: reservation, ReservationType: "default", ReservationCapacity: slots})
	}
	return builders.InstanceType(builders.InstanceTypeOptions{Name: name, CPU: cpu, MemoryGiB: memGiB, PricePerHour: price, Offerings: offerings})
}

func reservedPool(its ...*cloudprovider.InstanceType) *NodePool {
	return &NodePool{Name: "default", InstanceTypes: its, Requirements: scheduling.NewRequirements(
		req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeReserved))}
}

// claimsByReservation counts a result's claims pinned to each reservation, and those not pinned.
func claimsByReservation(t *testing.T, r *Results) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, c := range r.NewClaims {
		id := pinned(c.Requirements)
		if id != "" {
			ct, _ := c.Requirements.Get(karpv1.CapacityTypeLabelKey)
			if ct.Len() != 1 || !ct.Has(karpv1.CapacityTypeReserved) {
				t.Errorf("claim pinned to %s allows capacity types %v, want reserved only (Karpenter's FinalizeScheduling)", id, ct.Values())
			}
		}
		out[id]++
	}
	return out
}

// A batch takes no more claims into a reservation than it has slots, as Karpenter's
// ReservationManager (v1.15.0 scheduling/reservationmanager.go, NodeClaim.offeringsToReserve):
// the rest fall back to on-demand in the same batch and are priced so.
func TestReservationSlotsCountedInBatch(t *testing.T) {
	its := []*cloudprovider.InstanceType{reservedType("m.large", 2, 8, 0.10, "cr-1", 2)}
	pods := builders.Pods(5, builders.PodOptions{CPU: "1500m", Memory: "1Gi"})
	r := Solve(Input{Pods: pods, NodePools: []*NodePool{reservedPool(its...)}})
	mustPlaceAll(t, r)
	got := claimsByReservation(t, r)
	if got["cr-1"] != 2 || got[""] != 3 || len(r.NewClaims) != 5 {
		t.Fatalf("claims by reservation %v, want 2 in cr-1 and 3 on-demand", got)
	}
	if p := r.NewClaimsPrice(); p < 0.3-1e-6 || p > 0.3+1e-6 {
		t.Errorf("price $%.7f/h, want the three on-demand nodes' $0.30/h", p)
	}
	for _, c := range r.NewClaims {
		if pinned(c.Requirements) == "" {
			if ct, _ := c.Requirements.Get(karpv1.CapacityTypeLabelKey); ct.Has(karpv1.CapacityTypeReserved) && c.Price < 0.01 {
				t.Errorf("an unpinned claim is priced $%v/h as reserved", c.Price)
			}
		}
	}
}

// Once its reservation is full, the batch sizes the rest by on-demand prices: here one larger
// on-demand node holds the pods the reserved small type no longer takes.
func TestFullReservationRepricesTheRest(t *testing.T) {
	its := []*cloudprovider.InstanceType{
		reservedType("m.large", 2, 8, 0.10, "cr-1", 1),
		reservedType("m.4xlarge", 16, 64, 0.30, "", 0),
	}
	pods := builders.Pods(9, builders.PodOptions{CPU: "1500m", Memory: "1Gi"})
	r := Solve(Input{Pods: pods, NodePools: []*NodePool{reservedPool(its...)}})
	mustPlaceAll(t, r)
	got := claimsByReservation(t, r)
	if got["cr-1"] != 1 {
		t.Errorf("claims by reservation %v, want 1 in cr-1", got)
	}
	if p := r.NewClaimsPrice(); p > 0.30+1e-6 {
		t.Errorf("price $%.4f/h, want one m.4xlarge on-demand ($0.30/h) for the 8 pods the reservation cannot hold", p)
	}
}

// A claim pinned to a reservation takes later pods only as that reservation allows: a pod that
// requires on-demand does not join it (Karpenter's strict mode), though it has room. Packed in
// Karpenter's order, the larger plain pod opens the reserved claim first.
func TestPinnedClaimRefusesPodsOffItsReservation(t *testing.T) {
	its := []*cloudprovider.InstanceType{reservedType("m.large", 4, 16, 0.10, "cr-1", 1)}
	pods := builders.Pods(1, builders.PodOptions{CPU: "2", Memory: "1Gi"})
	onDemand := builders.Pods(1, builders.PodOptions{CPU: "1", Memory: "1Gi", NodeSelector: map[string]string{karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand}})
	onDemand[0].Name, onDemand[0].UID = "on-demand", "on-demand"
	in := Input{Pods: append(pods, onDemand...), NodePools: []*NodePool{reservedPool(its...)}}
	in.Options.GrowClaims, in.Options.karpenterOrder = true, true
	r := newSolver(in).solve()
	mustPlaceAll(t, r)
	if got := claimsByReservation(t, r); got["cr-1"] != 1 || got[""] != 1 {
		t.Errorf("claims by reservation %v, want one in cr-1 and one on-demand", got)
	}
	for _, c := range r.NewClaims {
		for _, p := range c.Pods {
			if p.Name == "on-demand" && pinned(c.Requirements) != "" {
				t.Errorf("the pod requiring on-demand is on a claim pinned to %s", pinned(c.Requirements))
			}
		}
	}
}

// The reservation's labels reach the claim as requirements, so the launch targets it.
func TestPinnedClaimNamesItsReservation(t *testing.T) {
	its := []*cloudprovider.InstanceType{reservedType("m.large", 2, 8, 0.10, "cr-7", 3)}
	r := Solve(Input{Pods: builders.Pods(1, builders.PodOptions{CPU: "1", Memory: "1Gi"}), NodePools: []*NodePool{reservedPool(its...)}})
	mustPlaceAll(t, r)
	if len(r.NewClaims) != 1 {
		t.Fatalf("%d claims", len(r.NewClaims))
	}
	found := false
	for _, nsr := range r.NewClaims[0].NodeSelectorRequirements() {
		if nsr.Key == awsv1.LabelCapacityReservationID && len(nsr.Values) == 1 && nsr.Values[0] == "cr-7" {
			found = true
		}
	}
	if !found {
		t.Errorf("requirements %v do not name reservation cr-7", r.NewClaims[0].NodeSelectorRequirements())
	}
}

// A NodePool that names the one reservation it launches into still has its slots counted: no
// more claims hold one than it has (the requirements pin every claim, holder or not).
func TestNodePoolPinnedToAReservationCountsItsSlots(t *testing.T) {
	its := []*cloudprovider.InstanceType{reservedType("m.large", 2, 8, 0.10, "cr-1", 2)}
	pool := reservedPool(its...)
	pool.Requirements = pool.Requirements.With(req(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpIn, "cr-1"))
	in := Input{Pods: builders.Pods(4, builders.PodOptions{CPU: "1500m", Memory: "1Gi"}), NodePools: []*NodePool{pool}}
	s := newSolver(in)
	s.solve()
	held := 0
	for _, c := range s.claims {
		if c.reservation == "cr-1" {
			held++
		}
	}
	if held != 2 || s.ledger.left["cr-1"] != 0 {
		t.Errorf("%d claims hold a slot of cr-1 (%d left), want its 2 slots held and none over", held, s.ledger.left["cr-1"])
	}
}
