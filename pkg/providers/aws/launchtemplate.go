package aws

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/userdata"
)

// LaunchTemplatePrefix starts the name of every launch template the provider creates; the
// rest is a hash of the template's contents.
const LaunchTemplatePrefix = "karpenter.k8s.aws/"

// TagCluster marks launch templates with the cluster that created them.
const TagCluster = "karpenter.k8s.aws/cluster"

// launchSettings are the inputs of one launch template: a NodeClass, an image, and the claim
// settings that reach user data. Equal settings share a template.
type launchSettings struct {
	NodeClass        string                      `json:"nodeClass"`
	AMIFamily        string                      `json:"amiFamily"`
	ImageID          string                      `json:"imageID"`
	UserData         string                      `json:"userData"`
	InstanceProfile  string                      `json:"instanceProfile"`
	SecurityGroupIDs []string                    `json:"securityGroupIDs"`
	Metadata         awsv1.MetadataOptions       `json:"metadata"`
	BlockDevices     []*awsv1.BlockDeviceMapping `json:"blockDevices,omitempty"`
	Monitoring       bool                        `json:"monitoring,omitempty"`
	PublicIP         *bool                       `json:"publicIP,omitempty"`
	Tags             map[string]string           `json:"tags,omitempty"`
	// NodePool is the NodePool the template launches for: Karpenter's IAM policy lets the
	// controller launch only from templates tagged with one.
	NodePool string `json:"nodePool,omitempty"`
	// Spot says the template launches spot instances, whose spot requests it tags.
	Spot bool `json:"spot,omitempty"`
	// EFAInterfaces is how many Elastic Fabric Adapter interfaces to attach, one per network
	// card (0: none), for claims whose pods request vpc.amazonaws.com/efa.
	EFAInterfaces int `json:"efaInterfaces,omitempty"`
	// IPv6 says the cluster's IP family is IPv6: interfaces get a primary IPv6 address, and
	// IPPrefixCount counts IPv6 prefixes instead of IPv4 ones.
	IPv6 bool `json:"ipv6,omitempty"`
	// IPPrefixCount is the NodeClass's ipPrefixCount.
	IPPrefixCount *int32 `json:"ipPrefixCount,omitempty"`
	// NetworkInterfaces are the NodeClass's networkInterfaces, which replace the primary
	// interface and the EFA interfaces.
	NetworkInterfaces []*awsv1.NetworkInterface `json:"networkInterfaces,omitempty"`
	// ConnectionTracking is the NodeClass's connectionTracking.
	ConnectionTracking *awsv1.ConnectionTracking `json:"connectionTracking,omitempty"`
	// NestedVirtualization is the NodeClass's cpuOptions.nestedVirtualization.
	NestedVirtualization string `json:"nestedVirtualization,omitempty"`
	// NitroEnclaves is the NodeClass's enclaveOptions.enabled.
	NitroEnclaves bool `json:"nitroEnclaves,omitempty"`
	// Tenancy is the placement's tenancy when it is not the default: dedicated.
	Tenancy string `json:"tenancy,omitempty"`
	// PlacementGroupID is the placement's group (Placement.GroupId), as the AWS provider
	// v1.15.2's launch templates name it (pkg/providers/launchtemplate/types.go); empty: none.
	PlacementGroupID string `json:"placementGroupID,omitempty"`
	// PartitionNumber is the partition of a partition placement group the instances launch
	// into (Placement.PartitionNumber), as the AWS provider v1.15.2 sets it for a claim that
	// targets one (pkg/providers/launchtemplate/types.go, buildPlacement); 0: EC2 picks.
	PartitionNumber int32 `json:"partitionNumber,omitempty"`
	// CapacityReservationPreference is the template's capacity reservation preference, as the
	// AWS provider v1.15.2 sets it with the ReservedCapacity gate: capacity-reservations-only
	// for a launch into CapacityReservationID, none for other launches (they keep out of open
	// reservations); empty with the gate off (EC2's default, open).
	CapacityReservationPreference string `json:"capacityReservationPreference,omitempty"`
	// CapacityReservationID is the reservation a reserved launch targets.
	CapacityReservationID string `json:"capacityReservationID,omitempty"`
	// MarketType is the instance market of a reserved launch: capacity-block or
	// interruptible-capacity-reservation for those reservations, else empty.
	MarketType string `json:"marketType,omitempty"`
}

