package termination

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// wait is the soonest time a drain wants to look again; zero means not at all.
type wait time.Duration

func (w *wait) at(d time.Duration) {
	if d > 0 && (*w == 0 || d < time.Duration(*w)) {
		*w = wait(d)
	}
}

// Drain makes one pass of draining the claim's Node while the claim is not being deleted (a
// reboot's drain, package reboot): the termination drain's groups, evictions, waits on
// PodDisruptionBudgets and do-not-disrupt pods, and events, before deadline (nil for none,
// which only words the events: past it, the caller stops draining; no pod is ever deleted
// here). It reports whether the Node is drained and, when it is not, how soon to look again.
func (c *Controller) Drain(ctx context.Context, claim *karpv1.NodeClaim, node *corev1.Node, deadline *time.Time) (bool, time.Duration, error) {
	pods, err := podsOn(ctx, c.kube, []string{node.Name})
	if err != nil {
		return false, 0, err
	}
	return c.drain(ctx, claim, []*corev1.Node{node}, pods, deadline, c.clock.Now())
}

// drain makes one pass of the drain before the deadline (nil when there is none). It works on
// the first drain group that still has pods: evicts those it may, and waits for the others.
// It reports whether the node is drained and, when it is not, how soon to look again.
func (c *Controller) drain(ctx context.Context, claim *karpv1.NodeClaim, nodes []*corev1.Node, pods []*corev1.Pod,
	deadline *time.Time, now time.Time) (bool, time.Duration, error) {
	for _, g := range drainGroups {
		var members []*corev1.Pod
		for _, pod := range pods {
			if classify(pod) == g && !isStuckTerminating(pod, now, c.opts.StuckTerminatingTimeout) {
				members = append(members, pod)
			}
		}
		if len(members) == 0 {
			continue
		}
		var w wait
		var errs []error
		evicted, refused := false, false
		retry := c.refusals.delay(claim.UID, c.opts.EvictionRetry)
		for _, pod := range members {
			protection := karpv1.PodDoNotDisrupt(pod, now)
			switch {
			case pod.DeletionTimestamp != nil:
				w.at(c.opts.DrainPoll)
			case protection.Active:
				c.blocked(claim, nodes, pod, fmt.Sprintf("pod %s has %s%s", pod.Name, protection, until(deadline)))
				w.at(c.opts.EvictionRetry)
				refused = true
				if deadline != nil {
					w.at(deadline.Sub(now))
				}
				if !protection.Until.IsZero() {
					w.at(protection.Until.Sub(now))
				}
			default:
				outcome, err := c.evict(ctx, claim, nodes, pod)
				if err != nil {
					errs = append(errs, err)
				}
				switch outcome {
				case evictionDone:
					evicted = true
					w.at(c.opts.DrainPoll)
				case evictionRefused:
					refused = true
					w.at(retry)
				}
			}
		}
		c.refusals.record(claim.UID, evicted, refused)
		if len(errs) > 0 {
			return false, 0, errors.Join(errs...)
		}
		c.blocked(claim, nodes, nil, waitingForEvictionDetail(waitingForEviction(pods, now, c.opts.StuckTerminatingTimeout)))
		log.FromContext(ctx).V(1).Info("draining", "pods", len(members), "critical", g == groupCritical)
		return false, time.Duration(w), nil
	}
	c.refusals.forget(claim.UID)
	return true, 0, nil
}

// evictionOutcome is what one eviction call came to.
type evictionOutcome int

const (
	// evictionFailed: an error the caller reports.
	evictionFailed evictionOutcome = iota
	// evictionDone: evicted, or already gone or replaced; look again shortly.
	evictionDone
	// evictionRefused: a budget (or the server) refused; retry after the backoff.
	evictionRefused
)

// refusals counts, per draining claim, the drain passes in a row whose evictions were all
// refused, for the backoff of the next retry. Reconciles of different claims run concurrently.
type refusals struct {
	mu     sync.Mutex
	passes map[types.UID]int
}

// delay is how soon a claim's drain retries refused evictions: EvictionRetryBase doubled for
// each refused pass in a row, at most limit.
func (r *refusals) delay(uid types.UID, limit time.Duration) time.Duration {
	r.mu.Lock()
	n := r.passes[uid]
	r.mu.Unlock()
	d := EvictionRetryBase
	for ; n > 0 && d < limit; n-- {
		d *= 2
	}
	return min(d, limit)
}

