package sim

import (
	"context"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openkarpenter/karpenter/pkg/apis"
	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// reservedCloud is a cloud holding the reservations, with the ReservedCapacity gate as given,
// and an EC2NodeClass "default" whose terms select, resolved by the status controller.
func reservedCloud(t *testing.T, gate bool, terms []awsv1.CapacityReservationSelectorTerm, rs ...Reservation) (*Cloud, *NodeClassStatusController, func() *awsv1.EC2NodeClass) {
	t.Helper()
	nc := testNodeClass("default", func(nc *awsv1.EC2NodeClass) { nc.Spec.CapacityReservationSelectorTerms = terms })
	kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(nc).WithStatusSubresource(nc).Build()
	c, _ := newTestCloud(t, Options{NodeClasses: kube, Reservations: rs, ReservedCapacity: gate})
	r := NewNodeClassStatusController(kube, c)
	resolve := func() *awsv1.EC2NodeClass {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}}); err != nil {
			t.Fatal(err)
		}
		got := &awsv1.EC2NodeClass{}
		if err := kube.Get(context.Background(), types.NamespacedName{Name: "default"}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	resolve()
	return c, r, resolve
}

func reservedOffering(t *testing.T, c *Cloud, instanceType, id string) (cloudprovider.Offering, bool) {
	t.Helper()
	its, err := c.GetInstanceTypes(context.Background(), builders.NodePool(builders.NodePoolOptions{Name: "default"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if it.Name != instanceType {
			continue
		}
		for _, o := range it.Offerings {
			if o.ReservationID == id {
				return o, true
			}
		}
	}
	return cloudprovider.Offering{}, false
}

// The terms select reservations as EC2 lists them for the AWS provider v1.15.2 (by ID; by tags
// with owner and match criteria), into the NodeClass's status; each is offered as reserved
// capacity in its zone at the on-demand price / 10,000,000 while it has a free slot, and a
// claim that allows it launches into it first (v1.15.2 ReservedCapacityResolver, launch's
// reserved filters).
func TestReservationsSelectedOfferedAndLaunched(t *testing.T) {
	c, _, resolve := reservedCloud(t, true,
		[]awsv1.CapacityReservationSelectorTerm{{ID: "cr-0aaa"}, {Tags: map[string]string{"team": "*"}}},
		Reservation{ID: "cr-0aaa", InstanceType: "m5.large", Zone: "us-east-1a", Count: 2},
		Reservation{ID: "cr-0bbb", InstanceType: "m5.xlarge", Zone: "us-east-1b", Count: 1, Tags: map[string]string{"team": "ml"}},
		Reservation{ID: "cr-0ccc", InstanceType: "m5.xlarge", Zone: "us-east-1c", Count: 1, Tags: map[string]string{"other": "x"}})
	nc := resolve()
	if got := len(nc.Status.CapacityReservations); got != 2 {
		t.Fatalf("status.capacityReservations = %+v, want cr-0aaa and cr-0bbb", nc.Status.CapacityReservations)
	}
	o, ok := reservedOffering(t, c, "m5.large", "cr-0aaa")
	if !ok || !o.Available || o.ReservationCapacity != 2 || o.Zone != "us-east-1a" || o.CapacityType != karpv1.CapacityTypeReserved {
		t.Fatalf("m5.large's cr-0aaa offering = %+v (found %v), want available reserved with 2 slots in us-east-1a", o, ok)
	}
	od, _ := c.prices.Price("m5.large", "us-east-1a", karpv1.CapacityTypeOnDemand)
	if o.Price != od/cloudprovider.ReservedPriceDivisor {
		t.Errorf("reserved price %v, want the on-demand %v / 10,000,000", o.Price, od)
	}
	if _, ok := reservedOffering(t, c, "m5.xlarge", "cr-0ccc"); ok {
		t.Error("cr-0ccc is offered, though no term selects it")
	}
	reservedOnly := func(name string) *karpv1.NodeClaim {
		return testClaim(name, builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"),
			builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeReserved))
	}
	for _, name := range []string{"a", "b"} {
		got := mustCreate(t, c, reservedOnly(name))
		if got.Labels[awsv1.LabelCapacityReservationID] != "cr-0aaa" || got.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeReserved ||
			got.Labels[awsv1.LabelCapacityReservationType] != "default" {
			t.Errorf("claim %s labels %v, want reserved in cr-0aaa (type default)", name, got.Labels)
		}
	}
	if o, _ := reservedOffering(t, c, "m5.large", "cr-0aaa"); o.Available || o.ReservationCapacity != 0 {
		t.Errorf("full reservation offered as %+v, want unavailable with 0 slots", o)
	}
	if _, err := c.Create(context.Background(), reservedOnly("c")); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("a third launch into the full reservation: %v, want insufficient capacity", err)
	}
	// A claim that also allows on-demand falls back.
	fallback := testClaim("d", builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"),
		builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand))
	if _, _, ct := offeringOf(mustCreate(t, c, fallback)); ct != karpv1.CapacityTypeOnDemand {
		t.Errorf("fallback launched %s, want on-demand", ct)
	}
	// A slot comes back when its instance goes.
	if err := c.Delete(context.Background(), reservedOnly("a")); err != nil {
		t.Fatal(err)
	}
	if o, _ := reservedOffering(t, c, "m5.large", "cr-0aaa"); !o.Available || o.ReservationCapacity != 1 {
		t.Errorf("after a termination the reservation is offered as %+v, want 1 free slot", o)
	}
}

