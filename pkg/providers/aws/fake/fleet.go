package fake

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// FleetRequest is one CreateFleet request as the fake parsed it, and its result.
type FleetRequest struct {
	// ID is the fleet ID (fleet-…); empty when the request was rejected outright.
	ID string
	// Time is when the request arrived.
	Time time.Time
	// Type is the fleet type (instant).
	Type string
	// Context and ClientToken are the request's.
	Context, ClientToken string
	// LaunchTemplateConfigs are the request's launch template configurations.
	LaunchTemplateConfigs []FleetLaunchTemplateConfig
	// TotalTargetCapacity, OnDemandTargetCapacity and SpotTargetCapacity are the
	// TargetCapacitySpecification's.
	TotalTargetCapacity, OnDemandTargetCapacity, SpotTargetCapacity int32
	// CapacityType is the DefaultTargetCapacityType: spot, on-demand, capacity-block or
	// reserved-capacity.
	CapacityType string
	// ReservationTypes are ReservedCapacityOptions.ReservationType's values
	// (interruptible-capacity-reservation).
	ReservationTypes []string
	// SpotAllocationStrategy and OnDemandAllocationStrategy are the options' strategies.
	SpotAllocationStrategy, OnDemandAllocationStrategy string
	// TagSpecifications are the request's tag specifications.
	TagSpecifications []TagSpecification
	// LaunchTemplateName is the name of the template the (first) instances launched from (or,
	// when none launched, of the first configuration's template, if it exists).
	LaunchTemplateName string
	// UserData is that template's decoded user data.
	UserData string
	// InstanceIDs are the instances launched.
	InstanceIDs []string
	// InstanceType, Zone and SubnetID are the pool the (first) instances launched in: a fleet
	// of several instances fills its pools in order, as far as each has room.
	InstanceType, Zone, SubnetID string
	// Errors are the errors the response reported.
	Errors []FleetError
}

// FleetLaunchTemplateConfig is a CreateFleet launch template configuration.
type FleetLaunchTemplateConfig struct {
	// LaunchTemplateID, LaunchTemplateName and Version are the LaunchTemplateSpecification's.
	LaunchTemplateID, LaunchTemplateName, Version string
	// Overrides are the configuration's overrides.
	Overrides []FleetOverride
}

// FleetOverride is a CreateFleet override.
type FleetOverride struct {
	// InstanceType, SubnetID, AvailabilityZone, ImageID and MaxPrice are the override's.
	InstanceType, SubnetID, AvailabilityZone, ImageID, MaxPrice string
	// Priority is the override's priority, when given.
	Priority *float64
}

// FleetError is an error of a CreateFleet response.
type FleetError struct {
	// Code and Message are the ErrorCode and ErrorMessage.
	Code, Message string
	// Lifecycle is spot or on-demand.
	Lifecycle string
	// InstanceType, SubnetID and Zone are the failing override's.
	InstanceType, SubnetID, Zone string
}

func (f *FleetRequest) clone() FleetRequest {
	c := *f
	c.LaunchTemplateConfigs = nil
	for _, cfg := range f.LaunchTemplateConfigs {
		cfg.Overrides = slices.Clone(cfg.Overrides)
		for i := range cfg.Overrides {
			cfg.Overrides[i].Priority = clonePtr(cfg.Overrides[i].Priority)
		}
		c.LaunchTemplateConfigs = append(c.LaunchTemplateConfigs, cfg)
	}
	c.TagSpecifications = cloneTagSpecs(f.TagSpecifications)
	c.InstanceIDs = slices.Clone(f.InstanceIDs)
	c.Errors = slices.Clone(f.Errors)
	c.ReservationTypes = slices.Clone(f.ReservationTypes)
	return c
}

// Fleets returns every CreateFleet request, in arrival order.
func (a *AWS) Fleets() []FleetRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]FleetRequest, len(a.fleets))
	for i, f := range a.fleets {
		out[i] = f.clone()
	}
	return out
}

type fleetResult struct {
	body any
}

