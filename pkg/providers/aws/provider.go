package aws

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	karpv1alpha1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	kevents "github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Condition reasons of the CreateErrors Create returns.
const (
	// ReasonNoCompatibleInstanceTypes: no instance type and offering meets the claim.
	ReasonNoCompatibleInstanceTypes = "NoCompatibleInstanceTypes"
	// ReasonInvalidRequirements: the claim's requirements do not parse.
	ReasonInvalidRequirements = "InvalidRequirements"
	// ReasonLaunchFailed: EC2 refused the launch for a reason other than capacity.
	ReasonLaunchFailed = "LaunchFailed"
	// ReasonLaunchTemplateFailed: the launch template could not be rendered or created.
	ReasonLaunchTemplateFailed = "LaunchTemplateFailed"
)

// maxFleetInstanceTypes caps the instance types of one fleet request (the cheapest are kept),
// as EC2 bounds a fleet's overrides.
const maxFleetInstanceTypes = 60

// spotRoleMissingCode is the fleet error of a spot launch in an account without the EC2 Spot
// service-linked role, whose caller may not create it.
const spotRoleMissingCode = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"

// insufficientCapacityCodes are the fleet error codes that mean an offering is out of capacity.
var insufficientCapacityCodes = map[string]bool{
	"InsufficientInstanceCapacity": true,
	"MaxSpotInstanceCountExceeded": true,
	"VcpuLimitExceeded":            true,
	"UnfulfillableCapacity":        true,
	"Unsupported":                  true,
	// A capacity reservation without a free slot, or being reclaimed (v1.15.2's
	// unfulfillable capacity codes).
	reservationCapacityExceededCode: true,
	reservationUnavailableCode:      true,
}

// subnetFullCode is the fleet error of a subnet without free addresses.
const subnetFullCode = "InsufficientFreeAddressesInSubnet"

// Provider is the AWS cloud provider. It implements cloudprovider.CloudProvider and is safe
// for concurrent use. Build it with New.
type Provider struct {
	clients         *Clients
	opts            Options
	types           typeCatalog
	refreshMu       sync.Mutex
	launchTemplates *launchTemplates
	// batch launches, reads and terminates single instances, merging concurrent calls.
	batch   *ec2Batchers
	started time.Time
	events  *kevents.Recorder
	// overlay, when set (SetOverlay), adjusts the instance types a NodePool's claims launch by.
	overlay cloudprovider.OverlayHolder
	// refreshed paces the NodeClass controller's reads of EC2 (Options.Refresh).
	refreshed refreshTimes
	// eksVersion caches the version EKS reports, under Options.EKSControlPlane.
	eksVersion cachedVersion
	// reservations are the capacity reservations' believed free slots (ReservedCapacity).
	reservations reservationCounts
	// placementGroups remembers the NodeClasses' placement group lookups.
	placementGroups placementGroups
	// launchChecks remembers the NodeClasses' launch checks (checkLaunch).
	launchChecks launchChecks
	// zonalShifts are the cluster's ARC zonal shifts (EnableZonalShift); nil without.
	zonalShifts *zonalShifts
}

// SetOverlay makes a NodePool's claims launch by the instance types o adjusts (package
// nodeoverlay): candidates ordered by the adjusted prices and, for a claim annotated
// karpenter.sh/price-overlay-applied, a fleet with the prioritized allocation strategy whose
// overrides carry those prices as priorities, as Karpenter's AWS provider does.
func (p *Provider) SetOverlay(o cloudprovider.Overlay) { p.overlay.SetOverlay(o) }

var _ cloudprovider.CloudProvider = (*Provider)(nil)

// New returns the provider, after validating the options. It calls no AWS API: instance types
// and prices are read on first use.
func New(clients *Clients, opts Options) (*Provider, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("invalid aws options: %w", err)
	}
	opts = opts.withDefaults()
	entries, err := catalog.Load()
	if err != nil {
		return nil, fmt.Errorf("loading the shipped instance-type catalog: %w", err)
	}
	// The batching windows are milliseconds of real time, whatever clock the rest runs on.
	p := &Provider{clients: clients, opts: opts, batch: newEC2Batchers(clients.EC2, clock.RealClock{}), started: opts.Clock.Now(),
		events: kevents.NewRecorder(opts.Recorder, opts.Clock)}
	p.types.entries = entries
	p.launchTemplates = &launchTemplates{provider: p, known: map[string]time.Time{}}
	return p, nil
}

// Name returns "aws".
func (p *Provider) Name() string { return Name }

// RepairPolicies returns Karpenter's AWS provider's (v1.15.2), under Options.RebootForRepair:
// cloudprovider.EC2RepairPolicies.
func (p *Provider) RepairPolicies() []cloudprovider.RepairPolicy {
	return cloudprovider.EC2RepairPolicies(p.opts.RebootForRepair)
}

