package capacitybuffer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	autoscalingv1beta1 "github.com/openkarpenter/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
)

// Annotations on a virtual pod, as Karpenter spells them.
const (
	// VirtualPodAnnotation marks a pod that stands for a chunk of a buffer (value "true").
	VirtualPodAnnotation = "karpenter.sh/capacity-buffer-fake-pod"
	// BufferNameAnnotation names the pod's buffer.
	BufferNameAnnotation = "karpenter.sh/capacity-buffer-name"
	// BufferNamespaceAnnotation is the namespace of the pod's buffer.
	BufferNamespaceAnnotation = "karpenter.sh/capacity-buffer-namespace"
)

// VirtualPodPriority is a virtual pod's priority, the lowest there is: the scheduler places
// every real pod before any virtual one.
const VirtualPodPriority int32 = math.MinInt32

// Reasons of the Provisioning condition, as Karpenter's.
const (
	// ReasonFitsExistingCapacity: every virtual pod fits on existing or launching nodes.
	ReasonFitsExistingCapacity = "FitsExistingCapacity"
	// ReasonRequiresNewCapacity: some virtual pods needed new nodes, or fit nowhere.
	ReasonRequiresNewCapacity = "RequiresNewCapacity"
	// ReasonNotReadyForProvisioning: the buffer is not ReadyForProvisioning.
	ReasonNotReadyForProvisioning = "NotReadyForProvisioning"
	// ReasonBufferEmpty: the buffer resolved to zero chunks.
	ReasonBufferEmpty = "BufferEmpty"
)

// IsVirtual reports whether the pod is a buffer's virtual pod.
func IsVirtual(pod *corev1.Pod) bool {
	return pod != nil && pod.Annotations[VirtualPodAnnotation] == "true"
}

// bufferOf names the buffer of a virtual pod.
func bufferOf(pod *corev1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: pod.Annotations[BufferNamespaceAnnotation], Name: pod.Annotations[BufferNameAnnotation]}
}

// ready reports whether the buffer's status asks for virtual pods.
func ready(cb *autoscalingv1beta1.CapacityBuffer) bool {
	return meta.IsStatusConditionTrue(cb.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning) &&
		cb.Status.Replicas != nil && *cb.Status.Replicas > 0
}

// BuildVirtualPods returns the buffer's status.replicas virtual pods of the template: its
// labels (so topology spread and affinity count them), its spec without a node name or the
// volumes that need a PersistentVolumeClaim (which a virtual pod has none of), at
// VirtualPodPriority, unschedulable (PodScheduled False) as a pending pod is. Names and UIDs follow from the buffer,
// so each pass builds the same pods.
func BuildVirtualPods(cb *autoscalingv1beta1.CapacityBuffer, template corev1.PodTemplateSpec, created metav1.Time) []*corev1.Pod {
	if cb.Status.Replicas == nil || *cb.Status.Replicas <= 0 {
		return nil
	}
	spec := *template.Spec.DeepCopy()
	spec.NodeName = ""
	dropped := map[string]bool{}
	kept := spec.Volumes[:0]
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			dropped[v.Name] = true
			continue
		}
		kept = append(kept, v)
	}
	spec.Volumes = kept
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			mounts := containers[i].VolumeMounts[:0]
			for _, m := range containers[i].VolumeMounts {
				if !dropped[m.Name] {
					mounts = append(mounts, m)
				}
			}
			containers[i].VolumeMounts = mounts
		}
	}
	priority := VirtualPodPriority
	spec.Priority = &priority
	spec.PriorityClassName = ""
	n := int(*cb.Status.Replicas)
	out := make([]*corev1.Pod, 0, n)
	for i := 1; i <= n; i++ {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:      "capacity-buffer-" + cb.Name + "-" + strconv.Itoa(i),
				Namespace: cb.Namespace,
				UID:       types.UID(string(cb.UID) + "-" + strconv.Itoa(i)),
				Labels:    template.Labels,
				Annotations: map[string]string{
					VirtualPodAnnotation:      "true",
					BufferNameAnnotation:      cb.Name,
					BufferNamespaceAnnotation: cb.Namespace,
				},
				CreationTimestamp: created,
			},
			Spec: spec,
			// No phase, as Karpenter's: the pending-pod counts (by effective zone) leave them out.
			Status: corev1.PodStatus{
				Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}},
			},
		}
		out = append(out, pod)
	}
	return out
}

// Buffers reads the cluster's CapacityBuffers for the provisioner and disruption, and writes
// their Provisioning condition.
type Buffers struct {
	kube  client.Client
	clock clock.PassiveClock
}

// NewBuffers returns the buffers of the cluster kube reads.
func NewBuffers(kube client.Client, clk clock.PassiveClock) *Buffers {
	return &Buffers{kube: kube, clock: clk}
}

