package operator

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
)

// lifecycleControllers are the NodePool and NodeClaim controllers. They index Nodes and
// NodeClaims by provider ID in the manager's cache first.
func lifecycleControllers(mgr manager.Manager, cp cloudprovider.CloudProvider, unavailable *cloudprovider.UnavailableOfferings,
	clk clock.Clock, recorder record.EventRecorder, opts Options) ([]registrar, error) {
	if err := nodeclaim.IndexFields(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return nil, fmt.Errorf("indexing provider IDs: %w", err)
	}
	return []registrar{
		nodepool.NewStatusController(mgr.GetClient(), clk, recorder),
		nodepool.NewStaticController(mgr.GetClient(), cp, nodepool.WithAPIReader(mgr.GetAPIReader())),
		nodeclaim.NewLifecycleController(mgr.GetClient(), cp, unavailable, clk, recorder, nodeclaim.LifecycleOptions{RegistrationTTL: opts.RegistrationTTL}),
		nodeclaim.NewGarbageCollector(mgr.GetClient(), cp, clk, recorder, nodeclaim.GarbageCollectorOptions{}),
	}, nil
}