// LegacyRepairPolicies returns the AWS provider's policies for the legacy node repair
// controller (--legacy-node-repair), as its WithLegacyRepairPolicies option does:
// cloudprovider.LegacyEC2RepairPolicies.
func (p *Provider) LegacyRepairPolicies() []cloudprovider.RepairPolicy {
	return cloudprovider.LegacyEC2RepairPolicies()
}

// Unavailable is the offering cache the provider marks when fleets run out of capacity.
func (p *Provider) Unavailable() *cloudprovider.UnavailableOfferings { return p.opts.Unavailable }

// GetInstanceTypes returns the instance types the NodePool's EC2NodeClass can launch; see
// cloudprovider.InstanceTypeProvider.
func (p *Provider) GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	nc, err := p.readyNodeClass(ctx, nodePool.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	return p.instanceTypes(ctx, nc)
}

// ProviderID is the provider ID of an instance: aws:///<zone>/<instance-id>.
func ProviderID(zone, instanceID string) string { return "aws:///" + zone + "/" + instanceID }

// instanceIDOf parses a provider ID.
func instanceIDOf(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, "aws:///")
	i := strings.LastIndex(rest, "/")
	if !ok || i < 0 || !strings.HasPrefix(rest[i+1:], "i-") {
		return "", fmt.Errorf("provider ID %q is not aws:///<zone>/<instance-id>", providerID)
	}
	return rest[i+1:], nil
}

