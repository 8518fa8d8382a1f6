package cloudprovider

import (
	"context"
	"sync/atomic"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// CloudProvider is everything Karpenter asks of a cloud. It is composed of small interfaces so
// that a component declares only what it uses (the provisioner needs an InstanceTypeProvider and
// an InstanceLifecycle; garbage collection an InstanceLister; disruption a DriftChecker; node repair a
// RepairPolicyProvider).
//
// Implementations must be safe for concurrent use. Every method that talks to the cloud takes a
// context and returns promptly once it is cancelled.
type CloudProvider interface {
	InstanceLifecycle
	InstanceGetter
	InstanceLister
	InstanceTypeProvider
	DriftChecker
	RepairPolicyProvider
	InstanceRebooter
	// Name is the provider's name, such as "aws" or "sim"; it prefixes metrics and logs.
	Name() string
}

// InstanceLifecycle launches and terminates instances: Create and Delete bracket an
// instance's life.
type InstanceLifecycle interface {
	// Create launches one instance that meets the claim's requirements (instance types, zones,
	// capacity types, …) and resource requests, choosing among the compatible offerings
	// (typically the cheapest available). It returns a copy of the claim whose status says what
	// was launched: ProviderID, ImageID, Capacity and Allocatable, and whose labels carry the
	// launched instance's facts — node.kubernetes.io/instance-type, topology.kubernetes.io/zone,
	// karpenter.sh/capacity-type, kubernetes.io/arch, kubernetes.io/os and the instance type's
	// other labels. The input claim is not modified.
	//
	// Errors:
	//   - *InsufficientCapacityError when every compatible offering is out of capacity; it lists
	//     the offerings that ran out, so the caller can mark them unavailable and retry elsewhere.
	//   - *NodeClassNotReadyError when the claim's NodeClass is missing or not ready.
	//   - *CreateError for any other launch failure, marked terminal when retrying the same claim
	//     cannot succeed (for example no instance type satisfies it).
	Create(ctx context.Context, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, error)
	// Delete terminates the claim's instance (found by status.providerID). It is idempotent:
	// when the instance is already gone or terminating it returns *NodeClaimNotFoundError, which
	// callers treat as success (IgnoreNodeClaimNotFoundError). Other errors are retryable.
	Delete(ctx context.Context, claim *karpv1.NodeClaim) error
}

// InstanceRebooter reboots instances in place, for node repair's RebootNode action.
type InstanceRebooter interface {
	// Reboot restarts the claim's instance (found by status.providerID) without terminating
	// it, as Karpenter v1.15's CloudProvider.Reboot. operationID names one logical reboot: a
	// cloud that deduplicates requests uses it to make a repeated call for the same reboot
	// harmless. It returns once the cloud has accepted the request; the reboot controller
	// watches the node come back.
	//
	// Errors:
	//   - *NodeRebootNotImplementedError when the cloud cannot reboot instances in place;
	//   - *NodeRebootFailedError when retrying cannot succeed (a missing permission);
	//   - *NodeClaimNotFoundError when the instance is gone;
	//   - any other error is retryable.
	Reboot(ctx context.Context, claim *karpv1.NodeClaim, operationID string) error
}

// InstanceGetter finds one instance.
type InstanceGetter interface {
	// Get returns the NodeClaim view (status and labels as Create returns them) of the instance
	// with the given provider ID. It returns *NodeClaimNotFoundError when no such instance exists
	// or it has terminated.
	Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error)
}

// InstanceLister lists instances.
type InstanceLister interface {
	// List returns a NodeClaim view of every running instance this Karpenter launched, sorted by
	// provider ID, including those whose NodeClaim no longer exists (so they can be garbage
	// collected). It returns no typed errors.
	List(ctx context.Context) ([]*karpv1.NodeClaim, error)
}

// InstanceTypeProvider says what a NodePool may launch.
type InstanceTypeProvider interface {
	// GetInstanceTypes returns the instance types the NodePool's NodeClass can launch, each
	// with its offerings (zone × capacity type × price × availability) in the NodeClass's
	// zones and with capacity and overhead computed from the NodeClass's kubelet and disk
	// settings. Results are sorted by name. Filtering by the NodePool's requirements is the
	// scheduler's job, not the provider's. The returned instance types are shared and must not
	// be modified.
	//
	// It returns *NodeClassNotReadyError when the NodePool's NodeClass is missing or not ready.
	GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*InstanceType, error)
}

