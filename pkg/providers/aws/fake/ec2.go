package fake

import (
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Subnet is a seeded EC2 subnet.
type Subnet struct {
	// ID is the subnet ID, such as subnet-0123456789abcdef0.
	ID string
	// Zone is the availability zone, such as us-west-2a.
	Zone string
	// ZoneID is the zone ID; default derived from Zone (usw2-az1, …).
	ZoneID string
	// VPCID is the VPC; default vpc-00000000000000001.
	VPCID string
	// CIDR is the IPv4 block; default 10.0.N.0/24 for the Nth subnet. Instances get addresses
	// from it.
	CIDR string
	// AvailableIPs is the number of free IPv4 addresses; default 251. Launches decrement it.
	AvailableIPs int
	// MapPublicIPOnLaunch is the subnet's MapPublicIpOnLaunch.
	MapPublicIPOnLaunch bool
	// Tags are the subnet's tags.
	Tags map[string]string
}

// SecurityGroup is a seeded EC2 security group.
type SecurityGroup struct {
	// ID is the group ID, such as sg-0123456789abcdef0.
	ID string
	// Name is the group name.
	Name string
	// VPCID is the VPC; default vpc-00000000000000001.
	VPCID string
	// Tags are the group's tags.
	Tags map[string]string
}

// Image is a seeded AMI.
type Image struct {
	// ID is the AMI ID, such as ami-0123456789abcdef0.
	ID string
	// Name is the AMI name.
	Name string
	// OwnerID is the owning account; default the fake's account (so Owners "self" finds it).
	OwnerID string
	// OwnerAlias is the owner alias, such as "amazon"; Owners "amazon" finds images with this
	// alias or with OwnerID "amazon".
	OwnerAlias string
	// Architecture is x86_64 or arm64; default x86_64.
	Architecture string
	// CreationDate is when the image was made.
	CreationDate time.Time
	// DeprecationTime, when set and past, hides the image from DescribeImages unless
	// IncludeDeprecated is set or the image is asked for by ID.
	DeprecationTime *time.Time
	// State is available (default), pending, failed, ….
	State string
	// Tags are the image's tags.
	Tags map[string]string
}

// AddSubnet seeds a subnet. Its zone joins the zones offering instance types.
func (a *AWS) AddSubnet(s Subnet) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.ZoneID == "" {
		s.ZoneID = a.zoneID(s.Zone)
	}
	if s.VPCID == "" {
		s.VPCID = "vpc-00000000000000001"
	}
	if s.CIDR == "" {
		s.CIDR = fmt.Sprintf("10.0.%d.0/24", len(a.subnets)%256)
	}
	if s.AvailableIPs == 0 {
		s.AvailableIPs = 251
	}
	s.Tags = cloneTags(s.Tags)
	a.subnets = append(a.subnets, &s)
}

// SetSubnetAvailableIPs changes a subnet's free addresses, as other launches into it would; a
// fleet asking for more instances than it has left fails there with
// InsufficientFreeAddressesInSubnet.
func (a *AWS) SetSubnetAvailableIPs(id string, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.subnets {
		if s.ID == id {
			s.AvailableIPs = n
		}
	}
}

// AddSecurityGroup seeds a security group.
func (a *AWS) AddSecurityGroup(g SecurityGroup) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if g.VPCID == "" {
		g.VPCID = "vpc-00000000000000001"
	}
	g.Tags = cloneTags(g.Tags)
	a.securityGroups = append(a.securityGroups, &g)
}

// AddImage seeds an AMI.
func (a *AWS) AddImage(i Image) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i.OwnerID == "" {
		i.OwnerID = a.opts.AccountID
	}
	if i.Architecture == "" {
		i.Architecture = "x86_64"
	}
	if i.State == "" {
		i.State = "available"
	}
	if i.DeprecationTime != nil {
		t := *i.DeprecationTime
		i.DeprecationTime = &t
	}
	i.Tags = cloneTags(i.Tags)
	a.images = append(a.images, &i)
}

// Subnets returns the subnets, as they are now (AvailableIPs decrease with launches).
func (a *AWS) Subnets() []Subnet {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Subnet, len(a.subnets))
	for i, s := range a.subnets {
		out[i] = *s
		out[i].Tags = cloneTags(s.Tags)
	}
	return out
}

