package sim

import (
	"fmt"
	"slices"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// typeSet is the catalog built for one NodeClass configuration, with every offering available,
// and the last availability overlay handed out.
type typeSet struct {
	zones  []string
	base   []*cloudprovider.InstanceType
	byName map[string]*cloudprovider.InstanceType

	// overlay is base with the fault plan's unavailable offerings marked, for overlayVersion.
	overlay        []*cloudprovider.InstanceType
	overlayVersion uint64
	hasOverlay     bool
}

// instanceTypes returns the instance types of the NodeClass, every offering available, built
// once per distinct configuration. The result is shared and must not be modified.
func (c *Cloud) instanceTypes(nc *awsv1.EC2NodeClass) (*typeSet, error) {
	opts := cloudprovider.OptionsFromNodeClass(nc)
	opts.Zones = nodeClassZones(nc, c.zones)
	opts.ZoneIDs = cloudprovider.ZoneIDsOf(nc.Status.Subnets)
	opts.CapacityTypes = c.capacityTypes
	opts.Prices = c.prices
	opts.KubeletExpressions = c.kubeletExpressions
	k := opts.CacheKey()

	c.typesMu.Lock()
	defer c.typesMu.Unlock()
	if set, ok := c.types[k]; ok {
		return set, nil
	}
	its, err := cloudprovider.NewInstanceTypes(c.entries, opts)
	if err != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %q: %w", nc.Name, err))
	}
	set := &typeSet{zones: opts.Zones, base: its, byName: make(map[string]*cloudprovider.InstanceType, len(its))}
	for _, it := range its {
		set.byName[it.Name] = it
	}
	if len(c.types) >= cloudprovider.MaxCachedConfigurations {
		clear(c.types)
	}
	c.types[k] = set
	return set, nil
}

// withAvailability returns the set's instance types with the offerings unavailable marks as
// unavailable. Instance types without such an offering are shared with the base; the others are
// fresh copies. The result is remembered for the availability version, so repeated calls hand
// out the same instance types until the fault plan changes.
func (c *Cloud) withAvailability(set *typeSet, version uint64, unavailable availability) []*cloudprovider.InstanceType {
	c.typesMu.Lock()
	defer c.typesMu.Unlock()
	if set.hasOverlay && set.overlayVersion == version {
		return set.overlay
	}
	out := set.base
	if !unavailable.empty() {
		out = make([]*cloudprovider.InstanceType, len(set.base))
		for i, it := range set.base {
			out[i] = it
			if !slices.ContainsFunc(it.Offerings, func(o cloudprovider.Offering) bool { return unavailable.has(o.ID(it.Name)) }) {
				continue
			}
			offerings := make(cloudprovider.Offerings, len(it.Offerings))
			for j, o := range it.Offerings {
				o.Available = o.Available && !unavailable.has(o.ID(it.Name))
				offerings[j] = o
			}
			out[i] = it.WithOfferings(offerings)
		}
	}
	set.overlay, set.overlayVersion, set.hasOverlay = out, version, true
	return out
}

// availability is the set of offering patterns switched off; an empty field matches any value.
type availability map[cloudprovider.OfferingID]bool

func (a availability) empty() bool { return len(a) == 0 }

// has reports whether some pattern switches the offering off.
func (a availability) has(id cloudprovider.OfferingID) bool {
	if len(a) == 0 {
		return false
	}
	for mask := 0; mask < 8; mask++ {
		p := id
		if mask&1 != 0 {
			p.InstanceType = ""
		}
		if mask&2 != 0 {
			p.Zone = ""
		}
		if mask&4 != 0 {
			p.CapacityType = ""
		}
		if a[p] {
			return true
		}
	}
	return false
}
