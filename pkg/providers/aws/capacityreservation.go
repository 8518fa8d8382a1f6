package aws

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// Capacity reservations (the ReservedCapacity gate), as Karpenter's AWS provider v1.15.2:
// an EC2NodeClass's capacityReservationSelectorTerms resolve to status.capacityReservations
// (pkg/controllers/nodeclass/capacityreservation.go), each active reservation becomes a
// reserved offering of its instance type in its zone
// (pkg/providers/instancetype/offering/reserved_capacity_resolver.go), and a claim that
// allows reserved capacity launches into one first, through a launch template targeting it
// (pkg/providers/instance, pkg/providers/launchtemplate).

const (
	// capacityReservationPollPeriod is how often a NodeClass's reservations are read again
	// (v1.15.2 nodeclass/capacityreservation.go, capacityReservationPollPeriod).
	capacityReservationPollPeriod = time.Minute
	// capacityBlockExpiringWindow: a Capacity Block this close to its end is expiring, and no
	// longer launched into (v1.15.2 apis/v1 CapacityReservationFromEC2).
	capacityBlockExpiringWindow = 40 * time.Minute
	// returnedSlotMemory is how long an instance whose reservation slot was given back is
	// remembered, so that its slot is given back once (v1.15.2 capacityreservation
	// terminatedInstanceTTL).
	returnedSlotMemory = 15 * time.Minute
	// reservationCapacityExceededCode is the fleet error of a launch into a reservation without
	// a free slot.
	reservationCapacityExceededCode = "ReservationCapacityExceeded"
	// reservationUnavailableCode is the fleet error of a launch into an interruptible
	// reservation being reclaimed.
	reservationUnavailableCode = "InvalidCapacityReservationState.Unavailable"
	// capacityReservationsOnly is the launch template preference of a reserved launch.
	capacityReservationsOnly = ec2types.CapacityReservationPreferenceCapacityReservationsOnly
)

// reservationQuery is one DescribeCapacityReservations query of a selector term, as v1.15.2's
// capacityreservation.Query: by ID, or by tags, owner and instance match criteria.
type reservationQuery struct {
	id, ownerID, matchCriteria string
	tags                       map[string]string
}

// reservationQueries are the queries of the terms, as v1.15.2's QueriesFromSelectorTerms.
func reservationQueries(terms []awsv1.CapacityReservationSelectorTerm) []reservationQuery {
	var out []reservationQuery
	for _, t := range terms {
		if t.ID != "" {
			out = append(out, reservationQuery{id: t.ID})
		}
		if len(t.Tags) > 0 || t.InstanceMatchCriteria != "" {
			out = append(out, reservationQuery{ownerID: t.OwnerID, tags: t.Tags, matchCriteria: t.InstanceMatchCriteria})
		}
	}
	return out
}