func (a *AWS) serveEC2(q *queryCall) {
	q.service = "ec2"
	if q.a.countCall(q.action) {
		q.fail(http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded.")
		return
	}
	if strings.HasPrefix(q.action, "Describe") {
		a.authorize(q.r, "ec2:"+q.action, "*", nil, nil)
	}
	if err := a.deniedEC2(q.action); err != nil {
		q.failErr(err)
		return
	}
	var body any
	var err error
	switch q.action {
	case "DescribeSubnets":
		body, err = a.describeSubnets(q)
	case "DescribeSecurityGroups":
		body, err = a.describeSecurityGroups(q)
	case "DescribeImages":
		body, err = a.describeImages(q)
	case "DescribeInstanceTypes":
		body, err = a.describeInstanceTypes(q)
	case "DescribeInstanceTypeOfferings":
		body, err = a.describeInstanceTypeOfferings(q)
	case "DescribeCapacityReservations":
		body, err = a.describeCapacityReservations(q)
	case "DescribePlacementGroups":
		body, err = a.describePlacementGroups(q)
	case "DescribeSpotPriceHistory":
		body, err = a.describeSpotPriceHistory(q)
	case "CreateLaunchTemplate":
		body, err = a.createLaunchTemplate(q)
	case "DescribeLaunchTemplates":
		body, err = a.describeLaunchTemplates(q)
	case "DeleteLaunchTemplate":
		body, err = a.deleteLaunchTemplate(q)
	case "CreateFleet":
		body, err = a.createFleet(q)
	case "RunInstances":
		body, err = a.runInstances(q)
	case "DescribeInstances":
		body, err = a.describeInstances(q)
	case "DescribeInstanceStatus":
		body, err = a.describeInstanceStatus(q)
	case "TerminateInstances":
		body, err = a.terminateInstances(q)
	case "RebootInstances":
		body, err = a.rebootInstances(q)
	case "CreateTags":
		body, err = a.createTags(q, false)
	case "DeleteTags":
		body, err = a.createTags(q, true)
	default:
		err = badRequest("InvalidAction", "The action %s is not valid for this web service.", q.action)
	}
	if err != nil {
		q.failErr(err)
		return
	}
	q.respond(body)
}

// xmlTag is an EC2 tag in a response.
type xmlTag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

func xmlTags(m map[string]string) []xmlTag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]xmlTag, len(keys))
	for i, k := range keys {
		out[i] = xmlTag{Key: k, Value: m[k]}
	}
	return out
}

// matchFilters reports whether a resource matches every filter. attr returns the resource's
// values for a filter name and whether the name is a filter the resource type supports;
// tag:<key> and tag-key are handled here from tags.
func matchFilters(filters []filter, tags map[string]string, attr func(name string) ([]string, bool)) (bool, error) {
	for _, f := range filters {
		var have []string
		switch {
		case strings.HasPrefix(f.name, "tag:"):
			if v, ok := tags[strings.TrimPrefix(f.name, "tag:")]; ok {
				have = []string{v}
			}
		case f.name == "tag-key":
			for k := range tags {
				have = append(have, k)
			}
		default:
			var ok bool
			have, ok = attr(f.name)
			if !ok {
				return false, badRequest("InvalidParameterValue", "The filter '%s' is invalid", f.name)
			}
		}
		if len(f.values) == 0 {
			return false, badRequest("InvalidParameterValue", "The filter '%s' has no values", f.name)
		}
		matched := false
		for _, want := range f.values {
			for _, v := range have {
				if wildcardMatch(want, v) {
					matched = true
				}
			}
		}
		if !matched {
			return false, nil
		}
	}
	return true, nil
}

// validateFilters checks filter names without a resource, so a request with an invalid filter
// fails even when there is nothing to match.
func validateFilters(filters []filter, attr func(name string) ([]string, bool)) error {
	_, err := matchFilters(filters, nil, attr)
	return err
}

