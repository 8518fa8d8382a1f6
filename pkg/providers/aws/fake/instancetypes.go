package fake

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
)

// SetInstanceTypes replaces the instance types DescribeInstanceTypes, offerings, spot prices,
// Pricing and CreateFleet know.
func (a *AWS) SetInstanceTypes(entries []catalog.Entry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.setTypes(entries)
}

func (a *AWS) setTypes(entries []catalog.Entry) {
	a.types = append([]catalog.Entry(nil), entries...)
	sort.Slice(a.types, func(i, j int) bool { return a.types[i].Name < a.types[j].Name })
	a.typeIndex = make(map[string]int, len(a.types))
	for i, e := range a.types {
		a.typeIndex[e.Name] = i
	}
}

// SetProcessorFeatures sets the ProcessorInfo.SupportedFeatures DescribeInstanceTypes reports
// for the instance type, such as nested-virtualization or amd-sev-snp. The catalog holds no such
// fact, so by default no type reports any. CreateFleet refuses to launch a type from a launch
// template enabling nested virtualization unless it reports nested-virtualization, as EC2 does.
func (a *AWS) SetProcessorFeatures(instanceType string, features ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.processorFeatures[instanceType] = slices.Clone(features)
}

// SetNitroEnclavesSupported makes DescribeInstanceTypes report NitroEnclavesSupport supported
// for the instance types. The catalog holds no such fact, so by default every type reports
// unsupported. CreateFleet refuses to launch a type from a launch template enabling Nitro
// Enclaves unless it supports them, as EC2 does.
func (a *AWS) SetNitroEnclavesSupported(instanceTypes ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range instanceTypes {
		a.nitroEnclaves[t] = true
	}
}

// RemoveOffering makes the instance type not offered in the zone: DescribeInstanceTypeOfferings
// and DescribeSpotPriceHistory omit it and CreateFleet fails it with Unsupported.
func (a *AWS) RemoveOffering(instanceType, zone string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.removed[pool{instanceType: instanceType, zone: zone}] = true
}

// SetSpotServiceLinkedRole says whether the account has the EC2 Spot service-linked role (or may
// create it). Without it, every spot launch of CreateFleet fails with
// AuthFailure.ServiceLinkedRoleCreationNotPermitted, as EC2 does; on-demand launches work.
func (a *AWS) SetSpotServiceLinkedRole(exists bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.noSpotRole = !exists
}

// SetInsufficientCapacity marks (out = true) or clears the pool of the instance type in the zone
// for the capacity type (spot or on-demand) as out of capacity: CreateFleet answers
// InsufficientInstanceCapacity for it.
func (a *AWS) SetInsufficientCapacity(instanceType, zone, capacityType string, out bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := pool{instanceType: instanceType, zone: zone, capacityType: capacityType}
	if out {
		a.ice[p] = true
	} else {
		delete(a.ice, p)
	}
}

// SetPoolCapacity limits the pool of the instance type in the zone for the capacity type to n
// more instances: CreateFleet launches at most n there, then answers
// InsufficientInstanceCapacity for it, as a pool running dry does, so a fleet asking for more
// is partly fulfilled (from its other pools, or not at all). n < 0 lifts the limit.
func (a *AWS) SetPoolCapacity(instanceType, zone, capacityType string, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := pool{instanceType: instanceType, zone: zone, capacityType: capacityType}
	if n < 0 {
		delete(a.poolCapacity, p)
	} else {
		a.poolCapacity[p] = n
	}
}

// poolRoomLocked is how many of want instances the pool can launch now.
func (a *AWS) poolRoomLocked(p pool, want int) int {
	if a.ice[p] {
		return 0
	}
	if n, limited := a.poolCapacity[p]; limited {
		return min(n, want)
	}
	return want
}

func (a *AWS) entry(name string) (catalog.Entry, bool) {
	i, ok := a.typeIndex[name]
	if !ok {
		return catalog.Entry{}, false
	}
	return a.types[i], true
}

// offeredZonesLocked is every zone of the region and of the seeded subnets.
func (a *AWS) offeredZonesLocked() []string {
	zones := append([]string(nil), a.opts.Zones...)
	for _, s := range a.subnets {
		if !slices.Contains(zones, s.Zone) {
			zones = append(zones, s.Zone)
		}
	}
	return zones
}

func (a *AWS) offeredLocked(instanceType, zone string) bool {
	return !a.removed[pool{instanceType: instanceType, zone: zone}]
}

