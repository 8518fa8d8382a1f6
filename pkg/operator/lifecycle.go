package operator

import (
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// lifecycleControllers are the NodePool and NodeClaim controllers.
func lifecycleControllers(mgr manager.Manager, cp cloudprovider.CloudProvider, unavailable *cloudprovider.UnavailableOfferings,
	clk clock.Clock, recorder record.EventRecorder, opts Options) []registrar {
	return nil
}