type xmlLTSpec struct {
	LaunchTemplateID   string `xml:"launchTemplateId,omitempty"`
	LaunchTemplateName string `xml:"launchTemplateName,omitempty"`
	Version            string `xml:"version"`
}

type xmlFleetOverrides struct {
	InstanceType     string `xml:"instanceType,omitempty"`
	SubnetID         string `xml:"subnetId,omitempty"`
	AvailabilityZone string `xml:"availabilityZone,omitempty"`
	ImageID          string `xml:"imageId,omitempty"`
	MaxPrice         string `xml:"maxPrice,omitempty"`
	Priority         string `xml:"priority,omitempty"`
}

type xmlLTAndOverrides struct {
	LaunchTemplateSpecification xmlLTSpec         `xml:"launchTemplateSpecification"`
	Overrides                   xmlFleetOverrides `xml:"overrides"`
}

type xmlFleetInstance struct {
	LaunchTemplateAndOverrides xmlLTAndOverrides `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string            `xml:"lifecycle"`
	InstanceIDs                []string          `xml:"instanceIds>item"`
	InstanceType               string            `xml:"instanceType"`
	Platform                   string            `xml:"platform,omitempty"`
}

type xmlFleetError struct {
	LaunchTemplateAndOverrides xmlLTAndOverrides `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string            `xml:"lifecycle"`
	ErrorCode                  string            `xml:"errorCode"`
	ErrorMessage               string            `xml:"errorMessage"`
}

type xmlCreateFleet struct {
	FleetID   string             `xml:"fleetId"`
	Errors    []xmlFleetError    `xml:"errorSet>item"`
	Instances []xmlFleetInstance `xml:"fleetInstanceSet>item"`
}

// candidate is one (launch template config × override) of a fleet request.
type candidate struct {
	order    int
	config   FleetLaunchTemplateConfig
	lt       *LaunchTemplate
	override FleetOverride
	subnet   *Subnet
	imageID  string
	price    float64
	err      *FleetError
}

func (c *candidate) xml(version string) xmlLTAndOverrides {
	x := xmlLTAndOverrides{Overrides: xmlFleetOverrides{InstanceType: c.override.InstanceType, SubnetID: c.override.SubnetID,
		AvailabilityZone: c.override.AvailabilityZone, ImageID: c.override.ImageID, MaxPrice: c.override.MaxPrice}}
	if c.subnet != nil {
		x.Overrides.SubnetID, x.Overrides.AvailabilityZone = c.subnet.ID, c.subnet.Zone
	}
	if c.override.Priority != nil {
		x.Overrides.Priority = strconv.FormatFloat(*c.override.Priority, 'f', -1, 64)
	}
	if c.lt != nil {
		x.LaunchTemplateSpecification = xmlLTSpec{LaunchTemplateID: c.lt.ID, Version: version}
	} else {
		x.LaunchTemplateSpecification = xmlLTSpec{LaunchTemplateID: c.config.LaunchTemplateID, LaunchTemplateName: c.config.LaunchTemplateName, Version: version}
	}
	return x
}

var (
	spotStrategies     = []string{"lowest-price", "diversified", "capacity-optimized", "capacity-optimized-prioritized", "price-capacity-optimized"}
	onDemandStrategies = []string{"lowest-price", "prioritized"}
	fleetTagTypes      = []string{"instance", "volume", "fleet", "network-interface", "spot-instances-request"}
)

