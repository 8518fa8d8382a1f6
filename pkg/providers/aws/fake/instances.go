package fake

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Instance is an EC2 instance the fake launched.
type Instance struct {
	// ID is the instance ID, i- and 17 hex digits.
	ID string
	// Type is the instance type.
	Type string
	// Zone and SubnetID are where it runs.
	Zone, SubnetID string
	// ImageID is its AMI.
	ImageID string
	// Architecture is the AMI's architecture, x86_64 or arm64.
	Architecture string
	// CapacityType is spot or on-demand.
	CapacityType string
	// SpotInstanceRequestID is set for spot instances.
	SpotInstanceRequestID string
	// State is running, shutting-down or terminated.
	State string
	// LaunchTime is when it was launched; TerminateTime when it was terminated.
	LaunchTime, TerminateTime time.Time
	// Tags are its tags.
	Tags map[string]string
	// InstanceProfile is the name of its IAM instance profile.
	InstanceProfile string
	// SecurityGroupIDs are its security groups.
	SecurityGroupIDs []string
	// PrivateIP and PrivateDNSName are its address and name.
	PrivateIP, PrivateDNSName string
	// LaunchTemplateID and LaunchTemplateName are the template it launched from.
	LaunchTemplateID, LaunchTemplateName string
	// FleetID is the fleet that launched it.
	FleetID string
	// Tenancy is its placement's tenancy: default or dedicated, as its launch template said.
	Tenancy string
	// PlacementGroupName and PlacementGroupID are the placement group it launched into, from
	// its launch template; empty for none.
	PlacementGroupName, PlacementGroupID string
	// PartitionNumber is its partition in a partition placement group (1 and up); 0 otherwise.
	PartitionNumber int
	// CapacityReservationID is the reservation it launched into; empty for none.
	CapacityReservationID string
	// CapacityReservationPreference is its launch template's preference
	// (capacity-reservations-only, open, none or empty).
	CapacityReservationPreference string
	// Lifecycle is its InstanceLifecycle besides spot: capacity-block or
	// interruptible-capacity-reservation when it launched into such a reservation.
	Lifecycle string
	// Reboots counts the RebootInstances calls that rebooted it.
	Reboots int

	reservationID                         string
	instanceProfileArn, instanceProfileID string
}

func (i *Instance) clone() Instance {
	c := *i
	c.Tags = cloneTags(i.Tags)
	c.SecurityGroupIDs = slices.Clone(i.SecurityGroupIDs)
	return c
}

// Instances returns every instance launched, terminated ones included, in launch order.
func (a *AWS) Instances() []Instance {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Instance, len(a.instances))
	for i, inst := range a.instances {
		out[i] = inst.clone()
	}
	return out
}

// Instance returns the instance with the ID.
func (a *AWS) Instance(id string) (Instance, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if inst := a.instance(id); inst != nil {
		return inst.clone(), true
	}
	return Instance{}, false
}

func (a *AWS) instance(id string) *Instance {
	for _, inst := range a.instances {
		if inst.ID == id {
			return inst
		}
	}
	return nil
}

// visibleLocked says whether DescribeInstances still shows the instance: terminated instances
// disappear after Options.TerminatedRetention.
func (a *AWS) visibleLocked(inst *Instance) bool {
	return inst.State != "terminated" || a.now().Sub(inst.TerminateTime) < a.opts.TerminatedRetention
}

