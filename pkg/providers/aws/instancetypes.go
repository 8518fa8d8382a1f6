package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// typeCatalog is what the provider knows of the region's instance types: their facts, the
// zones each is offered in, and prices. Each part comes from the EC2 and Pricing APIs when
// they answer, and from the shipped catalog when they do not. It is safe for concurrent use.
type typeCatalog struct {
	mu sync.RWMutex
	// entries are the instance types, sorted by name.
	entries []catalog.Entry
	// fromAPI says entries came from DescribeInstanceTypes rather than the shipped catalog.
	fromAPI bool
	// facts are DescribeInstanceTypes' facts of each type the catalog does not hold; nil when
	// the entries are the shipped catalog's (catalogFacts then stand in).
	facts map[string]typeFacts
	// zones are the zones each type is offered in; nil means not read (every zone).
	zones map[string]map[string]bool
	// onDemand and spot prices, by type (and zone for spot); missing entries fall back to the
	// catalog's price and its modelled spot discount.
	onDemand map[string]float64
	spot     map[string]map[string]float64
	// version changes whenever any of the above does.
	version               uint64
	typesRead, pricesRead time.Time

	// sets caches the instance types built per NodeClass configuration and version.
	sets map[string][]*cloudprovider.InstanceType
}

// refreshInstanceTypes reads instance types and their zone offerings. On failure the previous
// facts (initially the shipped catalog) are kept and the error returned for logging.
func (p *Provider) refreshInstanceTypes(ctx context.Context) error {
	var infos []ec2types.InstanceTypeInfo
	pages := ec2.NewDescribeInstanceTypesPaginator(p.clients.EC2, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(100)})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing instance types: %w", err)
		}
		infos = append(infos, out.InstanceTypes...)
	}
	zones := map[string]map[string]bool{}
	offerings := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.clients.EC2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone, MaxResults: aws.Int32(1000),
	})
	for offerings.HasMorePages() {
		out, err := offerings.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing instance type offerings: %w", err)
		}
		for _, o := range out.InstanceTypeOfferings {
			t := string(o.InstanceType)
			if zones[t] == nil {
				zones[t] = map[string]bool{}
			}
			zones[t][aws.ToString(o.Location)] = true
		}
	}
	entries := make([]catalog.Entry, 0, len(infos))
	facts := make(map[string]typeFacts, len(infos))
	for _, info := range infos {
		if e, ok := entryOf(info); ok {
			entries = append(entries, e)
			facts[e.Name] = factsOf(info)
		}
	}
	if len(entries) == 0 {
		return errors.New("describing instance types: no usable instance type returned")
	}
	slices.SortFunc(entries, func(a, b catalog.Entry) int { return strings.Compare(a.Name, b.Name) })
	c := &p.types
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries, c.fromAPI, c.facts, c.zones, c.typesRead = entries, true, facts, zones, p.opts.Clock.Now()
	c.version++
	clear(c.sets)
	return nil
}

