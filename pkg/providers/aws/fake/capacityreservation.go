package fake

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// CapacityReservation is a seeded EC2 capacity reservation: an On-Demand Capacity Reservation
// (ReservationType default) or a Capacity Block for ML (capacity-block). Launches that target
// it (a launch template whose CapacityReservationSpecification names it, preference
// capacity-reservations-only) take one of its available slots, and terminating such an
// instance gives the slot back.
type CapacityReservation struct {
	// ID is the reservation ID, cr- and 17 hex digits.
	ID string
	// InstanceType and Zone are what it reserves.
	InstanceType, Zone string
	// OwnerID is the owning account; default the fake's account.
	OwnerID string
	// TotalInstanceCount is how many instances it holds.
	TotalInstanceCount int
	// AvailableInstanceCount is how many more instances it takes; launches into it decrement
	// it, terminations increment it. AddCapacityReservation sets it to TotalInstanceCount when
	// it is zero and the reservation has no instance yet; SetCapacityReservationAvailable
	// changes it (as other accounts sharing it would).
	AvailableInstanceCount int
	// State is active (default), expired, cancelled, pending, failed, scheduled, ….
	State string
	// InstanceMatchCriteria is targeted (default) or open.
	InstanceMatchCriteria string
	// ReservationType is default (default) or capacity-block.
	ReservationType string
	// Interruptible says the reservation is interruptible (its owner may reclaim it).
	Interruptible bool
	// EndDate is when it ends; nil for an unlimited reservation.
	EndDate *time.Time
	// Tags are the reservation's tags.
	Tags map[string]string
}

var crIDPattern = regexp.MustCompile(`^cr-[0-9a-f]{8}([0-9a-f]{9})?$`)

// AddCapacityReservation seeds a capacity reservation, filling in the defaults of its fields.
func (a *AWS) AddCapacityReservation(r CapacityReservation) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.OwnerID == "" {
		r.OwnerID = a.opts.AccountID
	}
	if r.State == "" {
		r.State = "active"
	}
	if r.InstanceMatchCriteria == "" {
		r.InstanceMatchCriteria = "targeted"
	}
	if r.ReservationType == "" {
		r.ReservationType = "default"
	}
	if r.AvailableInstanceCount == 0 {
		r.AvailableInstanceCount = r.TotalInstanceCount
	}
	r.Tags = cloneTags(r.Tags)
	a.reservations = append(a.reservations, &r)
}

// SetCapacityReservationAvailable sets how many more instances a reservation takes, as other
// accounts or instances launched outside Karpenter would; it reports false when there is no
// such reservation.
func (a *AWS) SetCapacityReservationAvailable(id string, n int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.reservationLocked(id)
	if r == nil {
		return false
	}
	r.AvailableInstanceCount = n
	return true
}

// EndCapacityReservation ends a reservation as EC2 does when it expires or is cancelled: its
// state becomes state (expired or cancelled) and it takes no more instances. A Capacity
// Block's instances are terminated, as EC2 reclaims them; an On-Demand Capacity Reservation's
// go on running as on-demand instances no longer in it (their description names no
// reservation). It reports false when there is no such reservation.
func (a *AWS) EndCapacityReservation(id, state string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.reservationLocked(id)
	if r == nil {
		return false
	}
	r.State, r.AvailableInstanceCount = state, 0
	for _, inst := range a.instances {
		if inst.CapacityReservationID != id || inst.State == "terminated" {
			continue
		}
		if r.ReservationType == "capacity-block" {
			inst.State, inst.TerminateTime = "terminated", a.now()
		}
		inst.CapacityReservationID, inst.Lifecycle = "", ""
	}
	return true
}

// CapacityReservations returns the reservations, with their current counts, in seeding order.
func (a *AWS) CapacityReservations() []CapacityReservation {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]CapacityReservation, len(a.reservations))
	for i, r := range a.reservations {
		out[i] = *r
		out[i].Tags = cloneTags(r.Tags)
		out[i].EndDate = clonePtr(r.EndDate)
	}
	return out
}

func (a *AWS) reservationLocked(id string) *CapacityReservation {
	for _, r := range a.reservations {
		if r.ID == id {
			return r
		}
	}
	return nil
}

