package expiration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/requeue"
)

// CapacityTypeControllerName names the capacity type controller in logs: the AWS provider's.
const CapacityTypeControllerName = "capacityreservation.capacitytype"

// CapacityTypeInterval is how often the capacity type controller looks, as the AWS provider
// v1.15.2's.
const CapacityTypeInterval = time.Minute

// InstanceLister lists the cloud's instances as NodeClaims: their labels say the capacity type
// each instance runs as now.
type InstanceLister interface {
	// List returns a NodeClaim view of every running instance this Karpenter launched.
	List(ctx context.Context) ([]*karpv1.NodeClaim, error)
}

// reservationLabels are the labels a reserved node carries for its reservation and loses when
// it turns on-demand: the AWS provider v1.15.2's cloudprovider.ReservedCapacityLabels (the
// reservation's id and type; it leaves capacity-reservation-interruptible, and so does this).
var reservationLabels = []string{awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType}

// CapacityTypeController turns reserved nodes on-demand when their capacity reservation ends,
// as the AWS provider v1.15.2's capacityreservation.capacitytype controller
// (pkg/controllers/capacityreservation/capacitytype): an On-Demand Capacity Reservation that
// expires or is cancelled leaves its instances running, billed on-demand, and every minute the
// controller finds the NodeClaims still labelled karpenter.sh/capacity-type: reserved whose
// instance the cloud now lists as on-demand, and relabels them and their registered Nodes
// on-demand without the reservation's labels. Consolidation then prices the node as the
// on-demand node it is. Reserved is never given back: a node does not join a reservation after
// launch.
type CapacityTypeController struct {
	kube  client.Client
	cloud InstanceLister
	clock clock.Clock
}

// NewCapacityTypeController returns the controller over the cloud's instances, taking time
// from clk (the real clock when nil).
func NewCapacityTypeController(kube client.Client, cloud InstanceLister, clk clock.Clock) *CapacityTypeController {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &CapacityTypeController{kube: kube, cloud: cloud, clock: clk}
}

// Register runs the controller under mgr, a pass every CapacityTypeInterval.
func (c *CapacityTypeController) Register(mgr manager.Manager) error {
	return requeue.Periodic(mgr, CapacityTypeControllerName, "syncing the capacity type of reserved nodeclaims", c.clock, CapacityTypeInterval, c.Step)
}

// Step does one pass: every reserved NodeClaim, not being deleted, whose instance the cloud
// lists as on-demand is relabelled on-demand, and so are its registered Nodes. It goes on past
// individual failures and returns them joined.
func (c *CapacityTypeController) Step(ctx context.Context) error {
	claims := &karpv1.NodeClaimList{}
	if err := c.kube.List(ctx, claims); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	// Nothing reserved, nothing to do: a NodeClaim already relabelled may still have a reserved
	// Node that registered after it.
	reservedNodes := &corev1.NodeList{}
	if err := c.kube.List(ctx, reservedNodes, client.MatchingLabels{karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeReserved}); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	if len(reservedNodes.Items) == 0 && !slices.ContainsFunc(claims.Items, func(nc karpv1.NodeClaim) bool {
		return nc.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeReserved
	}) {
		return nil
	}
	instances, err := c.cloud.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	capacityTypes := make(map[string]string, len(instances))
	for _, in := range instances {
		capacityTypes[in.Status.ProviderID] = in.Labels[karpv1.CapacityTypeLabelKey]
	}
	var errs []error
	var updated []string
	for i := range claims.Items {
		claim := &claims.Items[i]
		if claim.DeletionTimestamp != nil || claim.Status.ProviderID == "" || capacityTypes[claim.Status.ProviderID] != karpv1.CapacityTypeOnDemand {
			continue
		}
		changed, err := c.demote(ctx, claim)
		if err != nil {
			errs = append(errs, err)
		}
		if changed {
			updated = append(updated, claim.Name)
		}
	}
	if len(updated) > 0 {
		log.FromContext(ctx).V(1).Info("updated capacity type for nodeclaims", "NodeClaims", updated)
	}
	return errors.Join(errs...)
}

// demote relabels a NodeClaim whose instance runs on-demand, and its registered Nodes, that
// are still labelled reserved. It reports whether it changed anything.
func (c *CapacityTypeController) demote(ctx context.Context, claim *karpv1.NodeClaim) (bool, error) {
	changed := false
	if claim.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeReserved {
		stored := claim.DeepCopy()
		claim.Labels = onDemandLabels(claim.Labels)
		if err := c.kube.Patch(ctx, claim, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("patching nodeclaim %s: %w", claim.Name, err)
		}
		changed = true
	}
	// The reservation may have ended before the Node registered; there is then none to patch,
	// and a Node not yet registered is left for the next pass (its labels may not be synced).
	nodes, err := nodeclaim.NodesByProviderID(ctx, c.kube, claim.Status.ProviderID)
	if err != nil {
		return changed, fmt.Errorf("listing nodes of nodeclaim %s: %w", claim.Name, err)
	}
	for _, n := range nodes {
		if n.DeletionTimestamp != nil || n.Labels[karpv1.NodeRegisteredLabelKey] != "true" ||
			n.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeReserved {
			continue
		}
		stored := n.DeepCopy()
		n.Labels = onDemandLabels(n.Labels)
		if err := c.kube.Patch(ctx, n, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
			return changed, fmt.Errorf("patching node %s: %w", n.Name, err)
		}
		changed = true
	}
	return changed, nil
}

// onDemandLabels returns labels with the capacity type on-demand and the reservation's labels
// gone.
func onDemandLabels(labels map[string]string) map[string]string {
	out := maps.Clone(labels)
	out[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeOnDemand
	for _, k := range reservationLabels {
		delete(out, k)
	}
	return out
}