// With the ReservedCapacity gate off the terms are ignored, as in Karpenter v1.15.
func TestReservationsGateOff(t *testing.T) {
	c, _, resolve := reservedCloud(t, false, []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0aaa"}},
		Reservation{ID: "cr-0aaa", InstanceType: "m5.large", Zone: "us-east-1a", Count: 2})
	if nc := resolve(); len(nc.Status.CapacityReservations) != 0 {
		t.Errorf("status.capacityReservations = %+v with the gate off", nc.Status.CapacityReservations)
	}
	if _, ok := reservedOffering(t, c, "m5.large", "cr-0aaa"); ok {
		t.Error("reserved offering with the gate off")
	}
}

// A Capacity Block is expiring 40 minutes before its end (no longer offered), and EC2 reclaims
// its instances at the end.
func TestCapacityBlockEnds(t *testing.T) {
	end := epoch.Add(2 * time.Hour)
	c, r, resolve := reservedCloud(t, true, []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0bl0c"}},
		Reservation{ID: "cr-0bl0c", InstanceType: "m5.large", Zone: "us-east-1a", Count: 1, Type: "capacity-block", End: end})
	nc := resolve()
	if len(nc.Status.CapacityReservations) != 1 || nc.Status.CapacityReservations[0].ReservationType != awsv1.CapacityReservationTypeCapacityBlock {
		t.Fatalf("status %+v", nc.Status.CapacityReservations)
	}
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}})
	if err != nil || res.RequeueAfter != 80*time.Minute {
		t.Errorf("requeue after %v (%v), want 1h20m, when the block starts expiring", res.RequeueAfter, err)
	}
	got := mustCreate(t, c, testClaim("a", builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeReserved)))
	if got.Labels[awsv1.LabelCapacityReservationType] != "capacity-block" {
		t.Fatalf("labels %v", got.Labels)
	}
	clk := c.clock.(interface{ SetTime(time.Time) })
	clk.SetTime(end.Add(-30 * time.Minute))
	if nc := resolve(); nc.Status.CapacityReservations[0].State != awsv1.CapacityReservationStateExpiring {
		t.Errorf("state %s 30 minutes before the end, want expiring", nc.Status.CapacityReservations[0].State)
	}
	clk.SetTime(end)
	if _, err := c.Get(context.Background(), got.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("instance at the block's end: %v, want gone", err)
	}
	for _, in := range c.Instances() {
		if in.TerminationReason != TerminationReasonCapacityBlockEnded {
			t.Errorf("%s terminated as %q, want %s", in.ID, in.TerminationReason, TerminationReasonCapacityBlockEnded)
		}
	}
	if nc := resolve(); len(nc.Status.CapacityReservations) != 0 {
		t.Errorf("ended block still in the status: %+v", nc.Status.CapacityReservations)
	}
}