// name is the template's name: the prefix and a hash of the settings.
func (s *launchSettings) name() string {
	b, _ := json.Marshal(s)
	sum := sha256.Sum256(b)
	return LaunchTemplatePrefix + hex.EncodeToString(sum[:])[:32]
}

// clusterInfo is what nodes need to join an EKS cluster.
type clusterInfo struct {
	endpoint string
	caBundle []byte
	cidr     string
	// ipv6 says DescribeCluster's kubernetesNetworkConfig.ipFamily is ipv6.
	ipv6 bool
	err  error // why DescribeCluster failed, when it did (the info is then the options')
}

// clusterCIDRError says why the cluster's service CIDR, which nodeadm (AL2023) needs, is not
// known.
func (i *clusterInfo) clusterCIDRError() error {
	if i.cidr != "" {
		return nil
	}
	if i.err != nil {
		return fmt.Errorf("the cluster's service CIDR is not known yet, which AL2023 nodes need to join (retrying DescribeCluster): %w", i.err)
	}
	return errors.New("the cluster's service CIDR is not known: DescribeCluster gave none, and AL2023 nodes need it to join")
}

// launchTemplates creates launch templates on demand and remembers which exist.
type launchTemplates struct {
	provider *Provider
	mu       sync.Mutex
	known    map[string]time.Time // template name → last used
	// clusterMu guards cluster, apart from mu, so that a slow or failing DescribeCluster does
	// not hold up creating or collecting launch templates.
	clusterMu sync.Mutex
	// cluster and clusterErr are DescribeCluster's last answer: a success for good, a failure
	// (clusterErr, or cluster.err) until clusterRetry.
	cluster      *clusterInfo
	clusterErr   error
	clusterRetry time.Time
}

// clusterInfoRetry is how long a failed DescribeCluster is answered from memory before EKS is
// asked again, so that the launch templates of a launch (one per image and pod limit) and
// the launches and NodeClass reconciles that follow share one failed call instead of each
// making its own. It is the retry of a NodeClass that is not ready, so one waiting for the
// cluster's service CIDR asks EKS again at each of its retries.
const clusterInfoRetry = nodeClassNotReadyRetry

// clusterInfo returns the endpoint, CA and service CIDR nodes join with: the options' values,
// completed by EKS DescribeCluster. A failure is remembered for clusterInfoRetry.
func (l *launchTemplates) clusterInfo(ctx context.Context) (*clusterInfo, error) {
	l.clusterMu.Lock()
	defer l.clusterMu.Unlock()
	now := l.provider.opts.Clock.Now()
	if succeeded := l.cluster != nil && l.cluster.err == nil; succeeded || now.Before(l.clusterRetry) {
		return l.cluster, l.clusterErr
	}
	l.cluster, l.clusterErr = l.describeCluster(ctx)
	if ctx.Err() == nil { // a call cut short by its caller says nothing of EKS
		l.clusterRetry = now.Add(clusterInfoRetry)
	}
	return l.cluster, l.clusterErr
}

