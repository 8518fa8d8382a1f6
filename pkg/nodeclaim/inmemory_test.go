package nodeclaim

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openkarpenter/karpenter/pkg/apis"
	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
)

// TestInMemoryClient drives the lifecycle as `karpenter simulate` does: Reconcile called
// directly on an in-memory client without indexes or a manager, on a virtual clock.
func TestInMemoryClient(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	nodeClass := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "mem", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}, CreationTimestamp: metav1.NewTime(clk.Now())},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}},
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(nodeClass, claim).
		WithStatusSubresource(&karpv1.NodeClaim{}, &corev1.Node{}).Build()
	cloud, err := sim.New(sim.Options{Clock: clk, NodeClasses: kube, Catalog: testCatalog(t)})
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := sim.NewKubelet(cloud, kube, sim.KubeletOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewLifecycleController(kube, cloud, nil, clk, nil, LifecycleOptions{})
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(claim)}
	step := func() {
		t.Helper()
		if _, err := c.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	step()
	if err := kubelet.Step(ctx); err != nil {
		t.Fatal(err)
	}
	step()
	got := &karpv1.NodeClaim{}
	if err := kube.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, karpv1.ConditionTypeReady) {
		t.Fatalf("conditions %+v, want Ready", got.Status.Conditions)
	}

	if err := kube.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	// As the termination controller, once the node is drained.
	for range 3 {
		claim := &karpv1.NodeClaim{}
		if err := kube.Get(ctx, req.NamespacedName, claim); err != nil {
			break
		}
		if _, err := c.Finalize(ctx, claim); err != nil {
			t.Fatal(err)
		}
	}
	if err := kube.Get(ctx, req.NamespacedName, got); err == nil {
		t.Error("the claim still exists")
	}
	nodes := &corev1.NodeList{}
	if err := kube.List(ctx, nodes); err != nil || len(nodes.Items) != 0 {
		t.Errorf("%d nodes left, %v", len(nodes.Items), err)
	}
}
