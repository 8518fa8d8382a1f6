package nodeclaim

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openkarpenter/karpenter/pkg/apis"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

func TestNotInitialized(t *testing.T) {
	gpu := corev1.ResourceName("nvidia.com/gpu")
	startup := corev1.Taint{Key: "agent", Effect: corev1.TaintEffectNoSchedule}
	claim := &karpv1.NodeClaim{
		Spec: karpv1.NodeClaimSpec{StartupTaints: []corev1.Taint{startup}},
		Status: karpv1.NodeClaimStatus{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("8"), gpu: resource.MustParse("1"),
			"example.com/unused": resource.MustParse("0"),
		}},
	}
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	for _, tc := range []struct {
		name string
		node corev1.Node
		want string
	}{
		{"no ready condition", corev1.Node{}, ReasonNodeNotReady},
		{"not ready", corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}}}, ReasonNodeNotReady},
		{"startup taint with another value", corev1.Node{
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "agent", Value: "x", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Conditions: ready},
		}, ReasonStartupTaintsExist},
		{"not-ready taint still on", corev1.Node{
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Conditions: ready, Allocatable: corev1.ResourceList{gpu: resource.MustParse("1")}},
		}, ReasonKnownEphemeralTaintsExist},
		{"gpu not registered", corev1.Node{Status: corev1.NodeStatus{Conditions: ready, Allocatable: corev1.ResourceList{gpu: resource.MustParse("0")}}}, ReasonResourceNotRegistered},
		{"initialized", corev1.Node{
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "agent", Effect: corev1.TaintEffectNoExecute}}},
			Status: corev1.NodeStatus{Conditions: ready, Allocatable: corev1.ResourceList{gpu: resource.MustParse("1")}},
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, msg := notInitialized(&tc.node, claim); got != tc.want {
				t.Errorf("reason %q (%s), want %q", got, msg, tc.want)
			}
		})
	}
}

func TestSyncNodeRespectsDoNotSyncTaints(t *testing.T) {
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "c", UID: "uid-c", Labels: map[string]string{"a": "b"}},
		Spec:       karpv1.NodeClaimSpec{Taints: []corev1.Taint{{Key: "t", Effect: corev1.TaintEffectNoSchedule}}},
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{karpv1.NodeDoNotSyncTaintsLabelKey: "true"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}}},
	}
	syncNode(node, claim)
	syncNode(node, claim) // idempotent
	if len(node.Spec.Taints) != 0 {
		t.Errorf("taints %v, want none", node.Spec.Taints)
	}
	if node.Labels["a"] != "b" || node.Labels[karpv1.NodeRegisteredLabelKey] != "true" || len(node.OwnerReferences) != 1 || len(node.Finalizers) != 1 {
		t.Errorf("node %+v", node.ObjectMeta)
	}
}

func TestLookupsUseIndexOrFallBack(t *testing.T) {
	ctx := context.Background()
	nodes := []client.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NodeSpec{ProviderID: "sim:///z/a"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: corev1.NodeSpec{ProviderID: "sim:///z/b"}},
		&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "ca"}, Status: karpv1.NodeClaimStatus{ProviderID: "sim:///z/a"}},
	}
	plain := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(nodes...).Build()
	indexed := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(nodes...).
		WithIndex(&corev1.Node{}, ProviderIDIndex, func(o client.Object) []string { return []string{o.(*corev1.Node).Spec.ProviderID} }).
		WithIndex(&karpv1.NodeClaim{}, NodeClaimProviderIDIndex, func(o client.Object) []string {
			return []string{o.(*karpv1.NodeClaim).Status.ProviderID}
		}).Build()
	for name, c := range map[string]client.Client{"no index": plain, "index": indexed} {
		got, err := NodesByProviderID(ctx, c, "sim:///z/b")
		if err != nil || len(got) != 1 || got[0].Name != "b" {
			t.Errorf("%s: nodes %v, %v", name, got, err)
		}
		claims, err := NodeClaimsByProviderID(ctx, c, "sim:///z/a")
		if err != nil || len(claims) != 1 || claims[0].Name != "ca" {
			t.Errorf("%s: claims %v, %v", name, claims, err)
		}
	}
}

type recordingIndexer struct{ fields []string }

func (r *recordingIndexer) IndexField(_ context.Context, _ client.Object, field string, _ client.IndexerFunc) error {
	r.fields = append(r.fields, field)
	return nil
}

func TestIndexFields(t *testing.T) {
	r := &recordingIndexer{}
	if err := IndexFields(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if len(r.fields) != 3 || r.fields[0] != ProviderIDIndex || r.fields[1] != NodeClaimProviderIDIndex || r.fields[2] != NodeClaimNodeNameIndex {
		t.Errorf("indexed %v", r.fields)
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (LifecycleOptions{}).Validate(); err != nil {
		t.Error(err)
	}
	if err := (LifecycleOptions{RegistrationTTL: -1}).Validate(); err == nil {
		t.Error("negative ttl accepted")
	}
	if err := (GarbageCollectorOptions{Interval: -1}).Validate(); err == nil {
		t.Error("negative interval accepted")
	}
	if o := (LifecycleOptions{}).withDefaults(); o.RegistrationTTL != DefaultRegistrationTTL {
		t.Errorf("default ttl %s", o.RegistrationTTL)
	}
}
