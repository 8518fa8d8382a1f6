package nodeclaim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// launch creates the claim's instance unless it has one, and copies what was launched onto the
// claim: the labels are written at once, the status is left for the caller to write (it
// reports true when there is a new launch to record). A failure to be retried sets
// Launched=Unknown with its reason, as Karpenter v1.15.0's; those that retrying the same claim
// cannot fix set it False and delete the claim (res.deleted).
func (c *LifecycleController) launch(ctx context.Context, claim *karpv1.NodeClaim, res *result) (bool, error) {
	if claim.Status.ProviderID != "" {
		c.setCondition(claim, karpv1.ConditionTypeLaunched, metav1.ConditionTrue, ReasonLaunched, "")
		return false, nil
	}
	created, cached := c.launches.get(claim.UID)
	if !cached {
		var err error
		created, err = c.cloud.Create(ctx, claim)
		if err != nil {
			return false, c.launchFailed(ctx, claim, err, res)
		}
		if created == nil || created.Status.ProviderID == "" {
			err := errors.New("cloud provider returned no provider id")
			c.setCondition(claim, karpv1.ConditionTypeLaunched, metav1.ConditionUnknown, ReasonLaunchFailed, err.Error())
			return false, fmt.Errorf("launching nodeclaim: %w", err)
		}
		c.launches.put(claim.UID, created)
	}

	if labelsChanged, annotationsChanged := mergeLabels(&claim.ObjectMeta, created.Labels), mergeAnnotations(&claim.ObjectMeta, created.Annotations); labelsChanged || annotationsChanged {
		if err := c.kube.Update(ctx, claim); err != nil {
			return false, fmt.Errorf("recording launched labels and annotations: %w", err)
		}
	}
	claim.Status.ProviderID = created.Status.ProviderID
	claim.Status.ImageID = created.Status.ImageID
	claim.Status.Capacity = created.Status.Capacity.DeepCopy()
	claim.Status.Allocatable = created.Status.Allocatable.DeepCopy()
	c.setCondition(claim, karpv1.ConditionTypeLaunched, metav1.ConditionTrue, ReasonLaunched, "")
	res.onWrite(func() {
		log.FromContext(ctx).Info("launched nodeclaim", "provider-id", created.Status.ProviderID,
			"instance-type", created.Labels[corev1.LabelInstanceTypeStable],
			"zone", created.Labels[corev1.LabelTopologyZone],
			"capacity-type", created.Labels[karpv1.CapacityTypeLabelKey])
		c.events.normal(claim, EventReasonLaunched, "Launched %s (%s, %s, %s)", created.Status.ProviderID,
			created.Labels[corev1.LabelInstanceTypeStable], created.Labels[corev1.LabelTopologyZone],
			created.Labels[karpv1.CapacityTypeLabelKey])
	})
	return true, nil
}

// launchFailed handles a Create error.
func (c *LifecycleController) launchFailed(ctx context.Context, claim *karpv1.NodeClaim, err error, res *result) error {
	logger := log.FromContext(ctx)
	switch {
	case cloudprovider.IsInsufficientCapacityError(err):
		offerings := cloudprovider.InsufficientCapacityOfferings(err)
		if c.unavailable != nil {
			c.unavailable.MarkUnavailable(offerings...)
		}
		logger.Info("insufficient capacity, deleting nodeclaim", "offerings", len(offerings), "error", err.Error())
		c.events.Publish(insufficientCapacityErrorEvent(claim, err))
		c.publishPodInsufficientCapacityEvents(ctx, claim, err)
		res.deleted = true
		return c.deleteClaim(ctx, claim)
	case cloudprovider.IsNodeClassNotReadyError(err):
		// As Karpenter v1.15.0 (lifecycle launch.go launchNodeClaim): deleted at once, not
		// counted against the NodePool's registration health; the provisioner launches again
		// once the NodePool, which follows its NodeClass, is Ready.
		logger.Info("nodeclass not ready, deleting nodeclaim", "error", err.Error())
		c.events.Publish(nodeClassNotReadyEvent(claim, err))
		res.deleted = true
		if err := c.deleteClaim(ctx, claim); err != nil {
			return err
		}
		metrics.NodeClaimDisrupted(metrics.ReasonNodeClassNotReady, claim.Labels[karpv1.NodePoolLabelKey], claim.Labels[karpv1.CapacityTypeLabelKey], "", metrics.TerminationMode(claim))
		return nil
	case cloudprovider.IsTerminalCreateError(err):
		reason, message := launchFailure(err)
		c.setCondition(claim, karpv1.ConditionTypeLaunched, metav1.ConditionFalse, reason, message)
		if err := c.registrationFailed(ctx, claim); err != nil {
			return err
		}
		logger.Info("launch failed for good, deleting nodeclaim", "error", err.Error())
		c.events.warning(claim, EventReasonLaunchFailed, "Deleting: %s", err)
		res.deleted = true
		return c.deleteClaim(ctx, claim)
	default:
		// Unknown, as Karpenter's: the launch is tried again (False would say it never will).
		reason, message := launchFailure(err)
		c.setCondition(claim, karpv1.ConditionTypeLaunched, metav1.ConditionUnknown, reason, message)
		c.events.warning(claim, EventReasonLaunchFailed, "Launch failed, retrying: %s", err)
		return fmt.Errorf("launching nodeclaim: %w", err)
	}
}

