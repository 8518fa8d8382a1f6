package aws

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/expiration"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

// Capacity reservations seeded by the tests below.
const (
	crM5     = "cr-0a0000000000000a1" // m5.large in us-west-2a, tagged team=ml
	crBlock  = "cr-0b0000000000000b1" // a Capacity Block of m5.xlarge in us-west-2b, tagged team=ml
	crOther  = "cr-0c0000000000000c1" // m5.large in us-west-2c, tagged team=ml, another account's
	crEnded  = "cr-0d0000000000000d1" // ended an hour ago, tagged team=ml
	crOpen   = "cr-0e0000000000000e1" // an open reservation of c5.large in us-west-2a, untagged
	crIntr   = "cr-0f0000000000000f1" // an interruptible reservation of r5.large in us-west-2a, untagged
	crCancel = "cr-010000000000000a1" // cancelled, tagged team=ml
	crBlock2 = "cr-0b0000000000000b2" // a Capacity Block of m5.xlarge in us-west-2b, seeded by its test
)

// withReservedCapacity turns the ReservedCapacity gate on, as Karpenter v1.15's default.
func withReservedCapacity(o *Options) { o.ReservedCapacity = true }

// seedReservations seeds the reservations above in the fake.
func (f *fixture) seedReservations() {
	now := f.clock.Now()
	ml := map[string]string{"team": "ml"}
	for _, r := range []fake.CapacityReservation{
		{ID: crM5, InstanceType: "m5.large", Zone: "us-west-2a", TotalInstanceCount: 2, Tags: ml},
		{ID: crBlock, InstanceType: "m5.xlarge", Zone: "us-west-2b", TotalInstanceCount: 1, ReservationType: "capacity-block", EndDate: aws.Time(now.Add(30 * time.Minute)), Tags: ml},
		{ID: crOther, InstanceType: "m5.large", Zone: "us-west-2c", TotalInstanceCount: 1, OwnerID: "999988887777", Tags: ml},
		{ID: crEnded, InstanceType: "m5.large", Zone: "us-west-2a", TotalInstanceCount: 1, EndDate: aws.Time(now.Add(-time.Hour)), Tags: ml},
		{ID: crOpen, InstanceType: "c5.large", Zone: "us-west-2a", TotalInstanceCount: 3, InstanceMatchCriteria: "open"},
		{ID: crIntr, InstanceType: "r5.large", Zone: "us-west-2a", TotalInstanceCount: 1, Interruptible: true},
		{ID: crCancel, InstanceType: "m5.large", Zone: "us-west-2a", TotalInstanceCount: 1, State: "cancelled", Tags: ml},
	} {
		f.aws.AddCapacityReservation(r)
	}
}

// reservedNodeClass applies seed 004's NodeClass with the terms, and returns it with its
// NodePool allowing the capacity types.
func (f *fixture) reservedNodeClass(terms []awsv1.CapacityReservationSelectorTerm, capacityTypes ...string) (*awsv1.EC2NodeClass, *karpv1.NodePool) {
	f.t.Helper()
	ncs, nps := readManifests(f.t, "seed-004-nodepool.yaml")
	ncs[0].Spec.CapacityReservationSelectorTerms = terms
	np := nps[0]
	for i, r := range np.Spec.Template.Spec.Requirements {
		if r.Key == karpv1.CapacityTypeLabelKey {
			np.Spec.Template.Spec.Requirements[i].Values = capacityTypes
		}
	}
	return f.applyNodeClass(ncs[0]), np
}

// mlTerms select the team=ml reservations of the test account.
var mlTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "ml"}, OwnerID: "111122223333"}}

// offeringsOf are the instance type's offerings the NodePool may launch.
func (f *fixture) offeringsOf(np *karpv1.NodePool, instanceType string) cloudprovider.Offerings {
	f.t.Helper()
	its, err := f.provider.GetInstanceTypes(f.ctx, np)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, it := range its {
		if it.Name == instanceType {
			return it.Offerings
		}
	}
	f.t.Fatalf("no instance type %s", instanceType)
	return nil
}

// reservedOffering is the offering of the reservation.
func reservedOffering(ofs cloudprovider.Offerings, id string) (cloudprovider.Offering, bool) {
	i := slices.IndexFunc(ofs, func(o cloudprovider.Offering) bool { return o.ReservationID == id })
	if i < 0 {
		return cloudprovider.Offering{}, false
	}
	return ofs[i], true
}