// record notes one drain pass: any eviction resets the backoff, a pass of refusals only
// lengthens it.
func (r *refusals) record(uid types.UID, evicted, refused bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case evicted:
		delete(r.passes, uid)
	case refused:
		if r.passes == nil {
			r.passes = map[types.UID]int{}
		}
		r.passes[uid]++
	}
}

// forget drops a drained claim.
func (r *refusals) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.passes, uid)
}

func until(deadline *time.Time) string {
	if deadline == nil {
		return ""
	}
	return " until " + deadline.UTC().Format(time.RFC3339)
}

// evict asks the Eviction API to evict pod, so that its PodDisruptionBudget is honoured, and
// reports what came of it.
func (c *Controller) evict(ctx context.Context, claim *karpv1.NodeClaim, nodes []*corev1.Node, pod *corev1.Pod) (evictionOutcome, error) {
	eviction := &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		// Never evict a new pod that took the name of the one we saw.
		DeleteOptions: &metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))},
	}
	callCtx, cancel := context.WithTimeout(ctx, c.opts.EvictionTimeout)
	defer cancel()
	err := c.kube.SubResource("eviction").Create(callCtx, pod, eviction)
	if err == nil {
		metrics.EvictionRequested(200)
	} else if status := apierrors.APIStatus(nil); errors.As(err, &status) {
		metrics.EvictionRequested(int(status.Status().Code))
	}
	switch {
	case err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		// The server asked to retry later (a budget it has not processed yet) and kept asking.
		c.blocked(claim, nodes, pod, fmt.Sprintf("eviction of pod %s not granted within %s: the API server asks to retry later", pod.Name, c.opts.EvictionTimeout))
		return evictionRefused, nil
	case err == nil:
		metrics.PodDrained(drainReason(claim))
		log.FromContext(ctx).Info("evicted pod", "pod", podKey(pod))
		c.events.Publish(evictedEvent(pod, drainReason(claim)))
		return evictionDone, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or replaced by a pod of the same name: the next pass sees which.
		return evictionDone, nil
	case apierrors.IsTooManyRequests(err):
		budget, lerr := c.blockingBudget(ctx, pod)
		if lerr != nil {
			return evictionFailed, lerr
		}
		if budget != "" {
			c.blocked(claim, nodes, pod, podDetail(pdbViolationDetail, pod, "PodDisruptionBudget", budget))
		} else {
			c.blocked(claim, nodes, pod, podDetail(pdbViolationDetail, pod))
		}
		return evictionRefused, nil
	case strings.Contains(err.Error(), multiplePDBsMessage):
		c.blocked(claim, nodes, pod, podDetail(multiplePDBsDetail, pod))
		return evictionRefused, nil
	default:
		return evictionFailed, fmt.Errorf("evicting pod %s: %w", podKey(pod), err)
	}
}

// blocked records why the drain cannot go on yet (because of pod, or nil), on the claim and its
// nodes.
func (c *Controller) blocked(claim *karpv1.NodeClaim, nodes []*corev1.Node, pod *corev1.Pod, detail string) {
	c.events.Publish(failedDrainingEvents(claim, nodes, pod, detail)...)
}

// waitingForEviction counts the pods a drain still waits for: those of every drain group, being
// deleted or not, but for those stuck terminating.
func waitingForEviction(pods []*corev1.Pod, now time.Time, stuckTimeout time.Duration) int {
	n := 0
	for _, pod := range pods {
		if classify(pod) != groupIgnored && !isStuckTerminating(pod, now, stuckTimeout) {
			n++
		}
	}
	return n
}