// Create launches the claim's instance with one instant EC2 Fleet; see cloudprovider.InstanceLifecycle.
// Launches of the same shape (NodeClass, capacity type, instance types and zones, labels and
// taints) that arrive together share one fleet, as in Karpenter (see ec2Batchers).
//
// The fleet holds every compatible instance type (the cheapest maxFleetInstanceTypes) in every
// zone of the NodeClass's subnets, for the preferred capacity type: reserved when the claim
// allows it and one of the NodeClass's capacity reservations has a free slot (the ReservedCapacity
// gate; reservedCandidates), else spot when the claim allows it and a spot offering is
// available, else on-demand. Offerings the fleet reports out of capacity are marked in the
// shared cache; when every reserved or spot offering fails and the claim also allows another
// capacity type, a fleet of the next one is launched at once. A claim that allows reserved
// capacity only (as Karpenter's scheduler pins a claim it planned into a reservation, its
// DisableReservedCapacityFallback) fails with an InsufficientCapacityError instead.
func (p *Provider) Create(ctx context.Context, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	if claim == nil {
		return nil, errors.New("creating instance: nil nodeclaim")
	}
	nc, err := p.readyNodeClass(ctx, claim.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	its, err := p.instanceTypes(ctx, nc)
	if err != nil {
		return nil, err
	}
	reqs, err := scheduling.FromNodePoolRequirements(claim.Spec.Requirements...)
	if err != nil {
		return nil, cloudprovider.NewTerminalCreateError(err, ReasonInvalidRequirements, "invalid requirements")
	}
	nodePool := cloudprovider.ClaimNodePool(claim, reqs)
	fixed := map[string]string{corev1.LabelTopologyRegion: p.clients.Region(), awsv1.LabelNodeClass: nc.Name}
	if nodePool != "" {
		fixed[karpv1.NodePoolLabelKey] = nodePool
	}
	// The tenancy: default (shared hardware) unless the claim allows dedicated only, as
	// Karpenter's AWS provider picks it; it goes to the launch template's placement.
	maps.Copy(fixed, reqs.LaunchChoiceLabels())
	byName := make(map[string]*cloudprovider.InstanceType, len(its))
	for _, it := range its {
		byName[it.Name] = it
	}
	if its, byName, err = p.overlay.Apply(nodePool, its, byName); err != nil {
		return nil, err
	}
	cands := cloudprovider.LaunchCandidates(its, byName, cloudprovider.LaunchRequest{Requirements: reqs, Requests: claim.Spec.Resources.Requests, Fixed: fixed})
	if len(cands) == 0 {
		return nil, cloudprovider.NewTerminalCreateError(
			fmt.Errorf("no instance type in the subnets' zones of ec2nodeclass %s meets requirements %s and requests", nc.Name, reqs),
			ReasonNoCompatibleInstanceTypes, "no compatible instance type")
	}
	// In a partition placement group: one partition, the one the claim's requirements target,
	// or none, for EC2 to pick.
	cands, partition := targetPartition(cands, reqs)
	var unavailable []cloudprovider.OfferingID
	byCapacityType := map[string][]cloudprovider.LaunchCandidate{}
	for _, c := range cands {
		if !c.Offering.Available {
			unavailable = append(unavailable, c.ID())
			continue
		}
		byCapacityType[c.Offering.CapacityType] = append(byCapacityType[c.Offering.CapacityType], c)
	}
	var tried []cloudprovider.OfferingID
	var lastErr error
	for _, ct := range []string{karpv1.CapacityTypeReserved, karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand} {
		cs := byCapacityType[ct]
		if ct == karpv1.CapacityTypeReserved {
			cs = reservedCandidates(cs)
		}
		if len(cs) == 0 {
			continue
		}
		launched, ice, err := p.launch(ctx, claim, nc, nodePool, fixed, ct, partition, cs)
		if err != nil {
			return nil, err
		}
		if launched != nil {
			return launched, nil
		}
		tried = append(tried, ice...)
		lastErr = fmt.Errorf("%s fleet: every offering is out of capacity", ct)
	}
	if lastErr == nil {
		lastErr = errors.New("every compatible offering is marked out of capacity")
	}
	return nil, cloudprovider.NewInsufficientCapacityError(lastErr, append(tried, unavailable...)...)
}

// launch creates one instant fleet of the capacity type from the candidates. It returns the
// launched claim, or the offerings that ran out of capacity when none launched, or an error.
// Reserved candidates (one reservation per instance type and zone, of one kind:
// reservedCandidates) get a launch template each per reservation, targeting it. A partition
// other than 0 is the partition of the NodeClass's partition placement group the templates
// launch into (targetPartition).
func (p *Provider) launch(ctx context.Context, claim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass, nodePool string, fixed map[string]string,
	capacityType string, partition int32, cands []cloudprovider.LaunchCandidate) (*karpv1.NodeClaim, []cloudprovider.OfferingID, error) {
	// The cheapest types, every zone of each.
	fleetTypes := map[string]bool{}
	for _, c := range cands {
		if len(fleetTypes) < maxFleetInstanceTypes {
			fleetTypes[c.InstanceType.Name] = true
		}
	}
	subnetByZone := map[string]string{}
	for _, s := range nc.Status.Subnets { // sorted by free addresses: the first of a zone wins
		if _, ok := subnetByZone[s.Zone]; !ok && !p.opts.Unavailable.IsSubnetUnavailable(s.ID) {
			subnetByZone[s.Zone] = s.ID
		}
	}
	params := launchParams{labels: bootstrapLabels(claim.Labels, nodePool), taints: registrationTaints(claim), nodePool: nodePool, capacityType: capacityType,
		tenancy: fixed[awsv1.LabelInstanceTenancy]}
	// The placement group the NodeClass resolved to, as last found (launchtemplate.go and
	// instance.go of the AWS provider v1.15.2 read it the same way, ignoring a failed lookup
	// that keeps the last group found): the template places the instance in it, and in the
	// partition the claim targets, if any; EC2 picks the partition of a claim that does not.
	pg, _ := p.placementGroup(ctx, nc)
	if pg != nil {
		params.placementGroupID, params.partition = pg.ID, partition
	}
	family := cloudprovider.OptionsFromNodeClass(nc).AMIFamily
	if family == "" {
		family = awsv1.AMIFamilyAL2023
	}
	// Pods that request Elastic Fabric Adapters get the type's EFA interfaces attached, as
	// Karpenter attaches them; a NodeClass's networkInterfaces replace them, as in Karpenter
	// (its efa-only interfaces are then the types' EFA capacity, see compatibleEntry).
	efaRequest := claim.Spec.Resources.Requests[cloudprovider.ResourceEFA]
	wantsEFA := !efaRequest.IsZero() && len(nc.Spec.NetworkInterfaces) == 0
	// One launch template per (image, pod limit, EFA interfaces, kubelet configuration): with
	// the NodeClassCEL gate the configuration's expressions are evaluated per instance type, so
	// types whose values differ get templates of their own, as in Karpenter's provider.
	type group struct {
		template  string
		overrides []ec2types.FleetLaunchTemplateOverridesRequest
	}
	groups := map[string]*group{}
	var order []string
	byOverride := map[[2]string]cloudprovider.LaunchCandidate{}
	for _, c := range cands {
		if !fleetTypes[c.InstanceType.Name] {
			continue
		}
		subnet, ok := subnetByZone[c.Offering.Zone]
		if !ok {
			continue
		}
		imageID := imageFor(nc, c.InstanceType.Labels)
		if imageID == "" {
			continue
		}
		pods := c.InstanceType.Capacity.Pods().Value()
		efa := int64(0)
		if wantsEFA {
			q := c.InstanceType.Capacity[cloudprovider.ResourceEFA]
			efa = q.Value()
		}
		kubelet, err := p.resolvedKubelet(nc, c.InstanceType.Name)
		if err != nil {
			return nil, nil, cloudprovider.NewTerminalCreateError(err, ReasonLaunchTemplateFailed, "evaluating the kubelet expressions failed")
		}
		kubeletKey, err := json.Marshal(kubelet)
		if err != nil {
			return nil, nil, fmt.Errorf("encoding the kubelet configuration: %w", err)
		}
		key := fmt.Sprintf("%s/%d/%d/%s/%s", imageID, pods, efa, kubeletKey, c.Offering.ReservationID)
		g := groups[key]
		if g == nil {
			s, err := p.launchTemplates.settings(ctx, nc, kubelet, family, imageID, pods, params)
			if cloudprovider.IsNodeClassNotReadyError(err) {
				return nil, nil, err // the launch waits, as for any NodeClass not ready
			}
			if err != nil {
				return nil, nil, cloudprovider.NewTerminalCreateError(err, ReasonLaunchTemplateFailed, "rendering the launch template failed")
			}
			s.EFAInterfaces = int(efa)
			// As the AWS provider v1.15.2's launch templates with the ReservedCapacity gate
			// (LaunchModeTargeted): a reserved launch targets its reservation only, others
			// keep out of open reservations.
			if o := c.Offering; o.Reserved() {
				s.CapacityReservationPreference, s.CapacityReservationID, s.MarketType = string(capacityReservationsOnly), o.ReservationID, reservationMarketType(o)
			} else if p.opts.ReservedCapacity {
				s.CapacityReservationPreference = string(ec2types.CapacityReservationPreferenceNone)
			}
			name, err := p.launchTemplates.ensure(ctx, s)
			if err != nil {
				return nil, nil, cloudprovider.NewCreateError(err, ReasonLaunchTemplateFailed, "creating the launch template failed")
			}
			g = &group{template: name}
			groups[key] = g
			order = append(order, key)
		}
		g.overrides = append(g.overrides, ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType: ec2types.InstanceType(c.InstanceType.Name), SubnetId: aws.String(subnet), AvailabilityZone: aws.String(c.Offering.Zone),
		})
		byOverride[[2]string{c.InstanceType.Name, c.Offering.Zone}] = c
	}
	if len(groups) == 0 {
		return nil, nil, cloudprovider.NewTerminalCreateError(
			fmt.Errorf("ec2nodeclass %s has no image or subnet for the compatible instance types", nc.Name), ReasonNoCompatibleInstanceTypes, "no image or subnet for the compatible instance types")
	}
	targetType := ec2types.DefaultTargetCapacityType(capacityType)
	reserved := cands[0].Offering // of the kind every reserved candidate shares
	if capacityType == karpv1.CapacityTypeReserved {
		targetType = reservedFleetCapacityType(reserved)
	}
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: targetType,
		},
		TagSpecifications: []ec2types.TagSpecification{},
		// spec.context: the reserved capacity (an Outpost, a placement) launches go to.
		Context: nc.Spec.Context,
	}
	// A claim priced by NodeOverlays launches by those prices, not EC2's: each override's
	// priority is its adjusted price (lower is preferred), as in Karpenter's AWS provider.
	overlaid := claim.Annotations[karpv1alpha1.PriceOverlayAppliedAnnotationKey] == "true"
	switch {
	case capacityType == karpv1.CapacityTypeSpot && overlaid:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyCapacityOptimizedPrioritized}
	case capacityType == karpv1.CapacityTypeSpot:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	case capacityType == karpv1.CapacityTypeReserved && reserved.ReservationInterruptible:
		in.ReservedCapacityOptions = &ec2types.ReservedCapacityOptionsRequest{
			ReservationTypes: []ec2types.FleetReservationType{ec2types.FleetReservationTypeInterruptibleCapacityReservation}}
	case capacityType == karpv1.CapacityTypeReserved && reserved.ReservationType == string(awsv1.CapacityReservationTypeCapacityBlock):
		// A Capacity Block fleet takes no allocation options, as in v1.15.2.
	case overlaid:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyPrioritized}
	default:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	if overlaid {
		for _, g := range groups {
			for i := range g.overrides {
				o := &g.overrides[i]
				c := byOverride[[2]string{string(o.InstanceType), aws.ToString(o.AvailabilityZone)}]
				o.Priority = aws.Float64(c.Offering.Price)
			}
		}
	}
	for _, key := range order {
		g := groups[key]
		in.LaunchTemplateConfigs = append(in.LaunchTemplateConfigs, ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(g.template), Version: aws.String("$Latest")},
			Overrides:                   g.overrides,
		})
	}
	tags := p.instanceTags(nc, nodePool)
	for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet} {
		in.TagSpecifications = append(in.TagSpecifications, ec2types.TagSpecification{ResourceType: rt, Tags: ec2Tags(tags)})
	}
	out, err := p.batch.CreateFleet(ctx, in)
	if err != nil {
		if errorCode(err) == "InvalidLaunchTemplateName.NotFoundException" {
			p.launchTemplates.forget()
		}
		return nil, nil, cloudprovider.NewCreateError(fmt.Errorf("creating fleet: %w", err), ReasonLaunchFailed, "EC2 refused the launch")
	}
	// Each offering the fleet failed, including those passed over before the one that launched.
	recordLaunchFailures(nc, capacityType, out.Errors)
	for _, inst := range out.Instances {
		if len(inst.InstanceIds) == 0 || inst.LaunchTemplateAndOverrides == nil || inst.LaunchTemplateAndOverrides.Overrides == nil {
			continue
		}
		o := inst.LaunchTemplateAndOverrides.Overrides
		c, ok := byOverride[[2]string{string(o.InstanceType), aws.ToString(o.AvailabilityZone)}]
		if !ok {
			return nil, nil, fmt.Errorf("fleet launched %s in %s, which it was not asked for", o.InstanceType, aws.ToString(o.AvailabilityZone))
		}
		if c.Offering.Reserved() {
			p.reservations.launched(c.Offering.ReservationID)
		}
		launched := launchedClaim(claim, nc, fixed, c, inst.InstanceIds[0])
		if pg != nil {
			p.labelPlacement(ctx, launched, pg, partition)
		}
		return launched, nil, nil
	}
	var ice, full []cloudprovider.OfferingID
	var other []string
	subnetsRetry := false // a subnet ran out of addresses, and its zone has others
	for _, e := range out.Errors {
		code := aws.ToString(e.ErrorCode)
		if code == spotRoleMissingCode && capacityType == karpv1.CapacityTypeSpot {
			// As Karpenter: no spot at all for a while; the claim falls back to on-demand.
			p.opts.Unavailable.MarkCapacityTypeUnavailable(karpv1.CapacityTypeSpot)
			p.events.Publish(spotServiceLinkedRoleEvent(claim))
			ids := make([]cloudprovider.OfferingID, 0, len(cands))
			for _, c := range cands {
				ids = append(ids, c.ID())
			}
			return nil, ids, nil
		}
		var typ, zone string
		if e.LaunchTemplateAndOverrides != nil && e.LaunchTemplateAndOverrides.Overrides != nil {
			typ, zone = string(e.LaunchTemplateAndOverrides.Overrides.InstanceType), aws.ToString(e.LaunchTemplateAndOverrides.Overrides.AvailabilityZone)
		}
		// The offering, with its reservation when it was reserved.
		id := cloudprovider.OfferingID{InstanceType: typ, Zone: zone, CapacityType: capacityType}
		if c, ok := byOverride[[2]string{typ, zone}]; ok {
			id = c.ID()
		}
		if code == reservationCapacityExceededCode && id.ReservationID != "" {
			// Full, not unhealthy: as v1.15.2, the reservation is believed to have no slot
			// until its next resolution says otherwise, and is not marked unavailable.
			p.reservations.set(id.ReservationID, 0)
			full = append(full, id)
			continue
		}
		if code == subnetFullCode && e.LaunchTemplateAndOverrides != nil && e.LaunchTemplateAndOverrides.Overrides != nil {
			// The subnet, not the offering, is out: the zone's other subnets take the next
			// launch. Only a zone with no other subnet leaves the offering unavailable.
			subnet := aws.ToString(e.LaunchTemplateAndOverrides.Overrides.SubnetId)
			p.opts.Unavailable.MarkSubnetUnavailable(subnet)
			retry := false
			for _, s := range nc.Status.Subnets {
				retry = retry || s.Zone == zone && s.ID != subnet && !p.opts.Unavailable.IsSubnetUnavailable(s.ID)
			}
			if !retry && typ != "" {
				ice = append(ice, id)
			} else {
				subnetsRetry = true
			}
			continue
		}
		if pg != nil && isSpreadLimit(e) {
			// A full spread group's zone is no shortage of the offering: EC2 has the capacity
			// outside the group, so the offering is not marked unavailable for every NodeClass.
			// (The AWS provider v1.15.2 marks the zone's types unavailable for this group only,
			// a scope the shared cache has not: pkg/providers/instance/instance.go,
			// updateUnavailableOfferingsCache.) The fleet's other zones take the launch.
			other = append(other, fmt.Sprintf("%s: %s", code, aws.ToString(e.ErrorMessage)))
			continue
		}
		if insufficientCapacityCodes[code] && typ != "" {
			ice = append(ice, id)
			continue
		}
		other = append(other, fmt.Sprintf("%s: %s", code, aws.ToString(e.ErrorMessage)))
	}
	if len(ice) > 0 {
		p.opts.Unavailable.MarkUnavailable(ice...)
	}
	ice = append(ice, full...)
	if subnetsRetry && len(other) == 0 {
		return nil, nil, cloudprovider.NewCreateError(errors.New("creating fleet: a subnet ran out of free addresses; retrying in the zone's other subnets"),
			subnetFullCode, "There are not enough free IP addresses to launch an instance in this subnet")
	}
	if len(other) > 0 && len(ice) == 0 {
		slices.Sort(other)
		other = slices.Compact(other)
		return nil, nil, cloudprovider.NewCreateError(fmt.Errorf("creating fleet: %s", strings.Join(other, "; ")), ReasonLaunchFailed, "EC2 refused the launch")
	}
	return nil, ice, nil
}