// maxResults reads MaxResults, checking it is within [lo, hi].
func maxResults(q *queryCall, lo, hi int32) (int, error) {
	mr, err := q.int32("MaxResults")
	if err != nil || mr == nil {
		return 0, err
	}
	if *mr < lo || *mr > hi {
		return 0, badRequest("InvalidParameterValue", "Value ( %d ) for parameter maxResults is invalid. Parameter must be between %d and %d.", *mr, lo, hi)
	}
	return int(*mr), nil
}

var (
	subnetIDPattern   = regexp.MustCompile(`^subnet-[0-9a-f]{8}([0-9a-f]{9})?$`)
	sgIDPattern       = regexp.MustCompile(`^sg-[0-9a-f]{8}([0-9a-f]{9})?$`)
	amiIDPattern      = regexp.MustCompile(`^ami-[0-9a-f]{8}([0-9a-f]{9})?$`)
	instanceIDPattern = regexp.MustCompile(`^i-[0-9a-f]{8}([0-9a-f]{9})?$`)
	ltIDPattern       = regexp.MustCompile(`^lt-[0-9a-f]{17}$`)
)

type xmlSubnet struct {
	SubnetID                string   `xml:"subnetId"`
	SubnetArn               string   `xml:"subnetArn"`
	State                   string   `xml:"state"`
	VpcID                   string   `xml:"vpcId"`
	OwnerID                 string   `xml:"ownerId"`
	CidrBlock               string   `xml:"cidrBlock"`
	AvailableIPAddressCount int      `xml:"availableIpAddressCount"`
	AvailabilityZone        string   `xml:"availabilityZone"`
	AvailabilityZoneID      string   `xml:"availabilityZoneId"`
	DefaultForAz            bool     `xml:"defaultForAz"`
	MapPublicIPOnLaunch     bool     `xml:"mapPublicIpOnLaunch"`
	Tags                    []xmlTag `xml:"tagSet>item,omitempty"`
}

func (a *AWS) describeSubnets(q *queryCall) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := q.list("SubnetId")
	filters := q.filters()
	size, err := maxResults(q, 5, 1000)
	if err != nil {
		return nil, err
	}
	attr := func(s *Subnet) func(string) ([]string, bool) {
		return func(name string) ([]string, bool) {
			if s == nil {
				s = &Subnet{}
			}
			switch name {
			case "subnet-id":
				return []string{s.ID}, true
			case "availability-zone":
				return []string{s.Zone}, true
			case "availability-zone-id":
				return []string{s.ZoneID}, true
			case "vpc-id":
				return []string{s.VPCID}, true
			case "cidr-block":
				return []string{s.CIDR}, true
			case "state":
				return []string{"available"}, true
			}
			return nil, false
		}
	}
	if err := validateFilters(filters, attr(nil)); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !subnetIDPattern.MatchString(id) {
			return nil, badRequest("InvalidSubnetID.Malformed", "Invalid id: \"%s\"", id)
		}
		if a.subnet(id) == nil {
			return nil, badRequest("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
	}
	var out []xmlSubnet
	for _, s := range a.subnets {
		if len(ids) > 0 && !slices.Contains(ids, s.ID) {
			continue
		}
		if ok, err := matchFilters(filters, s.Tags, attr(s)); err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		out = append(out, xmlSubnet{SubnetID: s.ID, SubnetArn: fmt.Sprintf("arn:aws:ec2:%s:%s:subnet/%s", a.opts.Region, a.opts.AccountID, s.ID),
			State: "available", VpcID: s.VPCID, OwnerID: a.opts.AccountID, CidrBlock: s.CIDR, AvailableIPAddressCount: s.AvailableIPs,
			AvailabilityZone: s.Zone, AvailabilityZoneID: s.ZoneID, MapPublicIPOnLaunch: s.MapPublicIPOnLaunch, Tags: xmlTags(s.Tags)})
	}
	start, end, next, err := page(len(out), q.get("NextToken"), size)
	if err != nil {
		return nil, err
	}
	return struct {
		Subnets   []xmlSubnet `xml:"subnetSet>item"`
		NextToken string      `xml:"nextToken,omitempty"`
	}{out[start:end], next}, nil
}

func (a *AWS) subnet(id string) *Subnet {
	for _, s := range a.subnets {
		if s.ID == id {
			return s
		}
	}
	return nil
}