func (a *AWS) createFleet(q *queryCall) (any, error) {
	req := &FleetRequest{Type: q.get("Type"), Context: q.get("Context"), ClientToken: q.get("ClientToken"),
		CapacityType:           q.get("TargetCapacitySpecification.DefaultTargetCapacityType"),
		SpotAllocationStrategy: q.get("SpotOptions.AllocationStrategy"), OnDemandAllocationStrategy: q.get("OnDemandOptions.AllocationStrategy")}
	if req.Type == "" {
		req.Type = "maintain"
	}
	if req.Type != "instant" {
		return nil, badRequest("InvalidParameterValue", "Fleet type %q is not supported by the fake; only instant fleets are", req.Type)
	}
	if !hasPrefix(q, "TargetCapacitySpecification.") {
		return nil, badRequest("MissingParameter", "The request must contain the parameter TargetCapacitySpecification")
	}
	for _, f := range []struct {
		key string
		dst *int32
	}{{"TargetCapacitySpecification.TotalTargetCapacity", &req.TotalTargetCapacity}, {"TargetCapacitySpecification.OnDemandTargetCapacity", &req.OnDemandTargetCapacity},
		{"TargetCapacitySpecification.SpotTargetCapacity", &req.SpotTargetCapacity}} {
		v, err := q.int32(f.key)
		if err != nil {
			return nil, err
		}
		if v != nil {
			*f.dst = *v
		}
	}
	if req.TotalTargetCapacity < 1 {
		return nil, badRequest("InvalidTargetCapacitySpecification", "TotalTargetCapacity should be greater than 0")
	}
	if req.OnDemandTargetCapacity+req.SpotTargetCapacity > req.TotalTargetCapacity {
		return nil, badRequest("InvalidTargetCapacitySpecification", "The sum of OnDemandTargetCapacity and SpotTargetCapacity cannot exceed TotalTargetCapacity")
	}
	req.ReservationTypes = q.list("ReservedCapacityOptions.ReservationType")
	switch req.CapacityType {
	case "spot", "on-demand", "capacity-block", "reserved-capacity":
	case "":
		return nil, badRequest("MissingParameter", "The request must contain the parameter TargetCapacitySpecification.DefaultTargetCapacityType")
	default:
		return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter DefaultTargetCapacityType is invalid.", req.CapacityType)
	}
	if s := req.SpotAllocationStrategy; s != "" && !slices.Contains(spotStrategies, s) {
		return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter SpotOptions.AllocationStrategy is invalid.", s)
	}
	if s := req.OnDemandAllocationStrategy; s != "" && !slices.Contains(onDemandStrategies, s) {
		return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter OnDemandOptions.AllocationStrategy is invalid.", s)
	}
	var err error
	if req.TagSpecifications, err = q.tagSpecs("TagSpecification"); err != nil {
		return nil, err
	}
	for _, s := range req.TagSpecifications {
		if !slices.Contains(fleetTagTypes, s.ResourceType) {
			return nil, badRequest("InvalidParameterValue", "'%s' is not a valid taggable resource type for this operation.", s.ResourceType)
		}
	}
	nConfigs := q.count("LaunchTemplateConfigs")
	if nConfigs == 0 {
		return nil, badRequest("MissingParameter", "The request must contain the parameter LaunchTemplateConfigs")
	}
	total := 0
	for i := 1; i <= nConfigs; i++ {
		p := fmt.Sprintf("LaunchTemplateConfigs.%d.", i)
		cfg := FleetLaunchTemplateConfig{LaunchTemplateID: q.get(p + "LaunchTemplateSpecification.LaunchTemplateId"),
			LaunchTemplateName: q.get(p + "LaunchTemplateSpecification.LaunchTemplateName"), Version: q.get(p + "LaunchTemplateSpecification.Version")}
		switch {
		case cfg.LaunchTemplateID == "" && cfg.LaunchTemplateName == "":
			return nil, badRequest("MissingParameter", "The request must contain the parameter LaunchTemplateId or LaunchTemplateName")
		case cfg.LaunchTemplateID != "" && cfg.LaunchTemplateName != "":
			return nil, badRequest("InvalidParameterCombination", "Either LaunchTemplateId or LaunchTemplateName may be specified, not both.")
		}
		if cfg.Version == "" {
			return nil, badRequest("MissingParameter", "The request must contain the parameter LaunchTemplateSpecification.Version")
		}
		for j, n := 1, q.count(p+"Overrides"); j <= n; j++ {
			op := fmt.Sprintf("%sOverrides.%d.", p, j)
			o := FleetOverride{InstanceType: q.get(op + "InstanceType"), SubnetID: q.get(op + "SubnetId"), AvailabilityZone: q.get(op + "AvailabilityZone"),
				ImageID: q.get(op + "ImageId"), MaxPrice: q.get(op + "MaxPrice")}
			if o.Priority, err = q.float(op + "Priority"); err != nil {
				return nil, err
			}
			cfg.Overrides = append(cfg.Overrides, o)
		}
		if len(cfg.Overrides) == 0 {
			cfg.Overrides = []FleetOverride{{}}
		}
		total += len(cfg.Overrides)
		req.LaunchTemplateConfigs = append(req.LaunchTemplateConfigs, cfg)
	}
	if total > 300 {
		return nil, badRequest("InvalidFleetConfiguration", "The fleet request has %d launch specifications; the maximum is 300.", total)
	}
	dryRun, err := q.dryRun()
	if err != nil {
		return nil, err
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	if dryRun {
		return nil, a.dryRunFleetLocked(q, req)
	}
	if req.ClientToken != "" {
		if r, ok := a.fleetTokens[req.ClientToken]; ok {
			return r.body, nil
		}
	}
	req.Time = a.now()
	req.ID = a.hexIDLocked("fleet-", 8) + "-" + a.hexIDLocked("", 4) + "-" + a.hexIDLocked("", 4) + "-" + a.hexIDLocked("", 4) + "-" + a.hexIDLocked("", 12)
	a.fleets = append(a.fleets, req)
	fleetTags := map[string]string{}
	for _, s := range req.TagSpecifications {
		if s.ResourceType == "fleet" {
			maps.Copy(fleetTags, s.Tags)
		}
	}
	a.authorizeLocked(q.r, "ec2:CreateFleet", a.ec2ARN("fleet", req.ID), fleetTags, nil)
	if len(fleetTags) > 0 {
		a.authorizeLocked(q.r, "ec2:CreateTags", a.ec2ARN("fleet", req.ID), fleetTags, nil, "ec2:CreateAction", "CreateFleet")
	}

	lifecycle := fleetLifecycle(req.CapacityType)
	var cands []*candidate
	for _, cfg := range req.LaunchTemplateConfigs {
		for _, o := range cfg.Overrides {
			c := &candidate{order: len(cands), config: cfg, override: o}
			c.err = a.validateCandidateLocked(c, req)
			cands = append(cands, c)
		}
	}
	if first := cands[0]; first.lt != nil {
		req.LaunchTemplateName, req.UserData = first.lt.Name, first.lt.UserData
	}
	var valid []*candidate
	checked := map[string]bool{}
	for _, c := range cands {
		if c.lt != nil && !checked[c.lt.ID] {
			checked[c.lt.ID] = true
			a.authorizeLocked(q.r, "ec2:CreateFleet", a.ec2ARN("launch-template", c.lt.ID), nil, c.lt.Tags)
		}
		if c.err == nil {
			valid = append(valid, c)
		}
	}
	prioritized := (lifecycle == "on-demand" && req.OnDemandAllocationStrategy == "prioritized") ||
		(lifecycle == "spot" && req.SpotAllocationStrategy == "capacity-optimized-prioritized")
	sort.SliceStable(valid, func(i, j int) bool {
		ci, cj := valid[i], valid[j]
		if prioritized {
			if pi, pj := prio(ci), prio(cj); pi != pj {
				return pi < pj
			}
		}
		if ci.price != cj.price {
			return ci.price < cj.price
		}
		if pi, pj := prio(ci), prio(cj); pi != pj {
			return pi < pj
		}
		return ci.order < cj.order
	})
	resp := xmlCreateFleet{FleetID: req.ID}
	// The pools fill in order, each with as many of the instances still wanted as it has room
	// for; a pool short of room reports InsufficientInstanceCapacity.
	type fill struct {
		c           *candidate
		pool        pool
		n           int
		reservation *CapacityReservation
	}
	var fills []fill
	var iceErrs []*candidate
	wanted := int(req.TotalTargetCapacity)
	for _, c := range valid {
		if wanted == 0 {
			break
		}
		if lifecycle == "spot" && a.noSpotRole {
			c.err = &FleetError{Code: "AuthFailure.ServiceLinkedRoleCreationNotPermitted", Lifecycle: lifecycle,
				Message: "The provided credentials do not have permission to create the service-linked role for EC2 Spot Instances."}
			continue
		}
		// A launch into a capacity reservation takes the reservation's slots, not the pool's.
		r, rerr := a.reservationForLocked(c, req, wanted)
		if rerr != nil {
			c.err = rerr
			continue
		}
		if r != nil {
			fills = append(fills, fill{c: c, n: wanted, reservation: r})
			wanted = 0
			continue
		}
		p := pool{instanceType: c.override.InstanceType, zone: c.subnet.Zone, capacityType: lifecycle}
		n := a.poolRoomLocked(p, wanted)
		if n < wanted {
			c.err = &FleetError{Code: "InsufficientInstanceCapacity", Lifecycle: lifecycle,
				Message: fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity. You can currently get %s capacity by not specifying an Availability Zone in your request or choosing %s.",
					c.override.InstanceType, c.subnet.Zone, c.override.InstanceType, strings.Join(otherZones(a.opts.Zones, c.subnet.Zone), ", "))}
			iceErrs = append(iceErrs, c)
		}
		if n > 0 {
			fills = append(fills, fill{c: c, pool: p, n: n})
			wanted -= n
		}
	}
	// Errors: every invalid override, then the pools tried and found out of capacity.
	for _, c := range cands {
		if c.err != nil && !slices.Contains(iceErrs, c) {
			resp.Errors = append(resp.Errors, xmlFleetError{LaunchTemplateAndOverrides: c.xml(cfgVersion(c)), Lifecycle: lifecycle, ErrorCode: c.err.Code, ErrorMessage: c.err.Message})
		}
	}
	for _, c := range iceErrs {
		resp.Errors = append(resp.Errors, xmlFleetError{LaunchTemplateAndOverrides: c.xml(cfgVersion(c)), Lifecycle: lifecycle, ErrorCode: c.err.Code, ErrorMessage: c.err.Message})
	}
	for _, e := range resp.Errors {
		req.Errors = append(req.Errors, FleetError{Code: e.ErrorCode, Message: e.ErrorMessage, Lifecycle: e.Lifecycle,
			InstanceType: e.LaunchTemplateAndOverrides.Overrides.InstanceType, SubnetID: e.LaunchTemplateAndOverrides.Overrides.SubnetID, Zone: e.LaunchTemplateAndOverrides.Overrides.AvailabilityZone})
	}
	if len(fills) > 0 {
		first := fills[0].c
		req.LaunchTemplateName, req.UserData = first.lt.Name, first.lt.UserData
		req.InstanceType, req.Zone, req.SubnetID = first.override.InstanceType, first.subnet.Zone, first.subnet.ID
	}
	for _, f := range fills {
		fi := xmlFleetInstance{LaunchTemplateAndOverrides: f.c.xml(cfgVersion(f.c)), Lifecycle: lifecycle, InstanceType: f.c.override.InstanceType}
		reservation := a.hexIDLocked("r-", 17)
		for range f.n {
			inst := a.launchLocked(req, f.c, reservation)
			if r := f.reservation; r != nil {
				inst.CapacityReservationID, inst.Lifecycle = r.ID, lifecycleOf(r)
				r.AvailableInstanceCount--
			}
			a.authorizeLaunchLocked(q.r, "CreateFleet", req.TagSpecifications, f.c, inst, false)
			fi.InstanceIDs = append(fi.InstanceIDs, inst.ID)
			req.InstanceIDs = append(req.InstanceIDs, inst.ID)
		}
		if f.reservation != nil {
			resp.Instances = append(resp.Instances, fi)
			continue
		}
		if room, limited := a.poolCapacity[f.pool]; limited {
			a.poolCapacity[f.pool] = room - f.n
		}
		resp.Instances = append(resp.Instances, fi)
	}
	if req.ClientToken != "" {
		a.fleetTokens[req.ClientToken] = &fleetResult{body: resp}
	}
	return resp, nil
}

