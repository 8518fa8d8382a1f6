package termination

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// PodNodeNameIndex indexes Pods by spec.nodeName. IndexFields registers it; without it the
// controller lists every pod and filters them.
const PodNodeNameIndex = "spec.nodeName"

// IndexFields registers PodNodeNameIndex and VolumeAttachmentNodeNameIndex with indexer (a
// manager's field indexer, before the manager starts), so that finding a node's pods and
// VolumeAttachments reads the cache's index.
func IndexFields(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Pod{}, PodNodeNameIndex, func(o client.Object) []string {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing pods by node name: %w", err)
	}
	if err := indexer.IndexField(ctx, &storagev1.VolumeAttachment{}, VolumeAttachmentNodeNameIndex, func(o client.Object) []string {
		if va, ok := o.(*storagev1.VolumeAttachment); ok && va.Spec.NodeName != "" {
			return []string{va.Spec.NodeName}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing volumeattachments by node name: %w", err)
	}
	return nil
}

// Annotations and priority classes the drain reads.
const (
	// mirrorPodAnnotationKey marks the API server's mirror of a static pod.
	mirrorPodAnnotationKey = "kubernetes.io/config.mirror"
	// criticalPriority is the lowest priority of system-critical pods (SystemCriticalPriority).
	criticalPriority = 2000000000
)

// disruptedTaint is the taint a draining node carries.
var disruptedTaint = corev1.Taint{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}

// group is the drain group of a pod: groups are drained one after the other, in order.
type group int

const (
	// groupIgnored pods are left on the node: terminal pods, daemonset pods, static and mirror
	// pods, and pods that tolerate the disrupted taint (they would come straight back).
	groupIgnored group = iota
	// groupNonCritical pods are drained first.
	groupNonCritical
	// groupCritical pods (system-cluster-critical, system-node-critical or priority of at
	// least 2000000000) are drained once every non-critical pod is gone.
	groupCritical
)

// drainGroups are the groups a drain empties, in order.
var drainGroups = []group{groupNonCritical, groupCritical}

// classify returns the drain group of pod.
func classify(pod *corev1.Pod) group {
	switch {
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return groupIgnored
	case isOwnedBy(pod, "DaemonSet") || isOwnedBy(pod, "Node"):
		return groupIgnored
	case pod.Annotations[mirrorPodAnnotationKey] != "":
		return groupIgnored
	case scheduling.Tolerates(pod.Spec.Tolerations, []corev1.Taint{disruptedTaint}) == nil:
		return groupIgnored
	case isCritical(pod):
		return groupCritical
	default:
		return groupNonCritical
	}
}

func isOwnedBy(pod *corev1.Pod, kind string) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == kind {
			return true
		}
	}
	return false
}

func isCritical(pod *corev1.Pod) bool {
	switch pod.Spec.PriorityClassName {
	case "system-cluster-critical", "system-node-critical":
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= criticalPriority
}

// isStuckTerminating reports whether pod is being deleted and its deletionTimestamp (which
// already includes its grace period) passed more than timeout ago: its kubelet is presumed gone.
func isStuckTerminating(pod *corev1.Pod, now time.Time, timeout time.Duration) bool {
	return pod.DeletionTimestamp != nil && now.Sub(pod.DeletionTimestamp.Time) > timeout
}

// ReschedulablePodCount counts the pods bound to the node that must move when it goes
// (state.IsReschedulable), as Karpenter counts them for karpenter_pods_disruption_initiated_total.
func ReschedulablePodCount(ctx context.Context, reader client.Reader, nodeName string) (int, error) {
	pods, err := podsOn(ctx, reader, []string{nodeName})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods {
		if state.IsReschedulable(p) {
			n++
		}
	}
	return n, nil
}

// podsOn lists the pods bound to the named nodes, sorted by namespace and name. It uses
// PodNodeNameIndex (or the API server's field selector) when the reader supports it and lists
// every pod otherwise.
func podsOn(ctx context.Context, reader client.Reader, nodeNames []string) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, name := range nodeNames {
		list := &corev1.PodList{}
		if err := reader.List(ctx, list, client.MatchingFields{PodNodeNameIndex: name}); err != nil {
			list = &corev1.PodList{}
			if err := reader.List(ctx, list); err != nil {
				return nil, fmt.Errorf("listing pods: %w", err)
			}
		}
		for i := range list.Items {
			// Filter even after an indexed list: a reader that ignores the selector must not
			// hand us another node's pods.
			if list.Items[i].Spec.NodeName == name {
				out = append(out, &list.Items[i])
			}
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out, nil
}

// podKey is "namespace/name".
func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