type xmlSecurityGroup struct {
	OwnerID          string   `xml:"ownerId"`
	GroupID          string   `xml:"groupId"`
	GroupName        string   `xml:"groupName"`
	GroupDescription string   `xml:"groupDescription"`
	VpcID            string   `xml:"vpcId"`
	Tags             []xmlTag `xml:"tagSet>item,omitempty"`
}

func (a *AWS) describeSecurityGroups(q *queryCall) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids, names := q.list("GroupId"), q.list("GroupName")
	filters := q.filters()
	size, err := maxResults(q, 5, 1000)
	if err != nil {
		return nil, err
	}
	attr := func(g *SecurityGroup) func(string) ([]string, bool) {
		return func(name string) ([]string, bool) {
			if g == nil {
				g = &SecurityGroup{}
			}
			switch name {
			case "group-id":
				return []string{g.ID}, true
			case "group-name":
				return []string{g.Name}, true
			case "vpc-id":
				return []string{g.VPCID}, true
			}
			return nil, false
		}
	}
	if err := validateFilters(filters, attr(nil)); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !sgIDPattern.MatchString(id) {
			return nil, badRequest("InvalidGroupId.Malformed", "Invalid id: \"%s\" (expecting \"sg-...\")", id)
		}
		if a.securityGroup(id) == nil {
			return nil, badRequest("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(a.securityGroups, func(g *SecurityGroup) bool { return g.Name == n }) {
			return nil, badRequest("InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC '%s'", n, "vpc-00000000000000001")
		}
	}
	var out []xmlSecurityGroup
	for _, g := range a.securityGroups {
		if len(ids)+len(names) > 0 && !slices.Contains(ids, g.ID) && !slices.Contains(names, g.Name) {
			continue
		}
		if ok, err := matchFilters(filters, g.Tags, attr(g)); err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		out = append(out, xmlSecurityGroup{OwnerID: a.opts.AccountID, GroupID: g.ID, GroupName: g.Name, GroupDescription: g.Name, VpcID: g.VPCID, Tags: xmlTags(g.Tags)})
	}
	start, end, next, err := page(len(out), q.get("NextToken"), size)
	if err != nil {
		return nil, err
	}
	return struct {
		Groups    []xmlSecurityGroup `xml:"securityGroupInfo>item"`
		NextToken string             `xml:"nextToken,omitempty"`
	}{out[start:end], next}, nil
}

func (a *AWS) securityGroup(id string) *SecurityGroup {
	for _, g := range a.securityGroups {
		if g.ID == id {
			return g
		}
	}
	return nil
}

type xmlImage struct {
	ImageID         string   `xml:"imageId"`
	ImageLocation   string   `xml:"imageLocation"`
	ImageState      string   `xml:"imageState"`
	ImageOwnerID    string   `xml:"imageOwnerId"`
	ImageOwnerAlias string   `xml:"imageOwnerAlias,omitempty"`
	CreationDate    string   `xml:"creationDate,omitempty"`
	DeprecationTime string   `xml:"deprecationTime,omitempty"`
	IsPublic        bool     `xml:"isPublic"`
	Architecture    string   `xml:"architecture"`
	ImageType       string   `xml:"imageType"`
	Name            string   `xml:"name"`
	RootDeviceType  string   `xml:"rootDeviceType"`
	RootDeviceName  string   `xml:"rootDeviceName"`
	Virtualization  string   `xml:"virtualizationType"`
	Hypervisor      string   `xml:"hypervisor"`
	EnaSupport      bool     `xml:"enaSupport"`
	BootMode        string   `xml:"bootMode,omitempty"`
	Tags            []xmlTag `xml:"tagSet>item,omitempty"`
}

