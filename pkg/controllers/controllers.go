// Package controllers builds Karpenter's controller set once, for the two places that run it:
// the operator, which registers each controller with a controller-runtime manager, and the
// simulate engine, which calls them in turn on its virtual clock. New also links them, so
// that neither wires the links by hand:
//
//   - termination finalizes NodeClaims through the lifecycle controller (its Finalizer), after
//     it has drained their nodes; the reboot controller drains through termination;
//   - the lifecycle controller lets a claim's Node take pods only once nomination has pointed
//     the pods planned for it at it (LifecycleOptions.BeforeRegister), opens the Nodes of one
//     provisioning pass to pods together (LifecycleOptions.HoldRegistration), and tells those pods
//     when their claim could not launch (LifecycleOptions.Nominees);
//   - the provisioner and disruption create NodeClaims through the same provisioning.Launcher;
//   - the provisioner and disruption plan around offerings that recently ran out
//     (Deps.Unavailable), which the lifecycle controller fills in;
//   - with the NodeOverlay gate, the provisioner, disruption and static NodePools see the
//     instance types as the NodeOverlays adjust them, and the cloud launches by them;
//   - with the CapacityBuffer gate, the provisioner launches for the buffers' virtual pods and
//     disruption keeps their room;
//   - with the PodDeletionCostManagement gate, the pod deletion cost controller writes through
//     its queue, and disruption stops reading the annotation it writes as a pod's cost.
package controllers

import (
	"time"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/capacitybuffer"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/deletioncost"
	"github.com/openkarpenter/karpenter/pkg/disruption"
	"github.com/openkarpenter/karpenter/pkg/expiration"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/nodeoverlay"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/providers/cloudmetrics"
	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/reboot"
	"github.com/openkarpenter/karpenter/pkg/repair"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/termination"
)

// Deps are what the controllers share.
type Deps struct {
	// Kube reads and writes the cluster (a manager's client, or the simulator's in-memory one).
	Kube client.Client
	// APIReader, when set, reads past the cache where a stale read would do harm (the static
	// NodePool controller's count of its NodeClaims).
	APIReader client.Reader
	// Cluster is the shared cluster state.
	Cluster *state.Cluster
	// Cloud is the cloud provider.
	Cloud cloudprovider.CloudProvider
	// Instances, when set, is what the lifecycle controller launches and deletes instances
	// through instead of Cloud (the simulator's records refused launches).
	Instances cloudprovider.InstanceLifecycle
	// Unavailable caches the offerings that recently ran out of capacity.
	Unavailable *cloudprovider.UnavailableOfferings
	// Clock is the controllers' clock.
	Clock clock.Clock
	// Recorder records Events; nil records none.
	Recorder record.EventRecorder
}

// Options tune the controller set.
type Options struct {
	// Provisioning tunes the provisioner.
	Provisioning provisioning.Options
	// Disruption tunes disruption.
	Disruption disruption.Options
	// RegistrationTTL is how long a launched NodeClaim may take to register (0: the default).
	RegistrationTTL time.Duration
	// TerminationReconciles bounds the NodeClaims drained at once under a manager (0: the
	// termination package's default).
	TerminationReconciles int
	// RegistrationHealth keeps the NodePools' NodeRegistrationHealthy condition, hearing of
	// registrations and failed launches from the lifecycle controller.
	RegistrationHealth bool
	// NodeRepair builds node repair (the NodeRepair feature gate); it is built only for a cloud
	// that declares repair policies, as in Karpenter. Repair is then a disruption method, whose
	// compiled policies the caller passes in Disruption.Repair, unless LegacyNodeRepair.
	NodeRepair bool
	// LegacyNodeRepair builds, with NodeRepair, Karpenter's legacy node repair controller
	// (Set.Repair, package repair) with the cloud's legacy policies
	// (cloudprovider.LegacyRepairPolicies) instead of the disruption method
	// (--legacy-node-repair); Disruption.Repair is then ignored.
	LegacyNodeRepair bool
	// NodeOverlay applies the cluster's NodeOverlays (the NodeOverlay feature gate): Set.Overlays
	// evaluates them, and the controllers that choose instance types see them applied.
	NodeOverlay bool
	// CapacityBuffer keeps the room CapacityBuffers ask for (the CapacityBuffer feature gate):
	// the provisioner places Set.Buffers' virtual pods and disruption keeps their room. The
	// buffers' own controller wakes a provisioner, so its caller builds it.
	CapacityBuffer bool
	// PodDeletionCostManagement builds Set.DeletionCost and its queue (the
	// PodDeletionCostManagement feature gate), and has disruption weigh pods without the
	// annotation it writes (disruption.Options.PodDeletionCostManagement).
	PodDeletionCostManagement bool
	// DeletionCostReconciles bounds the pod annotation writes at once under a manager (0: the
	// deletioncost package's default).
	DeletionCostReconciles int
	// CloudMetrics has each controller call the cloud through its own cloudmetrics.Wrap
	// view, labelled with its name, for karpenter_cloudprovider_* metrics.
	CloudMetrics bool
}

