package provisioning

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// MissingVolumeError is VolumeRequirements' error for a pod that has no volume to mount yet, and
// will get none by being scheduled: its PersistentVolumeClaim, or the PersistentVolume or
// StorageClass its claim names, does not exist, or its claim is not bound and only the
// PersistentVolume controller can bind it (it has no StorageClass, or an Immediate one). The
// kube-scheduler leaves such a pod pending with this very message (persistentvolumeclaim "data"
// not found, storageclass.storage.k8s.io "fast" not found, persistentvolume "pv-1" not found,
// pod has unbound immediate PersistentVolumeClaims), so no node is provisioned for it: none
// would take it.
type MissingVolumeError struct {
	// Reason is the kube-scheduler's message.
	Reason string
}

func (e *MissingVolumeError) Error() string { return e.Reason }

// IsMissingVolume reports whether err is, or wraps, a *MissingVolumeError.
func IsMissingVolume(err error) bool {
	var m *MissingVolumeError
	return errors.As(err, &m)
}

// UnboundImmediateReason is the kube-scheduler's reason for a pod whose claim only the
// PersistentVolume controller can bind, and has not.
const UnboundImmediateReason = "pod has unbound immediate PersistentVolumeClaims"

// missing is the MissingVolumeError of a kind (named as the kube-scheduler's listers name it)
// and name.
func missing(group, resource, name string) *MissingVolumeError {
	gr := corev1.Resource(resource)
	gr.Group = group
	return &MissingVolumeError{Reason: apierrors.NewNotFound(gr, name).Error()}
}

// zoneAliases are the zone labels volumes name other than topology.kubernetes.io/zone, which
// Karpenter's nodes carry and its NodePools and instance types know: the EBS CSI driver's
// topology key and the legacy beta label. Karpenter normalizes them the same way.
var zoneAliases = map[string]bool{
	"topology.ebs.csi.aws.com/zone":   true,
	corev1.LabelFailureDomainBetaZone: true,
}

// volumeRequirement reads one node selector requirement of a volume, its zone alias renamed.
func volumeRequirement(key string, op corev1.NodeSelectorOperator, values ...string) (scheduling.Requirement, error) {
	if zoneAliases[key] {
		key = corev1.LabelTopologyZone
	}
	return scheduling.NewRequirement(key, op, values...)
}

// VolumeRequirements returns the node requirements a pod's volumes impose: a bound
// PersistentVolume's node affinity, or for an unbound claim of a WaitForFirstConsumer class the
// class's allowed topologies (zone labels read as topology.kubernetes.io/zone). A claim that
// does not exist, whose PersistentVolume or StorageClass does not, or that waits for the
// PersistentVolume controller, makes the pod unschedulable: the error is a *MissingVolumeError.
// Provisioning applies the requirements to pending pods, disruption to the pods it would move,
// and the simulator's kube-scheduler stand-in to the pods it binds.
func VolumeRequirements(ctx context.Context, c client.Reader, pod *corev1.Pod) (scheduling.Requirements, error) {
	var out scheduling.Requirements
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: v.PersistentVolumeClaim.ClaimName}, pvc); err != nil {
			if apierrors.IsNotFound(err) {
				return out, missing("", "persistentvolumeclaim", v.PersistentVolumeClaim.ClaimName)
			}
			return out, fmt.Errorf("getting persistentvolumeclaim %s: %w", v.PersistentVolumeClaim.ClaimName, err)
		}
		if pvc.Spec.VolumeName != "" {
			pv := &corev1.PersistentVolume{}
			if err := c.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
				if apierrors.IsNotFound(err) {
					return out, missing("", "persistentvolume", pvc.Spec.VolumeName)
				}
				return out, fmt.Errorf("getting persistentvolume %s: %w", pvc.Spec.VolumeName, err)
			}
			if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil && len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) > 0 {
				// Terms are ORed; the first is taken, as a node satisfying it can mount the volume.
				for _, e := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions {
					r, err := volumeRequirement(e.Key, e.Operator, e.Values...)
					if err != nil {
						return out, fmt.Errorf("persistentvolume %s node affinity: %w", pv.Name, err)
					}
					out = out.With(r)
				}
			}
			continue
		}
		if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
			// Bound to a volume made beforehand, by the PersistentVolume controller, or never.
			return out, &MissingVolumeError{Reason: UnboundImmediateReason}
		}
		sc := &storagev1.StorageClass{}
		if err := c.Get(ctx, client.ObjectKey{Name: *pvc.Spec.StorageClassName}, sc); err != nil {
			if apierrors.IsNotFound(err) {
				return out, missing(storagev1.GroupName, "storageclass", *pvc.Spec.StorageClassName)
			}
			return out, fmt.Errorf("getting storageclass %s: %w", *pvc.Spec.StorageClassName, err)
		}
		if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode == storagev1.VolumeBindingImmediate {
			// Its provisioner makes the volume, in a zone of its choosing, before any pod goes.
			return out, &MissingVolumeError{Reason: UnboundImmediateReason}
		}
		out = out.Intersect(StorageClassRequirements(sc))
	}
	return out, nil
}

// StorageClassRequirements are the node requirements a claim of the class waiting for its first
// pod (WaitForFirstConsumer) imposes, and where a provisioner may put the volume of an
// Immediate one: the first term of its allowedTopologies (terms are ORed, and a node satisfying the first can
// mount the volume), zone labels read as topology.kubernetes.io/zone; none when it has none.
func StorageClassRequirements(sc *storagev1.StorageClass) scheduling.Requirements {
	var out scheduling.Requirements
	if len(sc.AllowedTopologies) == 0 {
		return out
	}
	for _, e := range sc.AllowedTopologies[0].MatchLabelExpressions {
		if r, err := volumeRequirement(e.Key, corev1.NodeSelectorOpIn, e.Values...); err == nil {
			out = out.With(r)
		}
	}
	return out
}