// forget drops the remembered templates, so the next launch recreates any that were deleted.
func (l *launchTemplates) forget() {
	l.mu.Lock()
	clear(l.known)
	l.mu.Unlock()
}

// imageFor is the NodeClass's image for an instance type's labels (its architecture).
func imageFor(nc *awsv1.EC2NodeClass, labels map[string]string) string {
	for _, ami := range nc.Status.AMIs {
		reqs, err := scheduling.FromNodeSelectorRequirements(ami.Requirements...)
		if err == nil && reqs.Matches(labels) == nil {
			return ami.ID
		}
	}
	return ""
}

// registrationTaints are the taints the kubelet registers the node with: the claim's taints and
// startup taints, and karpenter.sh/unregistered:NoExecute, which the NodeClaim lifecycle lifts
// when it registers the node, as Karpenter's user data does, so no pod lands on a node
// Karpenter has not taken over yet.
func registrationTaints(claim *karpv1.NodeClaim) []corev1.Taint {
	taints := append(slices.Clone(claim.Spec.Taints), claim.Spec.StartupTaints...)
	unregistered := corev1.Taint{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
	if !slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.MatchTaint(&unregistered) }) {
		taints = append(taints, unregistered)
	}
	return taints
}

// bootstrapLabels are the claim labels a kubelet may register with: not the instance's own
// facts (which differ per type of the fleet and are synced at registration) nor labels in the
// kubernetes.io and k8s.io namespaces the node restriction admission refuses.
func bootstrapLabels(labels map[string]string, nodePool string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		domain, _, ok := strings.Cut(k, "/")
		if ok && (domain == "kubernetes.io" || domain == "k8s.io" || strings.HasSuffix(domain, ".kubernetes.io") || strings.HasSuffix(domain, ".k8s.io")) &&
			domain != "node.kubernetes.io" && !strings.HasSuffix(domain, ".node.kubernetes.io") && !strings.HasSuffix(domain, ".kubelet.kubernetes.io") {
			continue
		}
		if scheduling.IsWellKnownLabel(k) && k != karpv1.NodePoolLabelKey {
			continue
		}
		out[k] = v
	}
	if nodePool != "" {
		out[karpv1.NodePoolLabelKey] = nodePool
	}
	return out
}

