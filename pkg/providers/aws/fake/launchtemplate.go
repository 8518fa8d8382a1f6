package fake

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
)

// LaunchTemplate is a launch template as the fake holds it, with its data decoded.
type LaunchTemplate struct {
	// ID is the template ID, lt- and 17 hex digits.
	ID string
	// Name is the template name.
	Name string
	// CreateTime is when it was created.
	CreateTime time.Time
	// Tags are the template's own tags (TagSpecifications of type launch-template).
	Tags map[string]string
	// ImageID is LaunchTemplateData.ImageId.
	ImageID string
	// InstanceType is LaunchTemplateData.InstanceType.
	InstanceType string
	// UserData is LaunchTemplateData.UserData, base64-decoded.
	UserData string
	// InstanceProfile is the IamInstanceProfile's Name, or its Arn when no name was given.
	InstanceProfile string
	// SecurityGroupIDs is LaunchTemplateData.SecurityGroupIds.
	SecurityGroupIDs []string
	// NetworkInterfaces is LaunchTemplateData.NetworkInterfaces.
	NetworkInterfaces []NetworkInterface
	// AssociatePublicIP is the first network interface's AssociatePublicIpAddress.
	AssociatePublicIP *bool
	// MetadataOptions is LaunchTemplateData.MetadataOptions.
	MetadataOptions *MetadataOptions
	// BlockDeviceMappings is LaunchTemplateData.BlockDeviceMappings.
	BlockDeviceMappings []BlockDeviceMapping
	// Monitoring is LaunchTemplateData.Monitoring.Enabled.
	Monitoring bool
	// InstanceTags are the tags of LaunchTemplateData.TagSpecifications for instances.
	InstanceTags map[string]string
	// TagSpecifications are all of LaunchTemplateData.TagSpecifications.
	TagSpecifications []TagSpecification
	// NestedVirtualization is LaunchTemplateData.CpuOptions.NestedVirtualization: enabled,
	// disabled or empty (unset). Instances of types that do not support it fail to launch.
	NestedVirtualization string
	// NitroEnclaves is LaunchTemplateData.EnclaveOptions.Enabled (nil: unset). Instances of
	// types that do not support Nitro Enclaves fail to launch from a template enabling them.
	NitroEnclaves *bool
	// Tenancy is LaunchTemplateData.Placement.Tenancy: default, dedicated, host or empty
	// (unset, default). Instances launched from the template have it.
	Tenancy string
	// PlacementGroupName and PlacementGroupID are LaunchTemplateData.Placement.GroupName and
	// GroupId (at most one): the placement group its instances launch into.
	PlacementGroupName, PlacementGroupID string
	// PartitionNumber is LaunchTemplateData.Placement.PartitionNumber (0: unset, EC2 picks).
	PartitionNumber int
	// CapacityReservationPreference is
	// LaunchTemplateData.CapacityReservationSpecification.CapacityReservationPreference:
	// capacity-reservations-only, open, none or empty (unset). Instances launched with none
	// never use a reservation; with capacity-reservations-only they launch into
	// CapacityReservationID or fail.
	CapacityReservationPreference string
	// CapacityReservationID is the specification's CapacityReservationTarget.CapacityReservationId.
	CapacityReservationID string
	// MarketType is LaunchTemplateData.InstanceMarketOptions.MarketType: capacity-block,
	// interruptible-capacity-reservation, spot, on-demand or empty.
	MarketType string
}

