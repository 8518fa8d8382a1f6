package binder

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Annotations the PersistentVolume controller, the kube-scheduler and the CSI provisioners put
// on the claims and volumes they bind.
const (
	annBindCompleted      = "pv.kubernetes.io/bind-completed"
	annBoundByController  = "pv.kubernetes.io/bound-by-controller"
	annProvisionedBy      = "pv.kubernetes.io/provisioned-by"
	annSelectedNode       = "volume.kubernetes.io/selected-node"
	annStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
)

// defaultVolumeSize is the size of a volume provisioned for a claim that requests none.
var defaultVolumeSize = resource.MustParse("1Gi")

// claimNames are the pod's PersistentVolumeClaims, in volume order.
func claimNames(pod *corev1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

// immediate reports whether a class binds its claims as soon as they are made, rather than
// when their first pod is scheduled (the API server defaults the mode to Immediate).
func immediate(class *storagev1.StorageClass) bool {
	return class.VolumeBindingMode == nil || *class.VolumeBindingMode == storagev1.VolumeBindingImmediate
}

// bindClaims plays the PersistentVolume controller and the CSI provisioners on the claims that
// are not bound yet: a claim naming its volume (spec.volumeName), or named by a volume's
// claimRef, is bound to it; a claim of an Immediate StorageClass gets a new volume in a zone of
// the class's allowedTopologies, or of the cluster's zones when it has none (see zoneFor).
// Claims of WaitForFirstConsumer classes wait for their first pod (bindPodClaims).
func (b *Binder) bindClaims(ctx context.Context) error {
	var claims corev1.PersistentVolumeClaimList
	if err := b.kubeClient.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing persistentvolumeclaims: %w", err)
	}
	var waiting []*corev1.PersistentVolumeClaim
	for i := range claims.Items {
		if c := &claims.Items[i]; c.Status.Phase != corev1.ClaimBound && c.DeletionTimestamp == nil {
			waiting = append(waiting, c)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	sort.Slice(waiting, func(i, j int) bool {
		return waiting[i].Namespace+"/"+waiting[i].Name < waiting[j].Namespace+"/"+waiting[j].Name
	})
	var volumes corev1.PersistentVolumeList
	if err := b.kubeClient.List(ctx, &volumes, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing persistentvolumes: %w", err)
	}
	byName := map[string]*corev1.PersistentVolume{}
	reservedFor := map[string]*corev1.PersistentVolume{} // namespace/name of a claimRef without a bound claim
	for i := range volumes.Items {
		pv := &volumes.Items[i]
		byName[pv.Name] = pv
		if ref := pv.Spec.ClaimRef; ref != nil && pv.Status.Phase != corev1.VolumeBound {
			reservedFor[ref.Namespace+"/"+ref.Name] = pv
		}
	}
	for _, shared := range waiting {
		pvc := shared.DeepCopy()
		var pv *corev1.PersistentVolume
		if pvc.Spec.VolumeName != "" {
			if pv = byName[pvc.Spec.VolumeName]; pv == nil {
				continue // its pods say so: persistentvolume "…" not found
			}
			if ref := pv.Spec.ClaimRef; ref != nil && (ref.Namespace != pvc.Namespace || ref.Name != pvc.Name || ref.UID != "" && ref.UID != pvc.UID) {
				continue // the volume is another claim's
			}
		} else if reserved := reservedFor[pvc.Namespace+"/"+pvc.Name]; reserved != nil && (reserved.Spec.ClaimRef.UID == "" || reserved.Spec.ClaimRef.UID == pvc.UID) {
			pv = reserved
		}
		if pv != nil {
			if err := b.bind(ctx, pvc, pv.DeepCopy(), ""); err != nil {
				return err
			}
			continue
		}
		class, err := b.classOf(ctx, pvc)
		if err != nil || class == nil || !immediate(class) {
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			continue
		}
		zones := allowedZones(class)
		if len(zones) == 0 {
			if zones, err = b.clusterZones(ctx); err != nil {
				return err
			}
		}
		if len(zones) == 0 {
			continue // no zone known yet: as a provisioner that finds no topology, try again later
		}
		if err := b.bind(ctx, pvc, newVolume(pvc, class, zoneFor(pvc, zones)), ""); err != nil {
			return err
		}
	}
	return nil
}

// classOf returns the claim's StorageClass, nil when it names none.
func (b *Binder) classOf(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (*storagev1.StorageClass, error) {
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return nil, nil
	}
	class := &storagev1.StorageClass{}
	if err := b.kubeClient.Get(ctx, client.ObjectKey{Name: *pvc.Spec.StorageClassName}, class); err != nil {
		return nil, err
	}
	return class, nil
}

// clusterZones are Options.Zones, or else the zones of the cluster's nodes, sorted.
func (b *Binder) clusterZones(ctx context.Context) ([]string, error) {
	if len(b.opts.Zones) > 0 {
		return slices.Sorted(slices.Values(b.opts.Zones)), nil
	}
	var nodes metav1.PartialObjectMetadataList
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := b.kubeClient.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var zones []string
	for _, n := range nodes.Items {
		if z := n.Labels[corev1.LabelTopologyZone]; z != "" && !slices.Contains(zones, z) {
			zones = append(zones, z)
		}
	}
	slices.Sort(zones)
	return zones, nil
}

// allowedZones are the zones the class's allowedTopologies allow, as the provisioner places
// pods by them (provisioning.StorageClassRequirements), sorted; nil when they do not restrict
// zones.
func allowedZones(class *storagev1.StorageClass) []string {
	if r, ok := provisioning.StorageClassRequirements(class).Get(corev1.LabelTopologyZone); ok {
		return r.Values()
	}
	return nil
}

// zoneFor picks the zone of a claim's new volume among zones, by a hash of the claim's name, so
// that runs repeat and a set of claims spreads over the zones as a provisioner's random choice
// would.
func zoneFor(pvc *corev1.PersistentVolumeClaim, zones []string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(pvc.Namespace + "/" + pvc.Name))
	return zones[h.Sum32()%uint32(len(zones))]
}

// newVolume is the PersistentVolume a CSI provisioner makes for a claim of the class, in zone
// (anywhere when zone is empty), named as the external provisioner names it.
func newVolume(pvc *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, zone string) *corev1.PersistentVolume {
	size, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		size = defaultVolumeSize
	}
	modes := pvc.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	name := "pvc-" + string(pvc.UID)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annProvisionedBy: class.Provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			VolumeMode:                    pvc.Spec.VolumeMode,
			MountOptions:                  class.MountOptions,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: class.Provisioner, VolumeHandle: name}},
		},
	}
	if zone != "" {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
		}}}}
	}
	return pv
}