// instanceTags are the tags of a claim's instance, volumes and fleet. As in Karpenter, none
// names the claim, so that the fleet requests of like claims are identical and merge: the
// instance gets its karpenter.sh/nodeclaim tag once its node registers (InstanceTagger). As
// Karpenter's GetTags, karpenter.sh/nodepool is there even when empty (a claim of no NodePool,
// the launch check), as its IAM policy's conditions require the key.
func (p *Provider) instanceTags(nc *awsv1.EC2NodeClass, nodePool string) map[string]string {
	own := map[string]string{p.clusterTag(): "owned", TagNodeClass: nc.Name, TagEKSClusterName: p.opts.ClusterName, TagNodePool: nodePool}
	return mergeTags(nc.Spec.Tags, own)
}

// launchedClaim is the claim with the status and labels of its new instance: the instance
// type's and offering's, and the fixed ones every launch for the claim carries.
func launchedClaim(claim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass, fixed map[string]string, c cloudprovider.LaunchCandidate, instanceID string) *karpv1.NodeClaim {
	out := claim.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[awsv1.AnnotationEC2NodeClassHash] = NodeClassHash(nc)
	out.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = NodeClassHashVersion
	maps.Copy(out.Labels, c.InstanceType.NodeLabels(c.Offering))
	maps.Copy(out.Labels, fixed)
	out.Status.ProviderID = ProviderID(c.Offering.Zone, instanceID)
	out.Status.ImageID = imageFor(nc, c.InstanceType.Labels)
	out.Status.Capacity = c.InstanceType.Capacity.DeepCopy()
	out.Status.Allocatable = c.InstanceType.Allocatable().DeepCopy()
	return out
}

