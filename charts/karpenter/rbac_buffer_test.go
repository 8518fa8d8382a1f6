package chart_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/openkarpenter/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/openkarpenter/karpenter/pkg/operator"
)

// bufferOnly are the grants settings.featureGates.capacityBuffer adds to the sim rendering.
var bufferOnly = []string{
	"ClusterRole: list capacitybuffers.autoscaling.x-k8s.io",
	"ClusterRole: list deployments.apps",
	"ClusterRole: list podtemplates",
	"ClusterRole: list replicasets.apps",
	"ClusterRole: list statefulsets.apps",
	"ClusterRole: patch capacitybuffers/status.autoscaling.x-k8s.io",
	"ClusterRole: watch capacitybuffers.autoscaling.x-k8s.io",
	"ClusterRole: watch deployments.apps",
	"ClusterRole: watch podtemplates",
	"ClusterRole: watch replicasets.apps",
	"ClusterRole: watch statefulsets.apps",
}

// TestRBACCapacityBuffer runs the controllers with the CapacityBuffer gate as the ServiceAccount
// of the rendering that turns it on: a buffer is resolved, launches a node for its virtual pods
// and gets its Provisioning condition. What the gate adds to the RBAC is exactly what that
// needed, and nothing the run did is refused.
func TestRBACCapacityBuffer(t *testing.T) {
	ctx := context.Background()
	buf := renderAdding(t, "the capacityBuffer gate", bufferOnly, "--set", "settings.featureGates.capacityBuffer=true")
	opts := operator.DefaultOptions()
	opts.CapacityBuffer = true
	opts.DisruptionPollInterval, opts.ConsolidationValidationDelay = 300*time.Millisecond, 500*time.Millisecond
	op := startAsRendering(t, buf, opts)

	template := &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "spare", Namespace: "default"},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}},
	}
	buffer := &autoscalingv1beta1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Name: "spare", Namespace: "default"},
		Spec:       autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "spare"}, Replicas: ptr.To[int32](2)},
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), buffer)
		_ = env.Client.Delete(context.Background(), template)
	})
	mustCreate(t, nodeClass(),
		categoryNodePool(),
		template, buffer)
	eventually(t, op, 60*time.Second, "the buffer provisioned on a node launched for it", func() (bool, string) {
		got := &autoscalingv1beta1.CapacityBuffer{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(buffer), got); err != nil {
			t.Fatal(err)
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, autoscalingv1beta1.ConditionProvisioning)
		claims := countClaims(t)
		return claims > 0 && cond != nil && cond.Reason == "FitsExistingCapacity", fmt.Sprintf("%d nodeclaims, Provisioning %v", claims, cond)
	})
	checkAddedGrantsUsed(t, buf, bufferOnly, op.shutdown(t))
}
