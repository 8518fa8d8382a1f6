package nodeoverlay

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// staticTypes is an InstanceTypeProvider answering the same types for every NodePool.
type staticTypes []*cloudprovider.InstanceType

func (s staticTypes) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	return s, nil
}

// solveWith evaluates the overlays over one NodePool of two 4-cpu types, "c" at $0.20/h and
// "m" at $0.22/h on demand, and schedules the pods on the types the store answers.
func solveWith(t *testing.T, pods []*corev1.Pod, overlays ...*v1alpha1.NodeOverlay) *scheduler.Results {
	t.Helper()
	types := staticTypes{
		builders.InstanceType(builders.InstanceTypeOptions{Name: "c", CPU: 4, MemoryGiB: 8, PricePerHour: 0.20}),
		builders.InstanceType(builders.InstanceTypeOptions{Name: "m", CPU: 4, MemoryGiB: 16, PricePerHour: 0.22}),
	}
	store := NewStore()
	c := NewController(nil, types, store, nil)
	items := make([]v1alpha1.NodeOverlay, len(overlays))
	for i, o := range overlays {
		items[i] = *o
	}
	table, verdicts, err := c.evaluate(context.Background(), items, []karpv1.NodePool{{ObjectMeta: metav1.ObjectMeta{Name: "default"}}})
	if err != nil || len(verdicts) != 0 {
		t.Fatalf("evaluate: %v, verdicts %v", err, verdicts)
	}
	store.replace(table)
	its, err := store.Apply("default", types)
	if err != nil {
		t.Fatal(err)
	}
	pool := &scheduler.NodePool{
		Name:          "default",
		Requirements:  scheduling.NewRequirements(scheduling.MustRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)),
		InstanceTypes: its,
	}
	return scheduler.Solve(scheduler.Input{Pods: pods, NodePools: []*scheduler.NodePool{pool}})
}

// TestSchedulerSeesAdjustedPrices: by list price the scheduler launches "c"; a -20% overlay on
// "m" ($0.176/h) makes it launch "m" at that price, and the claim's types are ordered by it.
func TestSchedulerSeesAdjustedPrices(t *testing.T) {
	pods := builders.Pods(3, builders.PodOptions{Name: "p", CPU: "1", Memory: "1Gi"})
	for _, tc := range []struct {
		overlays []*v1alpha1.NodeOverlay
		first    string
		price    float64
	}{
		{nil, "c", 0.20},
		{[]*v1alpha1.NodeOverlay{withPriceAdjustment(overlay("discount", 0, []string{"node.kubernetes.io/instance-type", "In", "m"}), "-20%")}, "m", 0.176},
	} {
		r := solveWith(t, pods, tc.overlays...)
		if len(r.PodErrors) != 0 || len(r.NewClaims) != 1 {
			t.Fatalf("overlays %d: errors %v, %d claims", len(tc.overlays), r.PodErrors, len(r.NewClaims))
		}
		claim := r.NewClaims[0]
		if claim.InstanceTypes[0].Name != tc.first || !near(claim.Price, tc.price) {
			t.Errorf("overlays %d: claim's first type %s at $%v, want %s at $%v", len(tc.overlays), claim.InstanceTypes[0].Name, claim.Price, tc.first, tc.price)
		}
	}
}

// TestSchedulerSeesAddedCapacity: a pod requesting an extended resource no type lists cannot
// be placed; once an overlay adds it to "m", the pod gets a claim of "m" only, annotated so.
func TestSchedulerSeesAddedCapacity(t *testing.T) {
	pod := builders.Pod(builders.PodOptions{Name: "fuse", CPU: "1", Extended: map[corev1.ResourceName]string{"smarter-devices/fuse": "1"}})
	if r := solveWith(t, []*corev1.Pod{pod}); len(r.PodErrors) != 1 {
		t.Fatalf("without the overlay: %d pod errors, want the pod unschedulable", len(r.PodErrors))
	}
	r := solveWith(t, []*corev1.Pod{pod}, withCapacity(overlay("fuse", 0, []string{"node.kubernetes.io/instance-type", "In", "m"}), "smarter-devices/fuse", "10"))
	if len(r.PodErrors) != 0 || len(r.NewClaims) != 1 {
		t.Fatalf("with the overlay: errors %v, %d claims", r.PodErrors, len(r.NewClaims))
	}
	claim := r.NewClaims[0]
	if len(claim.InstanceTypes) != 1 || claim.InstanceTypes[0].Name != "m" {
		t.Errorf("claim types %v, want only m", claim.InstanceTypes)
	}
	nc := &karpv1.NodeClaim{}
	Annotate(nc, claim.InstanceTypes)
	if nc.Annotations[v1alpha1.CapacityOverlayAppliedAnnotationKey] != "true" || nc.Annotations[v1alpha1.PriceOverlayAppliedAnnotationKey] != "" {
		t.Errorf("annotations %v, want capacity-overlay-applied only", nc.Annotations)
	}
}