// describeCluster asks EKS for the cluster's endpoint, CA and service CIDR, completing the
// options' values. When it fails, the options' values are the answer (with the failure in
// err), or, without an endpoint in the options, the error.
func (l *launchTemplates) describeCluster(ctx context.Context) (*clusterInfo, error) {
	o := l.provider.opts
	info := &clusterInfo{endpoint: o.ClusterEndpoint, caBundle: o.ClusterCABundle}
	out, err := l.provider.clients.EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(o.ClusterName)})
	if err != nil {
		if info.endpoint == "" {
			return nil, fmt.Errorf("describing EKS cluster %s for the node bootstrap (set --cluster-endpoint (CLUSTER_ENDPOINT) when it is not EKS): %w", o.ClusterName, err)
		}
		// What the options give, remembered only for clusterInfoRetry: a transient failure
		// does not leave nodes without the cluster's service CIDR for good.
		info.err = err
		return info, nil
	}
	if c := out.Cluster; c != nil {
		if info.endpoint == "" {
			info.endpoint = aws.ToString(c.Endpoint)
		}
		if len(info.caBundle) == 0 && c.CertificateAuthority != nil {
			if ca, err := base64.StdEncoding.DecodeString(aws.ToString(c.CertificateAuthority.Data)); err == nil {
				info.caBundle = ca
			}
		}
		if n := c.KubernetesNetworkConfig; n != nil {
			info.ipv6 = n.IpFamily == ekstypes.IpFamilyIpv6
			info.cidr = aws.ToString(n.ServiceIpv4Cidr)
			if info.cidr == "" {
				info.cidr = aws.ToString(n.ServiceIpv6Cidr)
			}
		}
	}
	return info, nil
}

// clusterIPv6 reports whether the cluster's IP family is IPv6: as Karpenter judges it, by the
// kube-dns Service's address when it is known, else by DescribeCluster's ipFamily (info, nil
// for the Custom family, whose clusters need not be EKS). When neither is known it is IPv4, as
// Karpenter assumes without the kube-dns address.
func (l *launchTemplates) clusterIPv6(info *clusterInfo) bool {
	if ip := net.ParseIP(l.provider.opts.KubeDNSIP); ip != nil {
		return ip.To4() == nil
	}
	return info != nil && info.ipv6
}

// launchParams are the claim-level inputs of user data.
type launchParams struct {
	labels map[string]string
	taints []corev1.Taint
	// nodePool and capacityType are what the template's tags say it launches for.
	nodePool, capacityType string
	// tenancy is the instances' tenancy: default or dedicated (empty: default).
	tenancy string
	// placementGroupID is the placement group the instances launch into (empty: none).
	placementGroupID string
	// partition is the partition of a partition group they launch into (0: EC2 picks).
	partition int32
}

// doNotSyncTaints adds karpenter.sh/do-not-sync-taints=true to the labels a node of every AMI
// family but Custom registers with, as the AWS provider v1.15.2's InjectDoNotSyncTaintsLabel:
// its kubelet registers the claim's taints and startup taints itself
// (--register-with-taints), so registration leaves them alone rather than race the kubelet
// (kubernetes-sigs/karpenter#1772). A Custom image may not register them, so Karpenter syncs
// them onto its nodes.
func doNotSyncTaints(family string, labels map[string]string) map[string]string {
	if family == awsv1.AMIFamilyCustom {
		return labels
	}
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	out[karpv1.NodeDoNotSyncTaintsLabelKey] = "true"
	return out
}