// TestCapacityReservationsResolveToStatus: the terms resolve to status.capacityReservations as
// the AWS provider v1.15.2's nodeclass capacity reservation reconciler
// (pkg/controllers/nodeclass/capacityreservation.go, CapacityReservation.Reconcile) with its
// provider's queries (pkg/providers/capacityreservation/types.go, QueriesFromSelectorTerms and
// Query.DescribeCapacityReservationsInput; provider.go, List and filterReservations) and
// pkg/apis/v1/ec2nodeclass_status.go's CapacityReservationFromEC2: tags with owner, and IDs
// (one EC2 does not know selects none); active reservations only, those already ended left
// out; sorted by ID; a Capacity Block within 40 minutes of its end is expiring;
// CapacityReservationsReady True and part of Ready; read again each minute.
func TestCapacityReservationsResolveToStatus(t *testing.T) {
	f := newFixture(t, withReservedCapacity)
	f.seedReservations()
	terms := append(slices.Clone(mlTerms),
		awsv1.CapacityReservationSelectorTerm{ID: crOpen},
		awsv1.CapacityReservationSelectorTerm{ID: crIntr},
		awsv1.CapacityReservationSelectorTerm{ID: "cr-0000000000000dead"})
	nc, _ := f.reservedNodeClass(terms, karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand)
	if s, msg := condition(nc, awsv1.ConditionTypeCapacityReservationsReady); s != metav1.ConditionTrue {
		t.Fatalf("CapacityReservationsReady %s: %s", s, msg)
	}
	if s, msg := condition(nc, awsv1.ConditionTypeReady); s != metav1.ConditionTrue {
		t.Fatalf("Ready %s: %s", s, msg)
	}
	account := f.aws.AccountID()
	end := metav1.NewTime(f.clock.Now().Add(30 * time.Minute))
	want := []awsv1.CapacityReservation{
		{ID: crM5, AvailabilityZone: "us-west-2a", InstanceType: "m5.large", OwnerID: account, InstanceMatchCriteria: "targeted",
			ReservationType: awsv1.CapacityReservationTypeDefault, State: awsv1.CapacityReservationStateActive},
		{ID: crBlock, AvailabilityZone: "us-west-2b", InstanceType: "m5.xlarge", OwnerID: account, InstanceMatchCriteria: "targeted", EndTime: &end,
			ReservationType: awsv1.CapacityReservationTypeCapacityBlock, State: awsv1.CapacityReservationStateExpiring},
		{ID: crOpen, AvailabilityZone: "us-west-2a", InstanceType: "c5.large", OwnerID: account, InstanceMatchCriteria: "open",
			ReservationType: awsv1.CapacityReservationTypeDefault, State: awsv1.CapacityReservationStateActive},
		{ID: crIntr, AvailabilityZone: "us-west-2a", InstanceType: "r5.large", OwnerID: account, InstanceMatchCriteria: "targeted",
			ReservationType: awsv1.CapacityReservationTypeDefault, Interruptible: true, State: awsv1.CapacityReservationStateActive},
	}
	slices.SortFunc(want, func(a, b awsv1.CapacityReservation) int { return strings.Compare(a.ID, b.ID) })
	got := nc.Status.CapacityReservations
	if len(got) != len(want) {
		t.Fatalf("status.capacityReservations %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if (g.EndTime == nil) != (w.EndTime == nil) || g.EndTime != nil && g.EndTime.Unix() != w.EndTime.Unix() {
			t.Errorf("%s: endTime %v, want %v", w.ID, g.EndTime, w.EndTime)
		}
		g.EndTime, w.EndTime = nil, nil
		if g != w {
			t.Errorf("reservation %d: %+v, want %+v", i, g, w)
		}
	}

	// Read again once a minute has passed, not before; a reservation gone from EC2 leaves.
	calls := f.aws.Calls("DescribeCapacityReservations")
	f.reconcile(nc.Name)
	if n := f.aws.Calls("DescribeCapacityReservations"); n != calls {
		t.Errorf("%d DescribeCapacityReservations within the minute, want none", n-calls)
	}
	f.aws.SetCapacityReservationAvailable(crOpen, 0)
	const crShort = "cr-020000000000000a1"
	f.aws.AddCapacityReservation(fake.CapacityReservation{ID: crShort, InstanceType: "m5.large", Zone: "us-west-2b", TotalInstanceCount: 1,
		EndDate: aws.Time(f.clock.Now().Add(capacityReservationPollPeriod + 20*time.Second)), Tags: map[string]string{"team": "ml"}})
	f.clock.Step(capacityReservationPollPeriod)
	res, err := NewNodeClassController(f.provider).Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)})
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > capacityReservationPollPeriod {
		t.Errorf("requeued after %v, want within %v", res.RequeueAfter, capacityReservationPollPeriod)
	}
	if n := f.aws.Calls("DescribeCapacityReservations"); n <= calls {
		t.Error("the reservations were not read again after a minute")
	}
	if got := f.provider.reservations.get(crOpen); got != 0 {
		t.Errorf("%s believed to take %d more, want 0 as EC2 now says", crOpen, got)
	}
	// A reservation ending before the next minute: the requeue comes at its end, and it is read
	// again then, and gone.
	nc = f.reconcile(nc.Name)
	if !slices.ContainsFunc(nc.Status.CapacityReservations, func(r awsv1.CapacityReservation) bool { return r.ID == crShort }) {
		t.Fatalf("%s not resolved: %+v", crShort, nc.Status.CapacityReservations)
	}
	if d := reservationRequeue(nc, f.clock.Now()); d > 20*time.Second {
		t.Errorf("requeue after %v, want at %s's end, within 20s", d, crShort)
	}
	calls = f.aws.Calls("DescribeCapacityReservations")
	f.clock.Step(20 * time.Second)
	nc = f.reconcile(nc.Name)
	if f.aws.Calls("DescribeCapacityReservations") == calls || slices.ContainsFunc(nc.Status.CapacityReservations, func(r awsv1.CapacityReservation) bool { return r.ID == crShort }) {
		t.Errorf("%s ended but was not read again: %+v", crShort, nc.Status.CapacityReservations)
	}
}