// NetworkInterface is a launch template's network interface.
type NetworkInterface struct {
	// DeviceIndex is the interface's position.
	DeviceIndex *int32
	// AssociatePublicIP is AssociatePublicIpAddress.
	AssociatePublicIP *bool
	// SecurityGroupIDs are the interface's Groups.
	SecurityGroupIDs []string
	// InterfaceType is efa, efa-only, interface (default, empty) or trunk.
	InterfaceType string
	// NetworkCardIndex is the network card the interface is attached to.
	NetworkCardIndex *int32
	// IPv4PrefixCount is Ipv4PrefixCount, the number of /28 prefixes assigned.
	IPv4PrefixCount *int32
	// IPv6PrefixCount is Ipv6PrefixCount, the number of /80 prefixes assigned.
	IPv6PrefixCount *int32
	// IPv6AddressCount is Ipv6AddressCount.
	IPv6AddressCount *int32
	// PrimaryIPv6 is PrimaryIpv6: the interface's first IPv6 address is its primary one.
	PrimaryIPv6 *bool
	// ConnectionTracking is ConnectionTrackingSpecification.
	ConnectionTracking *ConnectionTracking
}

// ConnectionTracking is a network interface's idle connection tracking timeouts in seconds;
// nil ones are EC2's defaults.
type ConnectionTracking struct {
	// TCPEstablishedTimeout is 60 to 432000.
	TCPEstablishedTimeout *int32
	// UDPStreamTimeout is 60 to 180.
	UDPStreamTimeout *int32
	// UDPTimeout is 30 to 60.
	UDPTimeout *int32
}

// MetadataOptions are a launch template's instance metadata options.
type MetadataOptions struct {
	// HTTPEndpoint is enabled or disabled.
	HTTPEndpoint string
	// HTTPTokens is required or optional.
	HTTPTokens string
	// HopLimit is HttpPutResponseHopLimit.
	HopLimit int32
	// HTTPProtocolIPv6 is enabled or disabled.
	HTTPProtocolIPv6 string
	// InstanceMetadataTags is enabled or disabled.
	InstanceMetadataTags string
}

// BlockDeviceMapping is a launch template's block device mapping.
type BlockDeviceMapping struct {
	// DeviceName is the device, such as /dev/xvda.
	DeviceName string
	// EBS is the EBS volume, when there is one.
	EBS *EBS
}

// EBS is an EBS volume of a block device mapping; nil pointers are unset.
type EBS struct {
	// VolumeSize is the size in GiB.
	VolumeSize *int32
	// VolumeType is gp3, gp2, io1, ….
	VolumeType string
	// IOPS is the provisioned IOPS.
	IOPS *int32
	// Throughput is the provisioned throughput in MiB/s.
	Throughput *int32
	// Encrypted says the volume is encrypted.
	Encrypted *bool
	// KMSKeyID is the encryption key.
	KMSKeyID string
	// SnapshotID is the snapshot the volume starts from.
	SnapshotID string
	// DeleteOnTermination says the volume goes with the instance.
	DeleteOnTermination *bool
	// VolumeInitializationRate is the rate (MiB/s, 100 to 300) at which a volume created from a
	// snapshot is initialized.
	VolumeInitializationRate *int32
}

func (lt *LaunchTemplate) clone() LaunchTemplate {
	c := *lt
	c.Tags = cloneTags(lt.Tags)
	c.InstanceTags = cloneTags(lt.InstanceTags)
	c.SecurityGroupIDs = slices.Clone(lt.SecurityGroupIDs)
	c.NetworkInterfaces = nil
	for _, n := range lt.NetworkInterfaces {
		n.SecurityGroupIDs = slices.Clone(n.SecurityGroupIDs)
		n.DeviceIndex = clonePtr(n.DeviceIndex)
		n.AssociatePublicIP = clonePtr(n.AssociatePublicIP)
		n.NetworkCardIndex = clonePtr(n.NetworkCardIndex)
		n.IPv4PrefixCount, n.IPv6PrefixCount, n.IPv6AddressCount = clonePtr(n.IPv4PrefixCount), clonePtr(n.IPv6PrefixCount), clonePtr(n.IPv6AddressCount)
		n.PrimaryIPv6 = clonePtr(n.PrimaryIPv6)
		if ct := n.ConnectionTracking; ct != nil {
			n.ConnectionTracking = &ConnectionTracking{clonePtr(ct.TCPEstablishedTimeout), clonePtr(ct.UDPStreamTimeout), clonePtr(ct.UDPTimeout)}
		}
		c.NetworkInterfaces = append(c.NetworkInterfaces, n)
	}
	c.AssociatePublicIP = clonePtr(lt.AssociatePublicIP)
	c.NitroEnclaves = clonePtr(lt.NitroEnclaves)
	c.MetadataOptions = clonePtr(lt.MetadataOptions)
	c.BlockDeviceMappings = nil
	for _, b := range lt.BlockDeviceMappings {
		if b.EBS != nil {
			e := *b.EBS
			e.VolumeSize, e.IOPS, e.Throughput = clonePtr(e.VolumeSize), clonePtr(e.IOPS), clonePtr(e.Throughput)
			e.Encrypted, e.DeleteOnTermination = clonePtr(e.Encrypted), clonePtr(e.DeleteOnTermination)
			b.EBS = &e
		}
		c.BlockDeviceMappings = append(c.BlockDeviceMappings, b)
	}
	c.TagSpecifications = cloneTagSpecs(lt.TagSpecifications)
	return c
}

