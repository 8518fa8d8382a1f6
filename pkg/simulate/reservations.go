package simulate

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"text/tabwriter"
	"time"

	ec2v1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// reservationWarning says why an EC2NodeClass that selects capacity reservations will not
// launch into any in the simulation, or "" when it may: the ReservedCapacity gate is off (the
// terms are then ignored, as Karpenter ignores them), or none of the workload's
// cloud.reservations match its terms.
func reservationWarning(nc *ec2v1.EC2NodeClass, reservations []sim.Reservation, gate bool) string {
	terms := nc.Spec.CapacityReservationSelectorTerms
	switch {
	case len(terms) == 0:
		return ""
	case !gate:
		return fmt.Sprintf("EC2NodeClass %s selects capacity reservations (spec.capacityReservationSelectorTerms), but the ReservedCapacity feature gate is off: the terms are ignored, as Karpenter ignores them; its NodePools launch on-demand and spot only", nc.Name)
	case !slices.ContainsFunc(reservations, func(r sim.Reservation) bool { return slices.ContainsFunc(terms, r.SelectedBy) }):
		return fmt.Sprintf("EC2NodeClass %s selects capacity reservations (spec.capacityReservationSelectorTerms), but none of the workload's cloud.reservations match its terms: declare them there (id, instanceType, zone, count) to see what they save; until then its NodePools launch on-demand and spot only", nc.Name)
	}
	return ""
}

// reservedCapacityUnused names the NodePools that use an EC2NodeClass selecting capacity
// reservations but whose requirements do not allow karpenter.sh/capacity-type reserved: they
// never launch into the reservations, as in Karpenter, where a NodePool opts in by allowing
// the capacity type.
func reservedCapacityUnused(pools []*karpv1.NodePool, classes map[string]*ec2v1.EC2NodeClass) []string {
	var out []string
	for _, np := range pools {
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil {
			continue
		}
		nc := classes[ref.Name]
		if nc == nil || len(nc.Spec.CapacityReservationSelectorTerms) == 0 {
			continue
		}
		reqs, err := scheduling.FromNodePoolRequirements(np.Spec.Template.Spec.Requirements...)
		if err != nil {
			continue
		}
		if r, ok := reqs.Get(karpv1.CapacityTypeLabelKey); ok && !r.Has(karpv1.CapacityTypeReserved) {
			out = append(out, fmt.Sprintf("NodePool %s uses EC2NodeClass %s, which selects capacity reservations, but its requirements do not allow karpenter.sh/capacity-type reserved: it never launches into them (add reserved to its capacity-type requirement)", np.Name, nc.Name))
		}
	}
	return out
}

// ReservationUse is how a run used one capacity reservation of the workload.
type ReservationUse struct {
	// ID, InstanceType, Zone and Type (default or capacity-block) are the reservation's.
	ID           string `json:"id"`
	InstanceType string `json:"instanceType"`
	Zone         string `json:"zone"`
	Type         string `json:"type"`
	// Count is how many instances it takes at once.
	Count int `json:"count"`
	// Launched counts the instances launched into it; Peak the most running at once; Final
	// those running at the end.
	Launched int `json:"launched"`
	Peak     int `json:"peak"`
	Final    int `json:"final"`
	// EndSeconds is when it ended, from the start of the run, when it did.
	EndSeconds *int64 `json:"endSeconds,omitempty"`
	// SlotPerHour is the on-demand price of its instance type: what each slot is billed per
	// hour, used or not.
	SlotPerHour float64 `json:"slotPerHour"`
}

// reservationUse tallies the instances launched into each reservation: how many, the most at
// once, and those left at end.
func reservationUse(reservations []sim.Reservation, instances []sim.Instance, end time.Time) []ReservationUse {
	var out []ReservationUse
	for _, r := range reservations {
		u := ReservationUse{ID: r.ID, InstanceType: r.InstanceType, Zone: r.Zone, Type: cmp.Or(r.Type, string(ec2v1.CapacityReservationTypeDefault)), Count: r.Count}
		if e, ok := catalog.Lookup(r.InstanceType); ok {
			u.SlotPerHour = e.OnDemandPrice
		}
		if !r.End.IsZero() && !end.Before(r.End) {
			seconds := int64(r.End.Sub(Start).Seconds())
			u.EndSeconds = &seconds
		}
		type change struct {
			at    time.Time
			delta int
		}
		var changes []change
		for _, in := range instances {
			if in.ReservationID != r.ID {
				continue
			}
			u.Launched++
			changes = append(changes, change{in.LaunchTime, 1})
			// It leaves the reservation when it terminates or, when the reservation ends first
			// and it runs on on-demand, then.
			left := in.TerminationTime
			if !in.OnDemandSince.IsZero() && (left.IsZero() || in.OnDemandSince.Before(left)) {
				left = in.OnDemandSince
			}
			if left.IsZero() {
				u.Final++
			} else {
				changes = append(changes, change{left, -1})
			}
		}
		sort.SliceStable(changes, func(i, j int) bool {
			return changes[i].at.Before(changes[j].at) || changes[i].at.Equal(changes[j].at) && changes[i].delta < changes[j].delta
		})
		running := 0
		for _, c := range changes {
			running += c.delta
			u.Peak = max(u.Peak, running)
		}
		out = append(out, u)
	}
	return out
}

// writeReservationsText writes the reservations' use, when the workload has any.
func writeReservationsText(w io.Writer, uses []ReservationUse) {
	if len(uses) == 0 {
		return
	}
	fmt.Fprintln(w, "\nCapacity reservations")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  RESERVATION\tTYPE\tINSTANCE TYPE\tZONE\tSLOTS\tLAUNCHED\tPEAK IN USE\tIN USE AT END")
	for _, u := range uses {
		final := fmt.Sprint(u.Final)
		if u.EndSeconds != nil {
			final = fmt.Sprintf("ended at %s", seconds(float64(*u.EndSeconds)))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", u.ID, u.Type, u.InstanceType, u.Zone, u.Count, u.Launched, u.Peak, final)
	}
	_ = tw.Flush()
	billed := 0.0
	for _, u := range uses {
		billed += float64(u.Count) * u.SlotPerHour
	}
	fmt.Fprintf(w, "  A node in a reservation is priced as Karpenter prices it, at 1/10,000,000 of on-demand: the\n"+
		"  reservations themselves are billed whether used or not, $%.2f/hour for all their slots while they last.\n", billed)
}
