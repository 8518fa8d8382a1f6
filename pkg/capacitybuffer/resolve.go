package capacitybuffer

import (
	"context"
	"fmt"
	"math"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/openkarpenter/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Reasons of the ReadyForProvisioning condition, as Karpenter's.
const (
	// ReasonResolved: the shape and count were resolved.
	ReasonResolved = "Resolved"
	// ReasonPodTemplateNotFound: the podTemplateRef's PodTemplate does not exist.
	ReasonPodTemplateNotFound = "PodTemplateNotFound"
	// ReasonScalableRefNotFound: the scalableRef's workload does not exist.
	ReasonScalableRefNotFound = "ScalableRefNotFound"
	// ReasonResolutionFailed: the buffer names no template, or one that cannot be read (an
	// unsupported kind or API group).
	ReasonResolutionFailed = "ResolutionFailed"
	// ReasonUnsupportedProvisioningStrategy: the buffer asks for a strategy other than
	// active capacity, which is left to whatever implements it (ours, not Karpenter's).
	ReasonUnsupportedProvisioningStrategy = "UnsupportedProvisioningStrategy"
)

// resolution is a buffer's pod shape and count.
type resolution struct {
	template corev1.PodTemplateSpec
	// podTemplate and generation: the PodTemplate read, for a podTemplateRef buffer.
	podTemplate string
	generation  int64
	replicas    int32
}

// notReady is why a buffer cannot be resolved: the ReadyForProvisioning reason and message.
type notReady struct {
	reason, message string
}

func (n *notReady) Error() string { return n.message }

// resolve reads the buffer's pod shape from its PodTemplate or workload and computes its count.
// A buffer that cannot be resolved returns a *notReady error; any other error is the API's.
func resolve(ctx context.Context, reader client.Reader, cb *autoscalingv1beta1.CapacityBuffer) (*resolution, error) {
	if s := cb.Spec.ProvisioningStrategy; s != nil && *s != autoscalingv1beta1.ActiveProvisioningStrategy {
		return nil, &notReady{ReasonUnsupportedProvisioningStrategy, fmt.Sprintf("provisioningStrategy %q is not %q, the only strategy Karpenter provisions for", *s, autoscalingv1beta1.ActiveProvisioningStrategy)}
	}
	out := &resolution{}
	var workload *int32
	switch {
	case cb.Spec.PodTemplateRef != nil:
		pt := &corev1.PodTemplate{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: cb.Namespace, Name: cb.Spec.PodTemplateRef.Name}, pt); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, &notReady{ReasonPodTemplateNotFound, fmt.Sprintf("PodTemplate %q not found in namespace %q", cb.Spec.PodTemplateRef.Name, cb.Namespace)}
			}
			return nil, err
		}
		out.template, out.podTemplate, out.generation = pt.Template, pt.Name, pt.Generation
	case cb.Spec.ScalableRef != nil:
		ref := cb.Spec.ScalableRef
		if ref.APIGroup != "" && ref.APIGroup != appsv1.GroupName {
			return nil, &notReady{ReasonResolutionFailed, fmt.Sprintf("scalableRef apiGroup %q is not supported: use apps (Deployment, StatefulSet or ReplicaSet)", ref.APIGroup)}
		}
		var obj client.Object
		var template func() (corev1.PodTemplateSpec, *int32)
		switch ref.Kind {
		case autoscalingv1beta1.KindDeployment:
			d := &appsv1.Deployment{}
			obj, template = d, func() (corev1.PodTemplateSpec, *int32) { return d.Spec.Template, d.Spec.Replicas }
		case autoscalingv1beta1.KindStatefulSet:
			s := &appsv1.StatefulSet{}
			obj, template = s, func() (corev1.PodTemplateSpec, *int32) { return s.Spec.Template, s.Spec.Replicas }
		case autoscalingv1beta1.KindReplicaSet:
			r := &appsv1.ReplicaSet{}
			obj, template = r, func() (corev1.PodTemplateSpec, *int32) { return r.Spec.Template, r.Spec.Replicas }
		default:
			return nil, &notReady{ReasonResolutionFailed, fmt.Sprintf("scalableRef kind %q is not supported: use Deployment, StatefulSet or ReplicaSet", ref.Kind)}
		}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: cb.Namespace, Name: ref.Name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, &notReady{ReasonScalableRefNotFound, fmt.Sprintf("%s %q not found in namespace %q", ref.Kind, ref.Name, cb.Namespace)}
			}
			return nil, err
		}
		tmpl, replicas := template()
		out.template = tmpl
		one := int32(1) // a workload without replicas runs one, as the API server defaults it
		if replicas == nil {
			replicas = &one
		}
		workload = replicas
	default:
		return nil, &notReady{ReasonResolutionFailed, "Neither podTemplateRef nor scalableRef is set"}
	}
	out.replicas = Replicas(cb.Spec, &out.template.Spec, workload)
	return out, nil
}

// Replicas is the number of chunks a buffer keeps, as Karpenter computes it: the larger of
// replicas and percentage of the workload's replicas (rounded up, at least 1 when both are
// above zero; only with a workload), then capped by limits, which alone set the count: the
// most chunks whose requests fit every limit that names a resource the pod requests (limits
// that name none are no bound).
func Replicas(spec autoscalingv1beta1.CapacityBufferSpec, pod *corev1.PodSpec, workloadReplicas *int32) int32 {
	var want *int32
	if spec.Replicas != nil {
		want = spec.Replicas
	}
	if spec.Percentage != nil && workloadReplicas != nil && *workloadReplicas > 0 {
		p := int32(math.Ceil(float64(*workloadReplicas) * float64(*spec.Percentage) / 100))
		if p < 1 && *spec.Percentage > 0 {
			p = 1
		}
		if want == nil || p > *want {
			want = &p
		}
	}
	if len(spec.Limits) > 0 {
		if byLimits, ok := limitReplicas(corev1.ResourceList(spec.Limits), pod); ok {
			if want == nil || byLimits < *want {
				return byLimits
			}
		}
	}
	if want == nil {
		return 0
	}
	return *want
}

// limitReplicas is how many pods' requests fit within limits; false when the limits name no
// resource the pod requests.
func limitReplicas(limits corev1.ResourceList, spec *corev1.PodSpec) (int32, bool) {
	requests := scheduling.PodRequests(&corev1.Pod{Spec: *spec})
	delete(requests, corev1.ResourcePods) // a pod slot is no request of the pod's, as Karpenter counts
	best, bound := int64(math.MaxInt32), false
	for name, limit := range limits {
		r, ok := requests[name]
		if !ok || r.IsZero() {
			continue
		}
		bound = true
		best = min(best, limit.MilliValue()/r.MilliValue())
	}
	return int32(max(best, 0)), bound
}