// instance is what the provider reads back of an EC2 instance.
type instance struct {
	ec2types.Instance
}

func (i instance) id() string     { return aws.ToString(i.InstanceId) }
func (i instance) zone() string   { return aws.ToString(i.Placement.AvailabilityZone) }
func (i instance) zoneID() string { return aws.ToString(i.Placement.AvailabilityZoneId) }
func (i instance) state() string  { return string(i.State.Name) }
func (i instance) gone() bool {
	s := i.State.Name
	return s == ec2types.InstanceStateNameShuttingDown || s == ec2types.InstanceStateNameTerminated
}

// describe reads the instances the filters match.
func (p *Provider) describe(ctx context.Context, in *ec2.DescribeInstancesInput) ([]instance, error) {
	var out []instance
	pages := ec2.NewDescribeInstancesPaginator(p.clients.EC2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, instancesOf(page.Reservations)...)
	}
	return out, nil
}

// instancesOf are the instances of the reservations.
func instancesOf(reservations []ec2types.Reservation) []instance {
	var out []instance
	for _, r := range reservations {
		for _, i := range r.Instances {
			out = append(out, instance{i})
		}
	}
	return out
}

// get reads one live instance by provider ID.
func (p *Provider) get(ctx context.Context, providerID string) (instance, error) {
	id, err := instanceIDOf(providerID)
	if err != nil {
		return instance{}, cloudprovider.NewNodeClaimNotFoundError(err)
	}
	out, err := p.batch.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	var found []instance
	if err == nil {
		found = instancesOf(out.Reservations)
	}
	if isNotFound(err) || err == nil && (len(found) == 0 || found[0].gone()) {
		return instance{}, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found or terminating", id))
	}
	if err != nil {
		return instance{}, fmt.Errorf("describing instance %s: %w", id, err)
	}
	return found[0], nil
}

