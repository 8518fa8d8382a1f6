package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Name is the simulated cloud provider's name.
const Name = "sim"

// Condition reasons of the CreateErrors Create returns.
const (
	// ReasonInternalError: an injected transient failure (FaultPlan.CreateErrorRate).
	ReasonInternalError = "InternalError"
	// ReasonInvalidRequirements: the claim's requirements do not parse.
	ReasonInvalidRequirements = "InvalidRequirements"
	// ReasonNoCompatibleInstanceTypes: no instance type and offering meets the claim.
	ReasonNoCompatibleInstanceTypes = "NoCompatibleInstanceTypes"
	// ReasonRequestLimitExceeded: the launch was throttled (FaultPlan.ThrottleRate), named
	// as EC2's error code.
	ReasonRequestLimitExceeded = "RequestLimitExceeded"
)

// ThrottlingError is the cloud refusing a call for the rate of calls, as EC2 answers
// RequestLimitExceeded (FaultPlan.ThrottleRate). Nothing was done; retrying later succeeds.
type ThrottlingError struct {
	// Operation is the refused call: Create, Delete, Get, List or IsDrifted.
	Operation string
}

// Error implements error.
func (e *ThrottlingError) Error() string {
	return e.Operation + ": " + ReasonRequestLimitExceeded + ": request limit exceeded (simulated throttling); retry later"
}

// IsThrottlingError reports whether err is, or wraps, a *ThrottlingError.
func IsThrottlingError(err error) bool {
	var target *ThrottlingError
	return errors.As(err, &target)
}

// throttle draws whether the call named op is throttled, returning its error if so.
func (c *Cloud) throttle(op string) error {
	rate := c.faults.ThrottleRate
	if rate <= 0 {
		return nil
	}
	c.mu.Lock()
	throttled := c.rng.Float64() < rate
	c.mu.Unlock()
	if throttled {
		return &ThrottlingError{Operation: op}
	}
	return nil
}

// Cloud is the simulated cloud. It implements cloudprovider.CloudProvider and is safe for
// concurrent use. Build it with New.
type Cloud struct {
	// Fixed at construction.
	clock         clock.Clock
	nodeClasses   client.Reader
	region        string
	zones         []string
	capacityTypes []string
	seed          int64
	launchLatency time.Duration
	notice        time.Duration
	faults        FaultPlan
	// rebootForRepair and rebootDuration are Options.RebootForRepair and RebootDuration.
	rebootForRepair bool
	rebootDuration  time.Duration
	entries         []catalog.Entry
	prices          cloudprovider.Prices
	// overlay, when set (SetOverlay), adjusts the instance types a NodePool's claims launch,
	// and are billed, by.
	overlay cloudprovider.OverlayHolder

	// mu guards the state below.
	mu        sync.Mutex
	rng       *rand.Rand
	launches  uint64
	instances map[string]*instance // every instance ever launched, by ID
	history   []*instance          // the same, in launch order
	live      map[string]*instance // instances not terminated, by ID
	byClaim   map[string]*instance // live instances by NodeClaim name
	// nextEvent is the earliest time an interruption notice or deadline may be due; zero when
	// none is.
	nextEvent   time.Time
	unavailable availability
	// shared is Options.Unavailable: offerings marked there are not launched either.
	shared *cloudprovider.UnavailableOfferings
	// availabilityVersion changes whenever unavailable does.
	availabilityVersion uint64
	limits              []CapacityLimit
	used                map[cloudprovider.OfferingID]int
	addresses           map[string]int // addresses handed out per zone

	// store keeps the state outside the process (nil: in memory only); restored says it has
	// been loaded, dirty that a launch or termination has not been saved yet.
	store           Store
	restored, dirty bool

	// kubeletExpressions is Options.NodeClassCEL.
	kubeletExpressions bool
	// draNVIDIAGPU is Options.DRANVIDIAGPU.
	draNVIDIAGPU bool
	// reservations are Options.Reservations, with their defaults; reservedCapacity is
	// Options.ReservedCapacity.
	reservations     []Reservation
	reservedCapacity bool

	// typesMu guards types, the instance types built per NodeClass configuration.
	typesMu sync.Mutex
	types   map[string]*typeSet
}