// launchFailure is the Launched condition's reason and message for a Create error: the
// CreateError's own when it has them, else LaunchFailed and the error.
func launchFailure(err error) (reason, message string) {
	reason, message = ReasonLaunchFailed, err.Error()
	var createErr *cloudprovider.CreateError
	if errors.As(err, &createErr) && createErr.ConditionReason != "" {
		reason = createErr.ConditionReason
		if createErr.ConditionMessage != "" {
			message = createErr.ConditionMessage
		}
	}
	return reason, message
}

// mergeLabels sets labels on meta and reports whether that changed anything.
func mergeLabels(meta *metav1.ObjectMeta, labels map[string]string) bool {
	return mergeInto(&meta.Labels, labels)
}

// mergeAnnotations sets annotations on meta (the cloud provider's, such as the NodeClass hash a
// drift check compares) and reports whether that changed anything.
func mergeAnnotations(meta *metav1.ObjectMeta, annotations map[string]string) bool {
	return mergeInto(&meta.Annotations, annotations)
}

func mergeInto(dst *map[string]string, src map[string]string) bool {
	changed := false
	for k, v := range src {
		if cur, ok := (*dst)[k]; ok && cur == v {
			continue
		}
		if *dst == nil {
			*dst = make(map[string]string, len(src))
		}
		(*dst)[k] = v
		changed = true
	}
	return changed
}

// launchCacheTTL is how long a launch is remembered: far longer than a cache takes to show our
// own status write.
const launchCacheTTL = time.Hour

// launchCache remembers, per NodeClaim UID, what Create returned, so that a reconcile that reads
// a claim from a cache that has not yet seen the launch's status write (or whose status write
// failed) does not launch again. A restarted controller starts empty; the provider ID on the
// claim and the cloud provider's idempotency by claim name protect it.
type launchCache struct {
	clock clock.PassiveClock

	mu      sync.Mutex
	entries map[types.UID]launchEntry
}

type launchEntry struct {
	claim *karpv1.NodeClaim
	at    time.Time
}

func newLaunchCache(clk clock.PassiveClock) *launchCache {
	return &launchCache{clock: clk, entries: map[types.UID]launchEntry{}}
}

func (l *launchCache) get(uid types.UID) (*karpv1.NodeClaim, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[uid]
	if !ok || l.clock.Since(e.at) > launchCacheTTL {
		return nil, false
	}
	return e.claim.DeepCopy(), true
}

func (l *launchCache) put(uid types.UID, claim *karpv1.NodeClaim) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	for k, e := range l.entries {
		if now.Sub(e.at) > launchCacheTTL {
			delete(l.entries, k)
		}
	}
	l.entries[uid] = launchEntry{claim: claim.DeepCopy(), at: now}
}

func (l *launchCache) forget(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.entries, uid)
}

// providerID returns the provider ID of the instance launched for uid, if remembered.
func (l *launchCache) providerID(uid types.UID) string {
	if claim, ok := l.get(uid); ok {
		return claim.Status.ProviderID
	}
	return ""
}

// publishPodInsufficientCapacityEvents records an InsufficientCapacityError Event on each pod
// planned for the claim (LifecycleOptions.Nominees) that still waits for a node, so that users
// learn why their pods stay pending without reading Karpenter's logs, as Karpenter does.
func (c *LifecycleController) publishPodInsufficientCapacityEvents(ctx context.Context, claim *karpv1.NodeClaim, launchErr error) {
	if c.opts.Nominees == nil {
		return
	}
	keys := slices.Collect(maps.Values(c.opts.Nominees(claim.Name)))
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	for _, key := range keys {
		pod := &corev1.Pod{}
		if err := c.kube.Get(ctx, key, pod); err != nil {
			continue
		}
		if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		c.events.Publish(insufficientCapacityErrorPodEvent(pod, claim, launchErr, c.podEvents))
	}
}