// spotSupported says whether spot capacity exists for the type: the catalog has no spot flag,
// and spot prices derive from on-demand ones, so priced types support spot.
func spotSupported(e catalog.Entry) bool { return e.HasPrice() }

// ec2Arch is the EC2 architecture of a catalog (Kubernetes) architecture.
func ec2Arch(arch string) string {
	if arch == "amd64" {
		return "x86_64"
	}
	return arch
}

var manufacturers = map[string]string{"intel": "Intel", "amd": "AMD", "aws": "AWS", "nvidia": "NVIDIA", "habana": "Habana", "qualcomm": "Qualcomm", "xilinx": "Xilinx"}

func manufacturer(m string) string {
	if v, ok := manufacturers[m]; ok {
		return v
	}
	return m
}

type xmlInstanceTypeInfo struct {
	InstanceType                  string                   `xml:"instanceType"`
	CurrentGeneration             bool                     `xml:"currentGeneration"`
	FreeTierEligible              bool                     `xml:"freeTierEligible"`
	SupportedUsageClasses         []string                 `xml:"supportedUsageClasses>item"`
	SupportedRootDeviceTypes      []string                 `xml:"supportedRootDeviceTypes>item"`
	SupportedVirtualizationTypes  []string                 `xml:"supportedVirtualizationTypes>item"`
	BareMetal                     bool                     `xml:"bareMetal"`
	Hypervisor                    string                   `xml:"hypervisor,omitempty"`
	ProcessorInfo                 xmlProcessorInfo         `xml:"processorInfo"`
	VCpuInfo                      xmlVCpuInfo              `xml:"vCpuInfo"`
	MemoryInfo                    xmlMemory                `xml:"memoryInfo"`
	InstanceStorageSupported      bool                     `xml:"instanceStorageSupported"`
	InstanceStorageInfo           *xmlInstanceStorageInfo  `xml:"instanceStorageInfo,omitempty"`
	EbsInfo                       xmlEbsInfo               `xml:"ebsInfo"`
	NetworkInfo                   xmlNetworkInfo           `xml:"networkInfo"`
	GpuInfo                       *xmlGpuInfo              `xml:"gpuInfo,omitempty"`
	InferenceAcceleratorInfo      *xmlInferenceAccelerator `xml:"inferenceAcceleratorInfo,omitempty"`
	NeuronInfo                    *xmlNeuronInfo           `xml:"neuronInfo,omitempty"`
	BurstablePerformanceSupported bool                     `xml:"burstablePerformanceSupported"`
	DedicatedHostsSupported       bool                     `xml:"dedicatedHostsSupported"`
	AutoRecoverySupported         bool                     `xml:"autoRecoverySupported"`
	SupportedBootModes            []string                 `xml:"supportedBootModes>item"`
	NitroEnclavesSupport          string                   `xml:"nitroEnclavesSupport"`
	PlacementGroupInfo            struct {
		SupportedStrategies []string `xml:"supportedStrategies>item"`
	} `xml:"placementGroupInfo"`
}

type xmlProcessorInfo struct {
	SupportedArchitectures   []string `xml:"supportedArchitectures>item"`
	SustainedClockSpeedInGhz string   `xml:"sustainedClockSpeedInGhz,omitempty"`
	Manufacturer             string   `xml:"manufacturer,omitempty"`
	SupportedFeatures        []string `xml:"supportedFeatures>item,omitempty"`
}

type xmlVCpuInfo struct {
	DefaultVCpus int `xml:"defaultVCpus"`
}

type xmlMemory struct {
	SizeInMiB int64 `xml:"sizeInMiB"`
}

type xmlInstanceStorageInfo struct {
	TotalSizeInGB int64     `xml:"totalSizeInGB"`
	Disks         []xmlDisk `xml:"disks>item"`
	NvmeSupport   string    `xml:"nvmeSupport"`
}

type xmlDisk struct {
	SizeInGB int64  `xml:"sizeInGB"`
	Count    int    `xml:"count"`
	Type     string `xml:"type"`
}

type xmlEbsInfo struct {
	EbsOptimizedSupport string               `xml:"ebsOptimizedSupport"`
	EncryptionSupport   string               `xml:"encryptionSupport"`
	EbsOptimizedInfo    *xmlEbsOptimizedInfo `xml:"ebsOptimizedInfo,omitempty"`
	NvmeSupport         string               `xml:"nvmeSupport"`
}