// entryOf turns an EC2 instance type description into a catalog entry: the API's facts over
// the shipped entry of the same name when there is one (for labels the API does not give,
// such as the network bandwidth of older types).
func entryOf(info ec2types.InstanceTypeInfo) (catalog.Entry, bool) {
	name := string(info.InstanceType)
	e, known := catalog.Lookup(name)
	if !known {
		e = catalog.Entry{Name: name}
		e.Family, e.Size, _ = strings.Cut(name, ".")
		i := strings.IndexFunc(e.Family, func(r rune) bool { return r >= '0' && r <= '9' })
		if i > 0 {
			e.Category = e.Family[:i]
			j := i
			for j < len(e.Family) && e.Family[j] >= '0' && e.Family[j] <= '9' {
				j++
			}
			e.Generation, _ = strconv.Atoi(e.Family[i:j])
		}
		e.Flex = strings.Contains(e.Family, "-flex")
	}
	if info.VCpuInfo != nil {
		e.VCPU = int(aws.ToInt32(info.VCpuInfo.DefaultVCpus))
	}
	if info.MemoryInfo != nil {
		e.MemoryMiB = aws.ToInt64(info.MemoryInfo.SizeInMiB)
	}
	if info.ProcessorInfo != nil {
		e.Arch = ""
		for _, a := range info.ProcessorInfo.SupportedArchitectures {
			if k := ec2Arch[string(a)]; k != "" {
				e.Arch = k
				break
			}
		}
		if m := aws.ToString(info.ProcessorInfo.Manufacturer); m != "" && e.CPUManufacturer == "" {
			e.CPUManufacturer = strings.ToLower(strings.Fields(m)[0])
		}
		if ghz := aws.ToFloat64(info.ProcessorInfo.SustainedClockSpeedInGhz); ghz > 0 {
			e.CPUClockMHz = int(ghz*1000 + 0.5)
		}
	}
	if h := string(info.Hypervisor); h != "" {
		e.Hypervisor = h
	}
	e.BareMetal = aws.ToBool(info.BareMetal)
	e.Burstable = aws.ToBool(info.BurstablePerformanceSupported)
	if g := info.GpuInfo; g != nil && len(g.Gpus) > 0 {
		e.GPUCount = 0
		for _, gpu := range g.Gpus {
			e.GPUCount += int(aws.ToInt32(gpu.Count))
		}
		if !known {
			e.GPUName = strings.ToLower(strings.ReplaceAll(aws.ToString(g.Gpus[0].Name), " ", "-"))
			e.GPUManufacturer = strings.ToLower(aws.ToString(g.Gpus[0].Manufacturer))
			if g.Gpus[0].MemoryInfo != nil {
				e.GPUMemoryMiB = int64(aws.ToInt32(g.Gpus[0].MemoryInfo.SizeInMiB))
			}
		}
	}
	if n := info.NetworkInfo; n != nil {
		e.ENIs = int(aws.ToInt32(n.MaximumNetworkInterfaces))
		if len(n.NetworkCards) > 0 && n.DefaultNetworkCardIndex != nil {
			for _, card := range n.NetworkCards {
				if aws.ToInt32(card.NetworkCardIndex) == aws.ToInt32(n.DefaultNetworkCardIndex) {
					e.ENIs = int(aws.ToInt32(card.MaximumNetworkInterfaces))
				}
			}
		}
		e.IPv4PerENI = int(aws.ToInt32(n.Ipv4AddressesPerInterface))
		if n.EfaInfo != nil {
			e.EFAInterfaces = int(aws.ToInt32(n.EfaInfo.MaximumEfaInterfaces))
		}
		if e.ENIs > 0 && e.IPv4PerENI > 0 {
			e.MaxPods = e.ENIs*(e.IPv4PerENI-1) + 2
		}
	}
	if s := info.InstanceStorageInfo; s != nil && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported {
		e.LocalNVMeGiB = aws.ToInt64(s.TotalSizeInGB)
	}
	if e.VCPU <= 0 || e.MemoryMiB <= 0 || e.Arch == "" {
		return e, false
	}
	return e, true
}