var _ cloudprovider.CloudProvider = (*Cloud)(nil)

// New returns a simulated cloud with the options, after validating them.
func New(opts Options) (*Cloud, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("invalid sim options: %w", err)
	}
	opts = opts.withDefaults()
	entries := opts.Catalog
	if entries == nil {
		var err error
		if entries, err = catalog.Load(); err != nil {
			return nil, fmt.Errorf("loading catalog: %w", err)
		}
	}
	prices := opts.Prices
	if prices == nil {
		if opts.Catalog == nil {
			p, err := catalog.DefaultPrices()
			if err != nil {
				return nil, fmt.Errorf("loading catalog prices: %w", err)
			}
			prices = p
		} else {
			prices = catalog.NewPrices(opts.Catalog)
		}
	}
	if len(opts.PriceOverrides) > 0 {
		var err error
		if prices, err = cloudprovider.WithPriceOverrides(prices, opts.PriceOverrides...); err != nil {
			return nil, err
		}
	}
	c := &Cloud{
		clock:           opts.Clock,
		nodeClasses:     opts.NodeClasses,
		region:          opts.Region,
		zones:           opts.Zones,
		capacityTypes:   opts.CapacityTypes,
		seed:            opts.Seed,
		launchLatency:   opts.LaunchLatency,
		notice:          opts.InterruptionNotice,
		faults:          opts.Faults,
		rebootForRepair: opts.RebootForRepair,
		rebootDuration:  opts.RebootDuration,
		entries:         entries,
		prices:          prices,
		rng:             rand.New(rand.NewPCG(uint64(opts.Seed), 0x5eed5eed5eed5eed)),
		instances:       map[string]*instance{},
		live:            map[string]*instance{},
		byClaim:         map[string]*instance{},
		unavailable:     availability{},
		shared:          opts.Unavailable,
		limits:          slices.Clone(opts.Capacity),
		used:            map[cloudprovider.OfferingID]int{},
		addresses:       map[string]int{},
		types:           map[string]*typeSet{},
		store:           opts.Store,

		kubeletExpressions: opts.NodeClassCEL,
		draNVIDIAGPU:       opts.DRANVIDIAGPU,
		reservedCapacity:   opts.ReservedCapacity,
	}
	for _, r := range opts.Reservations {
		c.reservations = append(c.reservations, r.withDefaults())
	}
	for _, id := range opts.Faults.Unavailable {
		c.unavailable[id] = true
	}
	return c, nil
}

// Name returns "sim".
func (c *Cloud) Name() string { return Name }

// Region returns the cloud's region.
func (c *Cloud) Region() string { return c.region }

// Zones returns the cloud's zones, sorted.
func (c *Cloud) Zones() []string { return slices.Clone(c.zones) }

// Clock returns the clock the cloud reads.
func (c *Cloud) Clock() clock.Clock { return c.clock }