// settings builds the launch settings of a NodeClass for an image and pod limit, with the
// kubelet configuration as the instance types get it (spec.kubelet with its expressions
// evaluated: Provider.resolvedKubelet).
func (l *launchTemplates) settings(ctx context.Context, nc *awsv1.EC2NodeClass, kubelet *awsv1.KubeletConfiguration, family, imageID string, maxPods int64, params launchParams) (*launchSettings, error) {
	o := userdata.Options{
		ClusterName:         l.provider.opts.ClusterName,
		Kubelet:             kubelet,
		Labels:              doNotSyncTaints(family, params.labels),
		Taints:              params.taints,
		UserData:            nc.Spec.UserData,
		InstanceStorePolicy: nc.Spec.InstanceStorePolicy,
	}
	if kubelet != nil {
		o.ClusterDNS = kubelet.ClusterDNS
	}
	if len(o.ClusterDNS) == 0 && l.provider.opts.KubeDNSIP != "" {
		o.ClusterDNS = []string{l.provider.opts.KubeDNSIP}
	}
	if maxPods > 0 && (kubelet == nil || kubelet.MaxPods == nil) {
		mp := int32(maxPods)
		o.MaxPods = &mp
	}
	var info *clusterInfo
	if family != awsv1.AMIFamilyCustom {
		var err error
		if info, err = l.clusterInfo(ctx); err != nil {
			return nil, err
		}
		o.ClusterEndpoint, o.CABundle, o.ClusterCIDR = info.endpoint, info.caBundle, info.cidr
		if family == awsv1.AMIFamilyAL2023 {
			if err := info.clusterCIDRError(); err != nil {
				return nil, cloudprovider.NewNodeClassNotReadyError(err)
			}
		}
	}
	ud, err := userdata.Render(family, o)
	if err != nil {
		return nil, err
	}
	s := &launchSettings{
		NodeClass:       nc.Name,
		AMIFamily:       family,
		ImageID:         imageID,
		UserData:        ud,
		InstanceProfile: nc.Status.InstanceProfile,
		Metadata:        metadataOptions(nc.Spec.MetadataOptions),
		BlockDevices:    blockDevices(nc.Spec.BlockDeviceMappings, family),
		Monitoring:      nc.Spec.DetailedMonitoring != nil && *nc.Spec.DetailedMonitoring,
		PublicIP:        nc.Spec.AssociatePublicIPAddress,
		Tags:            nc.Spec.Tags,
		NodePool:        params.nodePool,
		Spot:            params.capacityType == karpv1.CapacityTypeSpot,

		IPv6:               l.clusterIPv6(info),
		IPPrefixCount:      nc.Spec.IPPrefixCount,
		NetworkInterfaces:  nc.Spec.NetworkInterfaces,
		ConnectionTracking: nc.Spec.ConnectionTracking,
	}
	if nc.Spec.CPUOptions != nil {
		s.NestedVirtualization = aws.ToString(nc.Spec.CPUOptions.NestedVirtualization)
	}
	s.NitroEnclaves = enclavesEnabled(nc)
	if params.tenancy != "" && params.tenancy != awsv1.TenancyDefault {
		s.Tenancy = params.tenancy
	}
	s.PlacementGroupID, s.PartitionNumber = params.placementGroupID, params.partition
	for _, g := range nc.Status.SecurityGroups {
		s.SecurityGroupIDs = append(s.SecurityGroupIDs, g.ID)
	}
	return s, nil
}

// metadataOptions are the NodeClass's instance metadata settings with Karpenter's defaults:
// IMDSv2 required, hop limit 1, IPv6 endpoint off.
func metadataOptions(m *awsv1.MetadataOptions) awsv1.MetadataOptions {
	out := awsv1.MetadataOptions{
		HTTPEndpoint:            aws.String("enabled"),
		HTTPProtocolIPv6:        aws.String("disabled"),
		HTTPPutResponseHopLimit: aws.Int64(1),
		HTTPTokens:              aws.String("required"),
	}
	if m == nil {
		return out
	}
	if m.HTTPEndpoint != nil {
		out.HTTPEndpoint = m.HTTPEndpoint
	}
	if m.HTTPProtocolIPv6 != nil {
		out.HTTPProtocolIPv6 = m.HTTPProtocolIPv6
	}
	if m.HTTPPutResponseHopLimit != nil {
		out.HTTPPutResponseHopLimit = m.HTTPPutResponseHopLimit
	}
	if m.HTTPTokens != nil {
		out.HTTPTokens = m.HTTPTokens
	}
	return out
}

// blockDevices are the NodeClass's block device mappings, or the family's default volumes:
// a 20Gi encrypted gp3 root for AL2 and AL2023, a 4Gi OS and a 20Gi data volume for
// Bottlerocket, a 50Gi encrypted gp3 C: on /dev/sda1 for the Windows families (the AWS provider
// v1.15.2's Windows.DefaultBlockDeviceMappings), none (the image's own) for Custom.
func blockDevices(bdms []*awsv1.BlockDeviceMapping, family string) []*awsv1.BlockDeviceMapping {
	if len(bdms) > 0 {
		return bdms
	}
	volume := func(device string, gib int64) *awsv1.BlockDeviceMapping {
		return &awsv1.BlockDeviceMapping{DeviceName: aws.String(device), EBS: &awsv1.BlockDevice{
			VolumeSize: resource.NewQuantity(gib<<30, resource.BinarySI), VolumeType: aws.String("gp3"),
			Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true),
		}}
	}
	switch family {
	case awsv1.AMIFamilyBottlerocket:
		return []*awsv1.BlockDeviceMapping{volume("/dev/xvda", 4), volume("/dev/xvdb", 20)}
	case awsv1.AMIFamilyCustom:
		return nil
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return []*awsv1.BlockDeviceMapping{volume("/dev/sda1", cloudprovider.DefaultWindowsRootVolumeGiB)}
	}
	return []*awsv1.BlockDeviceMapping{volume("/dev/xvda", 20)}
}