// DriftChecker detects launched instances that no longer match their configuration.
type DriftChecker interface {
	// IsDrifted reports why the claim's instance no longer matches its NodeClass (image,
	// subnet, security groups, NodeClass hash, …), or the empty DriftReason when it does not
	// drift. Drift against the NodePool's template is detected by Karpenter itself, not here.
	// It returns *NodeClaimNotFoundError when the instance is gone and *NodeClassNotReadyError
	// when the NodeClass cannot be resolved to compare against.
	IsDrifted(ctx context.Context, claim *karpv1.NodeClaim) (DriftReason, error)
}

// DriftReason says why a NodeClaim drifted, such as "AMIDrift" or "SubnetDrift". The empty
// reason means not drifted.
type DriftReason string

// Drift reasons of EC2NodeClass-based providers.
const (
	// DriftReasonAMI: the NodeClass now resolves to another image than the instance booted.
	DriftReasonAMI DriftReason = "AMIDrift"
	// DriftReasonSubnet: the instance's subnet is no longer one the NodeClass selects.
	DriftReasonSubnet DriftReason = "SubnetDrift"
	// DriftReasonSecurityGroup: the instance's security groups differ from the NodeClass's.
	DriftReasonSecurityGroup DriftReason = "SecurityGroupDrift"
	// DriftReasonPlacementGroup: the claim's karpenter.k8s.aws/placement-group-id label is not
	// the placement group its NodeClass resolves to (none, or another).
	DriftReasonPlacementGroup DriftReason = "PlacementGroupDrift"
	// DriftReasonNodeClass: a static field of the NodeClass (user data, tags, block devices,
	// kubelet, metadata options, …) changed since the node was launched.
	DriftReasonNodeClass DriftReason = "NodeClassDrift"
)

// Overlay adjusts a NodePool's instance types as the cluster's NodeOverlays say (prices of
// offerings, extended resources of capacity); package nodeoverlay implements it. A cloud that
// is given one launches a NodeClaim of that NodePool from the adjusted types, so that it
// chooses, and a simulated cloud bills, by the prices the scheduler chose by.
type Overlay interface {
	// Apply returns the NodePool's instance types with the overlays applied; types no overlay
	// changes are returned as they are. It returns an error when the overlays have not been
	// evaluated for the NodePool yet.
	Apply(nodePool string, its []*InstanceType) ([]*InstanceType, error)
}

// OverlayHolder holds a cloud's Overlay, set once while wiring (SetOverlay) and read by every
// launch; its zero value holds none. It is safe for concurrent use.
type OverlayHolder struct {
	overlay atomic.Pointer[Overlay]
}

// SetOverlay makes launches of NodeClaims of a NodePool use the instance types as o adjusts
// them; nil stops that.
func (h *OverlayHolder) SetOverlay(o Overlay) {
	if o == nil {
		h.overlay.Store(nil)
		return
	}
	h.overlay.Store(&o)
}

// Apply returns the NodePool's instance types as the overlay adjusts them, and their index by
// name (byName itself when nothing changed). Without an overlay, or for a claim of no
// NodePool (Karpenter applies overlays to NodePools' types only), the types are returned as
// they are. An overlay that has not evaluated the NodePool yet is a retryable CreateError.
func (h *OverlayHolder) Apply(nodePool string, its []*InstanceType, byName map[string]*InstanceType) ([]*InstanceType, map[string]*InstanceType, error) {
	o := h.overlay.Load()
	if o == nil || nodePool == "" {
		return its, byName, nil
	}
	adjusted, err := (*o).Apply(nodePool, its)
	if err != nil {
		return nil, nil, NewCreateError(err, "NodeOverlaysNotEvaluated", "the NodeOverlays are not evaluated for the NodePool yet")
	}
	changed := false
	for i := range adjusted {
		if adjusted[i] != its[i] {
			changed = true
			break
		}
	}
	if !changed {
		return its, byName, nil
	}
	index := make(map[string]*InstanceType, len(adjusted))
	for _, it := range adjusted {
		index[it.Name] = it
	}
	return adjusted, index, nil
}