// Create launches an instance for the claim; see cloudprovider.InstanceLifecycle. The instance starts
// pending and is running once the launch latency has passed. Creating again for a claim name
// that has a live instance returns that instance and launches nothing.
//
// It returns *NodeClassNotReadyError when the claim's EC2NodeClass is missing or unusable, a
// terminal *CreateError when no instance type and offering meets the claim, a retryable
// *CreateError for injected transient failures (wrapping a *ThrottlingError when the call is
// throttled), and *InsufficientCapacityError, naming every offering tried, when all compatible
// offerings are out of capacity.
func (c *Cloud) Create(ctx context.Context, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	if claim == nil {
		return nil, errors.New("creating instance: nil nodeclaim")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.throttle("Create"); err != nil {
		return nil, cloudprovider.NewCreateError(err, ReasonRequestLimitExceeded, "the cloud throttled the launch request")
	}
	if existing, err := c.existing(ctx, claim.Name); err != nil || existing != nil {
		if err != nil {
			return nil, err
		}
		return existing.launched(claim), nil
	}

	nc, err := c.nodeClass(ctx, claim.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	set, err := c.instanceTypes(nc)
	if err != nil {
		return nil, err
	}
	reqs, err := scheduling.FromNodePoolRequirements(claim.Spec.Requirements...)
	if err != nil {
		return nil, cloudprovider.NewTerminalCreateError(err, ReasonInvalidRequirements, "invalid requirements")
	}
	nodePool := cloudprovider.ClaimNodePool(claim, reqs)
	fixed := map[string]string{
		corev1.LabelTopologyRegion: c.region,
		awsv1.LabelNodeClass:       nc.Name,
	}
	if nodePool != "" {
		fixed[karpv1.NodePoolLabelKey] = nodePool
	}
	// The tenancy: default unless the claim allows dedicated only, as on AWS.
	choices := reqs.LaunchChoiceLabels()
	maps.Copy(fixed, choices)
	base, byName, err := c.overlay.Apply(nodePool, set.base, set.byName)
	if err != nil {
		return nil, err
	}
	base, byName = c.withReservedOfferings(nc, base, byName)
	cands := cloudprovider.LaunchCandidates(base, byName, cloudprovider.LaunchRequest{Requirements: reqs, Requests: claim.Spec.Resources.Requests, Fixed: fixed})
	if len(cands) == 0 {
		return nil, cloudprovider.NewTerminalCreateError(
			fmt.Errorf("no instance type in zones %s meets requirements %s and requests %s", strings.Join(set.zones, ","), reqs, formatResources(claim.Spec.Resources.Requests)),
			ReasonNoCompatibleInstanceTypes, "no compatible instance type")
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	c.syncLocked(now)
	// A concurrent Create for the same claim may have launched while we were reading.
	if existing := c.byClaim[claim.Name]; existing != nil {
		return existing.launched(claim), nil
	}
	if rate := c.faults.CreateErrorRate; rate > 0 && c.rng.Float64() < rate {
		return nil, cloudprovider.NewCreateError(errors.New("simulated transient failure"), ReasonInternalError, "the cloud failed to launch the instance")
	}
	var tried []cloudprovider.OfferingID
	for _, cand := range cands {
		id := cand.ID()
		if c.unavailable.has(id) || c.shared != nil && c.shared.IsUnavailable(id) || !c.hasCapacityLocked(id) {
			tried = append(tried, id)
			continue
		}
		in := c.launchLocked(now, claim, nc, nodePool, choices, cand)
		if err := c.persistLocked(ctx); err != nil {
			// The instance runs; a retry of the claim finds it by name and saves again.
			return nil, cloudprovider.NewCreateError(err, ReasonInternalError, "the simulated cloud could not record the instance")
		}
		return in.launched(claim), nil
	}
	return nil, cloudprovider.NewInsufficientCapacityError(
		fmt.Errorf("all %d compatible offerings are out of capacity", len(tried)), tried...)
}

// SetOverlay makes a NodePool's claims launch by the instance types o adjusts (package
// nodeoverlay): the cheapest offering by the adjusted prices, billed at its adjusted price,
// with the extended resources added to its capacity. Call it before the cloud is used.
func (c *Cloud) SetOverlay(o cloudprovider.Overlay) { c.overlay.SetOverlay(o) }

// existing returns the live instance of the claim name, if any.
func (c *Cloud) existing(ctx context.Context, claimName string) (*instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.restoreLocked(ctx); err != nil {
		return nil, err
	}
	c.syncLocked(c.clock.Now())
	return c.byClaim[claimName], nil
}

// launchLocked records a new instance of the candidate for the claim, with the labels chosen
// at launch (its tenancy).
func (c *Cloud) launchLocked(now time.Time, claim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass, nodePool string, choices map[string]string, cand cloudprovider.LaunchCandidate) *instance {
	c.launches++
	id := instanceID(c.seed, c.launches)
	for c.instances[id] != nil { // a 68-bit collision; keep IDs unique regardless
		c.launches++
		id = instanceID(c.seed, c.launches)
	}
	latency := c.launchLatency
	if j := c.faults.LaunchJitter; j > 0 {
		latency += time.Duration(c.rng.Int64N(int64(j)))
	}
	c.addresses[cand.Offering.Zone]++
	ip := privateIP(slices.Index(c.zones, cand.Offering.Zone), c.addresses[cand.Offering.Zone])

	labels := cand.InstanceType.NodeLabels(cand.Offering)
	labels[corev1.LabelTopologyRegion] = c.region
	labels[awsv1.LabelNodeClass] = nc.Name
	if nodePool != "" {
		labels[karpv1.NodePoolLabelKey] = nodePool
	}
	maps.Copy(labels, choices)
	in := &instance{
		seq:               c.launches,
		id:                id,
		providerID:        ProviderID(cand.Offering.Zone, id),
		instanceType:      cand.InstanceType.Name,
		zone:              cand.Offering.Zone,
		capacityType:      cand.Offering.CapacityType,
		arch:              cand.InstanceType.Labels[corev1.LabelArchStable],
		price:             cand.Offering.Price,
		imageID:           imageID(nc, labels),
		hostname:          hostname(ip, c.region),
		privateIP:         ip,
		launchTime:        now,
		runningTime:       now.Add(latency),
		claimName:         claim.Name,
		nodePoolName:      nodePool,
		nodeClassName:     nc.Name,
		labels:            labels,
		capacity:          cand.InstanceType.Capacity.DeepCopy(),
		allocatable:       cand.InstanceType.Allocatable().DeepCopy(),
		subnetHash:        subnetHash(nc),
		securityGroupHash: securityGroupHash(nc),
		bootstrap: Bootstrap{
			Labels:        maps.Clone(claim.Labels),
			Taints:        slices.Clone(claim.Spec.Taints),
			StartupTaints: slices.Clone(claim.Spec.StartupTaints),
		},
	}
	if rate := c.faults.SpotInterruptionRate; rate > 0 && in.capacityType == karpv1.CapacityTypeSpot {
		hours := c.rng.ExpFloat64() / rate
		in.interruptAt = now.Add(durationOfHours(hours))
		c.scheduleLocked(in.interruptAt)
	}
	if r, ok := c.reservation(cand.Offering.ReservationID); ok {
		in.reservationID = r.ID
		if !r.End.IsZero() {
			// EC2 reclaims a Capacity Block's instances at its end; an On-Demand Capacity
			// Reservation's go on running as on-demand instances.
			in.reservationEnd = r.End
			c.scheduleLocked(r.End)
		}
	}
	if rate := c.faults.NodeFailureRate; rate > 0 {
		in.failAt = in.runningTime.Add(durationOfHours(c.rng.ExpFloat64() / rate))
	}
	if rate := c.faults.InstanceLossRate; rate > 0 {
		in.lossAt = now.Add(durationOfHours(c.rng.ExpFloat64() / rate))
		c.scheduleLocked(in.lossAt)
	}
	c.dirty = true
	c.instances[id] = in
	c.history = append(c.history, in)
	c.live[id] = in
	c.byClaim[claim.Name] = in
	c.used[in.offering()]++
	return in
}

// durationOfHours converts hours to a Duration, saturating instead of overflowing.
func durationOfHours(hours float64) time.Duration {
	d := hours * float64(time.Hour)
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// Delete terminates the claim's instance, found by status.providerID or, when the claim has
// none yet, by its name. It returns *NodeClaimNotFoundError when there is no such live
// instance, so deleting twice is harmless, and *ThrottlingError when the call is throttled.
func (c *Cloud) Delete(ctx context.Context, claim *karpv1.NodeClaim) error {
	if claim == nil {
		return errors.New("deleting instance: nil nodeclaim")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.throttle("Delete"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.restoreLocked(ctx); err != nil {
		return err
	}
	now := c.clock.Now()
	c.syncLocked(now)
	var in *instance
	if claim.Status.ProviderID != "" {
		in = c.liveByProviderIDLocked(claim.Status.ProviderID)
	} else {
		in = c.byClaim[claim.Name]
	}
	if in == nil {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("no instance for nodeclaim %q (provider id %q)", claim.Name, claim.Status.ProviderID))
	}
	c.terminateLocked(in, now, TerminationReasonDeleted)
	return c.persistLocked(ctx)
}

// Get returns the NodeClaim view of the live instance with the provider ID, or
// *NodeClaimNotFoundError; *ThrottlingError when the call is throttled.
func (c *Cloud) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.throttle("Get"); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.restoreLocked(ctx); err != nil {
		return nil, err
	}
	c.syncLocked(c.clock.Now())
	in := c.liveByProviderIDLocked(providerID)
	if in == nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("no instance %q", providerID))
	}
	return in.nodeClaim(), nil
}

// List returns the NodeClaim view of every live instance (but adopted unmanaged ones), sorted by provider ID, or
// *ThrottlingError when the call is throttled.
func (c *Cloud) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.throttle("List"); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.restoreLocked(ctx); err != nil {
		return nil, err
	}
	c.syncLocked(c.clock.Now())
	out := make([]*karpv1.NodeClaim, 0, len(c.live))
	for _, in := range c.live {
		if in.unmanaged {
			continue // not Karpenter's: its cloud provider does not list it
		}
		out = append(out, in.nodeClaim())
	}
	slices.SortFunc(out, func(a, b *karpv1.NodeClaim) int { return strings.Compare(a.Status.ProviderID, b.Status.ProviderID) })
	return out, nil
}

// GetInstanceTypes returns the catalog's instance types as the NodePool's EC2NodeClass shapes
// them (kubelet settings, AMI family, disks), with offerings in the cloud's zones — those of
// the NodeClass's resolved subnets when its status lists any — at the cloud's prices. Offerings
// the fault plan switches off are unavailable. A capacity pool that has run dry is not shown:
// as on EC2, that is learned from a launch that fails. It returns *NodeClassNotReadyError when
// the NodeClass is missing or unusable.
func (c *Cloud) GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	if nodePool == nil {
		return nil, errors.New("getting instance types: nil nodepool")
	}
	nc, err := c.nodeClass(ctx, nodePool.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	set, err := c.instanceTypes(nc)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	version, unavailable := c.availabilityVersion, maps.Clone(c.unavailable)
	c.mu.Unlock()
	its, _ := c.withReservedOfferings(nc, c.withAvailability(set, version, unavailable), nil)
	return its, nil
}

// IsDrifted reports how the claim's instance differs from its EC2NodeClass now, checking in
// this order:
//   - DriftReasonAMI: the image the NodeClass resolves to for the instance (its status images,
//     else its amiSelectorTerms) is not the one the instance booted;
//   - DriftReasonSubnet: subnetSelectorTerms changed since launch;
//   - DriftReasonSecurityGroup: securityGroupSelectorTerms changed since launch.
//
// It returns *NodeClaimNotFoundError when the instance is gone, *NodeClassNotReadyError when
// the NodeClass cannot be read, and *ThrottlingError when the call is throttled.
func (c *Cloud) IsDrifted(ctx context.Context, claim *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	if claim == nil {
		return "", errors.New("checking drift: nil nodeclaim")
	}
	if err := c.throttle("IsDrifted"); err != nil {
		return "", err
	}
	c.mu.Lock()
	if err := c.restoreLocked(ctx); err != nil {
		c.mu.Unlock()
		return "", err
	}
	c.syncLocked(c.clock.Now())
	var in *instance
	if claim.Status.ProviderID != "" {
		in = c.liveByProviderIDLocked(claim.Status.ProviderID)
	} else {
		in = c.byClaim[claim.Name]
	}
	var image, subnets, securityGroups string
	var labels map[string]string
	if in != nil {
		image, subnets, securityGroups, labels = in.imageID, in.subnetHash, in.securityGroupHash, in.labels
	}
	c.mu.Unlock()
	if in == nil {
		return "", cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("no instance for nodeclaim %q (provider id %q)", claim.Name, claim.Status.ProviderID))
	}

	ref := claim.Spec.NodeClassRef
	if ref == nil {
		ref = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: nodeClassKind, Name: labels[awsv1.LabelNodeClass]}
	}
	nc, err := c.nodeClass(ctx, ref)
	if err != nil {
		return "", err
	}
	switch {
	case imageID(nc, labels) != image:
		return DriftReasonAMI, nil
	case subnetHash(nc) != subnets:
		return DriftReasonSubnet, nil
	case securityGroupHash(nc) != securityGroups:
		return DriftReasonSecurityGroup, nil
	}
	return "", nil
}

