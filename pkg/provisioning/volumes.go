package provisioning

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// VolumeRequirements returns the node requirements a pod's volumes impose: a bound
// PersistentVolume's node affinity, or for an unbound claim its StorageClass's allowed
// topologies. Volumes that do not exist yet impose nothing (the pod will wait for them anyway).
// Provisioning applies them to pending pods and disruption to the pods it would move.
func VolumeRequirements(ctx context.Context, c client.Reader, pod *corev1.Pod) (scheduling.Requirements, error) {
	var out scheduling.Requirements
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: v.PersistentVolumeClaim.ClaimName}, pvc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return out, fmt.Errorf("getting persistentvolumeclaim %s: %w", v.PersistentVolumeClaim.ClaimName, err)
		}
		if pvc.Spec.VolumeName != "" {
			pv := &corev1.PersistentVolume{}
			if err := c.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return out, fmt.Errorf("getting persistentvolume %s: %w", pvc.Spec.VolumeName, err)
			}
			if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil && len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) > 0 {
				// Terms are ORed; the first is taken, as a node satisfying it can mount the volume.
				reqs, err := scheduling.FromNodeSelectorRequirements(pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions...)
				if err != nil {
					return out, fmt.Errorf("persistentvolume %s node affinity: %w", pv.Name, err)
				}
				out = out.Intersect(reqs)
			}
			continue
		}
		if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
			continue
		}
		sc := &storagev1.StorageClass{}
		if err := c.Get(ctx, client.ObjectKey{Name: *pvc.Spec.StorageClassName}, sc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return out, fmt.Errorf("getting storageclass %s: %w", *pvc.Spec.StorageClassName, err)
		}
		for _, topo := range sc.AllowedTopologies {
			for _, e := range topo.MatchLabelExpressions {
				r, err := scheduling.NewRequirement(e.Key, corev1.NodeSelectorOpIn, e.Values...)
				if err == nil {
					out = out.With(r)
				}
			}
			break // terms are ORed; the first is enough to place the pod
		}
	}
	return out, nil
}
