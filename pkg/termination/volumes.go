package termination

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// VolumeAttachmentNodeNameIndex indexes VolumeAttachments by spec.nodeName. IndexFields
// registers it; without it the controller lists every VolumeAttachment and filters them.
const VolumeAttachmentNodeNameIndex = "spec.nodeName"

// Reasons of the VolumesDetached condition, as Karpenter's.
const (
	// ReasonAwaitingVolumeDetachment (Unknown): VolumeAttachments of the node's volumes remain.
	ReasonAwaitingVolumeDetachment = "AwaitingVolumeDetachment"
	// ReasonTerminationGracePeriodElapsed (False): the termination grace period ran out before
	// the volumes were detached; the instance is terminated anyway.
	ReasonTerminationGracePeriodElapsed = "TerminationGracePeriodElapsed"
)

// awaitVolumeDetachment waits, once the nodes are drained, for the VolumeAttachments of their
// volumes to be deleted (by the attach-detach controller, once the pods using them are gone), so
// that the volumes move cleanly to the pods' new nodes; volumes of pods the drain leaves on the
// node do not count. It does not wait past the termination deadline. It sets the claim's
// VolumesDetached condition and returns how soon to look again (zero: the instance may be
// terminated now).
func (c *Controller) awaitVolumeDetachment(ctx context.Context, claim *karpv1.NodeClaim, nodes []*corev1.Node, pods []*corev1.Pod,
	deadline *time.Time, now time.Time) (time.Duration, error) {
	pending := map[*corev1.Node][]*storagev1.VolumeAttachment{}
	for _, node := range nodes {
		attachments, err := c.pendingVolumeAttachments(ctx, node, pods)
		if err != nil {
			return 0, err
		}
		if len(attachments) > 0 {
			pending[node] = attachments
		}
	}
	cond := metav1.Condition{Type: karpv1.ConditionTypeVolumesDetached, Status: metav1.ConditionTrue, Reason: karpv1.ConditionTypeVolumesDetached}
	var requeue time.Duration
	switch {
	case len(pending) == 0:
	case deadline == nil || now.Before(*deadline):
		for _, node := range nodes {
			if attachments := pending[node]; len(attachments) > 0 {
				c.events.Publish(awaitingVolumeDetachmentEvent(node, attachments))
			}
		}
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, ReasonAwaitingVolumeDetachment, ReasonAwaitingVolumeDetachment
		requeue = c.opts.DrainPoll
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonTerminationGracePeriodElapsed, ReasonTerminationGracePeriodElapsed
	}
	if err := c.setCondition(ctx, claim, cond); err != nil {
		return 0, err
	}
	return requeue, nil
}

// pendingVolumeAttachments returns the VolumeAttachments on node of PersistentVolumes, but for
// the volumes of pods the drain leaves on the node (they keep them until the instance goes).
func (c *Controller) pendingVolumeAttachments(ctx context.Context, node *corev1.Node, pods []*corev1.Pod) ([]*storagev1.VolumeAttachment, error) {
	attachments, err := volumeAttachmentsOn(ctx, c.kube, node.Name)
	if err != nil || len(attachments) == 0 {
		return nil, err
	}
	kept := map[string]bool{}
	for _, pod := range pods {
		if pod.Spec.NodeName != node.Name || classify(pod) != groupIgnored {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			pvc := &corev1.PersistentVolumeClaim{}
			switch err := c.kube.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: v.PersistentVolumeClaim.ClaimName}, pvc); {
			case apierrors.IsNotFound(err):
			case err != nil:
				return nil, fmt.Errorf("getting persistentvolumeclaim %s/%s: %w", pod.Namespace, v.PersistentVolumeClaim.ClaimName, err)
			case pvc.Spec.VolumeName != "":
				kept[pvc.Spec.VolumeName] = true
			}
		}
	}
	return slices.DeleteFunc(attachments, func(va *storagev1.VolumeAttachment) bool {
		pv := va.Spec.Source.PersistentVolumeName
		return pv == nil || kept[*pv]
	}), nil
}

// volumeAttachmentsOn lists the VolumeAttachments of the named node, sorted by name, through
// VolumeAttachmentNodeNameIndex when the reader supports it.
func volumeAttachmentsOn(ctx context.Context, reader client.Reader, nodeName string) ([]*storagev1.VolumeAttachment, error) {
	list := &storagev1.VolumeAttachmentList{}
	if err := reader.List(ctx, list, client.MatchingFields{VolumeAttachmentNodeNameIndex: nodeName}); err != nil {
		list = &storagev1.VolumeAttachmentList{}
		if err := reader.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing volumeattachments: %w", err)
		}
	}
	var out []*storagev1.VolumeAttachment
	for i := range list.Items {
		if list.Items[i].Spec.NodeName == nodeName {
			out = append(out, &list.Items[i])
		}
	}
	slices.SortFunc(out, func(a, b *storagev1.VolumeAttachment) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
