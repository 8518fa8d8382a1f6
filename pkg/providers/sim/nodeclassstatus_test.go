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
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
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

// TestNodeClassCEL: the simulated cloud honours spec.kubelet's CEL expressions as the AWS
// provider does (Karpenter's AWS provider v1.15.2, pkg/providers/instancetype/types.go
// DefaultResolver.Resolve; pkg/controllers/nodeclass/validation.go for the conditions): with
// NodeClassCEL a maxPods expression sizes each instance type's pods and the NodeClass is
// Ready; without it the NodeClass is not Ready (KubeletExpressionsDisabled), and an expression
// failing for one of the cloud's types leaves it not Ready (KubeletExpressionEvaluationFailed).
func TestNodeClassCEL(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, maxPods string
		gate          bool
		reason        string
	}{
		{"on", "default_enis * 4", true, ""},
		{"off", "default_enis * 4", false, cloudprovider.ReasonKubeletExpressionsDisabled},
		{"fails", "100 / (vcpus - 2)", true, cloudprovider.ReasonKubeletExpressionEvaluationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := testNodeClass("cel", func(nc *awsv1.EC2NodeClass) {
				nc.Generation = 1
				nc.Spec.Kubelet = &awsv1.KubeletConfiguration{}
				if err := nc.Spec.Kubelet.UnmarshalJSON([]byte(`{"maxPods": "` + tc.maxPods + `"}`)); err != nil {
					t.Fatal(err)
				}
			})
			kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(nc).WithStatusSubresource(nc).Build()
			c, _ := newTestCloud(t, Options{NodeClasses: kube, NodeClassCEL: tc.gate})
			if _, err := NewNodeClassStatusController(kube, c).Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
				t.Fatal(err)
			}
			got := &awsv1.EC2NodeClass{}
			if err := kube.Get(ctx, types.NamespacedName{Name: nc.Name}, got); err != nil {
				t.Fatal(err)
			}
			v := meta.FindStatusCondition(got.Status.Conditions, awsv1.ConditionTypeValidationSucceeded)
			if tc.reason != "" {
				if v == nil || v.Status != metav1.ConditionFalse || v.Reason != tc.reason {
					t.Fatalf("ValidationSucceeded = %+v, want False %s", v, tc.reason)
				}
				return
			}
			if !meta.IsStatusConditionTrue(got.Status.Conditions, awsv1.ConditionTypeReady) {
				t.Fatalf("not Ready: %+v", got.Status.Conditions)
			}
			pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
			pool.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nc.Name}
			its, err := c.GetInstanceTypes(ctx, pool)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range its {
				e, _ := catalogEntry(t, it.Name)
				if want := int64(e.ENIs * 4); it.Capacity.Pods().Value() != want {
					t.Errorf("%s: %d pods, want %d (default_enis * 4)", it.Name, it.Capacity.Pods().Value(), want)
				}
			}
		})
	}
}

func catalogEntry(t *testing.T, name string) (catalog.Entry, bool) {
	t.Helper()
	for _, e := range smallCatalog(t) {
		if e.Name == name {
			return e, true
		}
	}
	t.Fatalf("%s is not in the small catalog", name)
	return catalog.Entry{}, false
}

// TestNodeClassStatusRefusesPlacementGroups: the simulated cloud has no placement groups, so a
// NodeClass with spec.placementGroupSelector is not Ready (ValidationSucceeded False,
// PlacementGroupsNotSupported, naming the simulated cloud) rather than launching outside the
// group, though the AWS provider resolves it (pkg/providers/aws placementgroup.go).
func TestNodeClassStatusRefusesPlacementGroups(t *testing.T) {
	ctx := context.Background()
	nc := testNodeClass("placed", func(nc *awsv1.EC2NodeClass) {
		nc.Generation = 1
		name := "hpc"
		nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: &name}
	})
	kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(nc).WithStatusSubresource(nc).Build()
	c, _ := newTestCloud(t, Options{NodeClasses: kube})
	if _, err := NewNodeClassStatusController(kube, c).Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
		t.Fatal(err)
	}
	got := &awsv1.EC2NodeClass{}
	if err := kube.Get(ctx, types.NamespacedName{Name: nc.Name}, got); err != nil {
		t.Fatal(err)
	}
	v := meta.FindStatusCondition(got.Status.Conditions, awsv1.ConditionTypeValidationSucceeded)
	if v == nil || v.Status != metav1.ConditionFalse || v.Reason != cloudprovider.ReasonPlacementGroupsNotSupported || !strings.Contains(v.Message, "simulated cloud") {
		t.Fatalf("ValidationSucceeded = %+v, want False %s naming the simulated cloud", v, cloudprovider.ReasonPlacementGroupsNotSupported)
	}
	if meta.IsStatusConditionTrue(got.Status.Conditions, awsv1.ConditionTypeReady) {
		t.Errorf("Ready with a placement group the simulated cloud cannot honour")
	}
}