// dryRunFleetLocked answers a valid CreateFleet request with DryRun set, as EC2 does once the
// caller may make it (a denied caller got UnauthorizedOperation before): DryRunOperation, with
// no fleet, instance or token recorded. It records the permission checks of the request itself:
// ec2:CreateFleet on the fleet with its tags (and ec2:CreateTags for them) and on each launch
// template it names that exists, with the template's tags. The launch's own checks
// (ec2:RunInstances, authorizeLaunchLocked) are made when a fleet launches, which a dry run
// does not.
func (a *AWS) dryRunFleetLocked(q *queryCall, req *FleetRequest) error {
	fleetTags := map[string]string{}
	for _, s := range req.TagSpecifications {
		if s.ResourceType == "fleet" {
			maps.Copy(fleetTags, s.Tags)
		}
	}
	a.authorizeLocked(q.r, "ec2:CreateFleet", a.ec2ARN("fleet", "*"), fleetTags, nil)
	if len(fleetTags) > 0 {
		a.authorizeLocked(q.r, "ec2:CreateTags", a.ec2ARN("fleet", "*"), fleetTags, nil, "ec2:CreateAction", "CreateFleet")
	}
	checked := map[string]bool{}
	for _, cfg := range req.LaunchTemplateConfigs {
		lt := a.templateByID(cfg.LaunchTemplateID)
		if cfg.LaunchTemplateID == "" {
			lt = a.templateByName(cfg.LaunchTemplateName)
		}
		if lt != nil && !checked[lt.ID] {
			checked[lt.ID] = true
			a.authorizeLocked(q.r, "ec2:CreateFleet", a.ec2ARN("launch-template", lt.ID), nil, lt.Tags)
		}
	}
	return dryRunOperation()
}

