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
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/termination"
)

// lifecycleControllers are the NodePool, NodeClaim, termination and disruption controllers.
// NodeClaims are finalized by termination, which drains their nodes first. Nodes, NodeClaims
// and pods are indexed in the manager's cache first.
func lifecycleControllers(mgr manager.Manager, cp cloudprovider.CloudProvider, unavailable *cloudprovider.UnavailableOfferings,
	cluster *state.Cluster, clk clock.Clock, recorder record.EventRecorder, opts Options) ([]registrar, error) {
	if err := errors.Join(
		nodeclaim.IndexFields(context.Background(), mgr.GetFieldIndexer()),
		termination.IndexFields(context.Background(), mgr.GetFieldIndexer()),
	); err != nil {
		return nil, fmt.Errorf("indexing fields: %w", err)
	}
	lifecycle := nodeclaim.NewLifecycleController(mgr.GetClient(), cp, unavailable, clk, recorder,
		nodeclaim.LifecycleOptions{RegistrationTTL: opts.RegistrationTTL, ExternalFinalization: true})
	return []registrar{
		nodepool.NewStatusController(mgr.GetClient(), clk, recorder),
		nodepool.NewStaticController(mgr.GetClient(), cp, nodepool.WithAPIReader(mgr.GetAPIReader())),
		lifecycle,
		nodeclaim.NewGarbageCollector(mgr.GetClient(), cp, clk, recorder, nodeclaim.GarbageCollectorOptions{}),
		termination.NewController(mgr.GetClient(), lifecycle, clk, recorder, termination.Options{}),
		disruption.NewController(mgr.GetClient(), cluster, cp, clk, recorder, disruption.Options{
			SpotToSpotConsolidation: opts.SpotToSpotConsolidation,
			PollInterval:            opts.DisruptionPollInterval,
			ValidationDelay:         opts.ConsolidationValidationDelay,
		}),
	}, nil
}