type xmlCapacityReservation struct {
	CapacityReservationID  string   `xml:"capacityReservationId"`
	OwnerID                string   `xml:"ownerId"`
	CapacityReservationArn string   `xml:"capacityReservationArn"`
	AvailabilityZoneID     string   `xml:"availabilityZoneId"`
	InstanceType           string   `xml:"instanceType"`
	InstancePlatform       string   `xml:"instancePlatform"`
	AvailabilityZone       string   `xml:"availabilityZone"`
	Tenancy                string   `xml:"tenancy"`
	TotalInstanceCount     int      `xml:"totalInstanceCount"`
	AvailableInstanceCount int      `xml:"availableInstanceCount"`
	State                  string   `xml:"state"`
	EndDate                string   `xml:"endDate,omitempty"`
	EndDateType            string   `xml:"endDateType"`
	InstanceMatchCriteria  string   `xml:"instanceMatchCriteria"`
	ReservationType        string   `xml:"reservationType"`
	Interruptible          bool     `xml:"interruptible"`
	Tags                   []xmlTag `xml:"tagSet>item,omitempty"`
}

// describeCapacityReservations serves DescribeCapacityReservations: by CapacityReservationId
// (an unknown one is InvalidCapacityReservationId.NotFound, and MaxResults may not be given
// with IDs) or by filters (instance-type, owner-id, availability-zone, tenancy, state,
// instance-match-criteria, end-date-type, instance-platform, tag:<key>, tag-key), paginated
// with MaxResults 1–1000.
func (a *AWS) describeCapacityReservations(q *queryCall) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := q.list("CapacityReservationId")
	filters := q.filters()
	size, err := maxResults(q, 1, 1000)
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 && q.has("MaxResults") {
		return nil, badRequest("InvalidParameterCombination", "The parameter CapacityReservationIds cannot be used with the parameter MaxResults")
	}
	attr := func(r *CapacityReservation) func(string) ([]string, bool) {
		return func(name string) ([]string, bool) {
			if r == nil {
				r = &CapacityReservation{}
			}
			switch name {
			case "instance-type":
				return []string{r.InstanceType}, true
			case "owner-id":
				return []string{r.OwnerID}, true
			case "availability-zone":
				return []string{r.Zone}, true
			case "tenancy":
				return []string{"default"}, true
			case "state":
				return []string{r.State}, true
			case "instance-match-criteria":
				return []string{r.InstanceMatchCriteria}, true
			case "end-date-type":
				return []string{endDateType(r)}, true
			case "instance-platform":
				return []string{"Linux/UNIX"}, true
			}
			return nil, false
		}
	}
	if err := validateFilters(filters, attr(nil)); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !crIDPattern.MatchString(id) {
			return nil, badRequest("InvalidCapacityReservationId.Malformed", "Invalid id: \"%s\"", id)
		}
		if a.reservationLocked(id) == nil {
			return nil, badRequest("InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
		}
	}
	var out []xmlCapacityReservation
	for _, r := range a.reservations {
		if len(ids) > 0 && !slices.Contains(ids, r.ID) {
			continue
		}
		if ok, err := matchFilters(filters, r.Tags, attr(r)); err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		x := xmlCapacityReservation{CapacityReservationID: r.ID, OwnerID: r.OwnerID,
			CapacityReservationArn: fmt.Sprintf("arn:aws:ec2:%s:%s:capacity-reservation/%s", a.opts.Region, r.OwnerID, r.ID),
			AvailabilityZoneID:     a.zoneID(r.Zone), InstanceType: r.InstanceType, InstancePlatform: "Linux/UNIX", AvailabilityZone: r.Zone,
			Tenancy: "default", TotalInstanceCount: r.TotalInstanceCount, AvailableInstanceCount: max(r.AvailableInstanceCount, 0), State: r.State,
			EndDateType: endDateType(r), InstanceMatchCriteria: r.InstanceMatchCriteria, ReservationType: r.ReservationType,
			Interruptible: r.Interruptible, Tags: xmlTags(r.Tags)}
		if r.EndDate != nil {
			x.EndDate = isoTime(*r.EndDate)
		}
		out = append(out, x)
	}
	if len(ids) > 0 {
		size = 0
	}
	start, end, next, err := page(len(out), q.get("NextToken"), size)
	if err != nil {
		return nil, err
	}
	return struct {
		CapacityReservations []xmlCapacityReservation `xml:"capacityReservationSet>item"`
		NextToken            string                   `xml:"nextToken,omitempty"`
	}{out[start:end], next}, nil
}

func endDateType(r *CapacityReservation) string {
	if r.EndDate == nil {
		return "unlimited"
	}
	return "limited"
}