// Get returns the NodeClaim view of the instance; see cloudprovider.InstanceGetter.
func (p *Provider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	i, err := p.get(ctx, providerID)
	if err != nil {
		return nil, err
	}
	return p.claimOf(i, p.instanceFamilies(ctx)), nil
}

// List returns every live instance this cluster's Karpenter launched, sorted by provider ID.
func (p *Provider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	found, err := p.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{TagNodePool}},
		{Name: aws.String("tag:" + p.clusterTag()), Values: []string{"owned"}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}},
	}})
	if err != nil {
		return nil, fmt.Errorf("listing instances: %w", err)
	}
	out := make([]*karpv1.NodeClaim, 0, len(found))
	families := p.instanceFamilies(ctx)
	for _, i := range found {
		out = append(out, p.claimOf(i, families))
	}
	slices.SortFunc(out, func(a, b *karpv1.NodeClaim) int { return cmp.Compare(a.Status.ProviderID, b.Status.ProviderID) })
	return out, nil
}

// instanceFamilies returns the AMI family of an instance's EC2NodeClass (named by its
// karpenter.k8s.aws/ec2nodeclass tag), reading each NodeClass once per call of the returned
// function's caller; "" (the default) when it cannot be read.
func (p *Provider) instanceFamilies(ctx context.Context) func(nodeClass string) string {
	seen := map[string]string{}
	return func(name string) string {
		if name == "" || p.opts.KubeClient == nil {
			return ""
		}
		family, ok := seen[name]
		if !ok {
			nc := &awsv1.EC2NodeClass{}
			if err := p.opts.KubeClient.Get(ctx, client.ObjectKey{Name: name}, nc); err == nil {
				family = cloudprovider.OptionsFromNodeClass(nc).AMIFamily
			}
			seen[name] = family
		}
		return family
	}
}

// claimOf is the NodeClaim view of an instance: its tags name the claim (once the tagger has
// tagged it), NodePool and NodeClass; its type's facts give labels, capacity and allocatable
// (with default settings but the AMI family of its NodeClass, familyOf: a Windows instance's
// labels say kubernetes.io/os windows and its windows-build, as the AWS provider v1.15.2's
// instanceToNodeClaim labels it from the NodeClass's instance types).
func (p *Provider) claimOf(i instance, familyOf func(nodeClass string) string) *karpv1.NodeClaim {
	tags := tagMap(i.Tags)
	offering := cloudprovider.Offering{Zone: i.zone(), ZoneID: i.zoneID(), CapacityType: karpv1.CapacityTypeOnDemand}
	if i.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		offering.CapacityType = karpv1.CapacityTypeSpot
	} else if o, ok := p.reservedInstanceOffering(i); ok {
		o.Zone, o.ZoneID = offering.Zone, offering.ZoneID
		offering = o
	}
	ct := offering.CapacityType
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: tags[TagNodeClaim], Labels: map[string]string{}, CreationTimestamp: metav1.NewTime(aws.ToTime(i.LaunchTime))},
	}
	if e, ok := p.entry(string(i.InstanceType)); ok {
		if it, err := cloudprovider.NewInstanceType(e, cloudprovider.InstanceTypeOptions{ReservedENIs: p.opts.ReservedENIs, AMIFamily: familyOf(tags[TagNodeClass])}); err == nil {
			maps.Copy(claim.Labels, it.NodeLabels(offering))
			claim.Status.Capacity = it.Capacity.DeepCopy()
			claim.Status.Allocatable = it.Allocatable().DeepCopy()
		}
	}
	claim.Labels[corev1.LabelInstanceTypeStable] = string(i.InstanceType)
	claim.Labels[corev1.LabelTopologyZone] = i.zone()
	claim.Labels[corev1.LabelTopologyRegion] = p.clients.Region()
	claim.Labels[karpv1.CapacityTypeLabelKey] = ct
	claim.Labels[awsv1.LabelInstanceTenancy] = awsv1.TenancyDefault
	if t := string(i.Placement.Tenancy); t != "" {
		claim.Labels[awsv1.LabelInstanceTenancy] = t
	}
	if v := tags[TagNodePool]; v != "" {
		claim.Labels[karpv1.NodePoolLabelKey] = v
	}
	if v := tags[TagNodeClass]; v != "" {
		claim.Labels[awsv1.LabelNodeClass] = v
		claim.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: v}
	}
	maps.Copy(claim.Labels, placementLabels(i.Placement))
	claim.Status.ProviderID = ProviderID(i.zone(), i.id())
	claim.Status.ImageID = aws.ToString(i.ImageId)
	return claim
}