// TestOnDemandReservationEnds: an On-Demand Capacity Reservation's instances outlive it, as
// on EC2: at its end they run on, listed on-demand without the reservation's labels (what the
// AWS provider v1.15.2 reads from an instance whose reservation has gone, and its
// capacityreservation.capacitytype controller acts on), billed at the on-demand price from the
// end, and the slot they held is no longer counted.
func TestOnDemandReservationEnds(t *testing.T) {
	end := epoch.Add(2 * time.Hour)
	c, _, _ := reservedCloud(t, true, []awsv1.CapacityReservationSelectorTerm{{ID: "cr-00dc4"}},
		Reservation{ID: "cr-00dc4", InstanceType: "m5.large", Zone: "us-east-1a", Count: 1, End: end})
	got := mustCreate(t, c, testClaim("a", builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeReserved)))
	if got.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeReserved {
		t.Fatalf("labels %v, want reserved", got.Labels)
	}
	clk := c.clock.(interface{ SetTime(time.Time) })
	clk.SetTime(end.Add(2 * time.Hour))
	listed, err := c.Get(context.Background(), got.Status.ProviderID)
	if err != nil {
		t.Fatalf("instance after its reservation ended: %v, want it running", err)
	}
	if ct := listed.Labels[karpv1.CapacityTypeLabelKey]; ct != karpv1.CapacityTypeOnDemand {
		t.Errorf("capacity type %s after the reservation ended, want on-demand", ct)
	}
	for _, k := range []string{awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType} {
		if v, ok := listed.Labels[k]; ok {
			t.Errorf("%s=%s kept after the reservation ended", k, v)
		}
	}
	in := c.Instances()[0]
	od, _ := c.prices.Price("m5.large", "us-east-1a", karpv1.CapacityTypeOnDemand)
	if in.Price != od || in.ReservationID != "cr-00dc4" || !in.OnDemandSince.Equal(end) {
		t.Errorf("instance %+v, want priced on-demand ($%v) since %v, launched into cr-00dc4", in, od, end)
	}
	// Two hours reserved, two on-demand.
	if want := in.ReservedPrice*2 + od*2; math.Abs(c.Spend()-want) > 1e-9 || math.Abs(in.Spend(end.Add(2*time.Hour))-want) > 1e-9 {
		t.Errorf("spend $%v (instance $%v), want $%v", c.Spend(), in.Spend(end.Add(2*time.Hour)), want)
	}
	if n := c.used[cloudprovider.OfferingID{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: karpv1.CapacityTypeReserved, ReservationID: "cr-00dc4"}]; n != 0 {
		t.Errorf("%d slots of the ended reservation still counted", n)
	}
}

func TestReservationsValidated(t *testing.T) {
	for _, r := range []Reservation{
		{ID: "bad", InstanceType: "m5.large", Zone: "us-east-1a", Count: 1},
		{ID: "cr-1", InstanceType: "m5.large", Zone: "eu-west-1a", Count: 1},
		{ID: "cr-1", InstanceType: "m5.large", Zone: "us-east-1a", Count: 0},
		{ID: "cr-1", InstanceType: "m5.large", Zone: "us-east-1a", Count: 1, Type: "spot"},
	} {
		if _, err := New(Options{NodeClasses: fakeReader(), Reservations: []Reservation{r}}); err == nil {
			t.Errorf("%+v accepted", r)
		}
	}
}