var stateCodes = map[string]int{"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}

type xmlInstanceState struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

type xmlGroup struct {
	GroupID   string `xml:"groupId"`
	GroupName string `xml:"groupName"`
}

type xmlInstance struct {
	InstanceID     string           `xml:"instanceId"`
	ImageID        string           `xml:"imageId"`
	State          xmlInstanceState `xml:"instanceState"`
	PrivateDNSName string           `xml:"privateDnsName"`
	DNSName        string           `xml:"dnsName"`
	AmiLaunchIndex int              `xml:"amiLaunchIndex"`
	InstanceType   string           `xml:"instanceType"`
	LaunchTime     string           `xml:"launchTime"`
	Placement      struct {
		AvailabilityZone   string `xml:"availabilityZone"`
		AvailabilityZoneID string `xml:"availabilityZoneId"`
		Tenancy            string `xml:"tenancy"`
		GroupName          string `xml:"groupName,omitempty"`
		GroupID            string `xml:"groupId,omitempty"`
		PartitionNumber    int    `xml:"partitionNumber,omitempty"`
	} `xml:"placement"`
	SubnetID                         string     `xml:"subnetId,omitempty"`
	VpcID                            string     `xml:"vpcId,omitempty"`
	PrivateIPAddress                 string     `xml:"privateIpAddress,omitempty"`
	Groups                           []xmlGroup `xml:"groupSet>item"`
	Architecture                     string     `xml:"architecture"`
	RootDeviceType                   string     `xml:"rootDeviceType"`
	RootDeviceName                   string     `xml:"rootDeviceName"`
	InstanceLifecycle                string     `xml:"instanceLifecycle,omitempty"`
	SpotInstanceRequestID            string     `xml:"spotInstanceRequestId,omitempty"`
	VirtualizationType               string     `xml:"virtualizationType"`
	Hypervisor                       string     `xml:"hypervisor"`
	Tags                             []xmlTag   `xml:"tagSet>item,omitempty"`
	CapacityReservationID            string     `xml:"capacityReservationId,omitempty"`
	CapacityReservationSpecification *struct {
		Preference string `xml:"capacityReservationPreference,omitempty"`
		Target     *struct {
			ID string `xml:"capacityReservationId"`
		} `xml:"capacityReservationTarget,omitempty"`
	} `xml:"capacityReservationSpecification,omitempty"`
	IamInstanceProfile *struct {
		Arn string `xml:"arn"`
		ID  string `xml:"id"`
	} `xml:"iamInstanceProfile,omitempty"`
}

type xmlReservation struct {
	ReservationID string        `xml:"reservationId"`
	OwnerID       string        `xml:"ownerId"`
	RequesterID   string        `xml:"requesterId,omitempty"`
	Instances     []xmlInstance `xml:"instancesSet>item"`
}

func (a *AWS) xmlInstance(inst *Instance) xmlInstance {
	x := xmlInstance{InstanceID: inst.ID, ImageID: inst.ImageID, State: xmlInstanceState{Code: stateCodes[inst.State], Name: inst.State},
		PrivateDNSName: inst.PrivateDNSName, InstanceType: inst.Type, LaunchTime: isoTime(inst.LaunchTime), SubnetID: inst.SubnetID,
		PrivateIPAddress: inst.PrivateIP, Architecture: inst.Architecture, RootDeviceType: "ebs", RootDeviceName: "/dev/xvda",
		VirtualizationType: "hvm", Hypervisor: "xen", Tags: xmlTags(inst.Tags)}
	x.Placement.AvailabilityZone, x.Placement.AvailabilityZoneID, x.Placement.Tenancy = inst.Zone, a.zoneID(inst.Zone), inst.Tenancy
	if x.Placement.Tenancy == "" {
		x.Placement.Tenancy = "default"
	}
	x.Placement.GroupName, x.Placement.GroupID, x.Placement.PartitionNumber = inst.PlacementGroupName, inst.PlacementGroupID, inst.PartitionNumber
	if s := a.subnet(inst.SubnetID); s != nil {
		x.VpcID = s.VPCID
	}
	if inst.State == "terminated" {
		x.PrivateDNSName, x.PrivateIPAddress, x.SubnetID, x.VpcID = "", "", "", ""
	}
	for _, id := range inst.SecurityGroupIDs {
		g := xmlGroup{GroupID: id}
		if sg := a.securityGroup(id); sg != nil {
			g.GroupName = sg.Name
		}
		x.Groups = append(x.Groups, g)
	}
	if inst.CapacityType == "spot" {
		x.InstanceLifecycle, x.SpotInstanceRequestID = "spot", inst.SpotInstanceRequestID
	} else if inst.Lifecycle != "" {
		x.InstanceLifecycle = inst.Lifecycle
	}
	x.CapacityReservationID = inst.CapacityReservationID
	if inst.CapacityReservationPreference != "" || inst.CapacityReservationID != "" {
		x.CapacityReservationSpecification = &struct {
			Preference string `xml:"capacityReservationPreference,omitempty"`
			Target     *struct {
				ID string `xml:"capacityReservationId"`
			} `xml:"capacityReservationTarget,omitempty"`
		}{Preference: inst.CapacityReservationPreference}
		if inst.CapacityReservationID != "" {
			x.CapacityReservationSpecification.Target = &struct {
				ID string `xml:"capacityReservationId"`
			}{inst.CapacityReservationID}
		}
	}
	if inst.instanceProfileArn != "" {
		x.IamInstanceProfile = &struct {
			Arn string `xml:"arn"`
			ID  string `xml:"id"`
		}{inst.instanceProfileArn, inst.instanceProfileID}
	}
	return x
}

// checkInstanceIDs validates instance IDs as EC2 does: malformed IDs, then unknown ones (all
// unknown IDs are listed in one InvalidInstanceID.NotFound).
func (a *AWS) checkInstanceIDs(ids []string) error {
	var unknown []string
	for _, id := range ids {
		if !instanceIDPattern.MatchString(id) {
			return badRequest("InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
		}
		if inst := a.instance(id); inst == nil || !a.visibleLocked(inst) {
			unknown = append(unknown, id)
		}
	}
	switch len(unknown) {
	case 0:
		return nil
	case 1:
		return badRequest("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", unknown[0])
	default:
		return badRequest("InvalidInstanceID.NotFound", "The instance IDs '%s' do not exist", strings.Join(unknown, ", "))
	}
}

func (a *AWS) describeInstances(q *queryCall) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := q.list("InstanceId")
	filters := q.filters()
	size, err := maxResults(q, 5, 1000)
	if err != nil {
		return nil, err
	}
	if size > 0 && len(ids) > 0 {
		return nil, badRequest("InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
	}
	attr := func(inst *Instance) func(string) ([]string, bool) {
		return func(name string) ([]string, bool) {
			if inst == nil {
				inst = &Instance{}
			}
			switch name {
			case "instance-state-name":
				return []string{inst.State}, true
			case "instance-state-code":
				return []string{itoa(stateCodes[inst.State])}, true
			case "instance-id":
				return []string{inst.ID}, true
			case "instance-type":
				return []string{inst.Type}, true
			case "availability-zone":
				return []string{inst.Zone}, true
			case "subnet-id":
				return []string{inst.SubnetID}, true
			case "image-id":
				return []string{inst.ImageID}, true
			case "instance-lifecycle":
				if inst.CapacityType == "spot" {
					return []string{"spot"}, true
				}
				return nil, true
			case "private-dns-name":
				return []string{inst.PrivateDNSName}, true
			}
			return nil, false
		}
	}
	if err := validateFilters(filters, attr(nil)); err != nil {
		return nil, err
	}
	if err := a.checkInstanceIDs(ids); err != nil {
		return nil, err
	}
	var matched []*Instance
	for _, inst := range a.instances {
		if !a.visibleLocked(inst) || (len(ids) > 0 && !slices.Contains(ids, inst.ID)) {
			continue
		}
		if ok, err := matchFilters(filters, inst.Tags, attr(inst)); err != nil {
			return nil, err
		} else if ok {
			matched = append(matched, inst)
		}
	}
	start, end, next, err := page(len(matched), q.get("NextToken"), size)
	if err != nil {
		return nil, err
	}
	var out []xmlReservation
	for _, inst := range matched[start:end] {
		if len(out) == 0 || out[len(out)-1].ReservationID != inst.reservationID {
			out = append(out, xmlReservation{ReservationID: inst.reservationID, OwnerID: a.opts.AccountID})
		}
		out[len(out)-1].Instances = append(out[len(out)-1].Instances, a.xmlInstance(inst))
	}
	return struct {
		Reservations []xmlReservation `xml:"reservationSet>item"`
		NextToken    string           `xml:"nextToken,omitempty"`
	}{out, next}, nil
}

type xmlStateChange struct {
	InstanceID    string           `xml:"instanceId"`
	CurrentState  xmlInstanceState `xml:"currentState"`
	PreviousState xmlInstanceState `xml:"previousState"`
}

// TerminateInstance terminates an instance out of band (as a spot interruption or a person
// would); it reports false when there is no such instance.
func (a *AWS) TerminateInstance(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	inst := a.instance(id)
	if inst == nil {
		return false
	}
	if inst.State != "terminated" {
		inst.State, inst.TerminateTime = "terminated", a.now()
		a.releaseLocked(inst)
	}
	return true
}

func (a *AWS) terminateInstances(q *queryCall) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := q.list("InstanceId")
	if len(ids) == 0 {
		return nil, badRequest("MissingParameter", "The request must contain the parameter InstanceId")
	}
	if err := a.checkInstanceIDs(ids); err != nil {
		return nil, err
	}
	var out []xmlStateChange
	for _, id := range ids {
		inst := a.instance(id)
		a.authorizeLocked(q.r, "ec2:TerminateInstances", a.ec2ARN("instance", id), nil, inst.Tags)
		prev := inst.State
		cur := "terminated"
		if prev != "terminated" {
			inst.State, inst.TerminateTime = "terminated", a.now()
			a.releaseLocked(inst)
			cur = "shutting-down"
		}
		out = append(out, xmlStateChange{InstanceID: id, CurrentState: xmlInstanceState{Code: stateCodes[cur], Name: cur},
			PreviousState: xmlInstanceState{Code: stateCodes[prev], Name: prev}})
	}
	return struct {
		Instances []xmlStateChange `xml:"instancesSet>item"`
	}{out}, nil
}

// rebootInstances serves RebootInstances: each instance, running, is rebooted in place (Reboots
// counts it); EC2 refuses the whole call when one is not running.
func (a *AWS) rebootInstances(q *queryCall) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := q.list("InstanceId")
	if len(ids) == 0 {
		return nil, badRequest("MissingParameter", "The request must contain the parameter InstanceId")
	}
	if err := a.checkInstanceIDs(ids); err != nil {
		return nil, err
	}
	for _, id := range ids {
		inst := a.instance(id)
		a.authorizeLocked(q.r, "ec2:RebootInstances", a.ec2ARN("instance", id), nil, inst.Tags)
		if inst.State != "running" {
			return nil, badRequest("IncorrectInstanceState", "The instance '%s' is not in a state from which it can be rebooted.", id)
		}
	}
	for _, id := range ids {
		a.instance(id).Reboots++
	}
	return struct {
		Return bool `xml:"return"`
	}{true}, nil
}