// Set is the controller set, linked.
type Set struct {
	// Provisioner creates NodeClaims for pending pods.
	Provisioner *provisioning.Provisioner
	// Nomination points the pods planned for a claim at its Node.
	Nomination *provisioning.NominationController
	// Lifecycle launches, registers, initializes and finalizes NodeClaims.
	Lifecycle *nodeclaim.LifecycleController
	// Termination drains and finalizes deleting NodeClaims, and deletes the NodeClaim of a
	// deleted Node.
	Termination *termination.Controller
	// Reboot carries out the reboots node repair commits, draining through Termination; it
	// runs whatever the gates say, so a reboot under way always ends.
	Reboot *reboot.Controller
	// Disruption removes or replaces nodes that are empty, underused or drifted.
	Disruption *disruption.Controller
	// GarbageCollector removes claims whose instance is gone, and instances without a claim.
	GarbageCollector *nodeclaim.GarbageCollector
	// Consistency checks that a NodeClaim's Node matches what it asked for.
	Consistency *nodeclaim.ConsistencyController
	// NodePoolStatus keeps the NodePools' status (resources, node count, conditions).
	NodePoolStatus *nodepool.StatusController
	// RegistrationHealth keeps NodeRegistrationHealthy; nil unless Options.RegistrationHealth.
	RegistrationHealth *nodepool.RegistrationHealth
	// Static keeps static NodePools (spec.replicas) at their size.
	Static *nodepool.StaticController
	// Expiration deletes the NodeClaims that outlived their expireAfter.
	Expiration *expiration.Controller
	// ReservationExpiry deletes the NodeClaims in expiring capacity reservations; nil unless
	// the cloud's reservations can expire (expiration.ExpiringReservations).
	ReservationExpiry *expiration.ReservationController
	// CapacityType turns reserved nodes on-demand when their capacity reservation ends.
	CapacityType *expiration.CapacityTypeController
	// Repair is the legacy node repair controller; nil unless Options.NodeRepair and
	// Options.LegacyNodeRepair and the cloud declares repair policies.
	Repair *repair.Controller
	// Overlays evaluates the NodeOverlays; nil unless Options.NodeOverlay.
	Overlays *nodeoverlay.Controller
	// Buffers are the CapacityBuffers' virtual pods; nil unless Options.CapacityBuffer.
	Buffers *capacitybuffer.Buffers
	// DeletionCost ranks the nodes for controller.kubernetes.io/pod-deletion-cost, and
	// DeletionCostQueue writes it; nil unless Options.PodDeletionCostManagement.
	DeletionCost      *deletioncost.Controller
	DeletionCostQueue *deletioncost.Queue
	// Cloud is the cloud as the controllers that choose instance types see it: Deps.Cloud, with
	// the NodeOverlays applied under Options.NodeOverlay.
	Cloud cloudprovider.CloudProvider
}

// overlaySetter is a cloud that launches by the instance types an Overlay adjusts.
type overlaySetter interface {
	SetOverlay(cloudprovider.Overlay)
}