// SetOfferingAvailable switches offerings into (false) or out of (true) insufficient
// capacity, at run time. Empty arguments match any value: SetOfferingAvailable("",
// "us-east-1a", "", false) is an outage of the zone. An offering is unavailable while any
// switched-off pattern matches it; switching a pattern back on clears that pattern only.
func (c *Cloud) SetOfferingAvailable(instanceType, zone, capacityType string, available bool) {
	id := cloudprovider.OfferingID{InstanceType: instanceType, Zone: zone, CapacityType: capacityType}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unavailable[id] == !available {
		return
	}
	if available {
		delete(c.unavailable, id)
	} else {
		c.unavailable[id] = true
	}
	c.availabilityVersion++
}

// SetCapacity sets how many instances of the matching offerings can run at once, at run time;
// empty arguments match any value, as in CapacityLimit, and a negative count means unlimited.
// It takes precedence over earlier limits of the same pattern. Instances already running are
// not terminated when a pool shrinks below them; launches fail until enough terminate.
func (c *Cloud) SetCapacity(instanceType, zone, capacityType string, count int) {
	l := CapacityLimit{InstanceType: instanceType, Zone: zone, CapacityType: capacityType, Count: count}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limits = slices.DeleteFunc(c.limits, func(o CapacityLimit) bool {
		return o.InstanceType == l.InstanceType && o.Zone == l.Zone && o.CapacityType == l.CapacityType
	})
	c.limits = append(c.limits, l)
}

