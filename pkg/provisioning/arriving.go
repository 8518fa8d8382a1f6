package provisioning

import (
	"context"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// arrivingReplicas returns stand-ins for the pods ReplicaSets are still creating: for each
// ReplicaSet with a pod pending in the snapshot that created a pod within state.ArrivalWindow and
// reports no ReplicaFailure, as many copies of that pending pod as its spec.replicas exceeds
// its pods that are bound, nominated or pending in the snapshot (the others are not yet
// created, or not yet tried by the kube-scheduler). The pass plans them with the real pods, so
// a burst that arrives over several batches is sized as one: the first batch's nodes have
// room for the rest, and the later pods go there rather than each batch's remainder taking a
// small node of its own. The copies are never nominated or reported: the pass extracts them
// from its results (the returned map has each stand-in's ReplicaSet, by the stand-in's UID),
// and a claim launched for them alone is launched without pods, as a capacity buffer's; the
// room they were given is reserved for the ReplicaSet's next pods (reserveArrivals).
func (p *Provisioner) arrivingReplicas(ctx context.Context, snap *state.Snapshot) ([]*corev1.Pod, map[types.UID]arrival) {
	sample := map[types.UID]*corev1.Pod{} // a pending pod of each ReplicaSet, by its UID
	for _, pod := range snap.Pending {
		if owner := replicaSetOf(pod); owner != nil && !claimsVolumes(pod) {
			if _, ok := sample[owner.UID]; !ok {
				sample[owner.UID] = pod
			}
		}
	}
	if len(sample) == 0 {
		return nil, nil
	}
	pending := make(map[types.UID]bool, len(snap.Pending))
	for _, pod := range snap.Pending {
		pending[pod.UID] = true
	}
	// A live pod is accounted for when it is bound, nominated or planned in this pass; one
	// the kube-scheduler has not tried yet (see state.SchedulerBacklog) is not, and a
	// stand-in takes its place until it counts.
	accounted := map[types.UID]int{}
	newest := map[types.UID]time.Time{}
	for _, pod := range snap.Pods {
		owner := replicaSetOf(pod)
		if owner == nil || sample[owner.UID] == nil || pod.DeletionTimestamp != nil ||
			pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if created := pod.CreationTimestamp.Time; created.After(newest[owner.UID]) {
			newest[owner.UID] = created
		}
		if _, nominated := p.cluster.NominatedTo(pod.UID); pod.Spec.NodeName != "" || pending[pod.UID] || nominated {
			accounted[owner.UID]++
		}
	}
	for uid := range sample {
		accounted[uid] += p.cluster.Reserved(uid)
	}
	now := p.clock.Now()
	arrivals := map[types.UID]arrival{}
	var out []*corev1.Pod
	for uid, pod := range sample {
		if now.Sub(newest[uid]) > state.ArrivalWindow {
			continue
		}
		rs := &appsv1.ReplicaSet{}
		if err := p.kubeClient.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: replicaSetOf(pod).Name}, rs); err != nil {
			if !apierrors.IsNotFound(err) {
				log.FromContext(ctx).V(1).Info("reading a pending pod's ReplicaSet", "pod", client.ObjectKeyFromObject(pod), "error", err.Error())
			}
			continue
		}
		if rs.UID != uid || rs.Spec.Replicas == nil || replicaFailure(rs) {
			continue
		}
		for i := accounted[uid]; i < int(*rs.Spec.Replicas); i++ {
			copied := standIn(pod, rs, i)
			arrivals[copied.UID] = arrival{owner: uid, replicas: int(*rs.Spec.Replicas)}
			out = append(out, copied)
		}
	}
	if len(out) > 0 {
		log.FromContext(ctx).V(1).Info("planning replicas still to be created", "pods", len(out))
	}
	return out, arrivals
}

// arrival is the ReplicaSet a stand-in stands for a pod of, and its replicas.
type arrival struct {
	owner    types.UID
	replicas int
}

// reserveArrivals reserves in the cluster state the room the pass planned for its stand-ins
// (state.Cluster.Reserve), from the extracted placements: on existing nodes and in-flight
// claims by name, on the pass's new claims by their index in the results (the launched
// claims, in the same order). A stand-in the kube-scheduler places itself
// (scheduling.PlacedByKubeScheduler) holds no room, as its pods' nominations do not.
func (p *Provisioner) reserveArrivals(arrivals map[types.UID]arrival, extracted scheduler.Results, claimIndex map[types.UID]int, created []*karpv1.NodeClaim) {
	reserve := func(pod *corev1.Pod, target string, launched bool) {
		a, ok := arrivals[pod.UID]
		if !ok || scheduling.PlacedByKubeScheduler(pod) {
			return
		}
		p.cluster.Reserve(a.owner, a.replicas, pod, target, launched)
	}
	for _, pl := range extracted.ExistingPlacements {
		reserve(pl.Pod, pl.Node, false)
	}
	for _, c := range extracted.NewClaims {
		for _, pod := range c.Pods {
			if i, ok := claimIndex[pod.UID]; ok && i < len(created) {
				reserve(pod, created[i].Name, true)
			}
		}
	}
}

// replicaSetOf is the pod's controller when that is a ReplicaSet.
func replicaSetOf(pod *corev1.Pod) *metav1.OwnerReference {
	if owner := metav1.GetControllerOfNoCopy(pod); owner != nil && owner.Kind == "ReplicaSet" && owner.APIVersion == "apps/v1" {
		return owner
	}
	return nil
}

// claimsVolumes reports whether the pod mounts PersistentVolumeClaims (its own ephemeral ones
// too), whose topology a stand-in without the claims could not honour.
func claimsVolumes(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}

// replicaFailure reports whether the ReplicaSet says it fails to create or delete pods.
func replicaFailure(rs *appsv1.ReplicaSet) bool {
	for _, c := range rs.Status.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// standIn is the i-th pod the ReplicaSet has yet to create: the pending pod's labels, spec and
// scheduling status, under a name and UID of its own.
func standIn(pod *corev1.Pod, rs *appsv1.ReplicaSet, i int) *corev1.Pod {
	suffix := "-arriving-" + strconv.Itoa(i)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: rs.Name + suffix, Namespace: pod.Namespace, UID: rs.UID + types.UID(suffix),
			Labels: pod.Labels, Annotations: pod.Annotations, OwnerReferences: pod.OwnerReferences,
			CreationTimestamp: pod.CreationTimestamp,
		},
		Spec: pod.Spec,
		Status: corev1.PodStatus{
			Phase:      corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}},
		},
	}
}