// ensure returns the name of the launch template with the settings, creating it when it does
// not exist yet. Before creating one it records the size of its user data for the NodeClass
// (karpenter_ec2nodeclasses_userdata_bytes), as Karpenter does, so that user data EC2 refuses
// as too large is still measured.
func (l *launchTemplates) ensure(ctx context.Context, s *launchSettings) (string, error) {
	name := s.name()
	now := l.provider.opts.Clock.Now()
	l.mu.Lock()
	_, ok := l.known[name]
	if ok {
		l.known[name] = now
	}
	l.mu.Unlock()
	if ok {
		return name, nil
	}
	metrics.SetNodeClassUserDataBytes(s.NodeClass, len(s.UserData))
	// Create, and take an existing template of the name (same hash, same contents) as done.
	if _, err := l.provider.clients.EC2.CreateLaunchTemplate(ctx, l.createInput(name, s)); err != nil && errorCode(err) != "InvalidLaunchTemplateName.AlreadyExistsException" {
		return "", fmt.Errorf("creating launch template for ec2nodeclass %s: %w", s.NodeClass, err)
	}
	l.mu.Lock()
	l.known[name] = now
	l.mu.Unlock()
	return name, nil
}

func (l *launchTemplates) createInput(name string, s *launchSettings) *ec2.CreateLaunchTemplateInput {
	p := l.provider
	// As Karpenter's: the template, and the network interfaces and spot requests launched
	// from it, carry the NodeClass's tags and the cluster's, NodePool's and NodeClass's, which
	// its published IAM policy's conditions require.
	// karpenter.sh/nodepool even when empty, as Karpenter's GetTags: its policy requires the key.
	tags := mergeTags(s.Tags, map[string]string{TagCluster: p.opts.ClusterName, TagManagedBy: p.opts.ClusterName, TagNodeClass: s.NodeClass,
		p.clusterTag(): "owned", TagEKSClusterName: p.opts.ClusterName, TagNodePool: s.NodePool})
	dataTags := []ec2types.LaunchTemplateTagSpecificationRequest{{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: ec2Tags(tags)}}
	if s.Spot {
		dataTags = append(dataTags, ec2types.LaunchTemplateTagSpecificationRequest{ResourceType: ec2types.ResourceTypeSpotInstancesRequest, Tags: ec2Tags(tags)})
	}
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:            aws.String(s.ImageID),
		IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(s.InstanceProfile)},
		Monitoring:         &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(s.Monitoring)},
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(aws.ToString(s.Metadata.HTTPEndpoint)),
			HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(aws.ToString(s.Metadata.HTTPProtocolIPv6)),
			HttpPutResponseHopLimit: aws.Int32(int32(aws.ToInt64(s.Metadata.HTTPPutResponseHopLimit))),
			HttpTokens:              ec2types.LaunchTemplateHttpTokensState(aws.ToString(s.Metadata.HTTPTokens)),
		},
		TagSpecifications: dataTags,
	}
	if s.UserData != "" {
		data.UserData = aws.String(base64.StdEncoding.EncodeToString([]byte(s.UserData)))
	}
	// The security groups go on the interfaces when there are any, else on the instance.
	if data.NetworkInterfaces = networkInterfaces(s); data.NetworkInterfaces == nil {
		data.SecurityGroupIds = s.SecurityGroupIDs
	}
	if s.NestedVirtualization != "" {
		data.CpuOptions = &ec2types.LaunchTemplateCpuOptionsRequest{NestedVirtualization: ec2types.NestedVirtualizationSpecification(s.NestedVirtualization)}
	}
	if s.NitroEnclaves {
		data.EnclaveOptions = &ec2types.LaunchTemplateEnclaveOptionsRequest{Enabled: aws.Bool(true)}
	}
	if s.Tenancy != "" || s.PlacementGroupID != "" {
		data.Placement = &ec2types.LaunchTemplatePlacementRequest{Tenancy: ec2types.Tenancy(s.Tenancy)}
		if s.PlacementGroupID != "" {
			data.Placement.GroupId = aws.String(s.PlacementGroupID)
		}
		if s.PartitionNumber != 0 {
			data.Placement.PartitionNumber = aws.Int32(s.PartitionNumber)
		}
	}
	if s.CapacityReservationPreference != "" {
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreference(s.CapacityReservationPreference)}
		if s.CapacityReservationID != "" {
			data.CapacityReservationSpecification.CapacityReservationTarget = &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(s.CapacityReservationID)}
		}
	}
	if s.MarketType != "" {
		data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketType(s.MarketType)}
	}
	for _, b := range s.BlockDevices {
		if b == nil || b.EBS == nil {
			continue
		}
		ebs := &ec2types.LaunchTemplateEbsBlockDeviceRequest{
			DeleteOnTermination: b.EBS.DeleteOnTermination, Encrypted: b.EBS.Encrypted, KmsKeyId: b.EBS.KMSKeyID,
			SnapshotId: b.EBS.SnapshotID, VolumeType: ec2types.VolumeType(aws.ToString(b.EBS.VolumeType)),
			VolumeInitializationRate: b.EBS.VolumeInitializationRate,
		}
		if b.EBS.IOPS != nil {
			ebs.Iops = aws.Int32(int32(*b.EBS.IOPS))
		}
		if b.EBS.Throughput != nil {
			ebs.Throughput = aws.Int32(int32(*b.EBS.Throughput))
		}
		if b.EBS.VolumeSize != nil {
			gib := (b.EBS.VolumeSize.Value() + 1<<30 - 1) >> 30
			ebs.VolumeSize = aws.Int32(int32(gib))
		}
		data.BlockDeviceMappings = append(data.BlockDeviceMappings, ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: b.DeviceName, Ebs: ebs})
	}
	return &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ec2Tags(tags)}},
	}
}

