package nodeclaim

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// InstanceProvider is what the garbage collector needs of the cloud: to list, look up and
// terminate instances. Every cloudprovider.CloudProvider is one.
type InstanceProvider interface {
	cloudprovider.InstanceLister
	cloudprovider.InstanceGetter
	// Delete terminates the instance of the claim's status.providerID; see
	// cloudprovider.InstanceLifecycle.
	Delete(ctx context.Context, claim *karpv1.NodeClaim) error
}

// GarbageCollector reconciles the cloud's instances with the cluster's NodeClaims, both ways:
//   - an instance the cloud lists whose NodeClaim (by the name the cloud recorded for it, or by
//     provider ID) does not exist, and that launched longer ago than the orphan grace period,
//     is terminated, and the termination finalizer is removed from any Node it left behind;
//   - a Launched NodeClaim whose instance the cloud no longer has (Get reports it not found)
//     is deleted, and the lifecycle controller finalizes it.
type GarbageCollector struct {
	kube   client.Client
	cloud  InstanceProvider
	clock  clock.Clock
	events recorder
	opts   GarbageCollectorOptions
}

// NewGarbageCollector returns a garbage collector that reads and writes the cluster through
// kube, the cloud through cloud, takes all time from clk (the real clock when nil) and records
// Events with rec (which may be nil). Zero options take their defaults.
func NewGarbageCollector(kube client.Client, cloud InstanceProvider, clk clock.Clock, rec record.EventRecorder,
	opts GarbageCollectorOptions) *GarbageCollector {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &GarbageCollector{kube: kube, cloud: cloud, clock: clk, events: recorder{events.NewRecorder(rec, clk)}, opts: opts.withDefaults()}
}

// Register runs the garbage collector under mgr, on the elected leader only.
func (g *GarbageCollector) Register(mgr manager.Manager) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		g.Run(ctx)
		return nil
	}))
}

// Run does a pass at once and then every interval on the clock, until ctx is done. Errors of a
// pass are logged; the next pass retries.
func (g *GarbageCollector) Run(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("nodeclaim.garbagecollection")
	for {
		if err := g.Step(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "garbage collecting nodeclaims")
		}
		timer := g.clock.NewTimer(g.opts.Interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
	}
}

// Step does one garbage-collection pass. It goes on past individual failures and returns them
// joined.
func (g *GarbageCollector) Step(ctx context.Context) error {
	logger := log.FromContext(ctx)
	instances, err := g.cloud.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	claims := &karpv1.NodeClaimList{}
	if err := g.kube.List(ctx, claims); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	claimNames := make(map[string]bool, len(claims.Items))
	claimIDs := make(map[string]bool, len(claims.Items))
	for i := range claims.Items {
		claimNames[claims.Items[i].Name] = true
		if id := claims.Items[i].Status.ProviderID; id != "" {
			claimIDs[id] = true
		}
	}

	var errs []error
	listed := make(map[string]bool, len(instances))
	for _, inst := range instances {
		id := inst.Status.ProviderID
		listed[id] = true
		if (inst.Name != "" && claimNames[inst.Name]) || claimIDs[id] {
			continue
		}
		if g.clock.Since(inst.CreationTimestamp.Time) < g.opts.OrphanGracePeriod {
			continue
		}
		if err := g.cloud.Delete(ctx, inst); cloudprovider.IgnoreNodeClaimNotFoundError(err) != nil {
			errs = append(errs, fmt.Errorf("terminating orphaned instance %s: %w", id, err))
			continue
		}
		logger.Info("terminated orphaned instance", "provider-id", id, "nodeclaim", inst.Name)
		if err := g.releaseNodes(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}

	for i := range claims.Items {
		claim := &claims.Items[i]
		id := claim.Status.ProviderID
		if claim.DeletionTimestamp != nil || id == "" || listed[id] || !isTrue(claim, karpv1.ConditionTypeLaunched) {
			continue
		}
		// Not listed: List may leave out instances still pending, so ask about this one.
		if _, err := g.cloud.Get(ctx, id); !cloudprovider.IsNodeClaimNotFoundError(err) {
			if err != nil {
				errs = append(errs, fmt.Errorf("getting instance %s: %w", id, err))
			}
			continue
		}
		logger.Info("instance of nodeclaim is gone, deleting nodeclaim", "nodeclaim", claim.Name, "provider-id", id)
		g.events.warning(claim, EventReasonInstanceGone, "Deleting: instance %s no longer exists", id)
		if err := g.kube.Delete(ctx, claim); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", claim.Name, err))
			}
			continue
		}
		metrics.NodeClaimDisrupted(metrics.ReasonGarbageCollected, claim.Labels[karpv1.NodePoolLabelKey], claim.Labels[karpv1.CapacityTypeLabelKey], "", metrics.TerminationMode(claim))
	}
	return errors.Join(errs...)
}

// releaseNodes deletes the Nodes of a terminated orphan instance and removes the termination
// finalizer that no claim is left to remove.
func (g *GarbageCollector) releaseNodes(ctx context.Context, providerID string) error {
	nodes, err := NodesByProviderID(ctx, g.kube, providerID)
	if err != nil {
		return fmt.Errorf("finding nodes of orphaned instance %s: %w", providerID, err)
	}
	var errs []error
	for _, node := range nodes {
		if node.DeletionTimestamp == nil {
			if err := g.kube.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting node %s: %w", node.Name, err))
				continue
			}
		}
		if err := releaseNode(ctx, g.kube, g.clock.Now(), node.Name, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