func (a *AWS) describeImages(q *queryCall) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids, owners := q.list("ImageId"), q.list("Owner")
	filters := q.filters()
	size, err := maxResults(q, 6, 1000)
	if err != nil {
		return nil, err
	}
	if size > 0 && len(ids) > 0 {
		return nil, badRequest("InvalidParameterCombination", "The parameter imageIdsSet cannot be used with the parameter maxResults")
	}
	includeDeprecated, err := q.bool("IncludeDeprecated")
	if err != nil {
		return nil, err
	}
	attr := func(i *Image) func(string) ([]string, bool) {
		return func(name string) ([]string, bool) {
			if i == nil {
				i = &Image{}
			}
			switch name {
			case "name":
				return []string{i.Name}, true
			case "image-id":
				return []string{i.ID}, true
			case "architecture":
				return []string{i.Architecture}, true
			case "state":
				return []string{i.State}, true
			case "owner-id":
				return []string{i.OwnerID}, true
			case "owner-alias":
				return []string{i.OwnerAlias}, true
			case "image-type":
				return []string{"machine"}, true
			case "is-public":
				return []string{"false"}, true
			}
			return nil, false
		}
	}
	if err := validateFilters(filters, attr(nil)); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !amiIDPattern.MatchString(id) {
			return nil, badRequest("InvalidAMIID.Malformed", "Invalid id: \"%s\" (expecting \"ami-...\")", id)
		}
		if a.image(id) == nil {
			return nil, badRequest("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", id)
		}
	}
	now := a.now()
	var out []xmlImage
	for _, i := range a.images {
		if len(ids) > 0 && !slices.Contains(ids, i.ID) {
			continue
		}
		if len(ids) == 0 && i.DeprecationTime != nil && !i.DeprecationTime.After(now) && (includeDeprecated == nil || !*includeDeprecated) {
			continue
		}
		if len(owners) > 0 && !slices.ContainsFunc(owners, func(o string) bool {
			switch o {
			case "self":
				return i.OwnerID == a.opts.AccountID
			case "amazon", "aws-marketplace", "aws-backup-vault":
				return i.OwnerAlias == o || i.OwnerID == o
			}
			return i.OwnerID == o
		}) {
			continue
		}
		if ok, err := matchFilters(filters, i.Tags, attr(i)); err != nil {
			return nil, err
		} else if !ok {
			continue
		}
		x := xmlImage{ImageID: i.ID, ImageLocation: i.OwnerID + "/" + i.Name, ImageState: i.State, ImageOwnerID: i.OwnerID, ImageOwnerAlias: i.OwnerAlias,
			Architecture: i.Architecture, ImageType: "machine", Name: i.Name, RootDeviceType: "ebs", RootDeviceName: "/dev/xvda",
			Virtualization: "hvm", Hypervisor: "xen", EnaSupport: true, Tags: xmlTags(i.Tags)}
		if !i.CreationDate.IsZero() {
			x.CreationDate = isoTime(i.CreationDate)
		}
		if i.DeprecationTime != nil {
			x.DeprecationTime = isoTime(*i.DeprecationTime)
		}
		out = append(out, x)
	}
	start, end, next, err := page(len(out), q.get("NextToken"), size)
	if err != nil {
		return nil, err
	}
	return struct {
		Images    []xmlImage `xml:"imagesSet>item"`
		NextToken string     `xml:"nextToken,omitempty"`
	}{out[start:end], next}, nil
}

func (a *AWS) image(id string) *Image {
	for _, i := range a.images {
		if i.ID == id {
			return i
		}
	}
	return nil
}

// nextIPLocked returns a fresh private IPv4 address in the subnet's CIDR.
func (a *AWS) nextIPLocked(s *Subnet) string {
	a.ipCounter++
	prefix, err := netip.ParsePrefix(s.CIDR)
	if err != nil {
		return fmt.Sprintf("10.0.%d.%d", a.ipCounter/250%256, a.ipCounter%250+4)
	}
	addr := prefix.Masked().Addr()
	size := 1 << (32 - prefix.Bits())
	offset := 4 + a.ipCounter%max(size-5, 1) // AWS reserves the first four addresses
	for range offset {
		addr = addr.Next()
	}
	return addr.String()
}

// privateDNSName is the EC2 private DNS name of an address in the region.
func (a *AWS) privateDNSName(ip string) string {
	host := "ip-" + strings.ReplaceAll(ip, ".", "-")
	if a.opts.Region == "us-east-1" {
		return host + ".ec2.internal"
	}
	return host + "." + a.opts.Region + ".compute.internal"
}

func itoa(i int) string { return strconv.Itoa(i) }
