package sim

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openkarpenter/karpenter/pkg/apis"
	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// TestNodeClassStatusRefusesKubelet: a kubelet configuration the AWS provider refuses makes
// the NodeClass not Ready, with the reason in ValidationSucceeded, so the cloud launches
// nothing from it; once fixed, it is Ready again.
func TestNodeClassStatusRefusesKubelet(t *testing.T) {
	ctx := context.Background()
	nc := testNodeClass("kubelet", func(nc *awsv1.EC2NodeClass) {
		nc.Generation = 1
		nc.Spec.Kubelet = &awsv1.KubeletConfiguration{PodsPerCore: ptr.To[int32](2)}
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
	})
	kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(nc).WithStatusSubresource(nc).Build()
	c, _ := newTestCloud(t, Options{NodeClasses: kube})
	r := NewNodeClassStatusController(kube, c)
	reconcileAndGet := func() *awsv1.EC2NodeClass {
		t.Helper()
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
			t.Fatal(err)
		}
		got := &awsv1.EC2NodeClass{}
		if err := kube.Get(ctx, types.NamespacedName{Name: nc.Name}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := reconcileAndGet()
	v := meta.FindStatusCondition(got.Status.Conditions, awsv1.ConditionTypeValidationSucceeded)
	if v == nil || v.Status != metav1.ConditionFalse || v.Reason != cloudprovider.ReasonUnsupportedKubeletConfiguration || !strings.Contains(v.Message, "podsPerCore") {
		t.Fatalf("ValidationSucceeded = %+v, want False UnsupportedKubeletConfiguration naming podsPerCore", v)
	}
	if !meta.IsStatusConditionFalse(got.Status.Conditions, awsv1.ConditionTypeReady) {
		t.Errorf("Ready is not False: %+v", got.Status.Conditions)
	}
	claim := &karpv1.NodeClaim{Spec: karpv1.NodeClaimSpec{NodeClassRef: &karpv1.NodeClassReference{Name: nc.Name}}}
	if _, err := c.Create(ctx, claim); !cloudprovider.IsNodeClassNotReadyError(err) {
		t.Errorf("Create: got %v, want NodeClassNotReadyError", err)
	}
	if again := reconcileAndGet(); !equalConditions(again.Status.Conditions, got.Status.Conditions) {
		t.Errorf("a second reconcile changed the conditions:\n%+v\n%+v", got.Status.Conditions, again.Status.Conditions)
	}

	got.Spec.Kubelet.PodsPerCore = nil
	got.Generation = 2
	if err := kube.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	fixed := reconcileAndGet()
	for _, ct := range []string{awsv1.ConditionTypeValidationSucceeded, awsv1.ConditionTypeReady} {
		if !meta.IsStatusConditionTrue(fixed.Status.Conditions, ct) {
			t.Errorf("%s is not True once fixed: %+v", ct, fixed.Status.Conditions)
		}
	}
}

func equalConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Status != b[i].Status || a[i].Reason != b[i].Reason || a[i].Message != b[i].Message || !a[i].LastTransitionTime.Equal(&b[i].LastTransitionTime) {
			return false
		}
	}
	return true
}