// createTags serves CreateTags and (del) DeleteTags on instances, launch templates, subnets,
// security groups and images.
func (a *AWS) createTags(q *queryCall, del bool) (any, error) {
	ids := q.list("ResourceId")
	if len(ids) == 0 {
		return nil, badRequest("MissingParameter", "The request must contain the parameter resourceIdSet")
	}
	tags, err := q.tags("Tag")
	if err != nil {
		return nil, err
	}
	if !del && len(tags) == 0 {
		return nil, badRequest("MissingParameter", "The request must contain the parameter tagSet")
	}
	for _, t := range tags {
		if strings.HasPrefix(strings.ToLower(t.key), "aws:") {
			return nil, badRequest("InvalidParameterValue", "Tag keys starting with 'aws:' are reserved for internal use")
		}
		if !del {
			if err := validateTag(t.key, t.value); err != nil {
				return nil, err
			}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var targets []map[string]string
	action, requested := "ec2:CreateTags", map[string]string{}
	if del {
		action = "ec2:DeleteTags"
	}
	for _, t := range tags {
		requested[t.key] = t.value
	}
	for _, id := range ids {
		m, err := a.tagsOfLocked(id)
		if err != nil {
			return nil, err
		}
		arn := a.ec2ARN(ec2KindOfID(id), id)
		if ec2KindOfID(id) == "image" {
			arn = a.imageARN(id)
		}
		a.authorizeLocked(q.r, action, arn, requested, m)
		targets = append(targets, m)
	}
	for _, m := range targets {
		if del {
			for _, t := range tags {
				// DeleteTags with a value only deletes the tag when the value matches.
				if v, ok := m[t.key]; ok && (!q.has("Tag."+itoa(slices.IndexFunc(tags, func(x tag) bool { return x == t })+1)+".Value") || v == t.value) {
					delete(m, t.key)
				}
			}
			continue
		}
		for _, t := range tags {
			m[t.key] = t.value
		}
		if len(m) > 50 {
			return nil, badRequest("TagLimitExceeded", "The maximum number of tags per resource is 50.")
		}
	}
	return struct {
		Return bool `xml:"return"`
	}{true}, nil
}

// tagsOfLocked returns the (live) tag map of a resource, creating it when nil.
func (a *AWS) tagsOfLocked(id string) (map[string]string, error) {
	ensure := func(m *map[string]string) map[string]string {
		if *m == nil {
			*m = map[string]string{}
		}
		return *m
	}
	switch {
	case strings.HasPrefix(id, "i-"):
		if !instanceIDPattern.MatchString(id) {
			return nil, badRequest("InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
		}
		if inst := a.instance(id); inst != nil && a.visibleLocked(inst) {
			return ensure(&inst.Tags), nil
		}
		return nil, badRequest("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
	case strings.HasPrefix(id, "lt-"):
		if lt := a.templateByID(id); lt != nil {
			return ensure(&lt.Tags), nil
		}
		return nil, badRequest("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
	case strings.HasPrefix(id, "subnet-"):
		if s := a.subnet(id); s != nil {
			return ensure(&s.Tags), nil
		}
		return nil, badRequest("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
	case strings.HasPrefix(id, "sg-"):
		if g := a.securityGroup(id); g != nil {
			return ensure(&g.Tags), nil
		}
		return nil, badRequest("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
	case strings.HasPrefix(id, "ami-"):
		if i := a.image(id); i != nil {
			return ensure(&i.Tags), nil
		}
		return nil, badRequest("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", id)
	}
	return nil, badRequest("InvalidID", "The ID '%s' is not valid", id)
}

// runInstancesTagTypes are the resource types RunInstances tags at creation.
var runInstancesTagTypes = []string{"instance", "volume", "network-interface", "spot-instances-request"}

// runInstances serves RunInstances from a launch template, as a dry run: the provider launches
// through CreateFleet and calls RunInstances only to check its permissions (DryRun set), so
// the fake answers any other RunInstances with UnsupportedOperation rather than launch. It
// checks the request as EC2 checks a launch (counts, tag specifications, the subnet of the
// primary network interface or SubnetId) and then what the launch would use, as for a fleet's
// override (validateCandidateLocked: the template and version, instance type, subnet and
// zone, image and its architecture, instance profile, placement, security groups), failing
// with EC2's error for the first problem. A valid request records the launch's permission
// checks (authorizeLaunchLocked, ec2:CreateAction RunInstances, resources to be created as /*)
// and answers DryRunOperation; nothing is launched, counted or consumed.
func (a *AWS) runInstances(q *queryCall) (any, error) {
	dryRun, err := q.dryRun()
	if err != nil {
		return nil, err
	}
	minCount, err := q.int32("MinCount")
	if err != nil {
		return nil, err
	}
	maxCount, err := q.int32("MaxCount")
	if err != nil {
		return nil, err
	}
	switch {
	case minCount == nil:
		return nil, badRequest("MissingParameter", "The request must contain the parameter MinCount")
	case maxCount == nil:
		return nil, badRequest("MissingParameter", "The request must contain the parameter MaxCount")
	case *minCount < 1:
		return nil, badRequest("InvalidParameterValue", "Value (%d) for parameter minCount is invalid. Expected a positive integer.", *minCount)
	case *maxCount < *minCount:
		return nil, badRequest("InvalidParameterValue", "Value (%d) for parameter maxCount is invalid. Must be greater than or equal to minCount.", *maxCount)
	}
	cfg := FleetLaunchTemplateConfig{LaunchTemplateID: q.get("LaunchTemplate.LaunchTemplateId"), LaunchTemplateName: q.get("LaunchTemplate.LaunchTemplateName"),
		Version: q.get("LaunchTemplate.Version")}
	switch {
	case cfg.LaunchTemplateID == "" && cfg.LaunchTemplateName == "":
		if q.get("ImageId") == "" {
			return nil, badRequest("MissingParameter", "The request must contain the parameter ImageId")
		}
		return nil, badRequest("UnsupportedOperation", "The fake launches RunInstances from a launch template only.")
	case cfg.LaunchTemplateID != "" && cfg.LaunchTemplateName != "":
		return nil, badRequest("InvalidParameterCombination", "Either LaunchTemplateId or LaunchTemplateName may be specified, not both.")
	}
	if cfg.Version == "" {
		cfg.Version = "$Default"
	}
	specs, err := q.tagSpecs("TagSpecification")
	if err != nil {
		return nil, err
	}
	for _, s := range specs {
		if !slices.Contains(runInstancesTagTypes, s.ResourceType) {
			return nil, badRequest("InvalidParameterValue", "'%s' is not a valid taggable resource type for this operation.", s.ResourceType)
		}
	}
	override := FleetOverride{InstanceType: q.get("InstanceType"), ImageID: q.get("ImageId"), SubnetID: q.get("SubnetId")}
	for i, n := 1, q.count("NetworkInterface"); i <= n; i++ {
		p := "NetworkInterface." + strconv.Itoa(i) + "."
		if q.get(p+"DeviceIndex") != "0" || (q.get(p+"NetworkCardIndex") != "" && q.get(p+"NetworkCardIndex") != "0") {
			continue
		}
		if override.SubnetID != "" && q.get(p+"SubnetId") != "" {
			return nil, badRequest("InvalidParameterCombination", "Network interfaces and an instance-level subnet ID may not be specified on the same request")
		}
		override.SubnetID = q.get(p + "SubnetId")
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	req := &FleetRequest{CapacityType: "on-demand", TotalTargetCapacity: *minCount, TagSpecifications: specs}
	c := &candidate{config: cfg, override: override}
	if ferr := a.validateCandidateLocked(c, req); ferr != nil {
		return nil, badRequest(ferr.Code, "%s", ferr.Message)
	}
	if !dryRun {
		return nil, badRequest("UnsupportedOperation", "The fake serves RunInstances as a dry run only; launch through CreateFleet.")
	}
	inst := a.newInstanceLocked(req, c, "*", "")
	a.authorizeLaunchLocked(q.r, "RunInstances", specs, c, inst, true)
	return nil, dryRunOperation()
}