// parseCapacityReservationSpecification reads a launch template's
// CapacityReservationSpecification and InstanceMarketOptions as EC2 checks them.
func parseCapacityReservationSpecification(q *queryCall, d string, lt *LaunchTemplate) error {
	switch lt.CapacityReservationPreference = q.get(d + "CapacityReservationSpecification.CapacityReservationPreference"); lt.CapacityReservationPreference {
	case "", "open", "none", "capacity-reservations-only":
	default:
		return badRequest("InvalidParameterValue", "Value (%s) for parameter capacityReservationPreference is invalid.", lt.CapacityReservationPreference)
	}
	lt.CapacityReservationID = q.get(d + "CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId")
	if lt.CapacityReservationID != "" {
		if !crIDPattern.MatchString(lt.CapacityReservationID) {
			return badRequest("InvalidCapacityReservationId.Malformed", "Invalid id: \"%s\"", lt.CapacityReservationID)
		}
		if lt.CapacityReservationPreference != "" && lt.CapacityReservationPreference != "capacity-reservations-only" {
			return badRequest("InvalidParameterCombination", "A capacity reservation target cannot be specified with the capacity reservation preference %s", lt.CapacityReservationPreference)
		}
	}
	if lt.CapacityReservationPreference == "capacity-reservations-only" && lt.CapacityReservationID == "" {
		return badRequest("MissingParameter", "The capacity reservation preference capacity-reservations-only requires a capacity reservation target")
	}
	switch lt.MarketType = q.get(d + "InstanceMarketOptions.MarketType"); lt.MarketType {
	case "", "spot", "on-demand", "capacity-block", "interruptible-capacity-reservation":
	default:
		return badRequest("InvalidParameterValue", "Value (%s) for parameter marketType is invalid.", lt.MarketType)
	}
	return nil
}

// reservationForLocked checks a launch from the candidate's template against its targeted
// reservation, as EC2 does: the reservation must exist, be active, and reserve the override's
// instance type in its zone, its market type must match the template's, and it must have a
// free slot for each instance wanted (ReservationCapacityExceeded otherwise). It returns the
// reservation (nil when the template targets none) or the fleet error.
func (a *AWS) reservationForLocked(c *candidate, req *FleetRequest, wanted int) (*CapacityReservation, *FleetError) {
	lt := c.lt
	if lt.CapacityReservationPreference != "capacity-reservations-only" {
		if lt.MarketType == "capacity-block" || lt.MarketType == "interruptible-capacity-reservation" {
			return nil, &FleetError{Code: "InvalidParameterCombination", Lifecycle: fleetLifecycle(req.CapacityType),
				Message: fmt.Sprintf("The market type %s requires a capacity reservation target.", lt.MarketType)}
		}
		return nil, nil
	}
	fail := func(code, format string, args ...any) (*CapacityReservation, *FleetError) {
		return nil, &FleetError{Code: code, Message: fmt.Sprintf(format, args...), Lifecycle: fleetLifecycle(req.CapacityType)}
	}
	r := a.reservationLocked(lt.CapacityReservationID)
	switch {
	case r == nil:
		return fail("InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", lt.CapacityReservationID)
	case r.State != "active":
		return fail("InvalidCapacityReservationState", "The capacity reservation %s is %s and cannot be launched into.", r.ID, r.State)
	case r.InstanceType != c.override.InstanceType || r.Zone != c.subnet.Zone:
		return fail("InvalidParameterValue", "The capacity reservation %s reserves %s in %s; it cannot launch %s in %s.", r.ID, r.InstanceType, r.Zone, c.override.InstanceType, c.subnet.Zone)
	case r.ReservationType == "capacity-block" && lt.MarketType != "capacity-block":
		return fail("InvalidParameterCombination", "Launching into the Capacity Block %s requires the market type capacity-block.", r.ID)
	case r.Interruptible && lt.MarketType != "interruptible-capacity-reservation":
		return fail("InvalidParameterCombination", "Launching into the interruptible capacity reservation %s requires the market type interruptible-capacity-reservation.", r.ID)
	case r.AvailableInstanceCount < wanted:
		return fail("ReservationCapacityExceeded", "Insufficient capacity in capacity reservation %s: %d of %d instances available.", r.ID, max(r.AvailableInstanceCount, 0), wanted)
	}
	return r, nil
}

// lifecycleOf is the InstanceLifecycle EC2 reports of an instance launched into the
// reservation: capacity-block or interruptible-capacity-reservation, else none.
func lifecycleOf(r *CapacityReservation) string {
	switch {
	case r.ReservationType == "capacity-block":
		return "capacity-block"
	case r.Interruptible:
		return "interruptible-capacity-reservation"
	}
	return ""
}

// releaseLocked gives a terminated instance's reservation slot back.
func (a *AWS) releaseLocked(inst *Instance) {
	if inst.CapacityReservationID == "" {
		return
	}
	if r := a.reservationLocked(inst.CapacityReservationID); r != nil && r.AvailableInstanceCount < r.TotalInstanceCount {
		r.AvailableInstanceCount++
	}
}
