package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
)

// Defaults of Options.
const (
	// DefaultRegion is the region when Options.Region is empty.
	DefaultRegion = "us-east-1"
	// DefaultInterruptionNotice is how long an interrupted spot instance runs after its notice,
	// as on EC2.
	DefaultInterruptionNotice = 2 * time.Minute
)

// Options configure a Cloud. The zero value, plus NodeClasses, is a usable cloud: the real
// clock, us-east-1a/b/c, the embedded catalog at its prices, spot and on-demand, unlimited
// capacity, instances running as soon as they launch, and no faults.
type Options struct {
	// Clock is the source of all time; nil means the real clock. Simulations and tests pass a
	// virtual one (k8s.io/utils/clock/testing.FakeClock).
	Clock clock.Clock
	// NodeClasses reads the EC2NodeClasses that NodePools and NodeClaims refer to; required.
	NodeClasses client.Reader
	// Region is the region's name; empty means DefaultRegion.
	Region string
	// Zones are the availability zones; nil means the region's a, b and c zones.
	Zones []string
	// CapacityTypes the cloud sells; nil means on-demand and spot. Reserved offerings exist only
	// where a price is given for them (Prices or PriceOverrides).
	CapacityTypes []string
	// Seed seeds the one random source behind every random choice (launch errors, latency
	// jitter, spot interruptions) and the instance IDs.
	Seed int64
	// LaunchLatency is the time from Create until the instance is running (its kubelet starts);
	// zero means at once.
	LaunchLatency time.Duration
	// InterruptionNotice is the time from a spot interruption notice to termination; zero means
	// DefaultInterruptionNotice.
	InterruptionNotice time.Duration
	// Catalog is the instance types sold; nil means the embedded EC2 catalog (catalog.Load).
	Catalog []catalog.Entry
	// Prices price the offerings; nil means the catalog's (on-demand and modelled spot).
	Prices cloudprovider.Prices
	// PriceOverrides change individual prices on top of Prices.
	PriceOverrides []cloudprovider.PriceOverride
	// Capacity limits how many instances of an offering can run at once; offerings that no
	// entry matches are unlimited. See CapacityLimit for matching.
	Capacity []CapacityLimit
	// Faults are the failures to inject.
	Faults FaultPlan
	// Store, when set, keeps the live instances outside the process (see Store); nil keeps
	// them in memory only.
	Store Store
	// Unavailable, when set, is the offering cache the scheduler reads and the interruption
	// controller marks (a spot offering is unavailable for three minutes after an interruption):
	// Create skips the offerings it marks, as a cloud provider's launch does, rather than
	// launching the reclaimed offering again.
	Unavailable *cloudprovider.UnavailableOfferings
	// RebootForRepair is the AWS provider's RebootForRepair gate, which the simulated cloud
	// plays: its repair policies reboot a node for GPU faults a reboot clears
	// (cloudprovider.EC2RepairPolicies).
	RebootForRepair bool
	// RebootDuration is how long a rebooted instance's Node reports NotReady before it rejoins
	// with a new boot ID; zero means DefaultRebootDuration.
	RebootDuration time.Duration
	// NodeClassCEL is the AWS provider's feature gate of that name: CEL expressions in an
	// EC2NodeClass's spec.kubelet are evaluated per instance type for its capacity and
	// overhead, as the AWS provider evaluates them. Off, a NodeClass with one is not Ready
	// (KubeletExpressionsDisabled), as in Karpenter.
	NodeClassCEL bool
	// DRANVIDIAGPU is the AWS provider's feature gate of that name: an EC2NodeClass may ask for
	// GPU sharing (cloudprovider.ValidateNVIDIAConsumableCapacity).
	DRANVIDIAGPU bool
	// Reservations are the capacity reservations the account holds (Reservation).
	Reservations []Reservation
	// ReservedCapacity is Karpenter's feature gate of that name (on by default in v1.15): an
	// EC2NodeClass's capacityReservationSelectorTerms select Reservations into its status, and
	// their free slots are offered as reserved capacity. Off, the terms are ignored.
	ReservedCapacity bool
}

// DefaultRebootDuration is Options.RebootDuration's default: about what an EC2 instance takes
// from RebootInstances until its kubelet posts Ready again.
const DefaultRebootDuration = 60 * time.Second

