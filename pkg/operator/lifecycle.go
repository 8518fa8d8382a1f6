package operator

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/disruption"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/repair"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/termination"
)

// lifecycleControllers are the NodePool, NodeClaim, termination, disruption and (with the
// NodeRepair gate) repair controllers.
// NodeClaims are finalized by termination, which drains their nodes first. Nodes, NodeClaims
// and pods are indexed in the manager's cache first. Each controller calls the cloud through
// its own metrics view of cp. A claim's Node takes pods only after nomination has pointed the
// pods planned for it at it.
func lifecycleControllers(mgr manager.Manager, cp cloudprovider.CloudProvider, unavailable *cloudprovider.UnavailableOfferings,
	cluster *state.Cluster, nomination *provisioning.NominationController, clk clock.Clock, recorder record.EventRecorder, opts Options) ([]registrar, error) {
	if err := errors.Join(
		nodeclaim.IndexFields(context.Background(), mgr.GetFieldIndexer()),
		termination.IndexFields(context.Background(), mgr.GetFieldIndexer()),
	); err != nil {
		return nil, fmt.Errorf("indexing fields: %w", err)
	}
	// The NodePools' NodeRegistrationHealthy condition hears of registrations and of claims
	// that never made it from the lifecycle controller.
	registrationHealth := nodepool.NewRegistrationHealth(mgr.GetClient(), clk)
	lifecycle := nodeclaim.NewLifecycleController(mgr.GetClient(), cloudprovider.WithMetrics(cp, nodeclaim.LifecycleControllerName), unavailable, clk, recorder,
		nodeclaim.LifecycleOptions{RegistrationTTL: opts.RegistrationTTL, ExternalFinalization: true, BeforeRegister: nomination.BeforeRegister, Nominees: cluster.Nominees,
			RegistrationHealth: registrationHealth})
	// Static NodePools (spec.replicas) are kept at their size only with the StaticCapacity
	// feature gate on; off, they get no nodes and a Warning event says why.
	var static registrar = &staticCapacityOff{kubeClient: mgr.GetClient(), recorder: recorder}
	if opts.StaticCapacity {
		static = nodepool.NewStaticController(mgr.GetClient(), cloudprovider.WithMetrics(cp, "nodepool.static"), nodepool.WithAPIReader(mgr.GetAPIReader()))
	}
	out := []registrar{
		nodepool.NewStatusController(mgr.GetClient(), clk, recorder),
		registrationHealth,
		static,
		lifecycle,
		nodeclaim.NewConsistencyController(mgr.GetClient(), clk, recorder),
		nodeclaim.NewGarbageCollector(mgr.GetClient(), cloudprovider.WithMetrics(cp, "nodeclaim.garbagecollection"), clk, recorder, nodeclaim.GarbageCollectorOptions{}),
		termination.NewController(mgr.GetClient(), lifecycle, clk, recorder, termination.Options{}),
		disruption.NewController(mgr.GetClient(), cluster, cloudprovider.WithMetrics(cp, metrics.ControllerDisruption), unavailable, clk, recorder, disruption.Options{
			SpotToSpotConsolidation: opts.SpotToSpotConsolidation,
			PollInterval:            opts.DisruptionPollInterval,
			ValidationDelay:         opts.ConsolidationValidationDelay,
		}),
	}
	// Node repair runs only with the NodeRepair feature gate on, and only for a cloud that
	// declares repair policies, as in Karpenter.
	if opts.NodeRepair && len(cp.RepairPolicies()) > 0 {
		out = append(out, repair.NewController(mgr.GetClient(), cp, clk, recorder))
	}
	return out, nil
}