type xmlEbsOptimizedInfo struct {
	BaselineBandwidthInMbps int64 `xml:"baselineBandwidthInMbps"`
	MaximumBandwidthInMbps  int64 `xml:"maximumBandwidthInMbps"`
}

type xmlNetworkInfo struct {
	NetworkPerformance        string               `xml:"networkPerformance,omitempty"`
	MaximumNetworkInterfaces  int                  `xml:"maximumNetworkInterfaces,omitempty"`
	MaximumNetworkCards       int                  `xml:"maximumNetworkCards"`
	DefaultNetworkCardIndex   int                  `xml:"defaultNetworkCardIndex"`
	NetworkCards              []xmlNetworkCardInfo `xml:"networkCards>item"`
	Ipv4AddressesPerInterface int                  `xml:"ipv4AddressesPerInterface,omitempty"`
	Ipv6AddressesPerInterface int                  `xml:"ipv6AddressesPerInterface,omitempty"`
	Ipv6Supported             bool                 `xml:"ipv6Supported"`
	EnaSupport                string               `xml:"enaSupport"`
	EfaSupported              bool                 `xml:"efaSupported"`
	EfaInfo                   *xmlEfaInfo          `xml:"efaInfo,omitempty"`
}

type xmlNetworkCardInfo struct {
	NetworkCardIndex         int    `xml:"networkCardIndex"`
	NetworkPerformance       string `xml:"networkPerformance,omitempty"`
	MaximumNetworkInterfaces int    `xml:"maximumNetworkInterfaces,omitempty"`
	BaselineBandwidthInGbps  string `xml:"baselineBandwidthInGbps,omitempty"`
	PeakBandwidthInGbps      string `xml:"peakBandwidthInGbps,omitempty"`
}

type xmlEfaInfo struct {
	MaximumEfaInterfaces int `xml:"maximumEfaInterfaces"`
}

type xmlGpuInfo struct {
	Gpus                []xmlGpu `xml:"gpus>item"`
	TotalGpuMemoryInMiB int64    `xml:"totalGpuMemoryInMiB"`
}

type xmlGpu struct {
	Name         string     `xml:"name"`
	Manufacturer string     `xml:"manufacturer"`
	Count        int        `xml:"count"`
	MemoryInfo   *xmlMemory `xml:"memoryInfo,omitempty"`
}

type xmlInferenceAccelerator struct {
	Accelerators []xmlInferenceDevice `xml:"accelerators>item"`
}

type xmlInferenceDevice struct {
	Count        int    `xml:"count"`
	Name         string `xml:"name"`
	Manufacturer string `xml:"manufacturer"`
}

type xmlNeuronInfo struct {
	NeuronDevices []xmlNeuronDevice `xml:"neuronDevices>item"`
}

type xmlNeuronDevice struct {
	Count    int    `xml:"count"`
	Name     string `xml:"name"`
	CoreInfo struct {
		Count int `xml:"count"`
	} `xml:"coreInfo"`
}

// gbps formats megabits per second as EC2's gigabits (a decimal).
func gbps(mbps int64) string { return strconv.FormatFloat(float64(mbps)/1000, 'f', -1, 64) }