// CapacityLimit bounds an offering's capacity pool: at most Count instances of InstanceType in
// Zone as CapacityType run at once. An empty field matches any value, so one entry can cover
// many offerings; each offering still has its own pool of Count. When several entries match an
// offering, the one naming the most fields wins, and among those the later one.
type CapacityLimit struct {
	// InstanceType is the instance type's name, or empty for all.
	InstanceType string
	// Zone is the zone, or empty for all.
	Zone string
	// CapacityType is spot, on-demand or reserved, or empty for all.
	CapacityType string
	// Count is the pool's size; zero means the offering never has capacity.
	Count int
}

// specificity counts the fields a limit names.
func (l CapacityLimit) specificity() int {
	n := 0
	for _, f := range []string{l.InstanceType, l.Zone, l.CapacityType} {
		if f != "" {
			n++
		}
	}
	return n
}

func (l CapacityLimit) matches(id cloudprovider.OfferingID) bool {
	return (l.InstanceType == "" || l.InstanceType == id.InstanceType) &&
		(l.Zone == "" || l.Zone == id.Zone) &&
		(l.CapacityType == "" || l.CapacityType == id.CapacityType)
}

// FaultPlan is what goes wrong in the simulated cloud. The zero value injects nothing.
type FaultPlan struct {
	// CreateErrorRate is the probability, in [0, 1], that a Create fails with a transient
	// (retryable) CreateError before anything is launched.
	CreateErrorRate float64
	// Unavailable offerings start out of capacity (insufficient capacity on launch, Available
	// false in GetInstanceTypes). Empty fields match any value, so {Zone: "us-east-1a"} is a
	// zone outage. Cloud.SetOfferingAvailable changes them at run time.
	Unavailable []cloudprovider.OfferingID
	// LaunchJitter adds a uniformly random delay in [0, LaunchJitter) to each launch's latency.
	LaunchJitter time.Duration
	// SpotInterruptionRate is the expected number of interruptions per spot instance-hour; each
	// spot instance draws its interruption time at launch (exponentially distributed). Zero
	// means spot instances are interrupted only through Cloud.Interrupt.
	SpotInterruptionRate float64
	// NodeFailureRate is the expected number of node failures per instance-hour of running;
	// each instance draws at launch when its Node fails (exponentially distributed), and from
	// then on its Node reports NodeFailure, until the instance is gone. Zero means nodes fail
	// only through Cloud.MakeUnhealthy.
	NodeFailureRate float64
	// InstanceLossRate is the expected number of instances lost per instance-hour: each
	// instance draws at launch when it vanishes out of band (exponentially distributed), as an
	// instance stopped from the console or lost to a host failure does; at that time it is
	// terminated (TerminationReasonLost) without any call. The time is kept with the instance
	// (Instance.LossTime), so a cloud restored from a Store loses it at the same moment. Zero
	// means instances are never lost.
	InstanceLossRate float64
	// ThrottleRate is the probability, in [0, 1], that a call to the cloud's API (Create,
	// Delete, Get, List, IsDrifted) is refused with a *ThrottlingError before it does anything,
	// as EC2 answers RequestLimitExceeded; retrying later succeeds. GetInstanceTypes is not
	// throttled: a provider serves it from its cache.
	ThrottleRate float64
	// NodeFailure is the condition a failed Node reports; the zero value is Ready Unknown (its
	// kubelet stopped posting status), which every cloud's repair policies cover. Its Since is
	// the failure's time and must be zero here.
	NodeFailure NodeCondition
}