// New builds the controller set and links it (see the package documentation).
func New(deps Deps, opts Options) *Set {
	s := &Set{Cloud: deps.Cloud}
	if opts.NodeOverlay {
		// The overlay controller reads the provider's own instance types; the cloud launches
		// and bills by the adjusted ones.
		store := nodeoverlay.NewStore()
		s.Overlays = nodeoverlay.NewController(deps.Kube, deps.Cloud, store, deps.Clock)
		if setter, ok := deps.Cloud.(overlaySetter); ok {
			setter.SetOverlay(store)
		}
		s.Cloud = nodeoverlay.Decorate(deps.Cloud, store)
	}
	cloud := func(name string) cloudprovider.CloudProvider {
		if opts.CloudMetrics {
			return cloudmetrics.Wrap(s.Cloud, name)
		}
		return s.Cloud
	}
	s.Provisioner = provisioning.NewProvisioner(deps.Kube, deps.Cluster, cloud(metrics.ControllerProvisioner), deps.Unavailable, deps.Recorder, deps.Clock, opts.Provisioning)
	s.Nomination = provisioning.NewNominationController(deps.Kube, deps.Cluster, deps.Clock)
	s.Provisioner.Observe(s.Nomination.Placed)
	lifecycleOpts := nodeclaim.LifecycleOptions{RegistrationTTL: opts.RegistrationTTL, BeforeRegister: s.Nomination.BeforeRegister,
		HoldRegistration: deps.Cluster.HoldsRegistration, Nominees: deps.Cluster.Nominees}
	if opts.RegistrationHealth {
		s.RegistrationHealth = nodepool.NewRegistrationHealth(deps.Kube, deps.Clock)
		lifecycleOpts.RegistrationHealth = s.RegistrationHealth
	}
	var instances cloudprovider.InstanceLifecycle = cloud(nodeclaim.LifecycleControllerName)
	if deps.Instances != nil {
		instances = deps.Instances
	}
	s.Lifecycle = nodeclaim.NewLifecycleController(deps.Kube, instances, deps.Unavailable, deps.Clock, deps.Recorder, lifecycleOpts)
	s.Termination = termination.NewController(deps.Kube, s.Lifecycle, deps.Clock, deps.Recorder, termination.Options{MaxConcurrentReconciles: opts.TerminationReconciles})
	s.Reboot = reboot.NewController(deps.Kube, cloud(reboot.ControllerName), s.Termination, deps.Clock, deps.Recorder)
	disruptionOpts := opts.Disruption
	disruptionOpts.PodDeletionCostManagement = opts.PodDeletionCostManagement
	if !opts.NodeRepair || opts.LegacyNodeRepair {
		disruptionOpts.Repair = nil
	}
	s.Disruption = disruption.NewController(deps.Kube, deps.Cluster, cloud(metrics.ControllerDisruption), deps.Unavailable, deps.Clock, deps.Recorder, disruptionOpts)
	s.Expiration = expiration.NewController(deps.Kube, deps.Clock)
	if reservations, ok := deps.Cloud.(expiration.ExpiringReservations); ok {
		s.ReservationExpiry = expiration.NewReservationController(deps.Kube, reservations, deps.Clock)
	}
	s.CapacityType = expiration.NewCapacityTypeController(deps.Kube, cloud(expiration.CapacityTypeControllerName), deps.Clock)
	s.GarbageCollector = nodeclaim.NewGarbageCollector(deps.Kube, cloud("nodeclaim.garbagecollection"), deps.Clock, deps.Recorder, nodeclaim.GarbageCollectorOptions{})
	s.Consistency = nodeclaim.NewConsistencyController(deps.Kube, deps.Clock, deps.Recorder)
	s.NodePoolStatus = nodepool.NewStatusController(deps.Kube, deps.Clock, deps.Recorder)
	staticOpts := []nodepool.StaticOption{nodepool.WithDisruptionMarks(deps.Cluster.MarkedForDeletion)}
	if deps.APIReader != nil {
		staticOpts = append(staticOpts, nodepool.WithAPIReader(deps.APIReader))
	}
	s.Static = nodepool.NewStaticController(deps.Kube, cloud("nodepool.static"), staticOpts...)
	if opts.NodeRepair && opts.LegacyNodeRepair && len(deps.Cloud.RepairPolicies()) > 0 {
		s.Repair = repair.NewController(deps.Kube, cloudprovider.LegacyRepairPolicies(deps.Cloud), deps.Clock, deps.Recorder)
	}
	if opts.CapacityBuffer {
		s.Buffers = capacitybuffer.NewBuffers(deps.Kube, deps.Clock)
		s.Provisioner.KeepBuffers(s.Buffers)
		s.Disruption.KeepBuffers(s.Buffers)
	}
	if opts.PodDeletionCostManagement {
		s.DeletionCostQueue = deletioncost.NewQueue(deps.Kube, opts.DeletionCostReconciles)
		s.DeletionCost = deletioncost.NewController(deps.Kube, deps.Cluster, cloud(deletioncost.ControllerName), deps.Clock, s.DeletionCostQueue)
	}
	return s
}