// fleetLifecycle is the lifecycle a fleet reports of instances of its default target capacity
// type: spot, or on-demand for on-demand, capacity-block and reserved-capacity (instances
// launched into reservations are on-demand instances).
func fleetLifecycle(capacityType string) string {
	if capacityType == "spot" {
		return "spot"
	}
	return "on-demand"
}

func cfgVersion(c *candidate) string {
	if c.config.Version == "$Latest" || c.config.Version == "$Default" {
		return "1"
	}
	return c.config.Version
}

func prio(c *candidate) float64 {
	if c.override.Priority == nil {
		return 1e18
	}
	return *c.override.Priority
}

func otherZones(zones []string, zone string) []string {
	var out []string
	for _, z := range zones {
		if z != zone {
			out = append(out, z)
		}
	}
	return out
}

// validateCandidateLocked checks one override as EC2 does when launching it, filling in its
// template, subnet, image and price.
func (a *AWS) validateCandidateLocked(c *candidate, req *FleetRequest) *FleetError {
	fail := func(code, format string, args ...any) *FleetError {
		return &FleetError{Code: code, Message: fmt.Sprintf(format, args...), Lifecycle: req.CapacityType}
	}
	cfg := c.config
	if cfg.LaunchTemplateID != "" {
		if !ltIDPattern.MatchString(cfg.LaunchTemplateID) {
			return fail("InvalidLaunchTemplateId.Malformed", "The specified ID for the launch template (%s) is not valid.", cfg.LaunchTemplateID)
		}
		if c.lt = a.templateByID(cfg.LaunchTemplateID); c.lt == nil {
			return fail("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", cfg.LaunchTemplateID)
		}
	} else if c.lt = a.templateByName(cfg.LaunchTemplateName); c.lt == nil {
		return fail("InvalidLaunchTemplateName.NotFoundException", "LaunchTemplate %s does not exist", cfg.LaunchTemplateName)
	}
	switch cfg.Version {
	case "$Latest", "$Default", "1":
	default:
		return fail("InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version %s for the launch template %s.", cfg.Version, c.lt.ID)
	}
	lt := c.lt
	o := c.override
	if o.InstanceType == "" {
		o.InstanceType = lt.InstanceType
		c.override.InstanceType = lt.InstanceType
	}
	if o.InstanceType == "" {
		return fail("MissingParameter", "The request must contain the parameter InstanceType")
	}
	e, ok := a.entry(o.InstanceType)
	if !ok {
		return fail("InvalidParameterValue", "The instance type '%s' does not exist.", o.InstanceType)
	}
	switch {
	case o.SubnetID != "":
		if c.subnet = a.subnet(o.SubnetID); c.subnet == nil {
			return fail("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", o.SubnetID)
		}
		if o.AvailabilityZone != "" && o.AvailabilityZone != c.subnet.Zone {
			return fail("InvalidParameterValue", "The subnet %s is not in the Availability Zone %s.", o.SubnetID, o.AvailabilityZone)
		}
	default:
		for _, s := range a.subnets {
			if o.AvailabilityZone == "" || s.Zone == o.AvailabilityZone {
				c.subnet = s
				break
			}
		}
		if c.subnet == nil {
			return fail("InvalidParameterValue", "No default subnet for availability zone: '%s'.", o.AvailabilityZone)
		}
	}
	if !a.offeredLocked(o.InstanceType, c.subnet.Zone) {
		return fail("Unsupported", "Your requested instance type (%s) is not supported in your requested Availability Zone (%s). Please retry your request by not specifying an Availability Zone or choosing %s.",
			o.InstanceType, c.subnet.Zone, strings.Join(otherZones(a.opts.Zones, c.subnet.Zone), ", "))
	}
	if c.subnet.AvailableIPs < int(req.TotalTargetCapacity) {
		return fail("InsufficientFreeAddressesInSubnet", "There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", c.subnet.ID)
	}
	c.imageID = o.ImageID
	if c.imageID == "" {
		c.imageID = lt.ImageID
	}
	if c.imageID == "" {
		return fail("InvalidParameterValue", "Parameter 'amiIdList' cannot be empty.")
	}
	img := a.image(c.imageID)
	if img == nil {
		return fail("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", c.imageID)
	}
	if img.State != "available" {
		return fail("InvalidAMIID.Unavailable", "The image id '[%s]' is not available", c.imageID)
	}
	if want := ec2Arch(e.Arch); img.Architecture != want {
		return fail("InvalidParameterValue", "The architecture '%s' of the specified instance type does not match the architecture '%s' of the specified AMI. Specify an instance type and an AMI that have matching architectures, and try again. You can use 'describe-instance-types' or 'describe-images' to discover the architecture of the instance type or AMI.",
			want, img.Architecture)
	}
	if lt.InstanceProfile != "" && a.profileByRef(lt.InstanceProfile) == nil {
		param := "iamInstanceProfile.name"
		if strings.HasPrefix(lt.InstanceProfile, "arn:") {
			param = "iamInstanceProfile.arn"
		}
		return fail("InvalidParameterValue", "Value (%s) for parameter %s is invalid. Invalid IAM Instance Profile name", lt.InstanceProfile, param)
	}
	if lt.NestedVirtualization == "enabled" && !slices.Contains(a.processorFeatures[o.InstanceType], "nested-virtualization") {
		return fail("UnsupportedOperation", "The instance type %s does not support nested virtualization.", o.InstanceType)
	}
	if lt.NitroEnclaves != nil && *lt.NitroEnclaves && !a.nitroEnclaves[o.InstanceType] {
		return fail("UnsupportedOperation", "The instance type %s does not support Nitro Enclaves.", o.InstanceType)
	}
	if _, _, err := a.placementLocked(lt, o.InstanceType, c.subnet.Zone); err != nil {
		err.Lifecycle = req.CapacityType
		return err
	}
	for _, sg := range a.templateGroups(lt) {
		if a.securityGroup(sg) == nil {
			return fail("InvalidGroup.NotFound", "The security group '%s' does not exist", sg)
		}
	}
	if req.CapacityType == "spot" {
		if !spotSupported(e) {
			return fail("Unsupported", "The requested configuration is currently not supported. Please check the documentation for supported configurations.")
		}
		c.price = spotPrice(e, c.subnet.Zone)
		if o.MaxPrice != "" {
			if mp, err := strconv.ParseFloat(o.MaxPrice, 64); err == nil && mp < c.price {
				return fail("SpotMaxPriceTooLow", "Your Spot request price of %s is lower than the minimum required Spot request fulfillment price of %.6f.", o.MaxPrice, c.price)
			}
		}
	} else {
		c.price = e.OnDemandPrice
		if !e.HasPrice() {
			c.price = 1e9
		}
		if slices.ContainsFunc(req.TagSpecifications, func(s TagSpecification) bool { return s.ResourceType == "spot-instances-request" }) {
			return fail("InvalidParameterValue", "You cannot specify tags for Spot instances requests if there are no Spot instances requests being created by the request.")
		}
	}
	return nil
}