// instanceTypeInfo maps a catalog entry and its processor features to EC2's InstanceTypeInfo.
// Names of GPUs and accelerators are the catalog's (lower kebab case); manufacturers get EC2's
// spelling (NVIDIA, AWS, Intel, …). Previous generation means generation 3 or older. The catalog
// does not count network cards: as EC2's types attach one EFA per card, a type has as many cards
// as EFA interfaces (at least one), each with the default card's interfaces.
func instanceTypeInfo(e catalog.Entry, processorFeatures []string, nitroEnclaves bool, strategies []string) xmlInstanceTypeInfo {
	nitro := e.Hypervisor == "nitro" || e.BareMetal
	x := xmlInstanceTypeInfo{
		InstanceType:                  e.Name,
		CurrentGeneration:             e.Generation == 0 || e.Generation > 3,
		SupportedUsageClasses:         []string{"on-demand"},
		SupportedRootDeviceTypes:      []string{"ebs"},
		SupportedVirtualizationTypes:  []string{"hvm"},
		BareMetal:                     e.BareMetal,
		Hypervisor:                    e.Hypervisor,
		VCpuInfo:                      xmlVCpuInfo{DefaultVCpus: e.VCPU},
		MemoryInfo:                    xmlMemory{SizeInMiB: e.MemoryMiB},
		BurstablePerformanceSupported: e.Burstable,
		AutoRecoverySupported:         !e.BareMetal && e.LocalNVMeGiB == 0,
		DedicatedHostsSupported:       true,
		SupportedBootModes:            []string{"uefi"},
		NitroEnclavesSupport:          "unsupported",
		ProcessorInfo: xmlProcessorInfo{
			SupportedArchitectures: []string{ec2Arch(e.Arch)},
			Manufacturer:           manufacturer(e.CPUManufacturer),
			SupportedFeatures:      processorFeatures,
		},
	}
	if nitroEnclaves {
		x.NitroEnclavesSupport = "supported"
	}
	x.PlacementGroupInfo.SupportedStrategies = strategies
	if e.Arch == "amd64" {
		x.SupportedBootModes = []string{"legacy-bios", "uefi"}
	}
	if spotSupported(e) {
		x.SupportedUsageClasses = append(x.SupportedUsageClasses, "spot")
	}
	if e.CPUClockMHz > 0 {
		x.ProcessorInfo.SustainedClockSpeedInGhz = strconv.FormatFloat(float64(e.CPUClockMHz)/1000, 'f', -1, 64)
	}
	if e.LocalNVMeGiB > 0 {
		x.InstanceStorageSupported = true
		x.InstanceStorageInfo = &xmlInstanceStorageInfo{TotalSizeInGB: e.LocalNVMeGiB, NvmeSupport: "required",
			Disks: []xmlDisk{{SizeInGB: e.LocalNVMeGiB, Count: 1, Type: "ssd"}}}
	}
	x.EbsInfo = xmlEbsInfo{EbsOptimizedSupport: "supported", EncryptionSupport: "supported", NvmeSupport: "unsupported"}
	if nitro {
		x.EbsInfo.NvmeSupport = "required"
	}
	if e.EBSBandwidthMbps > 0 {
		x.EbsInfo.EbsOptimizedSupport = "default"
		x.EbsInfo.EbsOptimizedInfo = &xmlEbsOptimizedInfo{BaselineBandwidthInMbps: e.EBSBandwidthMbps, MaximumBandwidthInMbps: e.EBSBandwidthMbps}
	}
	card := xmlNetworkCardInfo{MaximumNetworkInterfaces: e.ENIs}
	n := xmlNetworkInfo{
		MaximumNetworkInterfaces:  e.ENIs,
		MaximumNetworkCards:       max(e.EFAInterfaces, 1),
		Ipv4AddressesPerInterface: e.IPv4PerENI,
		Ipv6AddressesPerInterface: e.IPv4PerENI,
		Ipv6Supported:             nitro,
		EnaSupport:                "supported",
		EfaSupported:              e.EFAInterfaces > 0,
	}
	if nitro {
		n.EnaSupport = "required"
	}
	if e.NetworkBandwidthMbps > 0 {
		perf := gbps(e.NetworkBandwidthMbps) + " Gigabit"
		if e.Burstable {
			perf = "Up to " + perf
		}
		n.NetworkPerformance = perf
		card.NetworkPerformance = perf
		card.BaselineBandwidthInGbps = gbps(e.NetworkBandwidthMbps)
		card.PeakBandwidthInGbps = gbps(e.NetworkBandwidthMbps)
	}
	for i := range n.MaximumNetworkCards {
		card.NetworkCardIndex = i
		n.NetworkCards = append(n.NetworkCards, card)
	}
	if e.EFAInterfaces > 0 {
		n.EfaInfo = &xmlEfaInfo{MaximumEfaInterfaces: e.EFAInterfaces}
	}
	x.NetworkInfo = n
	if e.GPUCount > 0 {
		g := xmlGpu{Name: e.GPUName, Manufacturer: manufacturer(e.GPUManufacturer), Count: e.GPUCount}
		if e.GPUMemoryMiB > 0 {
			g.MemoryInfo = &xmlMemory{SizeInMiB: e.GPUMemoryMiB}
		}
		x.GpuInfo = &xmlGpuInfo{Gpus: []xmlGpu{g}, TotalGpuMemoryInMiB: e.GPUMemoryMiB * int64(e.GPUCount)}
	}
	if e.AcceleratorCount > 0 {
		if !strings.HasPrefix(e.AcceleratorName, "trainium") {
			x.InferenceAcceleratorInfo = &xmlInferenceAccelerator{Accelerators: []xmlInferenceDevice{{
				Count: e.AcceleratorCount, Name: e.AcceleratorName, Manufacturer: manufacturer(e.AcceleratorManufacturer)}}}
		}
		if e.NeuronCores > 0 {
			d := xmlNeuronDevice{Count: e.AcceleratorCount, Name: e.AcceleratorName}
			d.CoreInfo.Count = e.NeuronCores / e.AcceleratorCount
			x.NeuronInfo = &xmlNeuronInfo{NeuronDevices: []xmlNeuronDevice{d}}
		}
	}
	return x
}