// hasCapacityLocked reports whether the offering's pool can take one more instance.
func (c *Cloud) hasCapacityLocked(id cloudprovider.OfferingID) bool {
	if id.ReservationID != "" {
		r, ok := c.reservation(id.ReservationID)
		now := c.clock.Now()
		return ok && c.freeSlotsLocked(r) > 0 && !r.expiringAt(now)
	}
	limit, best := -1, -1
	for _, l := range c.limits {
		if s := l.specificity(); l.matches(id) && s >= best {
			limit, best = l.Count, s
		}
	}
	return limit < 0 || c.used[id] < limit
}

// Interruption is a spot interruption notice: the instance will be terminated at
// TerminationTime.
type Interruption struct {
	// ProviderID and InstanceID name the instance.
	ProviderID, InstanceID string
	// NodeClaimName is the NodeClaim the instance was launched for.
	NodeClaimName string
	// NoticeTime is when the notice was given.
	NoticeTime time.Time
	// TerminationTime is when the instance will be terminated.
	TerminationTime time.Time
}

// Interrupt gives the live spot instance with the provider ID an interruption notice now; it
// is terminated when the notice (Options.InterruptionNotice) runs out. Interrupting an instance
// whose notice was already given changes nothing. It returns *NodeClaimNotFoundError when there
// is no such live instance, and an error when the instance is not spot.
func (c *Cloud) Interrupt(providerID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	c.syncLocked(now)
	in := c.liveByProviderIDLocked(providerID)
	if in == nil {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("no instance %q", providerID))
	}
	if in.capacityType != karpv1.CapacityTypeSpot {
		return fmt.Errorf("interrupting %s: instance is %s, not spot", providerID, in.capacityType)
	}
	if !in.interruptAt.IsZero() && !in.interruptAt.After(now) {
		return nil
	}
	in.interruptAt = now
	c.scheduleLocked(now)
	return nil
}