func (a *AWS) templateGroups(lt *LaunchTemplate) []string {
	groups := slices.Clone(lt.SecurityGroupIDs)
	for _, n := range lt.NetworkInterfaces {
		groups = append(groups, n.SecurityGroupIDs...)
	}
	return groups
}

// launchLocked starts one instance of a fleet's chosen pool.
func (a *AWS) launchLocked(req *FleetRequest, c *candidate, reservation string) *Instance {
	ip := a.nextIPLocked(c.subnet)
	c.subnet.AvailableIPs--
	inst := a.newInstanceLocked(req, c, a.hexIDLocked("i-", 17), ip)
	inst.FleetID, inst.reservationID = req.ID, reservation
	if req.CapacityType == "spot" {
		inst.SpotInstanceRequestID = a.hexIDLocked("sir-", 8)
	}
	a.instances = append(a.instances, inst)
	return inst
}

// newInstanceLocked is the instance candidate c of request req launches, with the ID and
// address given; it records nothing.
func (a *AWS) newInstanceLocked(req *FleetRequest, c *candidate, id, ip string) *Instance {
	inst := &Instance{
		ID: id, Type: c.override.InstanceType, Zone: c.subnet.Zone, SubnetID: c.subnet.ID, ImageID: c.imageID,
		CapacityType: fleetLifecycle(req.CapacityType), State: "running", LaunchTime: a.now(), PrivateIP: ip, PrivateDNSName: a.privateDNSName(ip),
		SecurityGroupIDs: a.templateGroups(c.lt), LaunchTemplateID: c.lt.ID, LaunchTemplateName: c.lt.Name,
		Tags: cloneTags(c.lt.InstanceTags), Tenancy: c.lt.Tenancy, CapacityReservationPreference: c.lt.CapacityReservationPreference,
	}
	if inst.Tenancy == "" {
		inst.Tenancy = "default"
	}
	if g, partition, err := a.placementLocked(c.lt, inst.Type, inst.Zone); err == nil && g != nil {
		inst.PlacementGroupName, inst.PlacementGroupID, inst.PartitionNumber = g.Name, g.ID, partition
	}
	if inst.Tags == nil {
		inst.Tags = map[string]string{}
	}
	for _, s := range req.TagSpecifications {
		if s.ResourceType == "instance" {
			for k, v := range s.Tags {
				inst.Tags[k] = v
			}
		}
	}
	if e, ok := a.entry(inst.Type); ok {
		inst.Architecture = ec2Arch(e.Arch)
	}
	if p := a.profileByRef(c.lt.InstanceProfile); p != nil {
		inst.InstanceProfile = p.Name
		inst.instanceProfileArn, inst.instanceProfileID = p.Arn, p.ID
	}
	return inst
}