// entry is the current facts of an instance type.
func (p *Provider) entry(name string) (catalog.Entry, bool) {
	p.types.mu.RLock()
	defer p.types.mu.RUnlock()
	i, ok := slices.BinarySearchFunc(p.types.entries, name, func(e catalog.Entry, n string) int { return strings.Compare(e.Name, n) })
	if !ok {
		return catalog.Lookup(name)
	}
	return p.types.entries[i], true
}

// Delete terminates the claim's instance; see cloudprovider.InstanceLifecycle. An instance already
// gone or terminating gives *NodeClaimNotFoundError. Every failed termination (the batched
// call failed, then the instance's own) counts in
// karpenter_cloudprovider_instance_termination_failures_total, as in Karpenter.
func (p *Provider) Delete(ctx context.Context, claim *karpv1.NodeClaim) error {
	if err := p.refuseInShiftedZone(claim, "termination"); err != nil {
		return err
	}
	i, err := p.get(ctx, claim.Status.ProviderID)
	if err != nil {
		// The instance is gone: its reservation's slot is free again, as v1.15.2's Delete
		// (MarkTerminated, once per instance).
		if id := reservationOfClaim(claim); id != "" && cloudprovider.IsNodeClaimNotFoundError(err) {
			if instanceID, perr := instanceIDOf(claim.Status.ProviderID); perr == nil {
				p.reservations.terminated(id, instanceID, p.opts.Clock.Now())
			}
		}
		return err
	}
	if _, err := p.batch.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{i.id()}}); err != nil {
		metrics.InstanceTerminationFailed(i.zone(), i.zoneID())
		if isNotFound(err) {
			return cloudprovider.NewNodeClaimNotFoundError(err)
		}
		return fmt.Errorf("terminating instance %s: %w", i.id(), err)
	}
	return nil
}

// Reboot reboots the claim's instance in place (ec2:RebootInstances), as the AWS provider
// v1.15.2's instance provider: EC2 has no idempotency token for it, so operationID only labels
// the log line; the reboot controller keeps a reboot from being issued twice. A gone instance
// is *NodeClaimNotFoundError, a missing permission (UnauthorizedOperation)
// *NodeRebootFailedError; see cloudprovider.InstanceRebooter.
func (p *Provider) Reboot(ctx context.Context, claim *karpv1.NodeClaim, operationID string) error {
	if err := p.refuseInShiftedZone(claim, "reboot"); err != nil {
		return err
	}
	i, err := p.get(ctx, claim.Status.ProviderID)
	if err != nil {
		return err
	}
	log.FromContext(ctx).V(1).Info("rebooting instance", "id", i.id(), "operation-id", operationID)
	if _, err := p.clients.EC2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{i.id()}}); err != nil {
		switch {
		case isNotFound(err):
			return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("rebooting instance %s: %w", i.id(), err))
		case errorCode(err) == "UnauthorizedOperation":
			return cloudprovider.NewNodeRebootFailedError(fmt.Errorf("rebooting instance %s: %w", i.id(), err))
		}
		return fmt.Errorf("rebooting instance %s: %w", i.id(), err)
	}
	return nil
}

// IsDrifted compares the claim with its NodeClass now: the hash of the NodeClass's static fields
// it was launched with (NodeClassHash), then its instance's image, subnet and security groups,
// and its placement group label, with what the NodeClass resolves to; see
// cloudprovider.DriftChecker.
func (p *Provider) IsDrifted(ctx context.Context, claim *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	i, err := p.get(ctx, claim.Status.ProviderID)
	if err != nil {
		return "", err
	}
	nc, err := p.readyNodeClass(ctx, claim.Spec.NodeClassRef)
	if err != nil {
		return "", err
	}
	if staticDrift(claim, nc) {
		return cloudprovider.DriftReasonNodeClass, nil
	}
	if !slices.ContainsFunc(nc.Status.AMIs, func(a awsv1.AMI) bool { return a.ID == aws.ToString(i.ImageId) }) {
		return cloudprovider.DriftReasonAMI, nil
	}
	if !slices.ContainsFunc(nc.Status.Subnets, func(s awsv1.Subnet) bool { return s.ID == aws.ToString(i.SubnetId) }) {
		return cloudprovider.DriftReasonSubnet, nil
	}
	var have, want []string
	for _, g := range i.SecurityGroups {
		have = append(have, aws.ToString(g.GroupId))
	}
	for _, g := range nc.Status.SecurityGroups {
		want = append(want, g.ID)
	}
	slices.Sort(have)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		return cloudprovider.DriftReasonSecurityGroup, nil
	}
	// As the AWS provider v1.15.2's isPlacementGroupDrifted (pkg/cloudprovider/drift.go): the
	// claim's placement group label differs from the group the NodeClass resolves to now (the
	// selector added, removed or pointing elsewhere).
	var wantGroup string
	if pg, _ := p.placementGroup(ctx, nc); pg != nil {
		wantGroup = pg.ID
	}
	if claim.Labels[awsv1.LabelPlacementGroupID] != wantGroup {
		return cloudprovider.DriftReasonPlacementGroup, nil
	}
	return "", nil
}