// Validate reports the first invalid option.
func (o Options) Validate() error {
	if o.NodeClasses == nil {
		return errors.New("nodeclasses reader is required")
	}
	if o.LaunchLatency < 0 {
		return fmt.Errorf("launch latency %s is negative", o.LaunchLatency)
	}
	if o.InterruptionNotice < 0 {
		return fmt.Errorf("interruption notice %s is negative", o.InterruptionNotice)
	}
	if err := uniqueNonEmpty("zone", o.Zones); err != nil {
		return err
	}
	if o.Zones != nil && len(o.Zones) == 0 {
		return errors.New("zones is empty")
	}
	if err := uniqueNonEmpty("capacity type", o.CapacityTypes); err != nil {
		return err
	}
	if o.CapacityTypes != nil && len(o.CapacityTypes) == 0 {
		return errors.New("capacity types is empty")
	}
	for _, ct := range o.CapacityTypes {
		if !validCapacityType(ct) {
			return fmt.Errorf("unknown capacity type %q", ct)
		}
	}
	if _, err := cloudprovider.WithPriceOverrides(nil, o.PriceOverrides...); err != nil {
		return err
	}
	for _, l := range o.Capacity {
		if l.Count < 0 {
			return fmt.Errorf("capacity limit for %s/%s/%s: count %d is negative", l.InstanceType, l.Zone, l.CapacityType, l.Count)
		}
		if l.CapacityType != "" && !validCapacityType(l.CapacityType) {
			return fmt.Errorf("capacity limit: unknown capacity type %q", l.CapacityType)
		}
	}
	zones := o.Zones
	if zones == nil {
		zones = DefaultZones(cmp.Or(o.Region, DefaultRegion))
	}
	seen := map[string]bool{}
	for _, r := range o.Reservations {
		if err := r.Validate(zones); err != nil {
			return err
		}
		if seen[r.ID] {
			return fmt.Errorf("capacity reservation %s is given twice", r.ID)
		}
		seen[r.ID] = true
	}
	return o.Faults.validate()
}

func (f FaultPlan) validate() error {
	if math.IsNaN(f.CreateErrorRate) || f.CreateErrorRate < 0 || f.CreateErrorRate > 1 {
		return fmt.Errorf("create error rate %v is not in [0, 1]", f.CreateErrorRate)
	}
	if math.IsNaN(f.ThrottleRate) || f.ThrottleRate < 0 || f.ThrottleRate > 1 {
		return fmt.Errorf("throttle rate %v is not in [0, 1]", f.ThrottleRate)
	}
	if math.IsNaN(f.InstanceLossRate) || math.IsInf(f.InstanceLossRate, 0) || f.InstanceLossRate < 0 {
		return fmt.Errorf("instance loss rate %v is not a non-negative number", f.InstanceLossRate)
	}
	if f.LaunchJitter < 0 {
		return fmt.Errorf("launch jitter %s is negative", f.LaunchJitter)
	}
	if math.IsNaN(f.SpotInterruptionRate) || math.IsInf(f.SpotInterruptionRate, 0) || f.SpotInterruptionRate < 0 {
		return fmt.Errorf("spot interruption rate %v is not a non-negative number", f.SpotInterruptionRate)
	}
	if math.IsNaN(f.NodeFailureRate) || math.IsInf(f.NodeFailureRate, 0) || f.NodeFailureRate < 0 {
		return fmt.Errorf("node failure rate %v is not a non-negative number", f.NodeFailureRate)
	}
	if f.NodeFailure != (NodeCondition{}) {
		if err := f.NodeFailure.validate(); err != nil {
			return fmt.Errorf("node failure: %w", err)
		}
		if !f.NodeFailure.Since.IsZero() {
			return errors.New("node failure: since must be zero (it is each failure's time)")
		}
	}
	for _, id := range f.Unavailable {
		if id.CapacityType != "" && !validCapacityType(id.CapacityType) {
			return fmt.Errorf("unavailable offering %s: unknown capacity type %q", id, id.CapacityType)
		}
	}
	return nil
}

func validCapacityType(ct string) bool {
	return ct == karpv1.CapacityTypeOnDemand || ct == karpv1.CapacityTypeSpot || ct == karpv1.CapacityTypeReserved
}

func uniqueNonEmpty(what string, values []string) error {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	for i, v := range sorted {
		if v == "" {
			return fmt.Errorf("empty %s", what)
		}
		if i > 0 && sorted[i-1] == v {
			return fmt.Errorf("duplicate %s %q", what, v)
		}
	}
	return nil
}

// DefaultZones are the zones of a cloud in region whose Options name none: its a, b and c.
func DefaultZones(region string) []string {
	return []string{region + "a", region + "b", region + "c"}
}

// withDefaults fills the zero fields with their defaults.
func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.Zones == nil {
		o.Zones = DefaultZones(o.Region)
	}
	o.Zones = slices.Sorted(slices.Values(o.Zones))
	if o.CapacityTypes == nil {
		o.CapacityTypes = []string{karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot}
	}
	o.CapacityTypes = slices.Sorted(slices.Values(o.CapacityTypes))
	if o.InterruptionNotice == 0 {
		o.InterruptionNotice = DefaultInterruptionNotice
	}
	if o.RebootDuration == 0 {
		o.RebootDuration = DefaultRebootDuration
	}
	return o
}
