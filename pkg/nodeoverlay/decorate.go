package nodeoverlay

import (
	"context"
	"slices"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// decorated is a cloud provider whose instance types carry the overlays.
type decorated struct {
	cloudprovider.CloudProvider
	store *Store
}

// Decorate returns the cloud provider with GetInstanceTypes answering the store's adjusted
// instance types; every other method is the cloud's. Give the controllers that schedule,
// consolidate or report cost this one, and the Controller the cloud itself.
func Decorate(cloud cloudprovider.CloudProvider, store *Store) cloudprovider.CloudProvider {
	return &decorated{CloudProvider: cloud, store: store}
}

// GetInstanceTypes returns the cloud's instance types for the NodePool with the overlays
// applied, or *NotEvaluatedError while the Controller has not evaluated the NodePool.
func (d *decorated) GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	its, err := d.CloudProvider.GetInstanceTypes(ctx, nodePool)
	if err != nil {
		return nil, err
	}
	return d.store.Apply(nodePool.Name, its)
}

// Annotate marks a new NodeClaim as Karpenter does when NodeOverlays changed one of the
// instance types it may launch as: karpenter.sh/price-overlay-applied "true" for a price,
// karpenter.sh/capacity-overlay-applied "true" for a capacity. A cloud launches a claim marked
// for price by the adjusted prices.
func Annotate(claim *karpv1.NodeClaim, its []*cloudprovider.InstanceType) {
	price := slices.ContainsFunc(its, func(it *cloudprovider.InstanceType) bool { return it.PriceOverlaid })
	capacity := slices.ContainsFunc(its, func(it *cloudprovider.InstanceType) bool { return it.CapacityOverlaid })
	if !price && !capacity {
		return
	}
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	if price {
		claim.Annotations[v1alpha1.PriceOverlayAppliedAnnotationKey] = "true"
	}
	if capacity {
		claim.Annotations[v1alpha1.CapacityOverlayAppliedAnnotationKey] = "true"
	}
}
