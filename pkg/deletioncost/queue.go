package deletioncost

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// QueueName names the queue's controller in logs and metrics: Karpenter's.
const QueueName = "pod.deletioncost.queue"

// The queue's retry and concurrency bounds, as Karpenter's (those of its eviction queue).
const (
	queueBaseDelay = 100 * time.Millisecond
	queueMaxDelay  = 10 * time.Second
	// DefaultQueueReconciles is the concurrent writes at one core.
	DefaultQueueReconciles = 100
	// sourceBuffer is how many pods may wait to be handed to the workers.
	sourceBuffer = 10000
)

// write is what a pod's annotation should become: its cost, or removed.
type write struct {
	uid   types.UID
	cost  int
	clear bool
}

// matches reports whether the pod already is as the write wants it.
func (w write) matches(pod *corev1.Pod) bool {
	value, has := pod.Annotations[corev1.PodDeletionCost]
	if w.clear {
		return !has
	}
	return has && value == strconv.Itoa(w.cost)
}

// Queue writes pods' controller.kubernetes.io/pod-deletion-cost, one reconcile per pod, as
// Karpenter's deletion cost Queue: the last Add for a pod wins, and a pod is handed to the
// workers once until its write is done.
type Queue struct {
	kube    client.Client
	workers int

	mu     sync.Mutex
	writes map[types.NamespacedName]write
	source chan event.TypedGenericEvent[*corev1.Pod]
}

// NewQueue returns a queue writing through kube, with workers concurrent writes under a
// manager (DefaultQueueReconciles when 0 or less).
func NewQueue(kube client.Client, workers int) *Queue {
	if workers <= 0 {
		workers = DefaultQueueReconciles
	}
	return &Queue{kube: kube, workers: workers, writes: map[types.NamespacedName]write{}, source: make(chan event.TypedGenericEvent[*corev1.Pod], sourceBuffer)}
}

// Add plans the pod's annotation: cost, or removed when clear. A pod already waiting keeps
// its place with the new plan.
func (q *Queue) Add(pod *corev1.Pod, cost int, clear bool) {
	key := client.ObjectKeyFromObject(pod)
	q.mu.Lock()
	_, waiting := q.writes[key]
	q.writes[key] = write{uid: pod.UID, cost: cost, clear: clear}
	q.mu.Unlock()
	if !waiting {
		q.source <- event.TypedGenericEvent[*corev1.Pod]{Object: pod}
	}
}

// Waiting lists the pods whose write is not done, for tests and logs.
func (q *Queue) Waiting() []types.NamespacedName {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]types.NamespacedName, 0, len(q.writes))
	for key := range q.writes {
		out = append(out, key)
	}
	return out
}

func (q *Queue) done(key types.NamespacedName) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.writes, key)
}

// Register runs the queue's workers under mgr (on the leader), with Karpenter's rate limits:
// a failed write backs off from 100ms to 10s, and writes start at most workers a second (a
// burst of ten times that).
func (q *Queue) Register(mgr manager.Manager) error {
	src := source.Channel(q.source, handler.TypedFuncs[*corev1.Pod, reconcile.Request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[*corev1.Pod], w workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			w.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)})
		},
	})
	return builder.ControllerManagedBy(mgr).Named(QueueName).WatchesRawSource(src).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: q.workers,
			RateLimiter: workqueue.NewTypedMaxOfRateLimiter[reconcile.Request](
				workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](queueBaseDelay, queueMaxDelay),
				&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(q.workers), 10*q.workers)},
			),
		}).Complete(q)
}

// Reconcile writes the pod named by req as planned. A pod already as planned is not written;
// one gone, or changed since it was read (the patch carries its resourceVersion), is dropped
// for the next ranking pass to see again; another failure is returned, to retry.
func (q *Queue) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	q.mu.Lock()
	w, ok := q.writes[req.NamespacedName]
	q.mu.Unlock()
	if !ok {
		return reconcile.Result{}, nil
	}
	pod := &corev1.Pod{}
	if err := q.kube.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			q.done(req.NamespacedName)
			metrics.DeletionCostWrite(metrics.DeletionCostSkippedNotFound)
			return reconcile.Result{}, nil
		}
		metrics.DeletionCostWrite(metrics.DeletionCostError)
		return reconcile.Result{}, err
	}
	if pod.UID != w.uid {
		// Another pod of the same name: not the one planned; the next pass ranks it.
		q.done(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	if w.matches(pod) {
		q.done(req.NamespacedName)
		metrics.DeletionCostWrite(metrics.DeletionCostSkippedUnchanged)
		return reconcile.Result{}, nil
	}
	updated := pod.DeepCopy()
	if w.clear {
		delete(updated.Annotations, corev1.PodDeletionCost)
	} else {
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		updated.Annotations[corev1.PodDeletionCost] = strconv.Itoa(w.cost)
	}
	err := q.kube.Patch(ctx, updated, client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		q.done(req.NamespacedName)
		metrics.DeletionCostWrite(metrics.DeletionCostUpdated)
	case apierrors.IsNotFound(err):
		q.done(req.NamespacedName)
		metrics.DeletionCostWrite(metrics.DeletionCostSkippedNotFound)
		log.FromContext(ctx).V(1).Info("skipping pod deletion cost write, pod gone", "pod", req.NamespacedName)
	case apierrors.IsConflict(err):
		q.done(req.NamespacedName)
		metrics.DeletionCostWrite(metrics.DeletionCostSkippedConflict)
		log.FromContext(ctx).V(1).Info("skipping pod deletion cost write, pod changed", "pod", req.NamespacedName)
	default:
		metrics.DeletionCostWrite(metrics.DeletionCostError)
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}