// TestReservedOfferingLaunchesFirst: each reservation is a reserved offering of its type in
// its zone priced at the on-demand price / 10,000,000, as the AWS provider v1.15.2's
// pkg/providers/instancetype/offering/reserved_capacity_resolver.go (ResolveOfferings); a claim
// allowing reserved and on-demand launches into the reservation first, through a launch
// template targeting it (pkg/providers/launchtemplate/types.go, CreateLaunchTemplateInputBuilder
// in LaunchModeTargeted; pkg/providers/instance/instance.go, getCapacityType), its claim
// labelled as v1.15.2's instance.go/cloudprovider.go label reserved nodes
// (capacity-reservation-id, -type, -interruptible); the instance reads back as reserved
// (pkg/providers/instance/types.go, NewInstance); a Capacity Block and an interruptible
// reservation launch with their market types and fleet target types (CreateFleetInputBuilder);
// requirements on the reservation labels choose among offerings; and once its instance is
// gone the slot is the reservation's again (cloudprovider.go Delete, MarkTerminated).
func TestReservedOfferingLaunchesFirst(t *testing.T) {
	f := newFixture(t, withReservedCapacity)
	f.seedReservations()
	terms := append(slices.Clone(mlTerms), awsv1.CapacityReservationSelectorTerm{ID: crIntr})
	_, np := f.reservedNodeClass(terms, karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand)

	ofs := f.offeringsOf(np, "m5.large")
	o, ok := reservedOffering(ofs, crM5)
	od, _ := f.provider.onDemandPrice("m5.large")
	if !ok || o.CapacityType != karpv1.CapacityTypeReserved || o.Zone != "us-west-2a" || o.ZoneID != "usw2-az1" || !o.Available ||
		o.ReservationCapacity != 2 || o.ReservationType != "default" || o.ReservationInterruptible || o.Price != od/10_000_000 {
		t.Fatalf("reserved offering %+v (found %t), want m5.large in us-west-2a at %g, 2 slots", o, ok, od/10_000_000)
	}
	if block, _ := reservedOffering(f.offeringsOf(np, "m5.xlarge"), crBlock); block.Available {
		t.Errorf("the expiring Capacity Block's offering is available: %+v", block)
	}

	claim, err := f.provider.Create(f.ctx, claimFor(np, "reserved", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeReserved, awsv1.LabelCapacityReservationID: crM5,
		awsv1.LabelCapacityReservationType: "default", awsv1.LabelCapacityReservationInterruptible: "false", corev1.LabelTopologyZone: "us-west-2a"} {
		if claim.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, claim.Labels[k], v)
		}
	}
	fl := f.aws.Fleets()
	if len(fl) != 1 || fl[0].CapacityType != "on-demand" || fl[0].InstanceType != "m5.large" {
		t.Fatalf("fleets %+v, want one on-demand fleet into the reservation", fl)
	}
	lt := templateNamed(t, f.aws, fl[0].LaunchTemplateName)
	if lt.CapacityReservationPreference != "capacity-reservations-only" || lt.CapacityReservationID != crM5 || lt.MarketType != "" {
		t.Errorf("launch template targets %q %q %q, want capacity-reservations-only %s", lt.CapacityReservationPreference, lt.CapacityReservationID, lt.MarketType, crM5)
	}
	if r := reservationNamed(t, f.aws, crM5); r.AvailableInstanceCount != 1 {
		t.Errorf("%s has %d slots left, want 1", crM5, r.AvailableInstanceCount)
	}
	if o, _ := reservedOffering(f.offeringsOf(np, "m5.large"), crM5); o.ReservationCapacity != 1 {
		t.Errorf("the reserved offering believes %d slots left, want 1", o.ReservationCapacity)
	}
	got, err := f.provider.Get(f.ctx, claim.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeReserved || got.Labels[awsv1.LabelCapacityReservationID] != crM5 {
		t.Errorf("the instance reads back as %v", got.Labels)
	}

	// Excluding the reservation launches on-demand, from a template that keeps out of open
	// reservations.
	ondemand, err := f.provider.Create(f.ctx, claimFor(np, "not-that-one", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"),
		req(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpNotIn, crM5)))
	if err != nil {
		t.Fatal(err)
	}
	if ondemand.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeOnDemand || ondemand.Labels[awsv1.LabelCapacityReservationID] != "" {
		t.Errorf("labels %v, want on-demand without a reservation", ondemand.Labels)
	}
	if lt := templateNamed(t, f.aws, f.aws.Fleets()[1].LaunchTemplateName); lt.CapacityReservationPreference != "none" || lt.CapacityReservationID != "" {
		t.Errorf("on-demand launch template preference %q target %q, want none", lt.CapacityReservationPreference, lt.CapacityReservationID)
	}

	// An interruptible reservation: its market type, the reserved-capacity fleet.
	intr, err := f.provider.Create(f.ctx, claimFor(np, "interruptible", nil, req(awsv1.LabelCapacityReservationInterruptible, corev1.NodeSelectorOpIn, "true")))
	if err != nil {
		t.Fatal(err)
	}
	fl = f.aws.Fleets()
	last := fl[len(fl)-1]
	if intr.Labels[awsv1.LabelCapacityReservationID] != crIntr || intr.Labels[awsv1.LabelCapacityReservationInterruptible] != "true" ||
		last.CapacityType != "reserved-capacity" || !slices.Equal(last.ReservationTypes, []string{"interruptible-capacity-reservation"}) {
		t.Errorf("interruptible launch: labels %v, fleet %s %v", intr.Labels, last.CapacityType, last.ReservationTypes)
	}
	if lt := templateNamed(t, f.aws, last.LaunchTemplateName); lt.MarketType != "interruptible-capacity-reservation" {
		t.Errorf("interruptible launch template market type %q", lt.MarketType)
	}
	if got, err := f.provider.Get(f.ctx, intr.Status.ProviderID); err != nil || got.Labels[awsv1.LabelCapacityReservationInterruptible] != "true" {
		t.Errorf("the interruptible instance reads back as %v (%v)", got.Labels, err)
	}

	// Once the reserved instance is gone, its slot is free again, and given back once.
	stored := claim.DeepCopy()
	for range 3 {
		if err := f.provider.Delete(f.ctx, stored); err != nil && !cloudprovider.IsNodeClaimNotFoundError(err) {
			t.Fatal(err)
		}
	}
	if n := f.provider.reservations.get(crM5); n != 2 {
		t.Errorf("%s believed to take %d after its instance went, want 2", crM5, n)
	}
	if r := reservationNamed(t, f.aws, crM5); r.AvailableInstanceCount != 2 {
		t.Errorf("EC2 says %s has %d slots, want 2", crM5, r.AvailableInstanceCount)
	}
}

