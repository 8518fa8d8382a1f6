package cloudprovider

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultUnavailableTTL is how long an offering that ran out of capacity is avoided.
const DefaultUnavailableTTL = 3 * time.Minute

// UnavailableOfferings remembers offerings that recently failed with insufficient capacity, so
// the scheduler avoids them for a while and launches fall back to others. It is safe for
// concurrent use.
type UnavailableOfferings struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu      sync.Mutex
	until   map[OfferingID]time.Time
	subnets map[string]time.Time // subnets out of free addresses, until
	seq     uint64
}

// NewUnavailableOfferings returns an empty cache whose entries last ttl (DefaultUnavailableTTL
// when zero) on the given clock.
func NewUnavailableOfferings(c clock.PassiveClock, ttl time.Duration) *UnavailableOfferings {
	if ttl <= 0 {
		ttl = DefaultUnavailableTTL
	}
	return &UnavailableOfferings{clock: c, ttl: ttl, until: map[OfferingID]time.Time{}, subnets: map[string]time.Time{}}
}

// MarkUnavailable records offerings as out of capacity from now for the TTL.
func (u *UnavailableOfferings) MarkUnavailable(ids ...OfferingID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	expiry := u.clock.Now().Add(u.ttl)
	for _, id := range ids {
		u.until[id] = expiry
	}
	u.seq++
}

// MarkCapacityTypeUnavailable records every offering of a capacity type as unavailable from now
// for the TTL, as Karpenter does for spot when the account may not launch it at all (no Spot
// service-linked role).
func (u *UnavailableOfferings) MarkCapacityTypeUnavailable(capacityType string) {
	u.MarkUnavailable(OfferingID{CapacityType: capacityType})
}

// MarkSubnetUnavailable records a subnet as out of free addresses from now for the TTL: launches
// use the zone's other subnets meanwhile.
func (u *UnavailableOfferings) MarkSubnetUnavailable(subnetID string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.subnets[subnetID] = u.clock.Now().Add(u.ttl)
}

// IsSubnetUnavailable reports whether a subnet is still within its unavailable period.
func (u *UnavailableOfferings) IsSubnetUnavailable(subnetID string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return within(u.subnets, subnetID, u.clock.Now())
}

// IsUnavailable reports whether an offering, or its whole capacity type, is still within its
// unavailable period. An offering in a placement group is unavailable also while its group's
// (for a partition's offering) or the same offering outside any group is, as the AWS provider
// v1.15.2 checks both the general and the group's key (offering/base_resolver.go); marks of a
// group, or of one of its partitions, leave the offerings outside it alone.
func (u *UnavailableOfferings) IsUnavailable(id OfferingID) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.unavailableLocked(id) || u.unavailableLocked(OfferingID{CapacityType: id.CapacityType}) {
		return true
	}
	if id.PlacementGroupID == "" {
		return false
	}
	if id.PlacementPartition != 0 {
		group := id
		group.PlacementPartition = 0
		if u.unavailableLocked(group) {
			return true
		}
	}
	outside := id
	outside.PlacementGroupID, outside.PlacementPartition = "", 0
	return u.unavailableLocked(outside)
}

func (u *UnavailableOfferings) unavailableLocked(id OfferingID) bool {
	return within(u.until, id, u.clock.Now())
}

// within reports whether key is marked until after now, forgetting it once that has passed.
func within[K comparable](until map[K]time.Time, key K, now time.Time) bool {
	expiry, ok := until[key]
	if ok && !now.Before(expiry) {
		delete(until, key)
		return false
	}
	return ok
}

// SeqNum changes whenever offerings are marked, so callers can tell cached results are stale.
func (u *UnavailableOfferings) SeqNum() uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seq
}

// Apply returns instance types whose offerings the cache says are out of capacity are marked
// unavailable. Types that need no change are returned as they are; changed ones are copies.
func (u *UnavailableOfferings) Apply(types []*InstanceType) []*InstanceType {
	return WithUnavailable(types, func(it *InstanceType, o Offering) bool { return u.IsUnavailable(o.ID(it.Name)) })
}

// WithUnavailable returns the instance types with each available offering that unavailable
// reports marked unavailable. Types that need no change are returned as they are (they may be
// shared, cached ones); changed ones are copies.
func WithUnavailable(types []*InstanceType, unavailable func(it *InstanceType, o Offering) bool) []*InstanceType {
	out := make([]*InstanceType, len(types))
	for i, it := range types {
		out[i] = it
		for j, o := range it.Offerings {
			if !o.Available || !unavailable(it, o) {
				continue
			}
			if out[i] == it {
				out[i] = it.WithOfferings(append(Offerings(nil), it.Offerings...))
			}
			out[i].Offerings[j].Available = false
		}
	}
	return out
}
