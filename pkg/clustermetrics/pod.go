package clustermetrics

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// PodControllerName names the pod metrics controller in logs and metrics.
const PodControllerName = "metrics.pod"

// PodRefreshInterval is how often the per-pod gauges of a waiting pod are brought up to date
// when nothing about the pod changes (Karpenter's interval).
const PodRefreshInterval = 30 * time.Second

// SchedulingMemory tells when Karpenter saw a pod wait for capacity and decided on it;
// *state.Cluster is one.
type SchedulingMemory interface {
	// PodScheduling returns the moments of the pod's scheduling, zero when none is known.
	PodScheduling(uid types.UID) state.PodScheduling
}

// PodController records the pod metrics as Karpenter's pod metrics controller does:
//
//   - once per pod, when it is bound and when it becomes ready, the time since its creation
//     (karpenter_pods_bound_duration_seconds, karpenter_pods_startup_duration_seconds) and, for
//     pods a provisioning pass placed, since that first placement (the provisioning_ ones);
//   - for each pod still waiting, how long it has waited to be bound, to start and for a
//     scheduling decision (the unbound, unstarted and undecided gauges), refreshed on every
//     change of the pod and every PodRefreshInterval, and dropped when it stops waiting.
//
// Bindings and startups that happened before the controller's first reconcile (at a restart, or
// while another replica led) are not observed, so a new leader does not observe them again. A
// pod waits to start from when the controller sees it pending until it is ready once. Requests
// name pods. It is safe for concurrent reconciles.
type PodController struct {
	kube       client.Reader
	clock      clock.PassiveClock
	scheduling SchedulingMemory

	mu    sync.Mutex
	since time.Time                                // the first reconcile; zero before
	pods  map[types.NamespacedName]*podObservation // pods seen, until they are deleted
}

// podObservation is what the controller has seen of a pod.
type podObservation struct {
	uid types.UID
	// bound and started: its binding and its readiness were seen (and observed when new).
	bound, started bool
	// waitingToStart: it was seen pending and has not been ready yet.
	waitingToStart bool
}

// NewPodController returns the controller, reading pods through kube, the moments of their
// scheduling from scheduling (nil: the provisioning metrics are not recorded), and the time
// from clk (the real clock when nil).
func NewPodController(kube client.Reader, scheduling SchedulingMemory, clk clock.PassiveClock) *PodController {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &PodController{kube: kube, clock: clk, scheduling: scheduling, pods: map[types.NamespacedName]*podObservation{}}
}

// Register watches pods under mgr (on the elected leader only).
func (c *PodController) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(PodControllerName).For(&corev1.Pod{}).Complete(c)
}

// Reconcile observes the pod's binding and startup if they are new, and sets its waiting gauges;
// a deleted pod is forgotten and its gauges dropped.
func (c *PodController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	now := c.clock.Now()
	c.mu.Lock()
	if c.since.IsZero() {
		c.since = now
	}
	c.mu.Unlock()
	pod := &corev1.Pod{}
	if err := c.kube.Get(ctx, req.NamespacedName, pod); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.mu.Lock()
			delete(c.pods, req.NamespacedName)
			c.mu.Unlock()
			metrics.ForgetPod(req.Name, req.Namespace)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var moments state.PodScheduling
	if c.scheduling != nil {
		moments = c.scheduling.PodScheduling(pod.UID)
	}
	dynamicResources := hasDynamicResources(pod)
	waits := c.observe(req.NamespacedName, pod, dynamicResources, moments)
	metrics.SetPodWaits(pod.Name, pod.Namespace, dynamicResources, now, waits)
	if waits.Waiting() {
		return reconcile.Result{RequeueAfter: PodRefreshInterval}, nil
	}
	return reconcile.Result{}, nil
}

// observe records the pod's binding and startup if they are new, and returns the moments its
// waits are measured from.
func (c *PodController) observe(key types.NamespacedName, pod *corev1.Pod, dynamicResources bool, moments state.PodScheduling) metrics.PodWaits {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.pods[key]
	if o == nil || o.uid != pod.UID {
		// A recreated pod of the same name is a new pod.
		o = &podObservation{uid: pod.UID}
		c.pods[key] = o
	}
	// Conditions have a resolution of a second: a transition in the second we started counts.
	since := c.since.Truncate(time.Second)
	scheduled, ready := condition(pod, corev1.PodScheduled), condition(pod, corev1.PodReady)
	boundNow := scheduled != nil && scheduled.Status == corev1.ConditionTrue
	readyNow := ready != nil && ready.Status == corev1.ConditionTrue
	if boundNow && !o.bound {
		o.bound = true
		if at := scheduled.LastTransitionTime.Time; !at.Before(since) {
			metrics.ObservePodBound(at.Sub(pod.CreationTimestamp.Time), dynamicResources)
			if wait, ok := waitSince(moments.Schedulable, at); ok {
				metrics.ObservePodProvisioningBound(wait, dynamicResources)
			}
		}
	}
	if readyNow && !o.started {
		o.started = true
		if at := ready.LastTransitionTime.Time; !at.Before(since) {
			metrics.ObservePodStartup(at.Sub(pod.CreationTimestamp.Time))
			if wait, ok := waitSince(moments.Schedulable, at); ok {
				metrics.ObservePodProvisioningStartup(wait)
			}
		}
	}

	var waits metrics.PodWaits
	if isTerminal(pod) {
		o.waitingToStart = false
		return waits
	}
	pending := pod.Status.Phase == corev1.PodPending
	switch {
	case readyNow:
		o.waitingToStart = false
	case pending:
		o.waitingToStart = true
	}
	created := pod.CreationTimestamp.Time
	if pending && !boundNow {
		waits.Unbound, waits.ProvisioningUnbound = created, moments.Schedulable
	}
	if o.waitingToStart {
		waits.Unstarted, waits.ProvisioningUnstarted = created, moments.Schedulable
	}
	if moments.Decided.IsZero() && pod.Spec.NodeName == "" && !boundNow {
		waits.Undecided = moments.Acknowledged
	}
	return waits
}

// waitSince is the time from a provisioning pass's first placement of a pod to a transition
// of its conditions at, when it placed it (placed is not zero) before. Placements are timed
// to the nanosecond, transitions to the second: one in the placement's second counts, as 0 if
// it reads earlier.
func waitSince(placed, at time.Time) (time.Duration, bool) {
	if placed.IsZero() || at.Before(placed.Truncate(time.Second)) {
		return 0, false
	}
	return max(at.Sub(placed), 0), true
}

func condition(pod *corev1.Pod, kind corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == kind {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func isReady(pod *corev1.Pod) bool {
	c := condition(pod, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// hasDynamicResources reports whether the pod asks for dynamic resources (resource claims).
func hasDynamicResources(pod *corev1.Pod) bool {
	if len(pod.Spec.ResourceClaims) > 0 {
		return true
	}
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, ctr := range containers {
			if len(ctr.Resources.Claims) > 0 {
				return true
			}
		}
	}
	return false
}
