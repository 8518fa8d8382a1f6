package catalog

import (
	"hash/fnv"
	"sync"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// The spot model. The data has no spot prices (Karpenter ships none either), so a spot price is
// modelled as the on-demand price less a discount that depends only on the instance family and
// the zone:
//
//	discount(family)       = 55% + (FNV-1a-64(seed, family) mod 2001) basis points  → 55%…75%
//	discount(family, zone) = discount(family) + (FNV-1a-64(seed, family, zone) mod 401 − 200) bp,
//	                         clamped to 55%…75%                                       → ±2 points
//	spot price             = on-demand price × (1 − discount)
//
// All sizes of a family share its discount, as they roughly do on EC2, so spot never reorders
// the sizes of one family; zones differ slightly, so spot has a cheapest zone. The arithmetic is
// integer basis points and one float multiplication, so results are the same on every platform.
const (
	// MinSpotDiscount is the smallest modelled spot discount off the on-demand price.
	MinSpotDiscount = 0.55
	// MaxSpotDiscount is the largest modelled spot discount off the on-demand price.
	MaxSpotDiscount = 0.75

	spotSeed       = "openkarpenter/spot-discount/v1"
	minDiscountBP  = 5500
	maxDiscountBP  = 7500
	zoneVarianceBP = 200
)

// SpotDiscount is the modelled spot discount of an instance family in a zone, as a fraction of
// the on-demand price between MinSpotDiscount and MaxSpotDiscount. An empty zone gives the
// family's discount without the zone's variation.
func SpotDiscount(family, zone string) float64 {
	return float64(spotDiscountBP(family, zone)) / 10000
}

// SpotPrice is the modelled spot price of an instance of the family in the zone whose
// on-demand price is onDemand.
func SpotPrice(onDemand float64, family, zone string) float64 {
	return onDemand * float64(10000-spotDiscountBP(family, zone)) / 10000
}

func spotDiscountBP(family, zone string) int {
	bp := minDiscountBP + int(hash(family)%(maxDiscountBP-minDiscountBP+1))
	if zone != "" {
		bp += int(hash(family, zone)%(2*zoneVarianceBP+1)) - zoneVarianceBP
	}
	return min(max(bp, minDiscountBP), maxDiscountBP)
}

func hash(parts ...string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(spotSeed))
	for _, p := range parts {
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(p))
	}
	return h.Sum64()
}

// Prices answers the price of catalog instance types: the catalog's on-demand price in every
// zone, and the modelled spot price (SpotPrice). Other capacity types (reserved) are not
// priced. It implements cloudprovider.Prices; wrap it with cloudprovider.WithPriceOverrides to
// change any price. A Prices is immutable and safe for concurrent use.
type Prices struct {
	byName map[string]price
}

type price struct {
	onDemand float64
	family   string
}

// NewPrices returns the prices of the given entries. Entries without a known on-demand price
// are not priced.
func NewPrices(entries []Entry) *Prices {
	p := &Prices{byName: make(map[string]price, len(entries))}
	for _, e := range entries {
		if e.HasPrice() {
			p.byName[e.Name] = price{onDemand: e.OnDemandPrice, family: e.Family}
		}
	}
	return p
}

var defaultPrices = sync.OnceValues(func() (*Prices, error) {
	entries, err := Load()
	if err != nil {
		return nil, err
	}
	return NewPrices(entries), nil
})

// DefaultPrices returns the prices of the embedded catalog. It is built once and shared.
func DefaultPrices() (*Prices, error) { return defaultPrices() }

// Price returns the $/hour of instanceType in zone bought as capacityType (on-demand or spot),
// and false when the catalog has no price for it.
func (p *Prices) Price(instanceType, zone, capacityType string) (float64, bool) {
	pr, ok := p.byName[instanceType]
	if !ok {
		return 0, false
	}
	switch capacityType {
	case karpv1.CapacityTypeOnDemand:
		return pr.onDemand, true
	case karpv1.CapacityTypeSpot:
		return SpotPrice(pr.onDemand, pr.family, zone), true
	default:
		return 0, false
	}
}