// networkInterfaces are the launch template's network interfaces, as Karpenter's
// generateNetworkInterfaces makes them: the NodeClass's networkInterfaces when it has any; else
// an EFA interface on each network card (the first the primary) for claims requesting EFA; else
// the primary interface alone, when a setting needs it (a public IP choice, prefixes, connection
// tracking, an IPv6 cluster). Nil when none is needed: the instance then gets the subnet's
// defaults and the security groups directly. Every interface holds the security groups; EFA-only
// interfaces, which carry no IP traffic, get no public IP, prefixes, IPv6 address or connection
// tracking (EC2 refuses IP settings on them).
func networkInterfaces(s *launchSettings) []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
	var conntrack *ec2types.ConnectionTrackingSpecificationRequest
	if ct := s.ConnectionTracking; ct != nil {
		conntrack = &ec2types.ConnectionTrackingSpecificationRequest{
			TcpEstablishedTimeout: ct.TCPEstablishedTimeout, UdpStreamTimeout: ct.UDPStreamTimeout, UdpTimeout: ct.UDPTimeout,
		}
	}
	// ipInterface is an interface carrying IP traffic, with the NodeClass's IP settings.
	ipInterface := func(card, device int32, interfaceType *string) ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
		ni := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			NetworkCardIndex: aws.Int32(card), DeviceIndex: aws.Int32(device), InterfaceType: interfaceType,
			Groups: s.SecurityGroupIDs, AssociatePublicIpAddress: s.PublicIP, ConnectionTrackingSpecification: conntrack,
		}
		if s.IPv6 {
			ni.PrimaryIpv6, ni.Ipv6AddressCount, ni.Ipv6PrefixCount = aws.Bool(true), aws.Int32(1), s.IPPrefixCount
		} else {
			ni.Ipv4PrefixCount = s.IPPrefixCount
		}
		return ni
	}
	var out []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest
	switch {
	case len(s.NetworkInterfaces) > 0:
		for _, ni := range s.NetworkInterfaces {
			if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
				out = append(out, ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
					NetworkCardIndex: aws.Int32(ni.NetworkCardIndex), DeviceIndex: aws.Int32(ni.DeviceIndex),
					InterfaceType: aws.String(string(ni.InterfaceType)), Groups: s.SecurityGroupIDs,
				})
				continue
			}
			out = append(out, ipInterface(ni.NetworkCardIndex, ni.DeviceIndex, aws.String(string(ni.InterfaceType))))
		}
	case s.EFAInterfaces > 0:
		for i := range s.EFAInterfaces {
			device := int32(1)
			if i == 0 {
				device = 0
			}
			out = append(out, ipInterface(int32(i), device, aws.String(string(ec2types.NetworkInterfaceTypeEfa))))
		}
	case s.PublicIP != nil || s.IPPrefixCount != nil || s.ConnectionTracking != nil || s.IPv6:
		primary := ipInterface(0, 0, nil)
		primary.NetworkCardIndex = nil // the default card, as before these settings existed
		out = append(out, primary)
	}
	return out
}

