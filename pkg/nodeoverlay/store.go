package nodeoverlay

import (
	"fmt"
	"maps"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// NotEvaluatedError is returned for a NodePool the Controller has not evaluated the overlays
// against yet (just created, or its instance types could not be listed): its prices and
// capacity may be about to change, so callers skip it until then, as Karpenter does.
type NotEvaluatedError struct {
	// NodePool is the NodePool's name.
	NodePool string
}

// Error says the NodePool waits for the NodeOverlay controller.
func (e *NotEvaluatedError) Error() string {
	return fmt.Sprintf("nodepool %s: awaiting the evaluation of its NodeOverlays", e.NodePool)
}

// Store holds the evaluated overlays, per NodePool, instance type and offering; the
// Controller replaces its table whole, and readers see one table or the next, never a mix.
// It implements cloudprovider.Overlay and is safe for concurrent use.
type Store struct {
	table atomic.Pointer[table]
}

// NewStore returns a Store that has evaluated no NodePool yet.
func NewStore() *Store {
	s := &Store{}
	s.table.Store(newTable())
	return s
}

// Apply returns the NodePool's instance types with the overlays applied: a type an overlay
// selected is a new InstanceType (its selected offerings repriced, its extended resources
// added, PriceOverlaid / CapacityOverlaid set); the others are returned as they are. It returns
// *NotEvaluatedError for a NodePool the Controller has not evaluated.
func (s *Store) Apply(nodePool string, its []*cloudprovider.InstanceType) ([]*cloudprovider.InstanceType, error) {
	t := s.table.Load()
	if !t.evaluated[nodePool] {
		return nil, &NotEvaluatedError{NodePool: nodePool}
	}
	updates := t.pools[nodePool]
	if len(updates) == 0 {
		return its, nil
	}
	out := make([]*cloudprovider.InstanceType, len(its))
	for i, it := range its {
		out[i] = updates[it.Name].apply(it)
	}
	return out, nil
}

// replace swaps in a newly evaluated table.
func (s *Store) replace(t *table) { s.table.Store(t) }

// offeringKey names an offering within an instance type.
type offeringKey struct{ zone, capacityType string }

// priced is an offering's price change and the weight of the overlay that set it.
type priced struct {
	change string
	weight int32
	by     string // the overlay's name
}

// added is an extended resource's quantity and the weight of the overlay that set it.
type added struct {
	quantity resource.Quantity
	weight   int32
	by       string // the overlay's name
}

// update is what the overlays change of one instance type of one NodePool.
type update struct {
	prices   map[offeringKey]priced
	capacity map[corev1.ResourceName]added
}

// table is one evaluation: which NodePools it covers, and their instance types' updates.
type table struct {
	evaluated map[string]bool
	pools     map[string]map[string]*update // NodePool -> instance type -> update
}

func newTable() *table {
	return &table{evaluated: map[string]bool{}, pools: map[string]map[string]*update{}}
}

// updateFor returns the update of a NodePool's instance type, creating it.
func (t *table) updateFor(nodePool, instanceType string) *update {
	types := t.pools[nodePool]
	if types == nil {
		types = map[string]*update{}
		t.pools[nodePool] = types
	}
	u := types[instanceType]
	if u == nil {
		u = &update{prices: map[offeringKey]priced{}, capacity: map[corev1.ResourceName]added{}}
		types[instanceType] = u
	}
	return u
}

// lookup returns the update of a NodePool's instance type, or nil.
func (t *table) lookup(nodePool, instanceType string) *update {
	return t.pools[nodePool][instanceType]
}

// apply returns it changed by u (it itself when u is nil or changes nothing of it).
func (u *update) apply(it *cloudprovider.InstanceType) *cloudprovider.InstanceType {
	if u == nil {
		return it
	}
	var offerings cloudprovider.Offerings
	for i, o := range it.Offerings {
		p, ok := u.prices[offeringKey{o.Zone, o.CapacityType}]
		if !ok {
			continue
		}
		if offerings == nil {
			offerings = make(cloudprovider.Offerings, len(it.Offerings))
			copy(offerings, it.Offerings)
		}
		// The change was checked by RuntimeValidate before it was stored.
		offerings[i].Price, _ = AdjustedPrice(o.Price, p.change)
	}
	if offerings == nil && len(u.capacity) == 0 {
		return it
	}
	out := it.WithOfferings(it.Offerings)
	if offerings != nil {
		out.Offerings, out.PriceOverlaid = offerings, true
	}
	if len(u.capacity) > 0 {
		out.Capacity = maps.Clone(it.Capacity)
		for name, a := range u.capacity {
			out.Capacity[name] = a.quantity
		}
		out.CapacityOverlaid = true
	}
	return out
}