// refreshPrices reads on-demand prices from the Pricing API (unless the VPC is isolated) and
// spot prices from the spot price history. Each part that fails keeps its previous prices
// (initially the shipped catalog's) and is reported in the error.
func (p *Provider) refreshPrices(ctx context.Context) error {
	var errs []error
	var onDemand map[string]float64
	if !p.opts.IsolatedVPC {
		var err error
		if onDemand, err = p.onDemandPrices(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	spot, err := p.spotPrices(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	c := &p.types
	c.mu.Lock()
	defer c.mu.Unlock()
	if onDemand != nil {
		c.onDemand = onDemand
	}
	if spot != nil {
		c.spot = spot
	}
	c.pricesRead = p.opts.Clock.Now()
	c.version++
	clear(c.sets)
	return errors.Join(errs...)
}

// pricingDocument is the part of a Pricing API price list entry the provider reads.
type pricingDocument struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// onDemandPrices reads Linux, shared-tenancy on-demand prices of the region.
func (p *Provider) onDemandPrices(ctx context.Context) (map[string]float64, error) {
	filter := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}
	pages := pricing.NewGetProductsPaginator(p.clients.Pricing, &pricing.GetProductsInput{
		ServiceCode:   aws.String("AmazonEC2"),
		FormatVersion: aws.String("aws_v1"),
		MaxResults:    aws.Int32(100),
		Filters: []pricingtypes.Filter{
			filter("regionCode", p.clients.Region()),
			filter("serviceCode", "AmazonEC2"),
			filter("preInstalledSw", "NA"),
			filter("operatingSystem", "Linux"),
			filter("capacitystatus", "Used"),
			filter("marketoption", "OnDemand"),
			filter("tenancy", "Shared"),
		},
	})
	prices := map[string]float64{}
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading on-demand prices: %w", err)
		}
		for _, doc := range out.PriceList {
			var d pricingDocument
			if err := json.Unmarshal([]byte(doc), &d); err != nil {
				return nil, fmt.Errorf("reading on-demand prices: malformed price list entry: %w", err)
			}
			for _, term := range d.Terms.OnDemand {
				for _, dim := range term.PriceDimensions {
					if v, err := strconv.ParseFloat(dim.PricePerUnit["USD"], 64); err == nil && v > 0 && d.Product.Attributes.InstanceType != "" {
						prices[d.Product.Attributes.InstanceType] = v
					}
				}
			}
		}
	}
	if len(prices) == 0 {
		return nil, errors.New("reading on-demand prices: the Pricing API returned none")
	}
	return prices, nil
}

// spotPrices reads the current Linux spot price of each type in each zone.
func (p *Provider) spotPrices(ctx context.Context) (map[string]map[string]float64, error) {
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(p.clients.EC2, &ec2.DescribeSpotPriceHistoryInput{
		StartTime:           aws.Time(p.opts.Clock.Now()),
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
		MaxResults:          aws.Int32(1000),
	})
	prices := map[string]map[string]float64{}
	newest := map[[2]string]time.Time{}
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading spot prices: %w", err)
		}
		for _, sp := range out.SpotPriceHistory {
			t, zone := string(sp.InstanceType), aws.ToString(sp.AvailabilityZone)
			v, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
			if err != nil || v <= 0 {
				continue
			}
			key, ts := [2]string{t, zone}, aws.ToTime(sp.Timestamp)
			if prev, ok := newest[key]; ok && prev.After(ts) {
				continue
			}
			newest[key] = ts
			if prices[t] == nil {
				prices[t] = map[string]float64{}
			}
			prices[t][zone] = v
		}
	}
	return prices, nil
}

// Price is the price of an instance type in a zone: the API's when known, else the shipped
// catalog's (and its modelled spot discount). It reports false when the type is not offered
// in the zone or has no price.
func (c *typeCatalog) price(byName map[string]catalog.Entry, instanceType, zone, capacityType string) (float64, bool) {
	if c.zones != nil && !c.zones[instanceType][zone] {
		return 0, false
	}
	e, ok := byName[instanceType]
	if !ok {
		return 0, false
	}
	od, ok := c.onDemand[instanceType]
	if !ok {
		od = e.OnDemandPrice
	}
	switch capacityType {
	case karpv1.CapacityTypeOnDemand:
		return od, od > 0
	case karpv1.CapacityTypeSpot:
		if sp, ok := c.spot[instanceType][zone]; ok {
			return sp, true
		}
		if len(c.spot) > 0 {
			return 0, false // the region's history has no spot price for it: not offered as spot
		}
		if od <= 0 {
			return 0, false
		}
		return catalog.SpotPrice(od, e.Family, zone), true
	}
	return 0, false
}

// onDemandPrice is the on-demand price of an instance type: the Pricing API's when known, else
// the shipped catalog's; false when neither knows it.
func (p *Provider) onDemandPrice(instanceType string) (float64, bool) {
	c := &p.types
	c.mu.RLock()
	od, ok := c.onDemand[instanceType]
	c.mu.RUnlock()
	if ok {
		return od, true
	}
	if e, ok := p.entry(instanceType); ok && e.OnDemandPrice > 0 {
		return e.OnDemandPrice, true
	}
	return 0, false
}