// mergeTags returns the union of tag maps; later maps win.
func mergeTags(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// ec2Tags converts a map to EC2 tags sorted by key.
func ec2Tags(m map[string]string) []ec2types.Tag {
	out := make([]ec2types.Tag, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

// tagMap converts EC2 tags to a map.
func tagMap(tags []ec2types.Tag) map[string]string {
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

// deleteForNodeClass deletes the cluster's launch templates of a NodeClass, and then its user
// data size.
func (l *launchTemplates) deleteForNodeClass(ctx context.Context, nodeClass string) error {
	if err := l.deleteWhere(ctx, func(lt ec2types.LaunchTemplate) bool { return tagMap(lt.Tags)[TagNodeClass] == nodeClass }); err != nil {
		return err
	}
	metrics.ForgetNodeClassUserData(nodeClass)
	return nil
}

// garbageCollect deletes the cluster's launch templates not used for longer than idle (those
// this process never used count from its start).
func (l *launchTemplates) garbageCollect(ctx context.Context, started time.Time, idle time.Duration) error {
	now := l.provider.opts.Clock.Now()
	return l.deleteWhere(ctx, func(lt ec2types.LaunchTemplate) bool {
		l.mu.Lock()
		last, ok := l.known[aws.ToString(lt.LaunchTemplateName)]
		l.mu.Unlock()
		if !ok {
			last = started
		}
		return now.Sub(last) >= idle
	})
}

func (l *launchTemplates) deleteWhere(ctx context.Context, match func(ec2types.LaunchTemplate) bool) error {
	pages := ec2.NewDescribeLaunchTemplatesPaginator(l.provider.clients.EC2, &ec2.DescribeLaunchTemplatesInput{
		Filters: []ec2types.Filter{{Name: aws.String("tag:" + TagCluster), Values: []string{l.provider.opts.ClusterName}}},
	})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing launch templates: %w", err)
		}
		for _, lt := range out.LaunchTemplates {
			if !strings.HasPrefix(aws.ToString(lt.LaunchTemplateName), LaunchTemplatePrefix) || !match(lt) {
				continue
			}
			if _, err := l.provider.clients.EC2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: lt.LaunchTemplateId}); err != nil && !isNotFound(err) {
				return fmt.Errorf("deleting launch template %s: %w", aws.ToString(lt.LaunchTemplateName), err)
			}
			l.mu.Lock()
			delete(l.known, aws.ToString(lt.LaunchTemplateName))
			l.mu.Unlock()
		}
	}
	return nil
}
