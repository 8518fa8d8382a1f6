package cluster

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
)

// PodStartupControllerName names the pod startup controller in logs and metrics.
const PodStartupControllerName = "metrics.pod"

// PodStartupController records karpenter_pods_startup_duration_seconds: for each pod whose
// Ready condition turned True after the controller's first reconcile, once, the time from the
// pod's creation to that transition. Pods that were ready before (at a restart, or while
// another replica led) are not observed, so a new leader does not observe them again. Requests
// name pods. It is safe for concurrent reconciles.
type PodStartupController struct {
	kube  client.Reader
	clock clock.PassiveClock

	mu       sync.Mutex
	since    time.Time                          // the first reconcile; zero before
	observed map[types.NamespacedName]types.UID // pods observed, until they are deleted
}

// NewPodStartupController returns the controller, reading pods through kube and taking the
// time of its first reconcile from clk (the real clock when nil).
func NewPodStartupController(kube client.Reader, clk clock.PassiveClock) *PodStartupController {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &PodStartupController{kube: kube, clock: clk, observed: map[types.NamespacedName]types.UID{}}
}

// Register watches pods under mgr (on the elected leader only).
func (c *PodStartupController) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(PodStartupControllerName).For(&corev1.Pod{}).Complete(c)
}

// Reconcile observes the pod's startup if it has just become ready, and forgets a deleted pod.
func (c *PodStartupController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c.mu.Lock()
	if c.since.IsZero() {
		c.since = c.clock.Now()
	}
	c.mu.Unlock()
	pod := &corev1.Pod{}
	if err := c.kube.Get(ctx, req.NamespacedName, pod); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.mu.Lock()
			delete(c.observed, req.NamespacedName)
			c.mu.Unlock()
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	c.observe(req.NamespacedName, pod)
	return reconcile.Result{}, nil
}

func (c *PodStartupController) observe(key types.NamespacedName, pod *corev1.Pod) {
	ready := readyCondition(pod)
	if ready == nil || ready.Status != corev1.ConditionTrue {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.observed[key] == pod.UID {
		return
	}
	// A recreated pod of the same name is a new pod; a pod ready before we looked is not ours.
	delete(c.observed, key)
	// Conditions have a resolution of a second: a transition in the second we started counts.
	if ready.LastTransitionTime.Time.Before(c.since.Truncate(time.Second)) {
		return
	}
	c.observed[key] = pod.UID
	metrics.ObservePodStartup(ready.LastTransitionTime.Sub(pod.CreationTimestamp.Time))
}

func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