// Interruptions returns the notices of live instances whose interruption has been announced
// and not yet carried out, by termination time then provider ID. Polling it is how a
// simulation's interruption controller learns of them.
func (c *Cloud) Interruptions() []Interruption {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	c.syncLocked(now)
	var out []Interruption
	for _, in := range c.live {
		if in.interruptAt.IsZero() || in.interruptAt.After(now) {
			continue
		}
		out = append(out, Interruption{
			ProviderID:      in.providerID,
			InstanceID:      in.id,
			NodeClaimName:   in.claimName,
			NoticeTime:      in.interruptAt,
			TerminationTime: in.interruptAt.Add(c.notice),
		})
	}
	slices.SortFunc(out, func(a, b Interruption) int {
		if d := a.TerminationTime.Compare(b.TerminationTime); d != 0 {
			return d
		}
		return strings.Compare(a.ProviderID, b.ProviderID)
	})
	return out
}

// Instances returns a snapshot of every instance launched, terminated ones included, in launch
// order.
func (c *Cloud) Instances() []Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	c.syncLocked(now)
	out := make([]Instance, len(c.history))
	for i, in := range c.history {
		out[i] = in.snapshot(now, c.nodeFailure())
	}
	return out
}

// Cost returns the $/hour of the live instances, pending ones included (a launched instance is
// billed from its launch).
func (c *Cloud) Cost() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.syncLocked(c.clock.Now())
	ids := slices.Sorted(maps.Keys(c.live)) // sum in a fixed order: float addition is not associative
	total := 0.0
	for _, id := range ids {
		total += c.live[id].price
	}
	return total
}