func (a *AWS) describeInstanceTypes(q *queryCall) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	names := q.list("InstanceType")
	filters := q.filters()
	size, err := maxResults(q, 5, 100)
	if err != nil {
		return nil, err
	}
	if size == 0 {
		size = 100
	}
	attr := func(e *catalog.Entry) func(string) ([]string, bool) {
		return func(name string) ([]string, bool) {
			if e == nil {
				e = &catalog.Entry{}
			}
			switch name {
			case "instance-type":
				return []string{e.Name}, true
			case "current-generation":
				return []string{strconv.FormatBool(e.Generation == 0 || e.Generation > 3)}, true
			case "processor-info.supported-architecture":
				return []string{ec2Arch(e.Arch)}, true
			case "processor-info.supported-features":
				return a.processorFeatures[e.Name], true
			case "supported-usage-class":
				if spotSupported(*e) {
					return []string{"on-demand", "spot"}, true
				}
				return []string{"on-demand"}, true
			case "bare-metal":
				return []string{strconv.FormatBool(e.BareMetal)}, true
			case "hypervisor":
				return []string{e.Hypervisor}, true
			case "burstable-performance-supported":
				return []string{strconv.FormatBool(e.Burstable)}, true
			case "instance-storage-supported":
				return []string{strconv.FormatBool(e.LocalNVMeGiB > 0)}, true
			case "vcpu-info.default-vcpus":
				return []string{strconv.Itoa(e.VCPU)}, true
			case "memory-info.size-in-mib":
				return []string{strconv.FormatInt(e.MemoryMiB, 10)}, true
			}
			return nil, false
		}
	}
	if err := validateFilters(filters, attr(nil)); err != nil {
		return nil, err
	}
	var unknown []string
	for _, n := range names {
		if _, ok := a.entry(n); !ok {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return nil, badRequest("InvalidInstanceType", "The following supplied instance types do not exist: [%s]", strings.Join(unknown, ", "))
	}
	var matched []int
	for i := range a.types {
		e := &a.types[i]
		if len(names) > 0 && !slices.Contains(names, e.Name) {
			continue
		}
		if ok, err := matchFilters(filters, nil, attr(e)); err != nil {
			return nil, err
		} else if ok {
			matched = append(matched, i)
		}
	}
	start, end, next, err := page(len(matched), q.get("NextToken"), size)
	if err != nil {
		return nil, err
	}
	out := make([]xmlInstanceTypeInfo, 0, end-start)
	for _, i := range matched[start:end] {
		out = append(out, instanceTypeInfo(a.types[i], a.processorFeatures[a.types[i].Name], a.nitroEnclaves[a.types[i].Name], a.placementStrategiesLocked(a.types[i].Name)))
	}
	return struct {
		InstanceTypes []xmlInstanceTypeInfo `xml:"instanceTypeSet>item"`
		NextToken     string                `xml:"nextToken,omitempty"`
	}{out, next}, nil
}

type xmlOffering struct {
	InstanceType string `xml:"instanceType"`
	LocationType string `xml:"locationType"`
	Location     string `xml:"location"`
}

