package aws

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/openkarpenter/karpenter/pkg/nodeoverlay"
)

// TestCreateByOverlaidPrices: a claim priced by NodeOverlays launches through a fleet with
// the prioritized on-demand strategy, each override's priority its offering's adjusted price,
// as Karpenter's AWS provider does; an overlay that prices r5.4xlarge below everything makes
// it the instance launched.
func TestCreateByOverlaidPrices(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	np = np.DeepCopy()
	if err := env.Client.Create(f.ctx, np); err != nil {
		t.Fatal(err)
	}
	overlays := []*v1alpha1.NodeOverlay{
		{ObjectMeta: metav1.ObjectMeta{Name: "discount"}, Spec: v1alpha1.NodeOverlaySpec{
			Requirements:    []v1alpha1.NodeSelectorRequirement{{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}},
			PriceAdjustment: ptr.To("-50%"),
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "reserved-r5"}, Spec: v1alpha1.NodeOverlaySpec{
			Requirements: []v1alpha1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"r5.4xlarge"}}},
			Price:        ptr.To("0.001"),
			Weight:       ptr.To[int32](10),
		}},
	}
	for _, o := range overlays {
		if err := env.Client.Create(f.ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, o := range overlays {
			_ = env.Client.Delete(f.ctx, o)
		}
		_ = env.Client.Delete(f.ctx, np)
	})
	store := nodeoverlay.NewStore()
	if _, err := nodeoverlay.NewController(env.Client, f.provider, store, clocktesting.NewFakeClock(f.clock.Now())).Reconcile(f.ctx, reconcile.Request{}); err != nil {
		t.Fatal(err)
	}
	f.provider.SetOverlay(store)
	its, err := nodeoverlay.Decorate(f.provider, store).GetInstanceTypes(f.ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	claim := claimFor(np, "general-purpose-overlay", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("6Gi")})
	nodeoverlay.Annotate(claim, its)
	launched, err := f.provider.Create(f.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	fleets := f.aws.Fleets()
	if len(fleets) != 1 || fleets[0].OnDemandAllocationStrategy != "prioritized" {
		t.Fatalf("fleets %+v, want one with the prioritized on-demand strategy", fleets)
	}
	adjusted := map[string]float64{}
	for _, it := range its {
		for _, o := range it.Offerings {
			if o.CapacityType == karpv1.CapacityTypeOnDemand {
				adjusted[it.Name+"/"+o.Zone] = o.Price
			}
		}
	}
	for _, c := range fleets[0].LaunchTemplateConfigs {
		for _, o := range c.Overrides {
			want := adjusted[o.InstanceType+"/"+o.AvailabilityZone]
			if o.Priority == nil || *o.Priority != want {
				t.Errorf("override %s %s: priority %v, want the adjusted price %v", o.InstanceType, o.AvailabilityZone, o.Priority, want)
			}
		}
	}
	if got := launched.Labels[corev1.LabelInstanceTypeStable]; got != "r5.4xlarge" {
		t.Errorf("launched %s, want r5.4xlarge, the cheapest by the overlays", got)
	}
}
