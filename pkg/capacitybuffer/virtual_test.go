package capacitybuffer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/openkarpenter/karpenter/pkg/apis/autoscaling/v1beta1"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
)

func TestReplicas(t *testing.T) {
	pod := &corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}},
		Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("3Gi")}}},
			{Name: "b", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}},
		},
	}
	limits := func(kv ...string) autoscalingv1beta1.Limits {
		out := autoscalingv1beta1.Limits{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		spec     autoscalingv1beta1.CapacityBufferSpec
		workload *int32
		want     int32
	}{
		{"nothing", autoscalingv1beta1.CapacityBufferSpec{}, nil, 0},
		{"replicas", autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](7)}, nil, 7},
		{"percentage rounds up", autoscalingv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](15)}, ptr.To[int32](10), 2},
		{"percentage at least one", autoscalingv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](1)}, ptr.To[int32](3), 1},
		{"zero percent", autoscalingv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](0)}, ptr.To[int32](3), 0},
		{"percentage of no replicas", autoscalingv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](50)}, ptr.To[int32](0), 0},
		{"percentage without a workload", autoscalingv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](50), Replicas: ptr.To[int32](2)}, nil, 2},
		{"the larger of replicas and percentage", autoscalingv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](50), Replicas: ptr.To[int32](2)}, ptr.To[int32](10), 5},
		// The pod requests 4 CPU (its init container's peak) and 3Gi.
		{"limits alone", autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "10")}, nil, 2},
		{"the tightest limit", autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "100", "memory", "10Gi")}, nil, 3},
		{"limits cap replicas", autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](9), Limits: limits("cpu", "12")}, nil, 3},
		{"limits above replicas", autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](1), Limits: limits("cpu", "12")}, nil, 1},
		{"limits naming nothing requested", autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](4), Limits: limits("nvidia.com/gpu", "1", "pods", "1")}, nil, 4},
		{"limits below one pod", autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](4), Limits: limits("cpu", "3")}, nil, 0},
	} {
		if got := Replicas(tc.spec, pod, tc.workload); got != tc.want {
			t.Errorf("%s: %d chunks, want %d", tc.name, got, tc.want)
		}
	}
}

func buffer(name string, replicas int32, ready bool) *autoscalingv1beta1.CapacityBuffer {
	cb := &autoscalingv1beta1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 3},
		Status:     autoscalingv1beta1.CapacityBufferStatus{Replicas: ptr.To(replicas)},
	}
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	cb.Status.Conditions = []metav1.Condition{{Type: autoscalingv1beta1.ConditionReadyForProvisioning, Status: status}}
	return cb
}

func TestBuildVirtualPods(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeName:          "taken",
			PriorityClassName: "high",
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			},
			Containers: []corev1.Container{{Name: "main", VolumeMounts: []corev1.VolumeMount{{Name: "data"}, {Name: "config"}}}},
		},
	}
	pods := BuildVirtualPods(buffer("web", 3, true), tmpl, metav1.Now())
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3", len(pods))
	}
	seen := map[types.UID]bool{}
	for _, p := range pods {
		if !IsVirtual(p) || bufferOf(p) != (types.NamespacedName{Namespace: "ns", Name: "web"}) || p.Namespace != "ns" || p.Labels["app"] != "web" {
			t.Errorf("pod %s: virtual %t, buffer %v, namespace %s, labels %v", p.Name, IsVirtual(p), bufferOf(p), p.Namespace, p.Labels)
		}
		if p.Spec.NodeName != "" || p.Spec.PriorityClassName != "" || *p.Spec.Priority != VirtualPodPriority {
			t.Errorf("pod %s: node %q, priority class %q, priority %d", p.Name, p.Spec.NodeName, p.Spec.PriorityClassName, *p.Spec.Priority)
		}
		if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].Name != "config" || len(p.Spec.Containers[0].VolumeMounts) != 1 {
			t.Errorf("pod %s keeps volumes %v, mounts %v; want the ConfigMap only", p.Name, p.Spec.Volumes, p.Spec.Containers[0].VolumeMounts)
		}
		seen[p.UID] = true
	}
	if len(seen) != 3 {
		t.Errorf("UIDs not distinct: %v", seen)
	}
	if len(tmpl.Spec.Volumes) != 2 || tmpl.Spec.NodeName != "taken" {
		t.Error("the template was changed")
	}
	if IsVirtual(&corev1.Pod{}) || len(BuildVirtualPods(buffer("none", 0, true), tmpl, metav1.Now())) != 0 {
		t.Error("a real pod is virtual, or an empty buffer has pods")
	}
}