// bind binds a claim to a volume, creating the volume when it is new (no resourceVersion), and
// marks both Bound, as the PersistentVolume controller does; node names the node the claim's
// first pod goes to, for a WaitForFirstConsumer claim.
func (b *Binder) bind(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, node string) error {
	pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID}
	if pv.ResourceVersion == "" {
		if err := b.kubeClient.Create(ctx, pv); err != nil {
			return fmt.Errorf("provisioning persistentvolume %s for claim %s/%s: %w", pv.Name, pvc.Namespace, pvc.Name, err)
		}
	} else if err := b.kubeClient.Update(ctx, pv); err != nil {
		return fmt.Errorf("binding persistentvolume %s to claim %s/%s: %w", pv.Name, pvc.Namespace, pvc.Name, err)
	}
	pv.Status.Phase = corev1.VolumeBound
	if err := b.kubeClient.Status().Update(ctx, pv); err != nil {
		return fmt.Errorf("marking persistentvolume %s bound: %w", pv.Name, err)
	}
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations[annBindCompleted] = "yes"
	if pvc.Spec.VolumeName == "" {
		pvc.Annotations[annBoundByController] = "yes"
		pvc.Spec.VolumeName = pv.Name
	}
	if driver := pv.Annotations[annProvisionedBy]; driver != "" {
		pvc.Annotations[annStorageProvisioner] = driver
	}
	if node != "" {
		pvc.Annotations[annSelectedNode] = node
	}
	if err := b.kubeClient.Update(ctx, pvc); err != nil {
		return fmt.Errorf("binding claim %s/%s to persistentvolume %s: %w", pvc.Namespace, pvc.Name, pv.Name, err)
	}
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.AccessModes = pv.Spec.AccessModes
	pvc.Status.Capacity = pv.Spec.Capacity
	if err := b.kubeClient.Status().Update(ctx, pvc); err != nil {
		return fmt.Errorf("marking claim %s/%s bound: %w", pvc.Namespace, pvc.Name, err)
	}
	return nil
}

// volumeReason says why no node can take the pod for its volumes, as the kube-scheduler words
// it, or "" when its volumes leave it schedulable (provisioning.MissingVolumeError); reqs are
// the node requirements its volumes impose (provisioning.VolumeRequirements).
func (b *Binder) volumeReason(ctx context.Context, pod *corev1.Pod) (reqs scheduling.Requirements, reason string, err error) {
	reqs, err = provisioning.VolumeRequirements(ctx, b.kubeClient, pod)
	if provisioning.IsMissingVolume(err) {
		return reqs, err.Error(), nil
	}
	return reqs, "", err
}

// bindPodClaims is the kube-scheduler's volume binding for a pod about to go to node: it
// reports false, binding nothing, when a volume of the pod cannot be mounted there (a claim
// bound meanwhile, by an earlier pod of this step, to a volume in another zone); else it binds
// the pod's claims of WaitForFirstConsumer classes to new volumes in the node's zone.
func (b *Binder) bindPodClaims(ctx context.Context, pod *corev1.Pod, node *corev1.Node) (bool, error) {
	reqs, reason, err := b.volumeReason(ctx, pod)
	if err != nil || reason != "" {
		return false, err
	}
	if reqs.Matches(node.Labels) != nil {
		return false, nil
	}
	for _, name := range claimNames(pod) {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := b.kubeClient.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: name}, pvc); err != nil {
			return false, fmt.Errorf("getting persistentvolumeclaim %s/%s: %w", pod.Namespace, name, err)
		}
		if pvc.Spec.VolumeName != "" {
			continue
		}
		class, err := b.classOf(ctx, pvc) // WaitForFirstConsumer, as volumeReason found
		if err != nil || class == nil {
			return false, err
		}
		if err := b.bind(ctx, pvc, newVolume(pvc, class, node.Labels[corev1.LabelTopologyZone]), node.Name); err != nil {
			return false, err
		}
	}
	return true, nil
}
