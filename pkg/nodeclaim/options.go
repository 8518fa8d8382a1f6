package nodeclaim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// Defaults of LifecycleOptions and GarbageCollectorOptions.
const (
	// DefaultRegistrationTTL is how long a NodeClaim may take to register, as Karpenter's
	// registration timeout.
	DefaultRegistrationTTL = 15 * time.Minute
	// DefaultMaxConcurrentReconciles is how many NodeClaims the lifecycle controller works on
	// at once.
	DefaultMaxConcurrentReconciles = 10
	// DefaultGarbageCollectionInterval is the time between two garbage-collection passes.
	DefaultGarbageCollectionInterval = time.Minute
	// DefaultOrphanGracePeriod is how old an instance without a NodeClaim must be before it is
	// terminated.
	DefaultOrphanGracePeriod = 30 * time.Second
)

// Fixed intervals of the lifecycle.
const (
	// LaunchTimeout is how long after its creation a NodeClaim may stay not Launched before it
	// is deleted, as Karpenter's.
	LaunchTimeout = 5 * time.Minute
	// MaxRegistrationHold bounds how long after its Node joined a claim waits to register it
	// (LifecycleOptions.HoldRegistration).
	MaxRegistrationHold = 30 * time.Second
	// registrationHoldPoll is how often a held claim looks again.
	registrationHoldPoll = 250 * time.Millisecond
	// InstanceTerminatingRequeue is how often a deleting NodeClaim checks whether its instance
	// is gone.
	InstanceTerminatingRequeue = 5 * time.Second
)

// LifecycleOptions configure a LifecycleController. The zero value is usable: every zero field
// takes its default.
type LifecycleOptions struct {
	// RegistrationTTL is how long after its creation a launched NodeClaim may stay not
	// Registered before it is deleted; zero means DefaultRegistrationTTL.
	RegistrationTTL time.Duration
	// MaxConcurrentReconciles bounds the parallel reconciles under a manager; zero means
	// DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// BeforeRegister, when set, is called when a claim's Node is found and before the claim
	// registers it (which lifts the karpenter.sh/unregistered taint, so the Node may take pods
	// from then on), and at each look while registration is held (HoldRegistration). The
	// provisioner uses it to point the pods planned for the claim at the Node first
	// (pkg/provisioning's NominationController). It must not block for long; what it fails to
	// do is its own concern, registration goes ahead.
	BeforeRegister func(ctx context.Context, claim *karpv1.NodeClaim, node *corev1.Node)
	// HoldRegistration, when set, says whether a claim whose Node has joined should wait
	// before registering it: the provisioner holds a claim until every pod planned on it has
	// been told its node, and the claims it launched together, when room on them is planned
	// for pods not told (state.Cluster.HoldsRegistration), until each has a Node and no room
	// on them waits for a pod still to be created, so that the kube-scheduler, which never
	// sees one of them open before the others, places their pods as planned. A claim waits at
	// most MaxRegistrationHold after its Node joined.
	HoldRegistration func(claimName string) bool
	// Nominees, when set, names the pods planned for a claim (by the claim's name), which get
	// an InsufficientCapacityError Event when it cannot launch for want of capacity
	// (state.Cluster.Nominees).
	Nominees func(claimName string) map[types.UID]types.NamespacedName
	// RegistrationHealth, when set, hears which NodeClaims registered and which were deleted
	// for not launching or not registering in time, for their NodePool's
	// NodeRegistrationHealthy condition (nodepool.RegistrationHealth).
	RegistrationHealth RegistrationHealth
}

// RegistrationHealth hears how NodeClaims fare, for their NodePools' health. Each method is
// called once per claim and outcome; an error means the outcome was not recorded.
type RegistrationHealth interface {
	// Registered: the claim's Node registered.
	Registered(ctx context.Context, claim *karpv1.NodeClaim) error
	// RegistrationFailed: the claim is about to be deleted for not launching or not
	// registering in time, or for a launch error retrying cannot fix; its Launched condition
	// says why when it did not launch.
	RegistrationFailed(ctx context.Context, claim *karpv1.NodeClaim) error
}

// Validate reports the first invalid option.
func (o LifecycleOptions) Validate() error {
	if o.RegistrationTTL < 0 {
		return fmt.Errorf("registration ttl %s is negative", o.RegistrationTTL)
	}
	if o.MaxConcurrentReconciles < 0 {
		return fmt.Errorf("max concurrent reconciles %d is negative", o.MaxConcurrentReconciles)
	}
	return nil
}

func (o LifecycleOptions) withDefaults() LifecycleOptions {
	if o.RegistrationTTL == 0 {
		o.RegistrationTTL = DefaultRegistrationTTL
	}
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	return o
}

// GarbageCollectorOptions configure a GarbageCollector. The zero value is usable: every zero
// field takes its default.
type GarbageCollectorOptions struct {
	// Interval is the time between two passes of Run; zero means
	// DefaultGarbageCollectionInterval.
	Interval time.Duration
	// OrphanGracePeriod is how old (since launch) an instance without a NodeClaim must be before
	// it is terminated; zero means DefaultOrphanGracePeriod.
	OrphanGracePeriod time.Duration
}

// Validate reports the first invalid option.
func (o GarbageCollectorOptions) Validate() error {
	if o.Interval < 0 {
		return fmt.Errorf("garbage collection interval %s is negative", o.Interval)
	}
	if o.OrphanGracePeriod < 0 {
		return fmt.Errorf("orphan grace period %s is negative", o.OrphanGracePeriod)
	}
	return nil
}

func (o GarbageCollectorOptions) withDefaults() GarbageCollectorOptions {
	if o.Interval == 0 {
		o.Interval = DefaultGarbageCollectionInterval
	}
	if o.OrphanGracePeriod == 0 {
		o.OrphanGracePeriod = DefaultOrphanGracePeriod
	}
	return o
}
