package nodeoverlay

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
)

const (
	family = "karpenter.k8s.aws/instance-family"
	ct     = karpv1.CapacityTypeLabelKey
	zone   = "topology.kubernetes.io/zone"
)

// TestPriceAdjustment: a "-20%" overlay on m7i on-demand reprices exactly those offerings;
// spot offerings and c7i keep the cloud's prices (c7i is the very same InstanceType).
func TestPriceAdjustment(t *testing.T) {
	f := newFixture(t)
	f.create(withPriceAdjustment(overlay("savings-plan", 0, []string{family, "In", "m7i"}, []string{ct, "In", "on-demand"}), "-20%"))
	f.reconcile()
	f.expectValid("savings-plan")
	raw, got := f.rawTypes(), f.types()
	m7i := got["m7i.xlarge"]
	if !m7i.PriceOverlaid || m7i.CapacityOverlaid {
		t.Errorf("m7i.xlarge overlaid price %v capacity %v, want true false", m7i.PriceOverlaid, m7i.CapacityOverlaid)
	}
	for _, o := range m7i.Offerings {
		want := price(t, raw["m7i.xlarge"], o.Zone, o.CapacityType)
		if o.CapacityType == karpv1.CapacityTypeOnDemand {
			want *= 0.8
		}
		if !near(o.Price, want) {
			t.Errorf("m7i.xlarge %s %s: $%.5f, want $%.5f", o.CapacityType, o.Zone, o.Price, want)
		}
	}
	if got["c7i.xlarge"] != raw["c7i.xlarge"] {
		t.Errorf("c7i.xlarge was copied though no overlay selects it")
	}
	// The cloud's own types are untouched.
	if p := price(t, raw["m7i.xlarge"], "us-east-1a", karpv1.CapacityTypeOnDemand); !near(p, 0.2016) {
		t.Errorf("the cloud's m7i.xlarge price changed to %v", p)
	}
}

// TestPriceOverrideAndAbsoluteAdjustment: price replaces, a signed amount adds (never below
// zero), and requirements on zone and template labels select offerings and NodePools.
func TestPriceOverrideAndAbsoluteAdjustment(t *testing.T) {
	f := newFixture(t)
	f.create(withPrice(overlay("fixed", 0, []string{family, "In", "c7i"}, []string{zone, "In", "us-east-1b"}), "0.05"))
	f.create(withPriceAdjustment(overlay("free", 0, []string{family, "In", "m7i"}, []string{ct, "In", "spot"}, []string{"team", "In", "web"}), "-5"))
	f.create(withPriceAdjustment(overlay("other-team", 0, []string{family, "In", "m7i"}, []string{"team", "In", "batch"}), "+1"))
	f.reconcile()
	for _, name := range []string{"fixed", "free", "other-team"} {
		f.expectValid(name)
	}
	raw, got := f.rawTypes(), f.types()
	for _, o := range got["c7i.xlarge"].Offerings {
		want := price(t, raw["c7i.xlarge"], o.Zone, o.CapacityType)
		if o.Zone == "us-east-1b" {
			want = 0.05
		}
		if !near(o.Price, want) {
			t.Errorf("c7i.xlarge %s %s: $%v, want $%v", o.CapacityType, o.Zone, o.Price, want)
		}
	}
	for _, o := range got["m7i.xlarge"].Offerings {
		want := price(t, raw["m7i.xlarge"], o.Zone, o.CapacityType)
		if o.CapacityType == karpv1.CapacityTypeSpot {
			want = 0
		}
		if !near(o.Price, want) {
			t.Errorf("m7i.xlarge %s %s: $%v, want $%v (the batch team's overlay does not select this NodePool)", o.CapacityType, o.Zone, o.Price, want)
		}
	}
}

// TestCapacity: extended resources are added to the selected types' capacity and allocatable.
func TestCapacity(t *testing.T) {
	f := newFixture(t)
	f.create(withCapacity(overlay("hugepages", 0, []string{family, "In", "m7i"}), "hugepages-2Mi", "1Gi", "example.com/fpga", "2"))
	f.reconcile()
	f.expectValid("hugepages")
	got := f.types()
	m7i := got["m7i.xlarge"]
	if !m7i.CapacityOverlaid || m7i.PriceOverlaid {
		t.Errorf("m7i.xlarge overlaid capacity %v price %v, want true false", m7i.CapacityOverlaid, m7i.PriceOverlaid)
	}
	for name, want := range map[corev1.ResourceName]string{"hugepages-2Mi": "1Gi", "example.com/fpga": "2"} {
		q := m7i.Allocatable()[name]
		if q.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("m7i.xlarge allocatable %s = %s, want %s", name, q.String(), want)
		}
	}
	if _, ok := got["c7i.xlarge"].Capacity["example.com/fpga"]; ok {
		t.Errorf("c7i.xlarge got the fpga though not selected")
	}
}