// offeredIn reports whether EC2 offers the instance type in the zone (every zone when the
// offerings were not read).
func (p *Provider) offeredIn(instanceType, zone string) bool {
	c := &p.types
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.zones == nil || c.zones[instanceType][zone]
}

// ensureFresh reads instance types and prices when they were never read or are older than
// their refresh period. Failures are logged; the shipped catalog stands in.
func (p *Provider) ensureFresh(ctx context.Context) {
	c := &p.types
	c.mu.RLock()
	now := p.opts.Clock.Now()
	typesDue := c.typesRead.IsZero() || now.Sub(c.typesRead) >= p.opts.InstanceTypesRefresh
	pricesDue := c.pricesRead.IsZero() || now.Sub(c.pricesRead) >= p.opts.PricingRefresh
	c.mu.RUnlock()
	if !typesDue && !pricesDue {
		return
	}
	p.refreshMu.Lock()
	defer p.refreshMu.Unlock()
	c.mu.RLock()
	typesDue = c.typesRead.IsZero() || now.Sub(c.typesRead) >= p.opts.InstanceTypesRefresh
	pricesDue = c.pricesRead.IsZero() || now.Sub(c.pricesRead) >= p.opts.PricingRefresh
	c.mu.RUnlock()
	if typesDue {
		if err := p.refreshInstanceTypes(ctx); err != nil {
			log.FromContext(ctx).Error(err, "using the shipped instance-type catalog")
			c.mu.Lock()
			c.typesRead = now // retry at the next refresh, not on every call
			c.mu.Unlock()
		}
	}
	if pricesDue {
		if err := p.refreshPrices(ctx); err != nil {
			log.FromContext(ctx).Error(err, "using the shipped prices where AWS gave none")
		}
	}
}

// typeOptions are the options the NodeClass's instance types are built with, without zones
// and prices: its own settings, the provider's reserved ENIs and VM overhead, and the
// NodeClassCEL gate.
func (p *Provider) typeOptions(nc *awsv1.EC2NodeClass) cloudprovider.InstanceTypeOptions {
	opts := cloudprovider.OptionsFromNodeClass(nc)
	opts.ReservedENIs = p.opts.ReservedENIs
	overhead := p.opts.VMMemoryOverheadPercent
	opts.VMMemoryOverheadPercent = &overhead
	opts.KubeletExpressions = p.opts.NodeClassCEL
	return opts
}

// evaluateKubelet evaluates the NodeClass's kubelet expressions (the NodeClassCEL gate) for
// every instance type the region has, as Karpenter's AWS provider v1.15.2 does before a
// NodeClass may launch (pkg/providers/instancetype/instancetype.go,
// ValidateKubeletExpressions): an expression that fails for any of them is the error.
func (p *Provider) evaluateKubelet(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	opts := p.typeOptions(nc)
	if opts.Kubelet == nil || !opts.KubeletExpressions || len(opts.Kubelet.Expressions()) == 0 {
		return nil
	}
	p.ensureFresh(ctx)
	c := &p.types
	c.mu.RLock()
	entries := c.entries
	c.mu.RUnlock()
	return opts.EvaluateKubelet(entries)
}

// resolvedKubelet is the NodeClass's kubelet configuration as nodes of the instance type get
// it, its expressions evaluated for that type from the same facts its capacity was built from
// (InstanceTypeOptions.ResolveKubelet); without expressions, spec.kubelet itself.
func (p *Provider) resolvedKubelet(nc *awsv1.EC2NodeClass, instanceType string) (*awsv1.KubeletConfiguration, error) {
	opts := p.typeOptions(nc)
	if opts.Kubelet == nil || !opts.KubeletExpressions || len(opts.Kubelet.Expressions()) == 0 {
		return nc.Spec.Kubelet, nil
	}
	c := &p.types
	c.mu.RLock()
	i, found := slices.BinarySearchFunc(c.entries, instanceType, func(e catalog.Entry, name string) int { return strings.Compare(e.Name, name) })
	var e catalog.Entry
	var facts typeFacts
	if found {
		e = c.entries[i]
		var ok bool
		if facts, ok = c.facts[e.Name]; !ok {
			facts = catalogFacts(e)
		}
	}
	c.mu.RUnlock()
	if !found {
		return nil, fmt.Errorf("instance type %s is not known: its kubelet expressions cannot be evaluated", instanceType)
	}
	e, _ = typeNeedsOf(nc).compatibleEntry(e, facts)
	return opts.ResolveKubelet(e)
}