func cloneTagSpecs(specs []TagSpecification) []TagSpecification {
	var out []TagSpecification
	for _, s := range specs {
		out = append(out, TagSpecification{ResourceType: s.ResourceType, Tags: cloneTags(s.Tags)})
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// LaunchTemplates returns the launch templates that exist, in creation order.
func (a *AWS) LaunchTemplates() []LaunchTemplate {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]LaunchTemplate, len(a.templates))
	for i, lt := range a.templates {
		out[i] = lt.clone()
	}
	return out
}

var ltNamePattern = regexp.MustCompile(`^[a-zA-Z0-9().\-/_]{3,128}$`)

// maxUserDataBytes is EC2's limit on user data, decoded: 16 KB.
const maxUserDataBytes = 16384

// createLaunchTemplate serves CreateLaunchTemplate: it checks the template data as EC2 does
// (user data within maxUserDataBytes among them) and stores the template; with DryRun set it
// records the permission checks and answers DryRunOperation, storing nothing.
func (a *AWS) createLaunchTemplate(q *queryCall) (any, error) {
	name := q.get("LaunchTemplateName")
	if !q.has("LaunchTemplateName") {
		return nil, badRequest("MissingParameter", "The request must contain the parameter LaunchTemplateName")
	}
	if !ltNamePattern.MatchString(name) {
		return nil, badRequest("InvalidLaunchTemplateName.MalformedException", "A launch template name must be between 3 and 128 characters, and may contain letters, numbers, and the following characters: - ( ) . / _.'")
	}
	const d = "LaunchTemplateData."
	hasData := false
	for k := range q.form {
		if len(k) > len(d) && k[:len(d)] == d {
			hasData = true
			break
		}
	}
	if !hasData {
		return nil, badRequest("MissingParameter", "The request must contain the parameter LaunchTemplateData")
	}
	lt := &LaunchTemplate{Name: name, ImageID: q.get(d + "ImageId"), InstanceType: q.get(d + "InstanceType")}
	if q.has(d + "UserData") {
		ud, err := base64.StdEncoding.DecodeString(q.get(d + "UserData"))
		if err != nil {
			return nil, badRequest("InvalidUserData.Malformed", "Invalid BASE64 encoding of user data.")
		}
		if len(ud) > maxUserDataBytes {
			return nil, badRequest("InvalidUserData.Malformed", "User data is limited to %d bytes", maxUserDataBytes)
		}
		lt.UserData = string(ud)
	}
	if lt.InstanceType != "" {
		if _, ok := a.entryLocking(lt.InstanceType); !ok {
			return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter instanceType is invalid.", lt.InstanceType)
		}
	}
	if lt.ImageID != "" && !amiIDPattern.MatchString(lt.ImageID) {
		return nil, badRequest("InvalidAMIID.Malformed", "Invalid id: \"%s\" (expecting \"ami-...\")", lt.ImageID)
	}
	lt.InstanceProfile = q.get(d + "IamInstanceProfile.Name")
	if lt.InstanceProfile == "" {
		lt.InstanceProfile = q.get(d + "IamInstanceProfile.Arn")
	}
	if q.has(d+"IamInstanceProfile.Name") && q.has(d+"IamInstanceProfile.Arn") {
		return nil, badRequest("InvalidParameterCombination", "The parameter 'iamInstanceProfile.name' may not be used in combination with 'iamInstanceProfile.arn'")
	}
	lt.SecurityGroupIDs = q.list(d + "SecurityGroupId")
	attachments := map[[2]int32]bool{} // (network card, device index) pairs taken
	for i, n := 1, q.count(d+"NetworkInterface"); i <= n; i++ {
		ni, err := parseNetworkInterface(q, fmt.Sprintf("%sNetworkInterface.%d.", d, i))
		if err != nil {
			return nil, err
		}
		at := [2]int32{aws.ToInt32(ni.NetworkCardIndex), aws.ToInt32(ni.DeviceIndex)}
		if attachments[at] {
			return nil, badRequest("InvalidParameterValue", "Each network interface requires a unique combination of network card index and device index: network card %d, device %d is used twice.", at[0], at[1])
		}
		attachments[at] = true
		lt.NetworkInterfaces = append(lt.NetworkInterfaces, ni)
	}
	switch lt.NestedVirtualization = q.get(d + "CpuOptions.NestedVirtualization"); lt.NestedVirtualization {
	case "", "enabled", "disabled":
	default:
		return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter cpuOptions.nestedVirtualization is invalid.", lt.NestedVirtualization)
	}
	enclaves, err := q.bool(d + "EnclaveOptions.Enabled")
	if err != nil {
		return nil, err
	}
	lt.NitroEnclaves = enclaves
	switch lt.Tenancy = q.get(d + "Placement.Tenancy"); lt.Tenancy {
	case "", "default", "dedicated", "host":
	default:
		return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter placement.tenancy is invalid.", lt.Tenancy)
	}
	lt.PlacementGroupName, lt.PlacementGroupID = q.get(d+"Placement.GroupName"), q.get(d+"Placement.GroupId")
	if lt.PlacementGroupName != "" && lt.PlacementGroupID != "" {
		return nil, badRequest("InvalidParameterCombination", "The parameters GroupName and GroupId cannot be used together.")
	}
	if lt.PlacementGroupID != "" && !pgIDPattern.MatchString(lt.PlacementGroupID) {
		return nil, badRequest("InvalidPlacementGroupId.Malformed", "Invalid id: \"%s\" (expecting \"pg-...\")", lt.PlacementGroupID)
	}
	partition, err := q.int32(d + "Placement.PartitionNumber")
	if err != nil {
		return nil, err
	}
	if partition != nil {
		if *partition < 1 {
			return nil, badRequest("InvalidParameterValue", "Value (%d) for parameter placement.partitionNumber is invalid.", *partition)
		}
		lt.PartitionNumber = int(*partition)
	}
	if err := parseCapacityReservationSpecification(q, d, lt); err != nil {
		return nil, err
	}
	if len(lt.NetworkInterfaces) > 0 {
		lt.AssociatePublicIP = clonePtr(lt.NetworkInterfaces[0].AssociatePublicIP)
		if len(lt.SecurityGroupIDs) > 0 && len(lt.NetworkInterfaces[0].SecurityGroupIDs) > 0 {
			return nil, badRequest("InvalidParameterCombination", "Network interfaces and an instance-level security groups may not be specified on the same request")
		}
	}
	if q.count(d+"MetadataOptions") > 0 || q.has(d+"MetadataOptions.HttpEndpoint") || q.has(d+"MetadataOptions.HttpTokens") ||
		q.has(d+"MetadataOptions.HttpPutResponseHopLimit") || q.has(d+"MetadataOptions.HttpProtocolIpv6") || q.has(d+"MetadataOptions.InstanceMetadataTags") {
		m := &MetadataOptions{HTTPEndpoint: q.get(d + "MetadataOptions.HttpEndpoint"), HTTPTokens: q.get(d + "MetadataOptions.HttpTokens"),
			HTTPProtocolIPv6: q.get(d + "MetadataOptions.HttpProtocolIpv6"), InstanceMetadataTags: q.get(d + "MetadataOptions.InstanceMetadataTags")}
		hop, err := q.int32(d + "MetadataOptions.HttpPutResponseHopLimit")
		if err != nil {
			return nil, err
		}
		if hop != nil {
			if *hop < 1 || *hop > 64 {
				return nil, badRequest("InvalidParameterValue", "The HTTP PUT response hop limit must be between 1 and 64.")
			}
			m.HopLimit = *hop
		}
		for _, v := range []struct{ name, value string }{{"httpEndpoint", m.HTTPEndpoint}, {"httpProtocolIpv6", m.HTTPProtocolIPv6}, {"instanceMetadataTags", m.InstanceMetadataTags}} {
			if v.value != "" && v.value != "enabled" && v.value != "disabled" {
				return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter %s is invalid.", v.value, v.name)
			}
		}
		if m.HTTPTokens != "" && m.HTTPTokens != "required" && m.HTTPTokens != "optional" {
			return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter httpTokens is invalid.", m.HTTPTokens)
		}
		lt.MetadataOptions = m
	}
	for i, n := 1, q.count(d+"BlockDeviceMapping"); i <= n; i++ {
		p := fmt.Sprintf("%sBlockDeviceMapping.%d.", d, i)
		b := BlockDeviceMapping{DeviceName: q.get(p + "DeviceName")}
		if b.DeviceName == "" {
			return nil, badRequest("MissingParameter", "The request must contain the parameter blockDeviceMapping.deviceName")
		}
		if q.count(p+"Ebs") > 0 || hasPrefix(q, p+"Ebs.") {
			e := &EBS{VolumeType: q.get(p + "Ebs.VolumeType"), KMSKeyID: q.get(p + "Ebs.KmsKeyId"), SnapshotID: q.get(p + "Ebs.SnapshotId")}
			var err error
			if e.VolumeSize, err = q.int32(p + "Ebs.VolumeSize"); err != nil {
				return nil, err
			}
			if e.IOPS, err = q.int32(p + "Ebs.Iops"); err != nil {
				return nil, err
			}
			if e.Throughput, err = q.int32(p + "Ebs.Throughput"); err != nil {
				return nil, err
			}
			if e.Encrypted, err = q.bool(p + "Ebs.Encrypted"); err != nil {
				return nil, err
			}
			if e.DeleteOnTermination, err = q.bool(p + "Ebs.DeleteOnTermination"); err != nil {
				return nil, err
			}
			if e.VolumeInitializationRate, err = q.int32(p + "Ebs.VolumeInitializationRate"); err != nil {
				return nil, err
			}
			if r := e.VolumeInitializationRate; r != nil && (*r < 100 || *r > 300 || e.SnapshotID == "") {
				return nil, badRequest("InvalidParameterValue", "Volume initialization rate %d is invalid: it must be 100 to 300 MiB/s, for a volume created from a snapshot.", *r)
			}
			switch e.VolumeType {
			case "", "standard", "io1", "io2", "gp2", "gp3", "sc1", "st1":
			default:
				return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter volumeType is invalid.", e.VolumeType)
			}
			if e.VolumeSize != nil && (*e.VolumeSize < 1 || *e.VolumeSize > 65536) {
				return nil, badRequest("InvalidParameterValue", "Volume size %d is out of range", *e.VolumeSize)
			}
			b.EBS = e
		}
		lt.BlockDeviceMappings = append(lt.BlockDeviceMappings, b)
	}
	mon, err := q.bool(d + "Monitoring.Enabled")
	if err != nil {
		return nil, err
	}
	lt.Monitoring = mon != nil && *mon
	if lt.TagSpecifications, err = q.tagSpecs(d + "TagSpecification"); err != nil {
		return nil, err
	}
	for _, s := range lt.TagSpecifications {
		switch s.ResourceType {
		case "instance":
			lt.InstanceTags = cloneTags(s.Tags)
		case "volume", "network-interface", "spot-instances-request", "elastic-gpu":
		default:
			return nil, badRequest("InvalidParameterValue", "'%s' is not a valid taggable resource type for this operation.", s.ResourceType)
		}
	}
	specs, err := q.tagSpecs("TagSpecification")
	if err != nil {
		return nil, err
	}
	for _, s := range specs {
		if s.ResourceType != "launch-template" {
			return nil, badRequest("InvalidParameterValue", "'%s' is not a valid taggable resource type for this operation.", s.ResourceType)
		}
		lt.Tags = cloneTags(s.Tags)
	}

	dryRun, err := q.dryRun()
	if err != nil {
		return nil, err
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	if a.templateByName(name) != nil {
		return nil, badRequest("InvalidLaunchTemplateName.AlreadyExistsException", "Launch template name already in use.")
	}
	if dryRun {
		// The checks of the template to be made, and nothing made.
		a.authorizeLocked(q.r, "ec2:CreateLaunchTemplate", a.ec2ARN("launch-template", "*"), lt.Tags, nil)
		if len(lt.Tags) > 0 {
			a.authorizeLocked(q.r, "ec2:CreateTags", a.ec2ARN("launch-template", "*"), lt.Tags, nil, "ec2:CreateAction", "CreateLaunchTemplate")
		}
		return nil, dryRunOperation()
	}
	lt.ID = a.hexIDLocked("lt-", 17)
	lt.CreateTime = a.now()
	a.templates = append(a.templates, lt)
	a.authorizeLocked(q.r, "ec2:CreateLaunchTemplate", a.ec2ARN("launch-template", lt.ID), lt.Tags, nil)
	if len(lt.Tags) > 0 {
		a.authorizeLocked(q.r, "ec2:CreateTags", a.ec2ARN("launch-template", lt.ID), lt.Tags, nil, "ec2:CreateAction", "CreateLaunchTemplate")
	}
	return struct {
		LaunchTemplate xmlLaunchTemplate `xml:"launchTemplate"`
	}{a.xmlTemplate(lt)}, nil
}

// parseNetworkInterface reads and checks one network interface of launch template data at the
// prefix, with EC2's rules: a known interface type; no negative counts; IPv4 prefixes not with
// secondary addresses; no public IP, prefixes or IP addresses on an EFA-only interface, which
// carries no IP traffic; a primary IPv6 address only with IPv6 addresses; connection tracking
// timeouts within their bounds. EC2 refuses some of these only when launching from the template;
// the fake refuses them with the template, so that a wrong template fails its first test.
func parseNetworkInterface(q *queryCall, p string) (NetworkInterface, error) {
	ni := NetworkInterface{SecurityGroupIDs: q.list(p + "SecurityGroupId"), InterfaceType: q.get(p + "InterfaceType")}
	var err error
	for _, field := range []struct {
		key string
		dst **int32
	}{{"DeviceIndex", &ni.DeviceIndex}, {"NetworkCardIndex", &ni.NetworkCardIndex}, {"Ipv4PrefixCount", &ni.IPv4PrefixCount},
		{"Ipv6PrefixCount", &ni.IPv6PrefixCount}, {"Ipv6AddressCount", &ni.IPv6AddressCount}} {
		if *field.dst, err = q.int32(p + field.key); err != nil {
			return ni, err
		}
		if v := *field.dst; v != nil && *v < 0 {
			return ni, badRequest("InvalidParameterValue", "Value (%d) for parameter %s is invalid. It must not be negative.", *v, field.key)
		}
	}
	switch ni.InterfaceType {
	case "", "interface", "efa", "efa-only", "trunk":
	default:
		return ni, badRequest("InvalidParameterValue", "Value (%s) for parameter interfaceType is invalid.", ni.InterfaceType)
	}
	if ni.AssociatePublicIP, err = q.bool(p + "AssociatePublicIpAddress"); err != nil {
		return ni, err
	}
	if ni.PrimaryIPv6, err = q.bool(p + "PrimaryIpv6"); err != nil {
		return ni, err
	}
	secondary := q.has(p+"SecondaryPrivateIpAddressCount") || q.count(p+"PrivateIpAddresses") > 0
	switch {
	case ni.IPv4PrefixCount != nil && (secondary || q.has(p+"Ipv4Prefix.1.Ipv4Prefix")):
		return ni, badRequest("InvalidParameterCombination", "You cannot specify IPv4 prefixes together with secondary private IPv4 addresses or IPv4 prefix specifications.")
	case ni.InterfaceType == "efa-only" && (ni.IPv4PrefixCount != nil || ni.IPv6PrefixCount != nil || ni.IPv6AddressCount != nil || ni.AssociatePublicIP != nil || ni.PrimaryIPv6 != nil || secondary):
		return ni, badRequest("InvalidParameterValue", "EFA-only network interfaces do not support IP addresses: public IP, prefix, IPv6 and secondary address settings are not allowed on them.")
	case aws.ToBool(ni.PrimaryIPv6) && aws.ToInt32(ni.IPv6AddressCount) < 1 && q.count(p+"Ipv6Addresses") == 0:
		return ni, badRequest("InvalidParameterCombination", "A primary IPv6 address requires at least one IPv6 address on the network interface.")
	}
	const ct = "ConnectionTrackingSpecification."
	if hasPrefix(q, p+ct) {
		c := &ConnectionTracking{}
		for _, field := range []struct {
			key      string
			dst      **int32
			min, max int32
		}{{"TcpEstablishedTimeout", &c.TCPEstablishedTimeout, 60, 432000}, {"UdpStreamTimeout", &c.UDPStreamTimeout, 60, 180}, {"UdpTimeout", &c.UDPTimeout, 30, 60}} {
			if *field.dst, err = q.int32(p + ct + field.key); err != nil {
				return ni, err
			}
			if v := *field.dst; v != nil && (*v < field.min || *v > field.max) {
				return ni, badRequest("InvalidParameterValue", "Value (%d) for parameter %s is invalid. It must be between %d and %d seconds.", *v, field.key, field.min, field.max)
			}
		}
		ni.ConnectionTracking = c
	}
	return ni, nil
}

func hasPrefix(q *queryCall, prefix string) bool {
	for k := range q.form {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

func (a *AWS) entryLocking(name string) (catalog.Entry, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.entry(name)
}

type xmlLaunchTemplate struct {
	LaunchTemplateID     string   `xml:"launchTemplateId"`
	LaunchTemplateName   string   `xml:"launchTemplateName"`
	CreateTime           string   `xml:"createTime"`
	CreatedBy            string   `xml:"createdBy"`
	DefaultVersionNumber int      `xml:"defaultVersionNumber"`
	LatestVersionNumber  int      `xml:"latestVersionNumber"`
	Tags                 []xmlTag `xml:"tagSet>item,omitempty"`
}

func (a *AWS) xmlTemplate(lt *LaunchTemplate) xmlLaunchTemplate {
	return xmlLaunchTemplate{LaunchTemplateID: lt.ID, LaunchTemplateName: lt.Name, CreateTime: isoTime(lt.CreateTime),
		CreatedBy: fmt.Sprintf("arn:aws:iam::%s:root", a.opts.AccountID), DefaultVersionNumber: 1, LatestVersionNumber: 1, Tags: xmlTags(lt.Tags)}
}

func (a *AWS) templateByName(name string) *LaunchTemplate {
	for _, lt := range a.templates {
		if lt.Name == name {
			return lt
		}
	}
	return nil
}

func (a *AWS) templateByID(id string) *LaunchTemplate {
	for _, lt := range a.templates {
		if lt.ID == id {
			return lt
		}
	}
	return nil
}

func (a *AWS) describeLaunchTemplates(q *queryCall) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids, names := q.list("LaunchTemplateId"), q.list("LaunchTemplateName")
	filters := q.filters()
	size, err := maxResults(q, 1, 200)
	if err != nil {
		return nil, err
	}
	if size > 0 && len(ids)+len(names) > 0 {
		return nil, badRequest("InvalidParameterCombination", "The parameter LaunchTemplateIds or LaunchTemplateNames cannot be used with the parameter MaxResults")
	}
	attr := func(lt *LaunchTemplate) func(string) ([]string, bool) {
		return func(name string) ([]string, bool) {
			if lt == nil {
				lt = &LaunchTemplate{}
			}
			switch name {
			case "launch-template-name":
				return []string{lt.Name}, true
			case "create-time":
				return []string{isoTime(lt.CreateTime)}, true
			}
			return nil, false
		}
	}
	if err := validateFilters(filters, attr(nil)); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !ltIDPattern.MatchString(id) {
			return nil, badRequest("InvalidLaunchTemplateId.Malformed", "The specified ID for the launch template (%s) is not valid. Launch template IDs must be in the format 'lt-' followed by 17 hexadecimal characters.", id)
		}
		if a.templateByID(id) == nil {
			return nil, badRequest("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
		}
	}
	for _, n := range names {
		if a.templateByName(n) == nil {
			return nil, badRequest("InvalidLaunchTemplateName.NotFoundException", "At least one of the launch templates specified in the request does not exist.")
		}
	}
	var out []xmlLaunchTemplate
	for _, lt := range a.templates {
		if len(ids)+len(names) > 0 && !slices.Contains(ids, lt.ID) && !slices.Contains(names, lt.Name) {
			continue
		}
		if ok, err := matchFilters(filters, lt.Tags, attr(lt)); err != nil {
			return nil, err
		} else if ok {
			out = append(out, a.xmlTemplate(lt))
		}
	}
	start, end, next, err := page(len(out), q.get("NextToken"), size)
	if err != nil {
		return nil, err
	}
	return struct {
		LaunchTemplates []xmlLaunchTemplate `xml:"launchTemplates>item"`
		NextToken       string              `xml:"nextToken,omitempty"`
	}{out[start:end], next}, nil
}

func (a *AWS) deleteLaunchTemplate(q *queryCall) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id, name := q.get("LaunchTemplateId"), q.get("LaunchTemplateName")
	var lt *LaunchTemplate
	switch {
	case id != "" && name != "":
		return nil, badRequest("InvalidParameterCombination", "Either LaunchTemplateId or LaunchTemplateName may be specified, not both.")
	case id != "":
		if !ltIDPattern.MatchString(id) {
			return nil, badRequest("InvalidLaunchTemplateId.Malformed", "The specified ID for the launch template (%s) is not valid.", id)
		}
		if lt = a.templateByID(id); lt == nil {
			return nil, badRequest("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
		}
	case name != "":
		if lt = a.templateByName(name); lt == nil {
			return nil, badRequest("InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
		}
	default:
		return nil, badRequest("MissingParameter", "The request must contain the parameter LaunchTemplateId or LaunchTemplateName")
	}
	a.authorizeLocked(q.r, "ec2:DeleteLaunchTemplate", a.ec2ARN("launch-template", lt.ID), nil, lt.Tags)
	a.templates = slices.DeleteFunc(a.templates, func(t *LaunchTemplate) bool { return t == lt })
	return struct {
		LaunchTemplate xmlLaunchTemplate `xml:"launchTemplate"`
	}{a.xmlTemplate(lt)}, nil
}