// Spend returns the dollars spent so far: every instance's price for the time from its launch
// to its termination, or to now while it lives.
func (c *Cloud) Spend() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	c.syncLocked(now)
	total := 0.0
	for _, in := range c.history {
		end := now
		if in.terminated() {
			end = in.terminationTime
		}
		total += spend(in.launchTime, end, in.price, in.onDemandSince, in.reservedPrice)
	}
	return total
}

// nodeFailure is the condition the fault plan's failed nodes report.
func (c *Cloud) nodeFailure() NodeCondition {
	if c.faults.NodeFailure.Type == "" {
		return defaultNodeFailure
	}
	return c.faults.NodeFailure
}

// liveByProviderIDLocked returns the live instance with the provider ID, or nil.
func (c *Cloud) liveByProviderIDLocked(providerID string) *instance {
	_, id, err := ParseProviderID(providerID)
	if err != nil {
		return nil
	}
	in := c.live[id]
	if in == nil || in.providerID != providerID {
		return nil
	}
	return in
}

// terminateLocked terminates a live instance at the given time.
func (c *Cloud) terminateLocked(in *instance, at time.Time, reason string) {
	in.terminationTime, in.terminationReason = at, reason
	c.dirty = true
	delete(c.live, in.id)
	if c.byClaim[in.claimName] == in {
		delete(c.byClaim, in.claimName)
	}
	if id := in.offering(); c.used[id] > 1 {
		c.used[id]--
	} else {
		delete(c.used, id)
	}
}