// TestWeightAndConflicts follows Karpenter's order and rules: the heavier overlay's price wins
// where both select, the lighter fills in the rest; two of the same weight pricing the same
// offering conflict, and the one evaluated second (the name earlier in the alphabet) is not
// applied anywhere, with a message naming the other; capacities conflict per resource.
func TestWeightAndConflicts(t *testing.T) {
	f := newFixture(t)
	f.create(withPriceAdjustment(overlay("heavy", 10, []string{family, "In", "m7i"}), "-50%"))
	f.create(withPriceAdjustment(overlay("light", 0, []string{ct, "In", "on-demand"}), "+100%"))
	f.create(withPriceAdjustment(overlay("a-twin", 10, []string{family, "In", "m7i"}, []string{zone, "In", "us-east-1a"}), "-10%"))
	f.create(withCapacity(overlay("dev-1", 5, []string{family, "In", "c7i"}), "example.com/dev", "1", "example.com/other", "1"))
	f.create(withCapacity(overlay("dev-0", 5, []string{family, "Exists"}), "example.com/dev", "3"))
	f.create(withCapacity(overlay("net", 5, []string{family, "Exists"}), "example.com/net", "4"))
	f.reconcile()
	f.expectValid("heavy")
	f.expectValid("light")
	f.expectValid("dev-1")
	f.expectValid("net")
	f.expectInvalid("a-twin", ReasonConflict, "heavy", "same weight 10")
	f.expectInvalid("dev-0", ReasonConflict, "dev-1", "example.com/dev")
	raw, got := f.rawTypes(), f.types()
	for _, o := range got["m7i.xlarge"].Offerings {
		if want := price(t, raw["m7i.xlarge"], o.Zone, o.CapacityType) * 0.5; !near(o.Price, want) {
			t.Errorf("m7i.xlarge %s %s: $%v, want the heavy overlay's $%v", o.CapacityType, o.Zone, o.Price, want)
		}
	}
	for _, o := range got["c7i.xlarge"].Offerings {
		want := price(t, raw["c7i.xlarge"], o.Zone, o.CapacityType)
		if o.CapacityType == karpv1.CapacityTypeOnDemand {
			want *= 2
		}
		if !near(o.Price, want) {
			t.Errorf("c7i.xlarge %s %s: $%v, want $%v", o.CapacityType, o.Zone, o.Price, want)
		}
	}
	c7i, m7i := got["c7i.xlarge"].Capacity, got["m7i.xlarge"].Capacity
	if q := c7i["example.com/dev"]; q.Value() != 1 {
		t.Errorf("c7i.xlarge example.com/dev = %s, want dev-1's 1", q.String())
	}
	if _, ok := m7i["example.com/dev"]; ok {
		t.Errorf("m7i.xlarge has example.com/dev from the conflicting dev-0")
	}
	if q := m7i["example.com/net"]; q.Value() != 4 {
		t.Errorf("m7i.xlarge example.com/net = %s, want 4", q.String())
	}

	// Give the twin its own weight: both apply, the heavier first.
	twin := &v1alpha1.NodeOverlay{}
	if err := env.Client.Get(f.ctx, client.ObjectKey{Name: "a-twin"}, twin); err != nil {
		t.Fatal(err)
	}
	twin.Spec.Weight = ptr32(20)
	if err := env.Client.Update(f.ctx, twin); err != nil {
		t.Fatal(err)
	}
	f.reconcile()
	f.expectValid("a-twin")
	got = f.types()
	if p, want := price(t, got["m7i.xlarge"], "us-east-1a", karpv1.CapacityTypeOnDemand), price(t, raw["m7i.xlarge"], "us-east-1a", karpv1.CapacityTypeOnDemand)*0.9; !near(p, want) {
		t.Errorf("m7i.xlarge on-demand us-east-1a: $%v, want the twin's $%v", p, want)
	}
	if c := f.condition("a-twin", v1alpha1.ConditionTypeReady); c.ObservedGeneration != twin.Generation {
		t.Errorf("Ready observedGeneration %d, want %d", c.ObservedGeneration, twin.Generation)
	}
}

// TestRuntimeValidation: what the CRD accepts but Karpenter refuses at run time (a requirement
// value that is no label value) is ValidationSucceeded False, RuntimeValidation, and unused.
func TestRuntimeValidation(t *testing.T) {
	f := newFixture(t)
	long := "a123456789a123456789a123456789a123456789a123456789a123456789abcd"
	f.create(withPriceAdjustment(overlay("bad-value", 0, []string{"team", "In", long}), "-10%"))
	f.reconcile()
	f.expectInvalid("bad-value", ReasonRuntimeValidation, "spec.requirements[0].values[0]", "must be no more than 63")
}

// TestLaunchByAdjustedPrices: the simulated cloud launches a NodePool's claim as the cheapest
// offering by the adjusted prices, bills that price, and gives the node the added resources.
func TestLaunchByAdjustedPrices(t *testing.T) {
	f := newFixture(t)
	f.create(withCapacity(withPriceAdjustment(overlay("discount", 0, []string{family, "In", "m7i"}), "-50%"), "example.com/fpga", "2"))
	f.reconcile()
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-abc", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: f.pool.Spec.Template.Spec.NodeClassRef,
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}},
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c7i.xlarge", "m7i.xlarge"}},
				{Key: ct, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
			},
		},
	}
	Annotate(claim, mapValues(f.types()))
	if claim.Annotations[v1alpha1.PriceOverlayAppliedAnnotationKey] != "true" || claim.Annotations[v1alpha1.CapacityOverlayAppliedAnnotationKey] != "true" {
		t.Errorf("annotations %v, want both overlay annotations", claim.Annotations)
	}
	launched, err := f.cloud.Create(f.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if it := launched.Labels[corev1.LabelInstanceTypeStable]; it != "m7i.xlarge" {
		t.Fatalf("launched %s, want m7i.xlarge (cheaper at half price)", it)
	}
	if q := launched.Status.Allocatable["example.com/fpga"]; q.Value() != 2 {
		t.Errorf("launched allocatable example.com/fpga = %s, want 2", q.String())
	}
	instances := f.cloud.Instances()
	if len(instances) != 1 || !near(instances[0].Price, 0.1008) {
		t.Errorf("instances %+v, want one billed at $0.1008/h", instances)
	}
}

func ptr32(v int32) *int32 { return &v }

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