func TestSplit(t *testing.T) {
	real := func(name string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	a := BuildVirtualPods(buffer("a", 3, true), corev1.PodTemplateSpec{}, metav1.Now())
	b := BuildVirtualPods(buffer("b", 1, true), corev1.PodTemplateSpec{}, metav1.Now())
	res := &scheduler.Results{
		ExistingPlacements: []scheduler.Placement{{Pod: real("r1"), Node: "n1"}, {Pod: a[0], Node: "n1"}, {Pod: a[1], Node: "n2"}},
		NewClaims:          []*scheduler.Claim{{Pods: []*corev1.Pod{real("r2"), a[2]}}, {Pods: []*corev1.Pod{b[0]}}},
		PodErrors:          []scheduler.PodError{{Pod: real("r3")}},
	}
	o := Split(res)
	if len(res.ExistingPlacements) != 1 || len(res.NewClaims) != 2 || len(res.NewClaims[0].Pods) != 1 || len(res.NewClaims[1].Pods) != 0 || len(res.PodErrors) != 1 {
		t.Fatalf("results after split: %+v", res)
	}
	if got := *o.Buffers[types.NamespacedName{Namespace: "ns", Name: "a"}]; got != (Placed{Existing: 2, New: 1}) {
		t.Errorf("buffer a placed %+v", got)
	}
	if got := *o.Buffers[types.NamespacedName{Namespace: "ns", Name: "b"}]; got != (Placed{New: 1}) {
		t.Errorf("buffer b placed %+v", got)
	}
	if o.Nodes["n1"] != 1 || o.Nodes["n2"] != 1 || len(o.Nodes) != 2 {
		t.Errorf("nodes %v", o.Nodes)
	}
}

func TestProvisioningCondition(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cb     *autoscalingv1beta1.CapacityBuffer
		placed *Placed
		want   string // reason, "" for no change
		status metav1.ConditionStatus
	}{
		{"not ready", buffer("x", 2, false), nil, ReasonNotReadyForProvisioning, metav1.ConditionFalse},
		{"empty", buffer("x", 0, true), nil, ReasonBufferEmpty, metav1.ConditionFalse},
		{"not seen", buffer("x", 2, true), nil, "", ""},
		{"all on existing", buffer("x", 2, true), &Placed{Existing: 2}, ReasonFitsExistingCapacity, metav1.ConditionTrue},
		{"some new", buffer("x", 2, true), &Placed{Existing: 1, New: 1}, ReasonRequiresNewCapacity, metav1.ConditionFalse},
		{"some fit nowhere", buffer("x", 2, true), &Placed{Existing: 1, Failed: 1}, ReasonRequiresNewCapacity, metav1.ConditionFalse},
		{"fewer seen than kept", buffer("x", 3, true), &Placed{Existing: 2}, "", ""},
	} {
		cond, ok := provisioningCondition(tc.cb, tc.placed)
		switch {
		case tc.want == "" && ok:
			t.Errorf("%s: condition %+v, want none", tc.name, cond)
		case tc.want != "" && (!ok || cond.Reason != tc.want || cond.Status != tc.status):
			t.Errorf("%s: condition %+v (%t), want %s %s", tc.name, cond, ok, tc.status, tc.want)
		}
	}
}
