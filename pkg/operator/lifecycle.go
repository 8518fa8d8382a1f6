package operator

import (
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/openkarpenter/karpenter/pkg/controllers"
	"github.com/openkarpenter/karpenter/pkg/events"
)

// lifecycleControllers are the controller set's NodePool, NodeClaim, termination, reboot, expiration,
// disruption and (with the NodeRepair gate and --legacy-node-repair) legacy repair
// controllers, in the order they are registered.
// Static NodePools (spec.replicas) are kept at their size only with the StaticCapacity
// feature gate on; off, they get no nodes and a Warning event says why.
func lifecycleControllers(mgr manager.Manager, set *controllers.Set, recorder record.EventRecorder, opts Options) []registrar {
	var static registrar = &staticCapacityOff{kubeClient: mgr.GetClient(), events: events.NewRecorder(recorder, nil)}
	if opts.StaticCapacity {
		static = set.Static
	}
	out := []registrar{
		set.NodePoolStatus,
		set.RegistrationHealth,
		static,
		set.Lifecycle,
		set.Consistency,
		set.GarbageCollector,
		set.Termination,
		set.Reboot,
		set.Expiration,
		set.CapacityType,
		set.Disruption,
	}
	if set.Repair != nil {
		out = append(out, set.Repair)
	}
	if set.ReservationExpiry != nil {
		out = append(out, set.ReservationExpiry)
	}
	return out
}