func (a *AWS) describeInstanceTypeOfferings(q *queryCall) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	filters := q.filters()
	size, err := maxResults(q, 5, 1000)
	if err != nil {
		return nil, err
	}
	locationType := q.get("LocationType")
	if locationType == "" {
		locationType = "region"
	}
	var locations []string
	switch locationType {
	case "region":
		locations = []string{a.opts.Region}
	case "availability-zone":
		locations = a.offeredZonesLocked()
	case "availability-zone-id":
		for _, z := range a.offeredZonesLocked() {
			locations = append(locations, a.zoneID(z))
		}
	default:
		return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter locationType is invalid. Valid values are region, availability-zone, availability-zone-id.", locationType)
	}
	attr := func(o *xmlOffering) func(string) ([]string, bool) {
		return func(name string) ([]string, bool) {
			if o == nil {
				o = &xmlOffering{}
			}
			switch name {
			case "instance-type":
				return []string{o.InstanceType}, true
			case "location":
				return []string{o.Location}, true
			}
			return nil, false
		}
	}
	if err := validateFilters(filters, attr(nil)); err != nil {
		return nil, err
	}
	var out []xmlOffering
	for _, e := range a.types {
		for li, loc := range locations {
			switch locationType {
			case "region":
				if !slices.ContainsFunc(a.offeredZonesLocked(), func(z string) bool { return a.offeredLocked(e.Name, z) }) {
					continue
				}
			default:
				if !a.offeredLocked(e.Name, a.offeredZonesLocked()[li]) {
					continue
				}
			}
			o := xmlOffering{InstanceType: e.Name, LocationType: locationType, Location: loc}
			if ok, err := matchFilters(filters, nil, attr(&o)); err != nil {
				return nil, err
			} else if ok {
				out = append(out, o)
			}
		}
	}
	start, end, next, err := page(len(out), q.get("NextToken"), size)
	if err != nil {
		return nil, err
	}
	return struct {
		Offerings []xmlOffering `xml:"instanceTypeOfferingSet>item"`
		NextToken string        `xml:"nextToken,omitempty"`
	}{out[start:end], next}, nil
}

type xmlSpotPrice struct {
	AvailabilityZone   string `xml:"availabilityZone"`
	AvailabilityZoneID string `xml:"availabilityZoneId"`
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
}

// spotPrice is the modelled spot price of an instance type in a zone.
func spotPrice(e catalog.Entry, zone string) float64 {
	return catalog.SpotPrice(e.OnDemandPrice, e.Family, zone)
}

func (a *AWS) describeSpotPriceHistory(q *queryCall) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	filters := q.filters()
	size, err := maxResults(q, 1, 1000)
	if err != nil {
		return nil, err
	}
	if size == 0 {
		size = 1000
	}
	types, products := q.list("InstanceType"), q.list("ProductDescription")
	zone := q.get("AvailabilityZone")
	for _, p := range []string{"StartTime", "EndTime"} {
		if q.has(p) {
			if _, err := parseTime(q.get(p)); err != nil {
				return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter %s is invalid.", q.get(p), p)
			}
		}
	}
	attr := func(s *xmlSpotPrice) func(string) ([]string, bool) {
		return func(name string) ([]string, bool) {
			if s == nil {
				s = &xmlSpotPrice{}
			}
			switch name {
			case "instance-type":
				return []string{s.InstanceType}, true
			case "availability-zone":
				return []string{s.AvailabilityZone}, true
			case "product-description":
				return []string{s.ProductDescription, "Linux/UNIX (Amazon VPC)"}, true
			case "spot-price":
				return []string{s.SpotPrice}, true
			}
			return nil, false
		}
	}
	if err := validateFilters(filters, attr(nil)); err != nil {
		return nil, err
	}
	if len(products) > 0 && !slices.ContainsFunc(products, func(p string) bool { return p == "Linux/UNIX" || p == "Linux/UNIX (Amazon VPC)" }) {
		return struct {
			Prices []xmlSpotPrice `xml:"spotPriceHistorySet>item"`
		}{}, nil
	}
	ts := isoTime(a.now().Truncate(time.Hour))
	var out []xmlSpotPrice
	zones := a.offeredZonesLocked()
	for _, e := range a.types {
		if !spotSupported(e) || (len(types) > 0 && !slices.Contains(types, e.Name)) {
			continue
		}
		for _, z := range zones {
			if (zone != "" && z != zone) || !a.offeredLocked(e.Name, z) {
				continue
			}
			s := xmlSpotPrice{AvailabilityZone: z, AvailabilityZoneID: a.zoneID(z), InstanceType: e.Name, ProductDescription: "Linux/UNIX",
				SpotPrice: fmt.Sprintf("%.6f", spotPrice(e, z)), Timestamp: ts}
			if ok, err := matchFilters(filters, nil, attr(&s)); err != nil {
				return nil, err
			} else if ok {
				out = append(out, s)
			}
		}
	}
	start, end, next, err := page(len(out), q.get("NextToken"), size)
	if err != nil {
		return nil, err
	}
	return struct {
		Prices    []xmlSpotPrice `xml:"spotPriceHistorySet>item"`
		NextToken string         `xml:"nextToken,omitempty"`
	}{out[start:end], next}, nil
}
