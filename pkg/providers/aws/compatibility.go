package aws

import (
	"encoding/json"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
)

// typeFacts are what DescribeInstanceTypes says of an instance type that the catalog does not
// hold, and that some NodeClass settings need.
type typeFacts struct {
	// networkCards maps each network card's index to its maximum number of interfaces.
	networkCards map[int32]int32
	// enaUnsupported says the type cannot attach ENA interfaces.
	enaUnsupported bool
	// nestedVirtualization says ProcessorInfo.SupportedFeatures lists nested-virtualization.
	nestedVirtualization bool
	// nitroEnclaves says NitroEnclavesSupport is supported.
	nitroEnclaves bool
	// placementStrategies are PlacementGroupInfo.SupportedStrategies: the placement group
	// strategies the type can launch into.
	placementStrategies []string
}

// factsOf reads the facts of an instance type description.
func factsOf(info ec2types.InstanceTypeInfo) typeFacts {
	f := typeFacts{networkCards: map[int32]int32{}}
	if n := info.NetworkInfo; n != nil {
		f.enaUnsupported = n.EnaSupport == ec2types.EnaSupportUnsupported
		for _, card := range n.NetworkCards {
			f.networkCards[aws.ToInt32(card.NetworkCardIndex)] = aws.ToInt32(card.MaximumNetworkInterfaces)
		}
	}
	if p := info.ProcessorInfo; p != nil {
		f.nestedVirtualization = slices.Contains(p.SupportedFeatures, ec2types.SupportedAdditionalProcessorFeatureNestedVirtualization)
	}
	f.nitroEnclaves = info.NitroEnclavesSupport == ec2types.NitroEnclavesSupportSupported
	if pg := info.PlacementGroupInfo; pg != nil {
		for _, s := range pg.SupportedStrategies {
			f.placementStrategies = append(f.placementStrategies, string(s))
		}
	}
	return f
}

// catalogFacts stand in for DescribeInstanceTypes when the shipped catalog is in use. The
// catalog knows the interfaces of the default card only (taken as card 0, the only one), and
// not ENA support: Nitro and bare metal types, which all support it, are taken to, others not.
// Nor does it know which types support nested virtualization or Nitro Enclaves, so none is
// taken to, nor their placement group strategies (catalogStrategies). Each guess
// can only leave a type out, never offer one that cannot launch.
func catalogFacts(e catalog.Entry) typeFacts {
	f := typeFacts{networkCards: map[int32]int32{}, enaUnsupported: e.Hypervisor != "nitro" && !e.BareMetal,
		placementStrategies: catalogStrategies(e.Family, e.Burstable)}
	if e.ENIs > 0 {
		f.networkCards[0] = int32(e.ENIs)
	}
	return f
}

// nodeClassTypeNeeds are the EC2NodeClass settings that limit or change its instance types, as
// Karpenter's instance type compatibility checks and capacity rules apply them.
type nodeClassTypeNeeds struct {
	NetworkInterfaces    []*awsv1.NetworkInterface `json:"networkInterfaces,omitempty"`
	ConnectionTracking   bool                      `json:"connectionTracking,omitempty"`
	NestedVirtualization bool                      `json:"nestedVirtualization,omitempty"`
	NitroEnclaves        bool                      `json:"nitroEnclaves,omitempty"`
	// PlacementGroupID and PlacementStrategy are the resolved placement group's: its
	// instance types support the strategy and are labelled with the ID.
	PlacementGroupID  string `json:"placementGroupID,omitempty"`
	PlacementStrategy string `json:"placementStrategy,omitempty"`
}

// typeNeedsOf returns the NodeClass's needs of its instance types.
func typeNeedsOf(nc *awsv1.EC2NodeClass) nodeClassTypeNeeds {
	return nodeClassTypeNeeds{
		NetworkInterfaces:    nc.Spec.NetworkInterfaces,
		ConnectionTracking:   nc.Spec.ConnectionTracking != nil,
		NestedVirtualization: nc.Spec.CPUOptions != nil && aws.ToString(nc.Spec.CPUOptions.NestedVirtualization) == string(ec2types.NestedVirtualizationSpecificationEnabled),
		NitroEnclaves:        enclavesEnabled(nc),
	}
}

// enclavesEnabled reports whether the NodeClass turns Nitro Enclaves on.
func enclavesEnabled(nc *awsv1.EC2NodeClass) bool {
	return nc.Spec.EnclaveOptions != nil && nc.Spec.EnclaveOptions.Enabled
}

// cacheKey distinguishes the instance type sets of different needs.
func (n nodeClassTypeNeeds) cacheKey() string {
	b, _ := json.Marshal(n) // plain structs always marshal
	return string(b)
}

// efaOnlyInterfaces counts the NodeClass's efa-only interfaces, on every network card and on
// the first (whose interfaces the VPC CNI uses).
func (n nodeClassTypeNeeds) efaOnlyInterfaces() (all, firstCard int) {
	for _, ni := range n.NetworkInterfaces {
		if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			all++
			if ni.NetworkCardIndex == 0 {
				firstCard++
			}
		}
	}
	return all, firstCard
}

// compatibleEntry reports whether an instance type can launch with the NodeClass's settings,
// and returns its entry as the NodeClass sees it. As Karpenter:
//   - networkInterfaces need a type that supports ENA, has each interface's network card with
//     more interfaces than its device index, and at least as many EFA interfaces as the
//     efa-only ones; those efa-only interfaces are then the type's vpc.amazonaws.com/efa
//     capacity (not its maximum), and one on the first network card is not left to the VPC CNI
//     (it lowers the ENI-limited pod count);
//   - connectionTracking needs a type built on Nitro (its hypervisor is nitro);
//   - cpuOptions.nestedVirtualization enabled needs a type whose DescribeInstanceTypes lists the
//     nested-virtualization processor feature;
//   - enclaveOptions enabled needs a type whose DescribeInstanceTypes says it supports Nitro
//     Enclaves;
//   - a placement group needs a type whose DescribeInstanceTypes lists its strategy
//     (supportsStrategy).
func (n nodeClassTypeNeeds) compatibleEntry(e catalog.Entry, f typeFacts) (catalog.Entry, bool) {
	if n.PlacementStrategy != "" && !f.supportsStrategy(n.PlacementStrategy) {
		return e, false
	}
	if n.NestedVirtualization && !f.nestedVirtualization {
		return e, false
	}
	if n.NitroEnclaves && !f.nitroEnclaves {
		return e, false
	}
	if n.ConnectionTracking && e.Hypervisor != "nitro" {
		return e, false
	}
	if n.NetworkInterfaces == nil {
		return e, true
	}
	if f.enaUnsupported {
		return e, false
	}
	for _, ni := range n.NetworkInterfaces {
		interfaces, ok := f.networkCards[ni.NetworkCardIndex]
		if !ok || interfaces <= ni.DeviceIndex {
			return e, false
		}
	}
	efaOnly, efaOnlyFirstCard := n.efaOnlyInterfaces()
	if efaOnly > e.EFAInterfaces {
		return e, false
	}
	e.EFAInterfaces = efaOnly
	// The first card holds the primary interface too, so a compatible type keeps at least one.
	if e.ENIs > efaOnlyFirstCard {
		e.ENIs -= efaOnlyFirstCard
	}
	return e, true
}