// blockingBudget names ("namespace/name") the PodDisruptionBudgets that select pod, the first
// by name; "" when none does.
func (c *Controller) blockingBudget(ctx context.Context, pod *corev1.Pod) (string, error) {
	list := &policyv1.PodDisruptionBudgetList{}
	if err := c.kube.List(ctx, list, client.InNamespace(pod.Namespace)); err != nil {
		return "", fmt.Errorf("listing pod disruption budgets: %w", err)
	}
	var names []string
	for i := range list.Items {
		pdb := &list.Items[i]
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		// A budget without a selector selects nothing.
		if sel.Matches(labels.Set(pod.Labels)) {
			names = append(names, pdb.Namespace+"/"+pdb.Name)
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	slices.Sort(names)
	return strings.Join(names, ", "), nil
}

// deleteRemaining deletes, without an eviction, every pod the drain would wait for that is not
// already being deleted: the termination grace period ran out, so neither budgets nor
// do-not-disrupt hold the node any longer.
func (c *Controller) deleteRemaining(ctx context.Context, claim *karpv1.NodeClaim, pods []*corev1.Pod, deadline time.Time) error {
	var errs []error
	for _, pod := range pods {
		if classify(pod) == groupIgnored || pod.DeletionTimestamp != nil {
			continue
		}
		grace := grantedGrace(pod, 0)
		err := c.kube.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}, client.GracePeriodSeconds(grace))
		switch {
		case err == nil:
			metrics.PodDrained(drainReason(claim))
			log.FromContext(ctx).Info("deleted pod, termination grace period elapsed", "pod", podKey(pod))
			c.events.Publish(disruptedEvent(pod, grace, deadline))
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		default:
			errs = append(errs, fmt.Errorf("deleting pod %s: %w", podKey(pod), err))
		}
	}
	return errors.Join(errs...)
}

// deleteExpiring deletes, without an eviction, each pod the drain would wait for whose own
// terminationGracePeriodSeconds would otherwise run past the node's deadline: at the deadline
// less that grace period, with the deletion's grace period clamped to the time left. A pod it
// deletes is marked terminating in pods, so that the drain waits for it. It returns how soon the
// next such pod is due (zero: none).
func (c *Controller) deleteExpiring(ctx context.Context, claim *karpv1.NodeClaim, pods []*corev1.Pod, deadline, now time.Time) (time.Duration, error) {
	var next wait
	var errs []error
	for _, pod := range pods {
		grace := pod.Spec.TerminationGracePeriodSeconds
		if classify(pod) == groupIgnored || pod.DeletionTimestamp != nil || grace == nil || *grace <= 0 {
			continue
		}
		at := deadline.Add(-time.Duration(*grace) * time.Second)
		if now.Before(at) {
			next.at(at.Sub(now))
			continue
		}
		left := grantedGrace(pod, int64(deadline.Sub(now)/time.Second))
		err := c.kube.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}, client.GracePeriodSeconds(left))
		switch {
		case err == nil:
			metrics.PodDrained(drainReason(claim))
			log.FromContext(ctx).Info("deleted pod, its grace period would outlast the node's", "pod", podKey(pod), "grace-seconds", left)
			c.events.Publish(disruptedEvent(pod, left, deadline))
			deleted := metav1.NewTime(now)
			pod.DeletionTimestamp = &deleted
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		default:
			errs = append(errs, fmt.Errorf("deleting pod %s: %w", podKey(pod), err))
		}
	}
	return time.Duration(next), errors.Join(errs...)
}

// minDeleteGrace is the least grace period, in seconds, of a pod deleted for the node's
// termination deadline, as Karpenter's: not zero, which would remove the pod from etcd before
// its containers stop.
const minDeleteGrace int64 = 1

// grantedGrace is the grace period, in seconds, of a pod deleted for the node's termination
// deadline with left seconds to go: as Karpenter, left but at least minDeleteGrace; and never
// more than the pod's own terminationGracePeriodSeconds (a pod that asks for none is deleted at
// once, as its own deletion would).
func grantedGrace(pod *corev1.Pod, left int64) int64 {
	grace := max(left, minDeleteGrace)
	if own := pod.Spec.TerminationGracePeriodSeconds; own != nil && *own < grace {
		grace = max(*own, 0)
	}
	return grace
}

// drainReason is the reason label of the pods a claim's drain evicts or deletes: why the claim
// is disrupted (its DisruptionReason condition), else Karpenter's "Forceful Termination".
func drainReason(claim *karpv1.NodeClaim) string {
	if c := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeDisruptionReason); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason
	}
	return metrics.ReasonForcefulTermination
}