// endReservationLocked turns an instance whose On-Demand Capacity Reservation has ended into
// the on-demand instance EC2 goes on running: it leaves the reservation (its slot is no longer
// counted), its capacity type is on-demand, without the reservation's labels, as the AWS
// provider reads such an instance, and it is billed at the on-demand price from the
// reservation's end.
func (c *Cloud) endReservationLocked(in *instance) {
	if id := in.offering(); c.used[id] > 1 {
		c.used[id]--
	} else {
		delete(c.used, id)
	}
	in.onDemandSince, in.reservedPrice = in.reservationEnd, in.price
	if p, ok := c.prices.Price(in.instanceType, in.zone, karpv1.CapacityTypeOnDemand); ok {
		in.price = p
	}
	in.capacityType = karpv1.CapacityTypeOnDemand
	in.labels = maps.Clone(in.labels)
	in.labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeOnDemand
	for _, k := range []string{awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType, awsv1.LabelCapacityReservationInterruptible} {
		delete(in.labels, k)
	}
	c.used[in.offering()]++
	c.dirty = true
}

// scheduleLocked makes sure sync looks at the cloud again at t.
func (c *Cloud) scheduleLocked(t time.Time) {
	if c.nextEvent.IsZero() || t.Before(c.nextEvent) {
		c.nextEvent = t
	}
}

// syncLocked applies what the passing of time has done by now: interruption notices whose
// time has come, terminations whose notice has run out, instances lost out of band, and
// reservations that ended (a Capacity Block's instances terminated, an On-Demand Capacity
// Reservation's turned on-demand).
// Pending instances need nothing: their state is read from the clock.
func (c *Cloud) syncLocked(now time.Time) {
	if c.nextEvent.IsZero() || now.Before(c.nextEvent) {
		return
	}
	var next time.Time
	later := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, in := range c.live {
		if in.interruptAt.IsZero() && in.lossAt.IsZero() && in.reservationEnd.IsZero() {
			continue
		}
		if !in.reservationEnd.IsZero() && !in.inCapacityBlock() && in.onDemandSince.IsZero() {
			if now.Before(in.reservationEnd) {
				later(in.reservationEnd)
			} else {
				c.endReservationLocked(in)
			}
		}
		// Whichever ends the instance first: the interruption's deadline or its loss.
		end, reason := time.Time{}, ""
		if !in.interruptAt.IsZero() {
			end, reason = in.interruptAt.Add(c.notice), TerminationReasonInterrupted
		}
		if !in.lossAt.IsZero() && (end.IsZero() || in.lossAt.Before(end)) {
			end, reason = in.lossAt, TerminationReasonLost
		}
		if !in.reservationEnd.IsZero() && in.inCapacityBlock() && (end.IsZero() || in.reservationEnd.Before(end)) {
			end, reason = in.reservationEnd, TerminationReasonCapacityBlockEnded
		}
		if end.IsZero() {
			continue
		}
		if !now.Before(end) {
			c.terminateLocked(in, end, reason)
			continue
		}
		later(end)
		if !in.interruptAt.IsZero() && now.Before(in.interruptAt) {
			later(in.interruptAt)
		}
	}
	c.nextEvent = next
}

// snapshotLive returns the live instances at now, in launch order, for the kubelet.
// It saves the state when time has terminated instances since the last save.
func (c *Cloud) snapshotLive(ctx context.Context) (time.Time, []Instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.restoreLocked(ctx); err != nil {
		return time.Time{}, nil, err
	}
	now := c.clock.Now()
	c.syncLocked(now)
	if err := c.persistLocked(ctx); err != nil {
		return time.Time{}, nil, err
	}
	live := slices.SortedFunc(maps.Values(c.live), func(a, b *instance) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]Instance, len(live))
	for i, in := range live {
		out[i] = in.snapshot(now, c.nodeFailure())
	}
	return now, out, nil
}

// formatResources prints a resource list in a fixed order.
func formatResources(rl corev1.ResourceList) string {
	names := slices.Sorted(maps.Keys(rl))
	parts := make([]string, len(names))
	for i, n := range names {
		q := rl[n]
		parts[i] = string(n) + "=" + q.String()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