// VirtualPods returns the virtual pods of every buffer that is ReadyForProvisioning with
// replicas, by buffer namespace and name. Each buffer's template is read again (the status
// keeps only its name), so a template changed since the status was written shapes the pods
// at once; a buffer whose template is gone is skipped until the Controller says so.
func (b *Buffers) VirtualPods(ctx context.Context) ([]*corev1.Pod, error) {
	var list autoscalingv1beta1.CapacityBufferList
	if err := b.kube.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing capacitybuffers: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, c := list.Items[i], list.Items[j]
		if a.Namespace != c.Namespace {
			return a.Namespace < c.Namespace
		}
		return a.Name < c.Name
	})
	var out []*corev1.Pod
	for i := range list.Items {
		cb := &list.Items[i]
		if !ready(cb) {
			continue
		}
		res, err := resolve(ctx, b.kube, cb)
		var nr *notReady
		if errors.As(err, &nr) {
			log.FromContext(ctx).V(1).Info("skipping capacitybuffer", "capacitybuffer", client.ObjectKeyFromObject(cb), "reason", nr.message)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("resolving capacitybuffer %s/%s: %w", cb.Namespace, cb.Name, err)
		}
		out = append(out, BuildVirtualPods(cb, res.template, cb.CreationTimestamp)...)
	}
	return out, nil
}

// Outcome is where a scheduling run put virtual pods, per buffer.
type Outcome struct {
	// Buffers counts, per buffer, its virtual pods placed on existing or launching nodes, on
	// new claims, and nowhere.
	Buffers map[types.NamespacedName]*Placed
	// Nodes counts the virtual pods placed on each existing node or launching claim, by name.
	Nodes map[string]int
}

// Placed counts where a buffer's virtual pods went.
type Placed struct {
	// Existing are placed on existing nodes or launching claims.
	Existing int
	// New are placed on claims the run creates.
	New int
	// Failed fit nowhere.
	Failed int
}

func (o *Outcome) buffer(pod *corev1.Pod) *Placed {
	key := bufferOf(pod)
	p := o.Buffers[key]
	if p == nil {
		p = &Placed{}
		o.Buffers[key] = p
	}
	return p
}

// Split removes the virtual pods from a scheduling run's results (its placements, its new
// claims' pods and its errors; a claim launched for virtual pods alone stays, without pods)
// and says where they went.
func Split(res *scheduler.Results) Outcome {
	o := Outcome{Buffers: map[types.NamespacedName]*Placed{}, Nodes: map[string]int{}}
	virtual := res.Extract(IsVirtual)
	for _, pl := range virtual.ExistingPlacements {
		o.buffer(pl.Pod).Existing++
		o.Nodes[pl.Node]++
	}
	for _, c := range virtual.NewClaims {
		for _, pod := range c.Pods {
			o.buffer(pod).New++
		}
	}
	for _, pe := range virtual.PodErrors {
		o.buffer(pe.Pod).Failed++
	}
	return o
}

// Provisioned sets every buffer's Provisioning condition from where a provisioning pass put
// its virtual pods: True (FitsExistingCapacity) when all of them fit on existing or launching
// nodes, False (RequiresNewCapacity) when some needed new nodes or fit nowhere, False
// (NotReadyForProvisioning, BufferEmpty) for a buffer without pods. A ready buffer the pass did
// not see keeps its condition.
func (b *Buffers) Provisioned(ctx context.Context, o Outcome) error {
	var list autoscalingv1beta1.CapacityBufferList
	if err := b.kube.List(ctx, &list); err != nil {
		return fmt.Errorf("listing capacitybuffers: %w", err)
	}
	var errs []error
	for i := range list.Items {
		cb := &list.Items[i]
		cond, ok := provisioningCondition(cb, o.Buffers[client.ObjectKeyFromObject(cb)])
		if !ok {
			continue
		}
		stored := cb.DeepCopy()
		cond.ObservedGeneration = cb.Generation
		cond.LastTransitionTime = metav1.NewTime(b.clock.Now())
		if !meta.SetStatusCondition(&cb.Status.Conditions, cond) {
			continue
		}
		if err := b.kube.Status().Patch(ctx, cb, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("capacitybuffer %s/%s: %w", cb.Namespace, cb.Name, err))
		}
	}
	return errors.Join(errs...)
}

// provisioningCondition is the buffer's Provisioning condition after a pass that placed its
// pods as p says (nil: the pass had none of them); false to leave it as it is.
func provisioningCondition(cb *autoscalingv1beta1.CapacityBuffer, p *Placed) (metav1.Condition, bool) {
	cond := metav1.Condition{Type: autoscalingv1beta1.ConditionProvisioning, Status: metav1.ConditionFalse}
	switch {
	case !meta.IsStatusConditionTrue(cb.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning):
		cond.Reason, cond.Message = ReasonNotReadyForProvisioning, "Buffer is not ReadyForProvisioning"
	case cb.Status.Replicas == nil || *cb.Status.Replicas == 0:
		cond.Reason, cond.Message = ReasonBufferEmpty, "Buffer has zero desired replicas"
	case p == nil:
		return cond, false
	case p.New > 0 || p.Failed > 0:
		cond.Reason = ReasonRequiresNewCapacity
		cond.Message = fmt.Sprintf("%d/%d virtual pods required new capacity, %d failed", p.New, *cb.Status.Replicas, p.Failed)
	case p.Existing == int(*cb.Status.Replicas):
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonFitsExistingCapacity
		cond.Message = fmt.Sprintf("All %d virtual pods fit on existing capacity", p.Existing)
	default:
		return cond, false
	}
	return cond, true
}