// TestCapacityBlockLaunch: a Capacity Block launches with the capacity-block market type and
// fleet target type, as the AWS provider v1.15.2's CreateFleetInputBuilder and launch
// template builder, and its node says capacity-block.
func TestCapacityBlockLaunch(t *testing.T) {
	f := newFixture(t, withReservedCapacity)
	f.aws.AddCapacityReservation(fake.CapacityReservation{ID: crBlock, InstanceType: "m5.xlarge", Zone: "us-west-2b", TotalInstanceCount: 1,
		ReservationType: "capacity-block", EndDate: aws.Time(f.clock.Now().Add(48 * time.Hour)), Tags: map[string]string{"team": "ml"}})
	_, np := f.reservedNodeClass(mlTerms, karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand)
	claim, err := f.provider.Create(f.ctx, claimFor(np, "block", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge")))
	if err != nil {
		t.Fatal(err)
	}
	fl := f.aws.Fleets()
	if claim.Labels[awsv1.LabelCapacityReservationType] != "capacity-block" || claim.Labels[awsv1.LabelCapacityReservationID] != crBlock ||
		len(fl) != 1 || fl[0].CapacityType != "capacity-block" || fl[0].OnDemandAllocationStrategy != "" {
		t.Fatalf("labels %v, fleets %+v", claim.Labels, fl)
	}
	if lt := templateNamed(t, f.aws, fl[0].LaunchTemplateName); lt.MarketType != "capacity-block" || lt.CapacityReservationID != crBlock {
		t.Errorf("launch template market type %q target %q", lt.MarketType, lt.CapacityReservationID)
	}
	if got, err := f.provider.Get(f.ctx, claim.Status.ProviderID); err != nil || got.Labels[awsv1.LabelCapacityReservationType] != "capacity-block" {
		t.Errorf("the instance reads back as %v (%v)", got.Labels, err)
	}
}

// TestReservationExhaustedFallsBack: a reservation filled since it was read fails its launch
// with ReservationCapacityExceeded; the provider then believes it full, as the AWS provider
// v1.15.2's pkg/providers/instance/instance.go (updateUnavailableOfferingsCache,
// SetAvailableInstanceCount 0), and the claim, which also allows on-demand, launches
// on-demand at once (v1.15.2 falls back on Karpenter's next attempt, getCapacityType skipping
// offerings that are not Launchable; here within the same Create, as spot falls back).
func TestReservationExhaustedFallsBack(t *testing.T) {
	f := newFixture(t, withReservedCapacity)
	f.seedReservations()
	_, np := f.reservedNodeClass(mlTerms, karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand)
	f.aws.SetCapacityReservationAvailable(crM5, 0) // taken by others since it was read
	claim, err := f.provider.Create(f.ctx, claimFor(np, "fallback", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")))
	if err != nil {
		t.Fatal(err)
	}
	if claim.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeOnDemand || claim.Labels[awsv1.LabelCapacityReservationID] != "" {
		t.Errorf("labels %v, want on-demand", claim.Labels)
	}
	fl := f.aws.Fleets()
	if len(fl) != 2 || len(fl[0].Errors) != 1 || fl[0].Errors[0].Code != "ReservationCapacityExceeded" || len(fl[1].InstanceIDs) != 1 {
		t.Fatalf("fleets %+v, want the reserved one refused, then an on-demand one", fl)
	}
	if o, _ := reservedOffering(f.offeringsOf(np, "m5.large"), crM5); o.Available || o.ReservationCapacity != 0 {
		t.Errorf("the full reservation's offering %+v, want unavailable with no slot", o)
	}
	// The next claim goes on-demand without trying the reservation.
	if _, err := f.provider.Create(f.ctx, claimFor(np, "fallback-2", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"))); err != nil {
		t.Fatal(err)
	}
	if fl := f.aws.Fleets(); len(fl) != 3 || fl[2].CapacityType != "on-demand" || templateNamed(t, f.aws, fl[2].LaunchTemplateName).CapacityReservationID != "" {
		t.Errorf("fleets %+v, want one more on-demand fleet", fl)
	}
}

// TestReservedOnlyClaimDoesNotFallBack: a claim Karpenter's scheduler planned into a
// reservation is pinned to it (Karpenter core v1.15.0
// pkg/controllers/provisioning/scheduling/nodeclaim.go, FinalizeScheduling, under the
// provisioner's DisableReservedCapacityFallback): capacity type reserved, the reservation's
// ID. When the reservation is full it fails with insufficient capacity naming the reserved
// offering, and launches nothing elsewhere, as the AWS provider v1.15.2's Create with a
// reserved-only claim (pkg/providers/instance/instance.go, filterInstanceTypes).
func TestReservedOnlyClaimDoesNotFallBack(t *testing.T) {
	f := newFixture(t, withReservedCapacity)
	f.seedReservations()
	_, np := f.reservedNodeClass(mlTerms, karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand)
	f.aws.SetCapacityReservationAvailable(crM5, 0)
	pinned := func(name string) *karpv1.NodeClaim {
		c := claimFor(np, name, nil, req(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpIn, crM5))
		for i, r := range c.Spec.Requirements {
			if r.Key == karpv1.CapacityTypeLabelKey {
				c.Spec.Requirements[i].Values = []string{karpv1.CapacityTypeReserved}
			}
		}
		return c
	}
	for _, name := range []string{"pinned", "pinned-again"} {
		_, err := f.provider.Create(f.ctx, pinned(name))
		if !cloudprovider.IsInsufficientCapacityError(err) {
			t.Fatalf("%s: %v, want insufficient capacity", name, err)
		}
		want := cloudprovider.OfferingID{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: karpv1.CapacityTypeReserved, ReservationID: crM5}
		if got := cloudprovider.InsufficientCapacityOfferings(err); !slices.Contains(got, want) {
			t.Errorf("%s: offerings %v, want %v among them", name, got, want)
		}
	}
	if n := len(f.aws.Instances()); n != 0 {
		t.Errorf("%d instances launched, want none", n)
	}
	if fl := f.aws.Fleets(); len(fl) != 1 {
		t.Errorf("%d fleets, want the one refused: the full reservation is not tried again", len(fl))
	}
}

// TestReservedCapacityGateOff: with the ReservedCapacity gate off the terms are ignored, as the
// AWS provider v1.15.2 does: its nodeclass controller skips the capacity reservation reconciler
// (pkg/controllers/nodeclass/controller.go, Reconcile) and leaves CapacityReservationsReady out
// of Ready (ec2nodeclass_status.go, CapacityReservationsEnabled), its resolver adds no reserved
// offering (reserved_capacity_resolver.go), and launch templates say nothing of reservations
// (launchtemplate/types.go, LaunchModeOpen).
func TestReservedCapacityGateOff(t *testing.T) {
	f := newFixture(t)
	f.seedReservations()
	nc, np := f.reservedNodeClass(mlTerms, karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand)
	if s, msg := condition(nc, awsv1.ConditionTypeReady); s != metav1.ConditionTrue {
		t.Fatalf("Ready %s: %s", s, msg)
	}
	if meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeCapacityReservationsReady) != nil || len(nc.Status.CapacityReservations) != 0 {
		t.Errorf("the gate is off, yet conditions %v and reservations %v", nc.Status.Conditions, nc.Status.CapacityReservations)
	}
	if n := f.aws.Calls("DescribeCapacityReservations"); n != 0 {
		t.Errorf("%d DescribeCapacityReservations calls, want none", n)
	}
	if ofs := f.offeringsOf(np, "m5.large"); len(ofs.WithCapacityTypes(karpv1.CapacityTypeReserved)) != 0 {
		t.Errorf("reserved offerings %v with the gate off", ofs.WithCapacityTypes(karpv1.CapacityTypeReserved))
	}
	claim, err := f.provider.Create(f.ctx, claimFor(np, "gate-off", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")))
	if err != nil {
		t.Fatal(err)
	}
	if claim.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeOnDemand {
		t.Errorf("capacity type %q, want on-demand", claim.Labels[karpv1.CapacityTypeLabelKey])
	}
	if lt := templateNamed(t, f.aws, f.aws.Fleets()[0].LaunchTemplateName); lt.CapacityReservationPreference != "" || lt.CapacityReservationID != "" {
		t.Errorf("launch template preference %q target %q, want none set", lt.CapacityReservationPreference, lt.CapacityReservationID)
	}
}

// templateNamed is the fake's launch template of the name.
func templateNamed(t *testing.T, far *fake.AWS, name string) fake.LaunchTemplate {
	t.Helper()
	for _, lt := range far.LaunchTemplates() {
		if lt.Name == name {
			return lt
		}
	}
	t.Fatalf("no launch template %s", name)
	return fake.LaunchTemplate{}
}

// reservationNamed is the fake's reservation of the ID.
func reservationNamed(t *testing.T, far *fake.AWS, id string) fake.CapacityReservation {
	t.Helper()
	for _, r := range far.CapacityReservations() {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no capacity reservation %s", id)
	return fake.CapacityReservation{}
}

// TestExpiringReservations: a Capacity Block within 40 minutes of its end is expiring, read
// from EC2 by ID as the AWS provider v1.15.2's capacityreservation.expiration controller reads
// it (CapacityReservationFromEC2); other reservations, ended ones and IDs EC2 does not know are
// not.
func TestExpiringReservations(t *testing.T) {
	f := newFixture(t, withReservedCapacity)
	f.seedReservations()
	got, err := f.provider.ExpiringReservations(f.ctx, []string{crBlock, crM5, crEnded, "cr-0ffffffffffffff99"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[crBlock] {
		t.Errorf("expiring %v, want only the Capacity Block %s", got, crBlock)
	}
}

// TestEndedReservationTurnsNodesOnDemand: when an On-Demand Capacity Reservation expires, its
// instance runs on and EC2 describes it without the reservation; the provider lists it
// on-demand, without the reservation's labels (v1.15.2 pkg/providers/instance/types.go
// getCapacityType), and the capacityreservation.capacitytype controller relabels its NodeClaim
// and Node on-demand (pkg/controllers/capacityreservation/capacitytype). A Capacity Block's
// instance is reclaimed instead.
func TestEndedReservationTurnsNodesOnDemand(t *testing.T) {
	f := newFixture(t, withReservedCapacity)
	f.seedReservations()
	f.aws.AddCapacityReservation(fake.CapacityReservation{ID: crBlock2, InstanceType: "m5.xlarge", Zone: "us-west-2b", TotalInstanceCount: 1,
		ReservationType: "capacity-block", EndDate: aws.Time(f.clock.Now().Add(48 * time.Hour)), Tags: map[string]string{"team": "ml"}})
	_, np := f.reservedNodeClass(append(slices.Clone(mlTerms), awsv1.CapacityReservationSelectorTerm{ID: crBlock2}), karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand)
	launched, err := f.provider.Create(f.ctx, claimFor(np, "in-odcr", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")))
	if err != nil {
		t.Fatal(err)
	}
	block, err := f.provider.Create(f.ctx, claimFor(np, "in-block", nil, req(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpIn, crBlock2)))
	if err != nil {
		t.Fatal(err)
	}
	if launched.Labels[awsv1.LabelCapacityReservationID] != crM5 || block.Labels[awsv1.LabelCapacityReservationID] != crBlock2 {
		t.Fatalf("launched %v and %v, want them in %s and %s", launched.Labels, block.Labels, crM5, crBlock2)
	}
	claim := launched.DeepCopy()
	claim.ResourceVersion = ""
	if err := env.Client.Create(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	claim.Status = launched.Status
	if err := env.Client.Status().Update(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	nodeLabels := maps.Clone(launched.Labels)
	nodeLabels[karpv1.NodeRegisteredLabelKey] = "true"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "in-odcr", Labels: nodeLabels}, Spec: corev1.NodeSpec{ProviderID: launched.Status.ProviderID}}
	if err := env.Client.Create(f.ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(f.ctx, node)
		_ = env.Client.Delete(f.ctx, claim)
	})

	f.aws.EndCapacityReservation(crM5, "expired")
	f.aws.EndCapacityReservation(crBlock2, "expired")
	listed, err := f.provider.List(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Status.ProviderID != launched.Status.ProviderID {
		t.Fatalf("listed %d instances, want the ODCR's still running and the Capacity Block's reclaimed", len(listed))
	}
	if l := listed[0].Labels; l[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeOnDemand || l[awsv1.LabelCapacityReservationID] != "" {
		t.Errorf("the instance lists as %v, want on-demand without its reservation", l)
	}

	if err := expiration.NewCapacityTypeController(env.Client, f.provider, f.clock).Step(f.ctx); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	for what, l := range map[string]map[string]string{"nodeclaim": claim.Labels, "node": node.Labels} {
		if l[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeOnDemand || l[awsv1.LabelCapacityReservationID] != "" || l[awsv1.LabelCapacityReservationType] != "" {
			t.Errorf("%s labels %v, want on-demand without the reservation's id and type", what, l)
		}
	}
}
