package cloudprovider

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// InstanceType is a kind of machine the cloud sells: its facts as node labels, its resources,
// what the node's system daemons hold back, and the offerings it can be bought as.
//
// Instance types are built once per NodeClass configuration and shared by every scheduling
// simulation; treat them as immutable. Allocatable is memoized on first use, so changing
// Capacity or Overhead afterwards is a bug.
type InstanceType struct {
	// Name is the instance type's name, such as m5.large.
	Name string
	// Labels are the single-valued facts of the instance type as node labels:
	// node.kubernetes.io/instance-type, kubernetes.io/arch, kubernetes.io/os and the
	// karpenter.k8s.aws/instance-* labels (numbers as decimal strings). A label is absent when
	// the fact is unknown or does not apply (instance-gpu-* on a type without GPUs). Zone,
	// capacity type, reservation and placement group partition vary by offering and are not
	// here; see NodeLabels.
	Labels map[string]string
	// Capacity is what the node reports: cpu, memory (after VM overhead), pods,
	// ephemeral-storage and extended resources such as nvidia.com/gpu.
	Capacity corev1.ResourceList
	// Overhead is what the kubelet holds back from Capacity.
	Overhead InstanceTypeOverhead
	// Offerings are the zones and capacity types it can be bought in, with prices.
	Offerings Offerings
	// PriceOverlaid says a NodeOverlay changed the price of some of its offerings (package
	// nodeoverlay); a NodeClaim that may launch it is annotated so, and launched by those prices.
	PriceOverlaid bool
	// CapacityOverlaid says a NodeOverlay added extended resources to its Capacity.
	CapacityOverlaid bool

	once                 sync.Once
	allocatable          corev1.ResourceList
	allocatableResources scheduling.Resources
}

// WithOfferings returns a copy of the instance type with other offerings and everything else
// (labels, capacity, overhead, the overlay marks) kept. Every change of offerings goes through
// it, so a field added to InstanceType is carried by all of them.
func (it *InstanceType) WithOfferings(offerings Offerings) *InstanceType {
	return &InstanceType{Name: it.Name, Labels: it.Labels, Capacity: it.Capacity, Overhead: it.Overhead, Offerings: offerings,
		PriceOverlaid: it.PriceOverlaid, CapacityOverlaid: it.CapacityOverlaid}
}

// InstanceTypeOverhead is what the kubelet holds back from a node's capacity.
type InstanceTypeOverhead struct {
	// KubeReserved is reserved for Kubernetes daemons (kubelet, container runtime).
	KubeReserved corev1.ResourceList
	// SystemReserved is reserved for operating-system daemons.
	SystemReserved corev1.ResourceList
	// EvictionThreshold is the free amount below which the kubelet evicts pods (hard
	// eviction thresholds as quantities).
	EvictionThreshold corev1.ResourceList
}

// Total is the sum of the three reservations.
func (o InstanceTypeOverhead) Total() corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, rl := range []corev1.ResourceList{o.KubeReserved, o.SystemReserved, o.EvictionThreshold} {
		for name, q := range rl {
			if sum, ok := total[name]; ok {
				sum.Add(q)
				total[name] = sum
			} else {
				total[name] = q.DeepCopy()
			}
		}
	}
	return total
}

// Allocatable is what pods may request on the node: Capacity less Overhead.Total(), never below
// zero, for every resource in Capacity. It is computed once; the returned list is shared and
// must not be modified.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	it.once.Do(it.computeAllocatable)
	return it.allocatable
}

// AllocatableResources is Allocatable's cpu, memory, pods and ephemeral storage as integers,
// for comparisons on the scheduler's hot path. It is computed once.
func (it *InstanceType) AllocatableResources() scheduling.Resources {
	it.once.Do(it.computeAllocatable)
	return it.allocatableResources
}

func (it *InstanceType) computeAllocatable() {
	overhead := it.Overhead.Total()
	alloc := make(corev1.ResourceList, len(it.Capacity))
	for name, c := range it.Capacity {
		q := c.DeepCopy()
		if o, ok := overhead[name]; ok {
			q.Sub(o)
			if q.Sign() < 0 {
				q = *resource.NewQuantity(0, c.Format)
			}
		}
		alloc[name] = q
	}
	it.allocatable = alloc
	it.allocatableResources = scheduling.ResourcesOf(alloc)
}

// NodeLabels returns the labels of a node launched as the offering: Labels plus
// topology.kubernetes.io/zone, topology.k8s.aws/zone-id (when known),
// karpenter.sh/capacity-type, for a reserved offering its reservation's
// karpenter.k8s.aws/capacity-reservation-id, -type and -interruptible, and for an offering in a
// partition placement group its karpenter.k8s.aws/placement-group-partition, as Karpenter's
// AWS provider v1.15.2 labels such nodes. The map is new; the caller owns it.
func (it *InstanceType) NodeLabels(o Offering) map[string]string {
	labels := make(map[string]string, len(it.Labels)+7)
	for k, v := range it.Labels {
		labels[k] = v
	}
	labels[corev1.LabelTopologyZone] = o.Zone
	if o.ZoneID != "" {
		labels[awsv1.LabelTopologyZoneID] = o.ZoneID
	}
	labels[karpv1.CapacityTypeLabelKey] = o.CapacityType
	for _, key := range reservationLabels {
		if v, ok := o.reservationLabel(key); ok {
			labels[key] = v
		}
	}
	if o.PlacementPartition != 0 {
		labels[awsv1.LabelPlacementGroupPartition] = PartitionLabel(o.PlacementPartition)
	}
	return labels
}

// CheapestOffering returns the cheapest available offering of the instance type in a zone,
// zone ID, capacity type, reservation and partition reqs allow (OfferingFilter): the offering a launch of it would
// choose. Ties go as in Offerings.CheapestWhere. It is false when no such offering is
// available.
func (it *InstanceType) CheapestOffering(reqs scheduling.Requirements) (Offering, bool) {
	f := NewOfferingFilter(reqs)
	return it.Offerings.CheapestWhere(func(o Offering) bool { return o.Available && f.Allows(o) })
}