// instanceTypes builds the instance types of a ready NodeClass: those compatible with its
// network interfaces, connection tracking, CPU options and Nitro Enclaves (compatibleEntry),
// offered in the zones of its subnets, priced, with capacity and overhead from its kubelet,
// volume and network interface settings, and with the ReservedCapacity gate a reserved
// offering for each of its capacity reservations (withReservedOfferings); with a placement
// group, placed in it, one offering per partition of a partition group (withPlacementGroup).
// Offerings the shared cache marks out of capacity, and those in a zone an ARC zonal shift
// moves traffic away from (EnableZonalShift), are unavailable. The result is shared. Each build records the vCPUs and memory of the region's instance types
// (pkg/metrics), as Karpenter does whenever it resolves them.
func (p *Provider) instanceTypes(ctx context.Context, nc *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error) {
	its, err := p.nodeClassTypes(ctx, nc)
	if err != nil {
		return nil, err
	}
	pg, _ := p.placementGroup(ctx, nc)
	return p.zonalShifts.apply(p.withReservedOfferings(nc, its, pg)), nil
}

// nodeClassTypes are the NodeClass's instance types with their spot and on-demand offerings,
// built once per configuration (see instanceTypes).
func (p *Provider) nodeClassTypes(ctx context.Context, nc *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error) {
	p.ensureFresh(ctx)
	opts := p.typeOptions(nc)
	zoneSet := map[string]bool{}
	for _, s := range nc.Status.Subnets {
		zoneSet[s.Zone] = true
	}
	opts.Zones = slices.Sorted(maps.Keys(zoneSet))
	opts.ZoneIDs = cloudprovider.ZoneIDsOf(nc.Status.Subnets)

	// The placement group as last resolved (a lookup that fails keeps the last one found),
	// as the AWS provider v1.15.2's offering and instance type providers read it.
	pg, _ := p.placementGroup(ctx, nc)
	needs := typeNeedsOf(nc)
	if pg != nil {
		needs.PlacementGroupID, needs.PlacementStrategy = pg.ID, pg.Strategy
	}

	c := &p.types
	c.mu.Lock()
	defer c.mu.Unlock()
	k := fmt.Sprintf("%d/%s/%s", c.version, opts.CacheKey(), needs.cacheKey())
	if its, ok := c.sets[k]; ok {
		return p.opts.Unavailable.Apply(its), nil
	}
	byName := make(map[string]catalog.Entry, len(c.entries))
	compatible := make([]catalog.Entry, 0, len(c.entries))
	for _, e := range c.entries {
		byName[e.Name] = e
		metrics.SetInstanceTypeSize(e.Name, e.VCPU, e.MemoryMiB<<20)
		facts, ok := c.facts[e.Name]
		if !ok {
			facts = catalogFacts(e)
		}
		if e, ok := needs.compatibleEntry(e, facts); ok {
			compatible = append(compatible, e)
		}
	}
	opts.Prices = cloudprovider.PriceFunc(func(instanceType, zone, capacityType string) (float64, bool) {
		return c.price(byName, instanceType, zone, capacityType)
	})
	its, err := cloudprovider.NewInstanceTypes(compatible, opts)
	if err != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %q: %w", nc.Name, err))
	}
	withPlacementGroup(its, pg)
	if c.sets == nil || len(c.sets) >= cloudprovider.MaxCachedConfigurations {
		c.sets = map[string][]*cloudprovider.InstanceType{}
	}
	c.sets[k] = its
	return p.opts.Unavailable.Apply(its), nil
}