// input is the query's request: active reservations only; by ID without MaxResults (EC2
// refuses both), else by filters, a tag value of "*" matching any value of the key.
func (q reservationQuery) input() *ec2.DescribeCapacityReservationsInput {
	filters := []ec2types.Filter{{Name: aws.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}}}
	if q.id != "" {
		return &ec2.DescribeCapacityReservationsInput{Filters: filters, CapacityReservationIds: []string{q.id}}
	}
	if q.ownerID != "" {
		filters = append(filters, ec2types.Filter{Name: aws.String("owner-id"), Values: []string{q.ownerID}})
	}
	for _, k := range slices.Sorted(maps.Keys(q.tags)) {
		if v := q.tags[k]; v == "*" {
			filters = append(filters, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			filters = append(filters, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	if q.matchCriteria != "" {
		filters = append(filters, ec2types.Filter{Name: aws.String("instance-match-criteria"), Values: []string{q.matchCriteria}})
	}
	return &ec2.DescribeCapacityReservationsInput{Filters: filters, MaxResults: aws.Int32(1000)}
}

// reservationCounts is how many more instances each reservation is believed to take, as
// v1.15.2's capacity reservation availability cache: set from EC2 at each resolution, one
// less for each launch into it, one more (once per instance) when an instance of it is gone.
// It is safe for concurrent use.
type reservationCounts struct {
	mu       sync.Mutex
	count    map[string]int
	returned map[string]time.Time // instance IDs whose slot was given back, and when
}

// sync records the counts EC2 reported.
func (c *reservationCounts) sync(counts map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.count == nil {
		c.count = map[string]int{}
	}
	maps.Copy(c.count, counts)
}

// get is the reservation's count; 0 when it was never read.
func (c *reservationCounts) get(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count[id]
}

// set forces a reservation's count, as v1.15.2 zeroes it when EC2 says it is full.
func (c *reservationCounts) set(id string, n int) {
	c.sync(map[string]int{id: n})
}

// launched takes a slot of a known reservation.
func (c *reservationCounts) launched(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.count[id]; ok {
		c.count[id] = n - 1
	}
}

// terminated gives the instance's slot back to its reservation, once per instance.
func (c *reservationCounts) terminated(id, instanceID string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, at := range c.returned {
		if now.Sub(at) >= returnedSlotMemory {
			delete(c.returned, i)
		}
	}
	if _, ok := c.returned[instanceID]; ok {
		return
	}
	if c.returned == nil {
		c.returned = map[string]time.Time{}
	}
	c.returned[instanceID] = now
	if n, ok := c.count[id]; ok {
		c.count[id] = n + 1
	}
}

// resolveCapacityReservations reads the reservations the NodeClass's terms select, as
// v1.15.2's capacity reservation provider List and nodeclass reconciler: each query's active
// reservations (an ID EC2 does not know selects none), without duplicates or those already
// ended, sorted by ID; their available counts are recorded. A reservation whose instance match
// criteria or type this provider does not know is left out and logged, as there.
func (p *Provider) resolveCapacityReservations(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.CapacityReservation, error) {
	now := p.opts.Clock.Now()
	seen := map[string]ec2types.CapacityReservation{}
	for _, q := range reservationQueries(nc.Spec.CapacityReservationSelectorTerms) {
		pages := ec2.NewDescribeCapacityReservationsPaginator(p.clients.EC2, q.input())
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if isNotFound(err) {
				break // only a query by ID fails so, and it has a single page
			}
			if err != nil {
				return nil, fmt.Errorf("describing capacity reservations: %w", err)
			}
			counts := map[string]int{}
			for _, r := range out.CapacityReservations {
				id := aws.ToString(r.CapacityReservationId)
				counts[id] = int(aws.ToInt32(r.AvailableInstanceCount))
				if r.EndDate == nil || r.EndDate.After(now) {
					seen[id] = r
				}
			}
			p.reservations.sync(counts)
		}
	}
	out := make([]awsv1.CapacityReservation, 0, len(seen))
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(seen)) {
		r, err := reservationFromEC2(seen[id], now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	if len(errs) > 0 {
		log.FromContext(ctx).Error(errors.Join(errs...), "failed to parse discovered capacity reservations", "ec2nodeclass", nc.Name, "error-count", len(errs), "total-count", len(seen))
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// reservationFromEC2 is the status entry of a reservation, as v1.15.2's
// CapacityReservationFromEC2: a Capacity Block within capacityBlockExpiringWindow of its end
// is expiring.
func reservationFromEC2(r ec2types.CapacityReservation, now time.Time) (awsv1.CapacityReservation, error) {
	id := aws.ToString(r.CapacityReservationId)
	if r.InstanceMatchCriteria != ec2types.InstanceMatchCriteriaOpen && r.InstanceMatchCriteria != ec2types.InstanceMatchCriteriaTargeted {
		return awsv1.CapacityReservation{}, fmt.Errorf("capacity reservation %s: unsupported instance match criteria %q", id, r.InstanceMatchCriteria)
	}
	typ := awsv1.CapacityReservationTypeDefault
	switch r.ReservationType {
	case "", ec2types.CapacityReservationType(awsv1.CapacityReservationTypeDefault):
	case ec2types.CapacityReservationType(awsv1.CapacityReservationTypeCapacityBlock):
		typ = awsv1.CapacityReservationTypeCapacityBlock
	default:
		return awsv1.CapacityReservation{}, fmt.Errorf("capacity reservation %s: unsupported reservation type %q", id, r.ReservationType)
	}
	out := awsv1.CapacityReservation{
		ID: id, AvailabilityZone: aws.ToString(r.AvailabilityZone), InstanceType: aws.ToString(r.InstanceType), OwnerID: aws.ToString(r.OwnerId),
		InstanceMatchCriteria: string(r.InstanceMatchCriteria), ReservationType: typ, Interruptible: aws.ToBool(r.Interruptible),
		State: awsv1.CapacityReservationStateActive,
	}
	if r.EndDate != nil {
		end := metav1.NewTime(*r.EndDate)
		out.EndTime = &end
		if typ == awsv1.CapacityReservationTypeCapacityBlock && !now.Before(r.EndDate.Add(-capacityBlockExpiringWindow)) {
			out.State = awsv1.CapacityReservationStateExpiring
		}
	}
	return out, nil
}

// reservationRequeue is when the NodeClass's reservations are next read: within
// capacityReservationPollPeriod, sooner when one ends before (v1.15.2 requeueAfter).
func reservationRequeue(nc *awsv1.EC2NodeClass, now time.Time) time.Duration {
	next := capacityReservationPollPeriod
	for _, r := range nc.Status.CapacityReservations {
		if r.EndTime != nil {
			next = min(next, max(r.EndTime.Sub(now), time.Second))
		}
	}
	return next
}

// withReservedOfferings adds to each instance type one reserved offering per reservation of
// the NodeClass for it, as v1.15.2's ReservedCapacityResolver: in the reservation's zone
// (with its zone ID), priced at the type's on-demand price / 10,000,000, carrying the
// reservation's ID, type, interruptibility and believed free slots (in a placement group, placed
// in it as the type's other offerings: placeOfferings). It is available when the
// zone is one of the NodeClass's subnets' and offers the type, the reservation is not
// expiring, ended (before the status says so) nor marked out of capacity, and it has a free
// slot. Types without reservations are returned as they are; the others are copies. With the
// ReservedCapacity gate off, or no reservation, the types are returned unchanged.
func (p *Provider) withReservedOfferings(nc *awsv1.EC2NodeClass, its []*cloudprovider.InstanceType, pg *placementGroup) []*cloudprovider.InstanceType {
	if !p.opts.ReservedCapacity || len(nc.Status.CapacityReservations) == 0 {
		return its
	}
	now := p.opts.Clock.Now()
	byType := map[string][]awsv1.CapacityReservation{}
	for _, r := range nc.Status.CapacityReservations {
		byType[r.InstanceType] = append(byType[r.InstanceType], r)
	}
	zoneIDs := cloudprovider.ZoneIDsOf(nc.Status.Subnets)
	zones := map[string]bool{}
	for _, s := range nc.Status.Subnets {
		zones[s.Zone] = true
	}
	out := slices.Clone(its)
	for i, it := range its {
		rs := byType[it.Name]
		if len(rs) == 0 {
			continue
		}
		od, _ := p.onDemandPrice(it.Name)
		offerings := slices.Clone(it.Offerings)
		for _, r := range rs {
			o := cloudprovider.Offering{
				Zone: r.AvailabilityZone, ZoneID: zoneIDs[r.AvailabilityZone], CapacityType: karpv1.CapacityTypeReserved, Price: od / cloudprovider.ReservedPriceDivisor,
				ReservationID: r.ID, ReservationType: string(r.ReservationType), ReservationInterruptible: r.Interruptible,
				ReservationCapacity: p.reservations.get(r.ID),
			}
			available := zones[r.AvailabilityZone] && p.offeredIn(it.Name, r.AvailabilityZone) && r.State != awsv1.CapacityReservationStateExpiring &&
				(r.EndTime == nil || now.Before(r.EndTime.Time)) && o.ReservationCapacity > 0
			// In a placement group, placed as the type's other offerings (one per partition
			// of a partition group, as upstream's PlacementGroupResolver runs after its
			// ReservedCapacityResolver).
			for _, o := range placeOfferings(cloudprovider.Offerings{o}, pg) {
				o.Available = available && !p.opts.Unavailable.IsUnavailable(o.ID(it.Name))
				offerings = append(offerings, o)
			}
		}
		slices.SortStableFunc(offerings, func(a, b cloudprovider.Offering) int {
			return cmp.Or(cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.CapacityType, b.CapacityType), cmp.Compare(a.ReservationID, b.ReservationID),
				cmp.Compare(a.PlacementPartition, b.PlacementPartition))
		})
		out[i] = it.WithOfferings(offerings)
	}
	return out
}

// reservationPriority orders reservations of equal price as v1.15.2's
// CapacityReservationTypeFilter: On-Demand Capacity Reservations, then Capacity Blocks, then
// interruptible reservations.
func reservationPriority(o cloudprovider.Offering) int {
	switch {
	case o.ReservationType == string(awsv1.CapacityReservationTypeCapacityBlock):
		return 1
	case o.ReservationInterruptible:
		return 2
	}
	return 0
}

// reservedCandidates narrows a claim's available reserved candidates to what one fleet may
// launch, as v1.15.2's launch filters do: the kind of reservation (type and interruptibility)
// with the cheapest offering, ties by reservationPriority (CapacityReservationTypeFilter); for a
// Capacity Block, the single cheapest offering (CapacityBlockFilter); otherwise, for each
// instance type and zone, the reservation with the most free slots (ReservedOfferingFilter).
// The order of cands is kept.
func reservedCandidates(cands []cloudprovider.LaunchCandidate) []cloudprovider.LaunchCandidate {
	if len(cands) == 0 {
		return nil
	}
	best := cands[0].Offering
	for _, c := range cands[1:] {
		if o := c.Offering; o.Price < best.Price || o.Price == best.Price && reservationPriority(o) < reservationPriority(best) {
			best = o
		}
	}
	kind := func(o cloudprovider.Offering) bool {
		return o.ReservationType == best.ReservationType && o.ReservationInterruptible == best.ReservationInterruptible
	}
	if best.ReservationType == string(awsv1.CapacityReservationTypeCapacityBlock) {
		for _, c := range cands {
			if kind(c.Offering) {
				return []cloudprovider.LaunchCandidate{c}
			}
		}
	}
	type pool struct{ typ, zone string }
	chosen := map[pool]cloudprovider.LaunchCandidate{}
	for _, c := range cands {
		if !kind(c.Offering) {
			continue
		}
		k := pool{c.InstanceType.Name, c.Offering.Zone}
		if cur, ok := chosen[k]; !ok || c.Offering.ReservationCapacity > cur.Offering.ReservationCapacity {
			chosen[k] = c
		}
	}
	var out []cloudprovider.LaunchCandidate
	for _, c := range cands {
		if chosen[pool{c.InstanceType.Name, c.Offering.Zone}].Offering.ReservationID == c.Offering.ReservationID && kind(c.Offering) {
			out = append(out, c)
		}
	}
	return out
}

// reservedFleetCapacityType is a reserved fleet's DefaultTargetCapacityType, as v1.15.2's
// CreateFleetInputBuilder: capacity-block for Capacity Blocks, reserved-capacity for
// interruptible reservations, on-demand for the others.
func reservedFleetCapacityType(o cloudprovider.Offering) ec2types.DefaultTargetCapacityType {
	switch {
	case o.ReservationType == string(awsv1.CapacityReservationTypeCapacityBlock):
		return ec2types.DefaultTargetCapacityTypeCapacityBlock
	case o.ReservationInterruptible:
		return ec2types.DefaultTargetCapacityTypeReservedCapacity
	}
	return ec2types.DefaultTargetCapacityTypeOnDemand
}

// reservationMarketType is the launch template's market type of a reserved launch, as
// v1.15.2's launch template builder: capacity-block or interruptible-capacity-reservation, else
// none.
func reservationMarketType(o cloudprovider.Offering) string {
	switch {
	case o.ReservationType == string(awsv1.CapacityReservationTypeCapacityBlock):
		return string(ec2types.MarketTypeCapacityBlock)
	case o.ReservationInterruptible:
		return string(ec2types.MarketTypeInterruptibleCapacityReservation)
	}
	return ""
}

// reservedInstanceOffering is what an instance's description says of its reservation, as
// v1.15.2's instance.NewInstance: with the ReservedCapacity gate on, an instance launched
// into a reservation with the preference capacity-reservations-only is reserved (one that
// merely landed in an open reservation stays on-demand), its type capacity-block when its
// lifecycle is, and interruptible when its lifecycle is interruptible-capacity-reservation.
func (p *Provider) reservedInstanceOffering(i instance) (cloudprovider.Offering, bool) {
	if !p.opts.ReservedCapacity || i.CapacityReservationId == nil || i.CapacityReservationSpecification == nil ||
		i.CapacityReservationSpecification.CapacityReservationPreference != capacityReservationsOnly {
		return cloudprovider.Offering{}, false
	}
	o := cloudprovider.Offering{CapacityType: karpv1.CapacityTypeReserved, ReservationID: aws.ToString(i.CapacityReservationId),
		ReservationType: string(awsv1.CapacityReservationTypeDefault)}
	switch i.InstanceLifecycle {
	case ec2types.InstanceLifecycleTypeCapacityBlock:
		o.ReservationType = string(awsv1.CapacityReservationTypeCapacityBlock)
	case ec2types.InstanceLifecycleTypeInterruptibleCapacityReservation:
		o.ReservationInterruptible = true
	}
	return o, true
}

// reservationOfClaim is the reservation a claim's instance launched into, from its label.
func reservationOfClaim(claim *karpv1.NodeClaim) string {
	return claim.Labels[awsv1.LabelCapacityReservationID]
}

// ExpiringReservations returns which of the reservation IDs are expiring, read from EC2 as
// v1.15.2's capacityreservation.expiration controller reads them: a Capacity Block within 40
// minutes of its end (reservationFromEC2). IDs EC2 does not know, or lists no longer active,
// are not expiring.
func (p *Provider) ExpiringReservations(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	now := p.opts.Clock.Now()
	for _, id := range ids {
		resp, err := p.clients.EC2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("describing capacity reservation %s: %w", id, err)
		}
		for _, r := range resp.CapacityReservations {
			if cr, err := reservationFromEC2(r, now); err == nil && cr.State == awsv1.CapacityReservationStateExpiring {
				out[cr.ID] = true
			}
		}
	}
	return out, nil
}
