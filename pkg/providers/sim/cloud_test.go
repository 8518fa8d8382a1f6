package sim

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

var (
	instanceIDPattern = regexp.MustCompile(`^i-[0-9a-f]{17}$`)
	imageIDPattern    = regexp.MustCompile(`^ami-[0-9a-f]{17}$`)
)

// cheapest is the brute-force answer: the cheapest offering of the types in zones as the
// capacity type, by the catalog's prices, ties to the type name then the zone.
func cheapest(t *testing.T, types, zones []string, capacityType string) cloudprovider.OfferingID {
	t.Helper()
	prices, err := catalog.DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	var best cloudprovider.OfferingID
	bestPrice := -1.0
	for _, it := range slices.Sorted(slices.Values(types)) {
		for _, z := range slices.Sorted(slices.Values(zones)) {
			p, ok := prices.Price(it, z, capacityType)
			if ok && (bestPrice < 0 || p < bestPrice) {
				best, bestPrice = cloudprovider.OfferingID{InstanceType: it, Zone: z, CapacityType: capacityType}, p
			}
		}
	}
	return best
}

var allZones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

func TestCreateChoosesCheapestOffering(t *testing.T) {
	types := []string{"c5.large", "m5.large", "r5.large"}
	tests := []struct {
		name          string
		reqs          []karpv1.NodeSelectorRequirementWithMinValues
		wantZones     []string
		wantCapacity  string
		wantTypes     []string
		overridePrice *cloudprovider.PriceOverride
	}{
		{
			name:         "spot when allowed",
			reqs:         []karpv1.NodeSelectorRequirementWithMinValues{builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, types...)},
			wantZones:    allZones,
			wantCapacity: karpv1.CapacityTypeSpot,
			wantTypes:    types,
		},
		{
			name: "on-demand when spot is not allowed",
			reqs: []karpv1.NodeSelectorRequirementWithMinValues{
				builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, types...),
				builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand),
			},
			wantZones:    allZones,
			wantCapacity: karpv1.CapacityTypeOnDemand,
			wantTypes:    types,
		},
		{
			name: "zone requirement honoured",
			reqs: []karpv1.NodeSelectorRequirementWithMinValues{
				builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, types...),
				builders.Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-east-1b"),
			},
			wantZones:    []string{"us-east-1b"},
			wantCapacity: karpv1.CapacityTypeSpot,
			wantTypes:    types,
		},
		{
			name: "zone exclusion honoured",
			reqs: []karpv1.NodeSelectorRequirementWithMinValues{
				builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, types...),
				builders.Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpNotIn, "us-east-1a", "us-east-1c"),
			},
			wantZones:    []string{"us-east-1b"},
			wantCapacity: karpv1.CapacityTypeSpot,
			wantTypes:    types,
		},
		{
			name: "well-known label requirements filter types",
			reqs: []karpv1.NodeSelectorRequirementWithMinValues{
				builders.Requirement(awsv1.LabelInstanceFamily, corev1.NodeSelectorOpIn, "m5", "r5"),
				builders.Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
				builders.Requirement(awsv1.LabelInstanceGPUCount, corev1.NodeSelectorOpDoesNotExist),
				builders.Requirement(awsv1.LabelInstanceCPU, corev1.NodeSelectorOpLt, "3"),
				// A NodePool template label the cloud does not decide is not its to check.
				builders.Requirement("team", corev1.NodeSelectorOpIn, "payments"),
			},
			wantZones:    allZones,
			wantCapacity: karpv1.CapacityTypeSpot,
			wantTypes:    []string{"m5.large", "r5.large"},
		},
		{
			name: "arm64 only",
			reqs: []karpv1.NodeSelectorRequirementWithMinValues{
				builders.Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"),
			},
			wantZones:    allZones,
			wantCapacity: karpv1.CapacityTypeSpot,
			wantTypes:    []string{"c6g.large"},
		},
		{
			name: "spot preferred over cheaper on-demand",
			reqs: []karpv1.NodeSelectorRequirementWithMinValues{builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, types...)},
			overridePrice: &cloudprovider.PriceOverride{
				InstanceType: "c5.large", CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.001,
			},
			wantZones:    allZones,
			wantCapacity: karpv1.CapacityTypeSpot,
			wantTypes:    types,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{}
			if tt.overridePrice != nil {
				opts.PriceOverrides = []cloudprovider.PriceOverride{*tt.overridePrice}
			}
			c, _ := newTestCloud(t, opts)
			got := mustCreate(t, c, testClaim("claim", tt.reqs...))
			it, zone, ct := offeringOf(got)
			want := cheapest(t, tt.wantTypes, tt.wantZones, tt.wantCapacity)
			if (cloudprovider.OfferingID{InstanceType: it, Zone: zone, CapacityType: ct}) != want {
				t.Errorf("launched %s/%s/%s, want %s", it, zone, ct, want)
			}
		})
	}
}

func TestCreateFitsRequests(t *testing.T) {
	c, _ := newTestCloud(t, Options{})
	// 3 cpu do not fit a large (2 vCPU) or an xlarge (4 vCPU less kube-reserved still fits).
	got := mustCreate(t, c, withRequests(testClaim("claim",
		builders.Requirement(awsv1.LabelInstanceFamily, corev1.NodeSelectorOpIn, "m5"),
	), "cpu", "3", "memory", "4Gi"))
	if it, _, _ := offeringOf(got); it != "m5.xlarge" {
		t.Errorf("launched %s, want m5.xlarge, the cheapest m5 with 3 cpu allocatable", it)
	}
}

func TestCreateReturnsLaunchedClaim(t *testing.T) {
	c, _ := newTestCloud(t, Options{})
	in := testClaim("claim-a", builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"),
		builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand),
		builders.Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-east-1c"))
	in.Labels["team"] = "payments"
	before := in.DeepCopy()
	got := mustCreate(t, c, in)

	if !equality.Semantic.DeepEqual(in, before) {
		t.Error("Create modified its input")
	}
	wantLabels := map[string]string{
		corev1.LabelInstanceTypeStable: "m5.large",
		corev1.LabelTopologyZone:       "us-east-1c",
		corev1.LabelTopologyRegion:     "us-east-1",
		karpv1.CapacityTypeLabelKey:    karpv1.CapacityTypeOnDemand,
		corev1.LabelArchStable:         "amd64",
		corev1.LabelOSStable:           "linux",
		awsv1.LabelInstanceFamily:      "m5",
		awsv1.LabelInstanceSize:        "large",
		awsv1.LabelInstanceCPU:         "2",
		awsv1.LabelInstanceMemory:      "8192",
		karpv1.NodePoolLabelKey:        "default",
		awsv1.LabelNodeClass:           "default",
		"team":                         "payments",
	}
	for k, v := range wantLabels {
		if got.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
		}
	}
	zone, id, err := ParseProviderID(got.Status.ProviderID)
	if err != nil || zone != "us-east-1c" || !instanceIDPattern.MatchString(id) {
		t.Errorf("provider id %q: zone %q id %q err %v", got.Status.ProviderID, zone, id, err)
	}
	if got.Status.ProviderID != "sim:///us-east-1c/"+id {
		t.Errorf("provider id %q is not sim:///<zone>/<id>", got.Status.ProviderID)
	}
	if !imageIDPattern.MatchString(got.Status.ImageID) {
		t.Errorf("image id %q", got.Status.ImageID)
	}
	if q := got.Status.Capacity[corev1.ResourceCPU]; q.String() != "2" {
		t.Errorf("capacity cpu %s, want 2", q.String())
	}
	if q := got.Status.Allocatable[corev1.ResourcePods]; q.Value() != 29 {
		t.Errorf("allocatable pods %d, want 29 (m5.large's ENI limit)", q.Value())
	}
	if q := got.Status.Allocatable[corev1.ResourceCPU]; q.MilliValue() != 1930 {
		t.Errorf("allocatable cpu %dm, want 1930m", q.MilliValue())
	}

	insts := c.Instances()
	if len(insts) != 1 {
		t.Fatalf("%d instances, want 1", len(insts))
	}
	inst := insts[0]
	if inst.ID != id || inst.NodeClaimName != "claim-a" || inst.NodePoolName != "default" || inst.NodeClassName != "default" ||
		inst.InstanceType != "m5.large" || inst.Zone != "us-east-1c" || inst.CapacityType != karpv1.CapacityTypeOnDemand ||
		inst.ImageID != got.Status.ImageID || !inst.LaunchTime.Equal(epoch) || inst.State != InstanceStateRunning {
		t.Errorf("instance %+v does not match the launch", inst)
	}
	if want, _ := catalog.Lookup("m5.large"); inst.Price != want.OnDemandPrice {
		t.Errorf("price %v, want on-demand %v", inst.Price, want.OnDemandPrice)
	}
	if !regexp.MustCompile(`^ip-10-\d+-\d+-\d+\.us-east-1\.compute\.internal$`).MatchString(inst.Hostname) {
		t.Errorf("hostname %q", inst.Hostname)
	}
}

func TestCreateIsIdempotentByClaimName(t *testing.T) {
	c, _ := newTestCloud(t, Options{})
	first := mustCreate(t, c, testClaim("claim"))
	// A restarted controller retries with a fresh copy of the claim, without status.
	again := mustCreate(t, c, testClaim("claim"))
	if first.Status.ProviderID != again.Status.ProviderID {
		t.Errorf("second Create launched %s, want the first instance %s", again.Status.ProviderID, first.Status.ProviderID)
	}
	if n := len(c.Instances()); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
	other := mustCreate(t, c, testClaim("other"))
	if other.Status.ProviderID == first.Status.ProviderID {
		t.Error("another claim got the same instance")
	}
	// Once terminated, the name may launch again.
	if err := c.Delete(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	if relaunched := mustCreate(t, c, testClaim("claim")); relaunched.Status.ProviderID == first.Status.ProviderID {
		t.Error("a claim whose instance terminated got the terminated instance back")
	}
}

func TestCreateIsDeterministic(t *testing.T) {
	launch := func(seed int64) []string {
		c, clk := newTestCloud(t, Options{Seed: seed, LaunchLatency: time.Second, Faults: FaultPlan{LaunchJitter: time.Minute, CreateErrorRate: 0.3}})
		var out []string
		for i := range 20 {
			clk.Step(time.Second)
			got, err := c.Create(context.Background(), testClaim(fmt.Sprintf("claim-%d", i)))
			if err != nil {
				out = append(out, "error")
				continue
			}
			out = append(out, got.Status.ProviderID)
		}
		for _, inst := range c.Instances() {
			out = append(out, inst.Hostname, inst.RunningTime.String())
		}
		return out
	}
	a, b := launch(7), launch(7)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different launches:\n%v\n%v", a, b)
	}
	if c := launch(8); slices.Equal(a, c) {
		t.Error("different seeds gave the same launches")
	}
	for _, s := range a {
		if s == "error" {
			continue
		}
		if _, id, err := ParseProviderID(s); err == nil && !instanceIDPattern.MatchString(id) {
			t.Errorf("instance id %q is not i- and 17 hex digits", id)
		}
	}
}

func TestCreateErrorRate(t *testing.T) {
	c, _ := newTestCloud(t, Options{Seed: 42, Faults: FaultPlan{CreateErrorRate: 0.5}})
	failures := 0
	const n = 200
	for i := range n {
		_, err := c.Create(context.Background(), testClaim(fmt.Sprintf("claim-%d", i)))
		if err == nil {
			continue
		}
		failures++
		if !cloudprovider.IsCreateError(err) || !cloudprovider.IsRetryable(err) || cloudprovider.IsTerminalCreateError(err) {
			t.Fatalf("injected failure %v is not a retryable CreateError", err)
		}
	}
	if failures < n/4 || failures > 3*n/4 {
		t.Errorf("%d of %d creates failed at rate 0.5", failures, n)
	}
	if got := len(c.Instances()); got != n-failures {
		t.Errorf("%d instances after %d successful creates", got, n-failures)
	}
	// Idempotent hits never fail: the instance exists.
	for _, inst := range c.Instances() {
		if _, err := c.Create(context.Background(), testClaim(inst.NodeClaimName)); err != nil {
			t.Fatalf("re-create of launched claim %s: %v", inst.NodeClaimName, err)
		}
	}
}

func TestCreateFallsThroughInsufficientCapacity(t *testing.T) {
	types := []string{"c5.large", "m5.large"}
	claim := func(name string) *karpv1.NodeClaim {
		return testClaim(name, builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, types...))
	}
	c, _ := newTestCloud(t, Options{})
	first := cheapest(t, types, allZones, karpv1.CapacityTypeSpot)

	c.SetOfferingAvailable(first.InstanceType, first.Zone, first.CapacityType, false)
	got := mustCreate(t, c, claim("a"))
	it, zone, ct := offeringOf(got)
	if (cloudprovider.OfferingID{InstanceType: it, Zone: zone, CapacityType: ct}) == first {
		t.Errorf("launched the switched-off offering %s", first)
	}
	if ct != karpv1.CapacityTypeSpot {
		t.Errorf("fell through to %s, want the next spot offering", ct)
	}

	// A spot outage everywhere falls through to on-demand.
	c.SetOfferingAvailable("", "", karpv1.CapacityTypeSpot, false)
	got = mustCreate(t, c, claim("b"))
	if _, _, ct := offeringOf(got); ct != karpv1.CapacityTypeOnDemand {
		t.Errorf("with no spot capacity launched %s, want on-demand", ct)
	}

	// Nothing left: insufficient capacity naming every offering tried.
	c.SetOfferingAvailable("", "", karpv1.CapacityTypeOnDemand, false)
	_, err := c.Create(context.Background(), claim("c"))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("got %v, want insufficient capacity", err)
	}
	if got := cloudprovider.InsufficientCapacityOfferings(err); len(got) != len(types)*len(allZones)*2 {
		t.Errorf("error names %d offerings, want all %d: %v", len(got), len(types)*len(allZones)*2, got)
	}

	// Switching back on restores capacity.
	c.SetOfferingAvailable("", "", karpv1.CapacityTypeOnDemand, true)
	c.SetOfferingAvailable("", "", karpv1.CapacityTypeSpot, true)
	got = mustCreate(t, c, claim("d"))
	if it2, zone2, ct2 := offeringOf(got); it2 != it || zone2 != zone || ct2 != ct {
		t.Errorf("launched %s/%s/%s; the exact switch for %s is still off, want the next spot %s/%s/%s", it2, zone2, ct2, first, it, zone, ct)
	}
}

func TestCreateCapacityPools(t *testing.T) {
	c, _ := newTestCloud(t, Options{Capacity: []CapacityLimit{
		{Count: 0}, // nothing anywhere…
		{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: karpv1.CapacityTypeOnDemand, Count: 2}, // …but two of these
	}})
	claim := func(name string) *karpv1.NodeClaim { return testClaim(name) }
	a := mustCreate(t, c, claim("a"))
	mustCreate(t, c, claim("b"))
	for _, got := range []*karpv1.NodeClaim{a} {
		if it, zone, ct := offeringOf(got); it != "m5.large" || zone != "us-east-1a" || ct != karpv1.CapacityTypeOnDemand {
			t.Errorf("launched %s/%s/%s, want the only pool with capacity", it, zone, ct)
		}
	}
	_, err := c.Create(context.Background(), claim("c"))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("third launch into a pool of two: got %v, want insufficient capacity", err)
	}
	if offs := cloudprovider.InsufficientCapacityOfferings(err); !slices.Contains(offs, cloudprovider.OfferingID{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: karpv1.CapacityTypeOnDemand}) {
		t.Errorf("error does not name the exhausted pool: %v", offs)
	}
	// Terminating frees one.
	if err := c.Delete(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, claim("c"))
	// Run-time limits: open another pool.
	c.SetCapacity("c5.large", "", "", 1)
	d := mustCreate(t, c, claim("d"))
	if it, _, _ := offeringOf(d); it != "c5.large" {
		t.Errorf("launched %s, want c5.large from the new pool", it)
	}
	c.SetCapacity("", "", "", -1)
	mustCreate(t, c, claim("e")) // unlimited again…
	// …except where a more specific limit holds: each c5.large offering is a pool of one.
	_, dZone, dCapacity := offeringOf(d)
	only := func(name, zone string) *karpv1.NodeClaim {
		return testClaim(name, builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large"),
			builders.Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone), builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, dCapacity))
	}
	if _, err := c.Create(context.Background(), only("f", dZone)); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("c5.large's pool of one in %s is taken: got %v, want insufficient capacity", dZone, err)
	}
	otherZone := allZones[(slices.Index(allZones, dZone)+1)%len(allZones)]
	mustCreate(t, c, only("g", otherZone))
}

func TestCreateTerminalErrors(t *testing.T) {
	c, _ := newTestCloud(t, Options{})
	for name, claim := range map[string]*karpv1.NodeClaim{
		"unknown instance type": testClaim("a", builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "z9.mega")),
		"unknown zone":          testClaim("b", builders.Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "eu-west-1a")),
		"too big":               withRequests(testClaim("c"), "cpu", "1000"),
		"bad requirement":       testClaim("d", builders.Requirement(awsv1.LabelInstanceCPU, corev1.NodeSelectorOpGt, "many")),
	} {
		_, err := c.Create(context.Background(), claim)
		if !cloudprovider.IsTerminalCreateError(err) {
			t.Errorf("%s: got %v, want a terminal CreateError", name, err)
		}
	}
	if n := len(c.Instances()); n != 0 {
		t.Errorf("%d instances launched by failed creates", n)
	}
}

func TestNodeClassNotReady(t *testing.T) {
	deleting := testNodeClass("deleting", func(nc *awsv1.EC2NodeClass) {
		now := metav1.Now()
		nc.DeletionTimestamp = &now
		nc.Finalizers = []string{awsv1.TerminationFinalizer}
	})
	notReady := testNodeClass("not-ready", func(nc *awsv1.EC2NodeClass) {
		nc.Status.Conditions = []metav1.Condition{{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: "SubnetsNotFound"}}
	})
	windows := testNodeClass("windows", func(nc *awsv1.EC2NodeClass) {
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}
	})
	c, _ := newTestCloud(t, Options{NodeClasses: fakeReader(testNodeClass("default"), deleting, notReady, windows)})
	refs := map[string]*karpv1.NodeClassReference{
		"missing":    {Group: awsv1.Group, Kind: "EC2NodeClass", Name: "missing"},
		"deleting":   {Group: awsv1.Group, Kind: "EC2NodeClass", Name: "deleting"},
		"not ready":  {Group: awsv1.Group, Kind: "EC2NodeClass", Name: "not-ready"},
		"windows":    {Group: awsv1.Group, Kind: "EC2NodeClass", Name: "windows"},
		"other kind": {Group: "karpenter.azure.com", Kind: "AKSNodeClass", Name: "default"},
		"nil":        nil,
	}
	for name, ref := range refs {
		claim := testClaim("claim-" + name)
		claim.Spec.NodeClassRef = ref
		if _, err := c.Create(context.Background(), claim); !cloudprovider.IsNodeClassNotReadyError(err) {
			t.Errorf("Create with %s nodeclass: got %v, want NodeClassNotReadyError", name, err)
		}
		pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		pool.Spec.Template.Spec.NodeClassRef = ref
		if _, err := c.GetInstanceTypes(context.Background(), pool); !cloudprovider.IsNodeClassNotReadyError(err) {
			t.Errorf("GetInstanceTypes with %s nodeclass: got %v, want NodeClassNotReadyError", name, err)
		}
	}
}

func TestDeleteGetList(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestCloud(t, Options{})
	var claims []*karpv1.NodeClaim
	for i := range 5 {
		claims = append(claims, mustCreate(t, c, testClaim(fmt.Sprintf("claim-%d", i))))
	}
	got, err := c.Get(ctx, claims[2].Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "claim-2" || got.Status.ProviderID != claims[2].Status.ProviderID || got.Status.ImageID != claims[2].Status.ImageID ||
		got.Labels[corev1.LabelInstanceTypeStable] != claims[2].Labels[corev1.LabelInstanceTypeStable] || !got.CreationTimestamp.Time.Equal(epoch) {
		t.Errorf("Get returned %+v, want the view of %s", got, claims[2].Name)
	}

	list, err := c.List(ctx)
	if err != nil || len(list) != 5 {
		t.Fatalf("List: %d claims, %v", len(list), err)
	}
	if !slices.IsSortedFunc(list, func(a, b *karpv1.NodeClaim) int {
		return strings.Compare(a.Status.ProviderID, b.Status.ProviderID)
	}) {
		t.Error("List is not sorted by provider id")
	}

	if err := c.Delete(ctx, claims[2]); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := c.Delete(ctx, claims[2]); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("second Delete: got %v, want NodeClaimNotFoundError", err)
	}
	if _, err := c.Get(ctx, claims[2].Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get of a terminated instance: got %v, want NodeClaimNotFoundError", err)
	}
	for _, bad := range []string{"", "aws:///us-east-1a/i-0123456789abcdef0", "sim:///us-east-1a/i-0123456789abcdef0", wrongZone(claims[0])} {
		if _, err := c.Get(ctx, bad); !cloudprovider.IsNodeClaimNotFoundError(err) {
			t.Errorf("Get(%q): got %v, want NodeClaimNotFoundError", bad, err)
		}
	}
	if list, _ := c.List(ctx); len(list) != 4 {
		t.Errorf("List after Delete: %d claims, want 4", len(list))
	}
	// Delete of a claim that never got a provider id finds it by name.
	if err := c.Delete(ctx, testClaim("claim-3")); err != nil {
		t.Errorf("Delete by name: %v", err)
	}
	insts := c.Instances()
	if len(insts) != 5 || insts[2].State != InstanceStateTerminated || insts[2].TerminationReason != TerminationReasonDeleted {
		t.Errorf("Instances after Delete: %+v", insts)
	}
}

func instanceIDOf(t *testing.T, claim *karpv1.NodeClaim) string {
	t.Helper()
	_, id, err := ParseProviderID(claim.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestLaunchLatencyCostAndSpend(t *testing.T) {
	c, clk := newTestCloud(t, Options{LaunchLatency: 40 * time.Second})
	a := mustCreate(t, c, testClaim("a", builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"), builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)))
	mustCreate(t, c, testClaim("b", builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large"), builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)))
	if st := c.Instances()[0].State; st != InstanceStatePending {
		t.Errorf("state right after launch %s, want pending", st)
	}
	clk.Step(40 * time.Second)
	if st := c.Instances()[0].State; st != InstanceStateRunning {
		t.Errorf("state after the launch latency %s, want running", st)
	}
	m5, _ := catalog.Lookup("m5.large")
	c5, _ := catalog.Lookup("c5.large")
	if got, want := c.Cost(), m5.OnDemandPrice+c5.OnDemandPrice; !near(got, want) {
		t.Errorf("Cost %v, want %v", got, want)
	}
	clk.SetTime(epoch.Add(time.Hour))
	if err := c.Delete(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(epoch.Add(2 * time.Hour))
	if got, want := c.Cost(), c5.OnDemandPrice; !near(got, want) {
		t.Errorf("Cost after Delete %v, want %v", got, want)
	}
	if got, want := c.Spend(), m5.OnDemandPrice+2*c5.OnDemandPrice; !near(got, want) {
		t.Errorf("Spend %v, want %v", got, want)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestGetInstanceTypes(t *testing.T) {
	ctx := context.Background()
	maxPods := int32(8)
	reader := fakeReader(
		testNodeClass("default"),
		testNodeClass("dense", func(nc *awsv1.EC2NodeClass) { nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: &maxPods} }),
		testNodeClass("one-zone", func(nc *awsv1.EC2NodeClass) {
			nc.Status.Subnets = []awsv1.Subnet{{ID: "subnet-1", Zone: "us-east-1b"}, {ID: "subnet-2", Zone: "eu-west-1a"}}
		}),
	)
	c, _ := newTestCloud(t, Options{NodeClasses: reader})
	pool := func(nodeClass string) *karpv1.NodePool {
		p := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		p.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nodeClass}
		return p
	}

	its, err := c.GetInstanceTypes(ctx, pool("default"))
	if err != nil {
		t.Fatal(err)
	}
	if len(its) != len(smallCatalog(t)) || !slices.IsSortedFunc(its, func(a, b *cloudprovider.InstanceType) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatalf("got %d instance types (sorted: %v)", len(its), its)
	}
	for _, it := range its {
		if got := it.Offerings.Zones(); !slices.Equal(got, allZones) {
			t.Errorf("%s offered in %v, want %v", it.Name, got, allZones)
		}
		if got := it.Offerings.CapacityTypes(); !slices.Equal(got, []string{karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot}) {
			t.Errorf("%s offered as %v", it.Name, got)
		}
		if !it.Offerings.Available().HasAvailable() || len(it.Offerings.Available()) != len(it.Offerings) {
			t.Errorf("%s has unavailable offerings without faults", it.Name)
		}
	}

	dense, err := c.GetInstanceTypes(ctx, pool("dense"))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range dense {
		if pods := it.Capacity[corev1.ResourcePods]; pods.Value() != 8 {
			t.Errorf("%s: %d pods with kubelet maxPods 8", it.Name, pods.Value())
		}
	}
	// The claim launched from that NodeClass reports the same.
	claim := testClaim("dense")
	claim.Spec.NodeClassRef.Name = "dense"
	if got := mustCreate(t, c, claim); got.Status.Capacity.Pods().Value() != 8 {
		t.Errorf("launched with %d pods, want 8", got.Status.Capacity.Pods().Value())
	}

	oneZone, err := c.GetInstanceTypes(ctx, pool("one-zone"))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range oneZone {
		if got := it.Offerings.Zones(); !slices.Equal(got, []string{"us-east-1b"}) {
			t.Errorf("%s offered in %v, want the subnets' us-east-1b", it.Name, got)
		}
	}

	// Faults show as unavailable offerings; untouched types are the same shared objects.
	c.SetOfferingAvailable("m5.large", "us-east-1a", karpv1.CapacityTypeSpot, false)
	faulty, err := c.GetInstanceTypes(ctx, pool("default"))
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range faulty {
		for _, o := range it.Offerings {
			want := !(it.Name == "m5.large" && o.Zone == "us-east-1a" && o.CapacityType == karpv1.CapacityTypeSpot)
			if o.Available != want {
				t.Errorf("%s %s/%s available %v, want %v", it.Name, o.Zone, o.CapacityType, o.Available, want)
			}
		}
		if it.Name != "m5.large" && it != its[i] {
			t.Errorf("%s was copied though no offering of it changed", it.Name)
		}
	}
	if again, _ := c.GetInstanceTypes(ctx, pool("default")); !slices.Equal(again, faulty) {
		t.Error("repeated GetInstanceTypes without changes returned new instance types")
	}
	if m5 := its[slices.IndexFunc(its, func(it *cloudprovider.InstanceType) bool { return it.Name == "m5.large" })]; len(m5.Offerings.Available()) != len(m5.Offerings) {
		t.Error("the fault changed instance types handed out before it")
	}
}

func TestIsDrifted(t *testing.T) {
	ctx := context.Background()
	reader := fakeReader(testNodeClass("default"))
	c, _ := newTestCloud(t, Options{NodeClasses: reader})
	claim := mustCreate(t, c, testClaim("claim"))
	if reason, err := c.IsDrifted(ctx, claim); err != nil || reason != "" {
		t.Fatalf("fresh instance: drift %q, %v", reason, err)
	}

	update := func(mutate func(*awsv1.EC2NodeClass)) {
		t.Helper()
		nc := &awsv1.EC2NodeClass{}
		if err := reader.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
			t.Fatal(err)
		}
		mutate(nc)
		if err := reader.Update(ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name   string
		mutate func(*awsv1.EC2NodeClass)
		want   cloudprovider.DriftReason
	}{
		{"tags", func(nc *awsv1.EC2NodeClass) { nc.Spec.Tags = map[string]string{"team": "a"} }, ""},
		{"security groups", func(nc *awsv1.EC2NodeClass) { nc.Spec.SecurityGroupSelectorTerms[0].ID = "sg-123" }, DriftReasonSecurityGroup},
		{"subnets", func(nc *awsv1.EC2NodeClass) { nc.Spec.SubnetSelectorTerms[0].ID = "subnet-123" }, DriftReasonSubnet},
		{"image", func(nc *awsv1.EC2NodeClass) { nc.Spec.AMISelectorTerms[0].Alias = "al2023@v20250201" }, DriftReasonAMI},
	}
	for _, s := range steps {
		update(s.mutate)
		if reason, err := c.IsDrifted(ctx, claim); err != nil || reason != s.want {
			t.Errorf("after changing %s: drift %q, %v; want %q", s.name, reason, err, s.want)
		}
	}
	// A new launch from the changed NodeClass does not drift.
	fresh := mustCreate(t, c, testClaim("fresh", builders.Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")))
	if reason, err := c.IsDrifted(ctx, fresh); err != nil || reason != "" {
		t.Errorf("instance launched after the change: drift %q, %v", reason, err)
	}
	// An image resolved in the NodeClass's status wins over the terms.
	update(func(nc *awsv1.EC2NodeClass) {
		nc.Status.AMIs = []awsv1.AMI{
			{ID: "ami-arm", Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}},
			{ID: fresh.Status.ImageID, Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}},
		}
	})
	if reason, err := c.IsDrifted(ctx, fresh); err != nil || reason != "" {
		t.Errorf("status image equal to the booted one: drift %q, %v", reason, err)
	}

	if err := c.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if _, err := c.IsDrifted(ctx, claim); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("terminated instance: got %v, want NodeClaimNotFoundError", err)
	}
	if err := reader.Delete(ctx, testNodeClass("default")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.IsDrifted(ctx, fresh); !cloudprovider.IsNodeClassNotReadyError(err) {
		t.Errorf("deleted nodeclass: got %v, want NodeClassNotReadyError", err)
	}
}

func TestImageIDs(t *testing.T) {
	amd := map[string]string{corev1.LabelArchStable: "amd64"}
	arm := map[string]string{corev1.LabelArchStable: "arm64"}
	a := testNodeClass("a")
	b := testNodeClass("b") // other name, same terms
	if imageID(a, amd) != imageID(b, amd) {
		t.Error("same terms, different images")
	}
	if imageID(a, amd) == imageID(a, arm) {
		t.Error("one image for both architectures")
	}
	byID := testNodeClass("c", func(nc *awsv1.EC2NodeClass) { nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0abc"}} })
	if got := imageID(byID, arm); got != "ami-0abc" {
		t.Errorf("id term resolved to %s", got)
	}
}

func TestInterrupt(t *testing.T) {
	ctx := context.Background()
	c, clk := newTestCloud(t, Options{})
	spot := mustCreate(t, c, testClaim("spot"))
	onDemand := mustCreate(t, c, testClaim("od", builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)))
	if _, _, ct := offeringOf(spot); ct != karpv1.CapacityTypeSpot {
		t.Fatalf("launched %s, want spot", ct)
	}
	if err := c.Interrupt(onDemand.Status.ProviderID); err == nil {
		t.Error("interrupting an on-demand instance succeeded")
	}
	if err := c.Interrupt("sim:///us-east-1a/i-00000000000000000"); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("interrupting an unknown instance: %v", err)
	}

	clk.Step(time.Minute)
	if err := c.Interrupt(spot.Status.ProviderID); err != nil {
		t.Fatal(err)
	}
	clk.Step(30 * time.Second)
	if err := c.Interrupt(spot.Status.ProviderID); err != nil { // a second notice changes nothing
		t.Fatal(err)
	}
	got := c.Interruptions()
	want := []Interruption{{
		ProviderID: spot.Status.ProviderID, InstanceID: instanceIDOf(t, spot), NodeClaimName: "spot",
		NoticeTime: epoch.Add(time.Minute), TerminationTime: epoch.Add(3 * time.Minute),
	}}
	if !slices.Equal(got, want) {
		t.Fatalf("Interruptions() = %+v, want %+v", got, want)
	}
	clk.SetTime(epoch.Add(3*time.Minute - time.Nanosecond))
	if _, err := c.Get(ctx, spot.Status.ProviderID); err != nil {
		t.Errorf("terminated before the notice ran out: %v", err)
	}
	clk.SetTime(epoch.Add(10 * time.Minute))
	if _, err := c.Get(ctx, spot.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("still there after the notice ran out: %v", err)
	}
	if got := c.Interruptions(); len(got) != 0 {
		t.Errorf("Interruptions() after termination = %+v", got)
	}
	inst := c.Instances()[0]
	if inst.State != InstanceStateTerminated || inst.TerminationReason != TerminationReasonInterrupted || !inst.TerminationTime.Equal(epoch.Add(3*time.Minute)) {
		t.Errorf("interrupted instance: %+v", inst)
	}
}

func TestSpotInterruptionRate(t *testing.T) {
	run := func() []Instance {
		c, clk := newTestCloud(t, Options{Seed: 3, Faults: FaultPlan{SpotInterruptionRate: 1}})
		for i := range 20 {
			mustCreate(t, c, testClaim(fmt.Sprintf("claim-%d", i)))
		}
		mustCreate(t, c, testClaim("od", builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)))
		clk.Step(24 * time.Hour)
		return c.Instances()
	}
	a, b := run(), run()
	terminated := 0
	for i := range a {
		if a[i].TerminationTime != b[i].TerminationTime {
			t.Fatalf("same seed, different interruptions: %v vs %v", a[i].TerminationTime, b[i].TerminationTime)
		}
		if a[i].State == InstanceStateTerminated {
			terminated++
			if a[i].TerminationReason != TerminationReasonInterrupted || a[i].CapacityType != karpv1.CapacityTypeSpot {
				t.Errorf("%+v terminated unexpectedly", a[i])
			}
			if want := a[i].InterruptionTime.Add(DefaultInterruptionNotice); !a[i].TerminationTime.Equal(want) {
				t.Errorf("terminated at %v, want notice + 2m = %v", a[i].TerminationTime, want)
			}
		}
	}
	if terminated != 20 {
		t.Errorf("%d of 20 spot instances interrupted within a day at one per hour", terminated)
	}
}

func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	c, clk := newTestCloud(t, Options{LaunchLatency: time.Second, Faults: FaultPlan{CreateErrorRate: 0.1, LaunchJitter: time.Second}})
	pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pool.Spec.Template.Spec.NodeClassRef = testClaim("x").Spec.NodeClassRef
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 25 {
				// Workers share claim names pairwise: idempotency under races.
				name := fmt.Sprintf("claim-%d-%d", w/2, i)
				claim, err := c.Create(ctx, testClaim(name))
				if err == nil && i%5 == 0 {
					_ = c.Delete(ctx, claim)
				}
				_, _ = c.List(ctx)
				_, _ = c.GetInstanceTypes(ctx, pool)
				if i%7 == 0 {
					c.SetOfferingAvailable("m5.large", "", "", i%2 == 0)
					clk.Step(time.Second)
				}
				_ = c.Interruptions()
				_ = c.Cost()
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for _, inst := range c.Instances() {
		if inst.State != InstanceStateTerminated {
			seen[inst.NodeClaimName]++
		}
	}
	for name, n := range seen {
		if n > 1 {
			t.Errorf("claim %s has %d live instances", name, n)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	reader := fakeReader()
	for name, opts := range map[string]Options{
		"no reader":          {},
		"error rate":         {NodeClasses: reader, Faults: FaultPlan{CreateErrorRate: 1.5}},
		"negative latency":   {NodeClasses: reader, LaunchLatency: -time.Second},
		"duplicate zone":     {NodeClasses: reader, Zones: []string{"a", "a"}},
		"no zones":           {NodeClasses: reader, Zones: []string{}},
		"capacity type":      {NodeClasses: reader, CapacityTypes: []string{"preemptible"}},
		"negative capacity":  {NodeClasses: reader, Capacity: []CapacityLimit{{Count: -1}}},
		"price override":     {NodeClasses: reader, PriceOverrides: []cloudprovider.PriceOverride{{InstanceType: "m5.large"}}},
		"interruption rate":  {NodeClasses: reader, Faults: FaultPlan{SpotInterruptionRate: -1}},
		"negative jitter":    {NodeClasses: reader, Faults: FaultPlan{LaunchJitter: -1}},
		"unavailable ct":     {NodeClasses: reader, Faults: FaultPlan{Unavailable: []cloudprovider.OfferingID{{CapacityType: "x"}}}},
		"negative notice":    {NodeClasses: reader, InterruptionNotice: -time.Second},
		"empty capacitytype": {NodeClasses: reader, CapacityTypes: []string{}},
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("%s: New accepted invalid options", name)
		}
	}
	c, err := New(Options{NodeClasses: reader, Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Zones(); !slices.Equal(got, []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}) {
		t.Errorf("default zones of eu-west-1: %v", got)
	}
	if c.Name() != "sim" {
		t.Errorf("Name() = %q", c.Name())
	}
}

func TestFullCatalog(t *testing.T) {
	// The embedded catalog, the default options: the cheapest 2-vCPU arm64 on-demand instance.
	c, err := New(Options{NodeClasses: fakeReader(testNodeClass("default"))})
	if err != nil {
		t.Fatal(err)
	}
	claim := withRequests(testClaim("claim",
		builders.Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"),
		builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand),
		builders.Requirement(awsv1.LabelInstanceCPU, corev1.NodeSelectorOpIn, "2"),
	), "cpu", "1", "memory", "1Gi")
	got := mustCreate(t, c, claim)

	pool := &karpv1.NodePool{}
	pool.Spec.Template.Spec.NodeClassRef = claim.Spec.NodeClassRef
	its, err := c.GetInstanceTypes(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	bestPrice := -1.0
	for _, it := range its {
		if it.Labels[corev1.LabelArchStable] != "arm64" || it.Labels[awsv1.LabelInstanceCPU] != "2" {
			continue
		}
		if cpu := it.Allocatable()[corev1.ResourceCPU]; cpu.MilliValue() < 1000 {
			continue
		}
		if mem := it.Allocatable()[corev1.ResourceMemory]; mem.Value() < 1<<30 {
			continue
		}
		if o, ok := it.Offerings.WithCapacityTypes(karpv1.CapacityTypeOnDemand).Cheapest(); ok && (bestPrice < 0 || o.Price < bestPrice) {
			bestPrice = o.Price
		}
	}
	inst := c.Instances()[0]
	if inst.Price != bestPrice || inst.CapacityType != karpv1.CapacityTypeOnDemand || got.Labels[corev1.LabelArchStable] != "arm64" {
		t.Errorf("launched %s at $%v, want the cheapest fitting at $%v", inst.InstanceType, inst.Price, bestPrice)
	}
}

// wrongZone is the claim's provider ID with its instance moved to another zone.
func wrongZone(claim *karpv1.NodeClaim) string {
	zone, id, _ := ParseProviderID(claim.Status.ProviderID)
	return ProviderID(allZones[(slices.Index(allZones, zone)+1)%len(allZones)], id)
}

// TestCreateSkipsOfferingsTheSharedCacheMarks: an offering the shared cache marks unavailable
// (the interruption controller marks a reclaimed spot offering for three minutes) is not
// launched, though the cloud itself has capacity for it; once the mark lapses it is again.
func TestCreateSkipsOfferingsTheSharedCacheMarks(t *testing.T) {
	types := []string{"c5.large", "m5.large"}
	claim := func(name string) *karpv1.NodeClaim {
		return testClaim(name, builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, types...))
	}
	clk := clocktesting.NewFakeClock(epoch)
	shared := cloudprovider.NewUnavailableOfferings(clk, 3*time.Minute)
	c, err := New(Options{Clock: clk, NodeClasses: fakeReader(testNodeClass("default")), Catalog: smallCatalog(t), Unavailable: shared})
	if err != nil {
		t.Fatal(err)
	}
	first := cheapest(t, types, allZones, karpv1.CapacityTypeSpot)
	shared.MarkUnavailable(first)
	it, zone, ct := offeringOf(mustCreate(t, c, claim("a")))
	if (cloudprovider.OfferingID{InstanceType: it, Zone: zone, CapacityType: ct}) == first {
		t.Errorf("launched %s, which the shared cache marks unavailable", first)
	}
	clk.Step(4 * time.Minute)
	it, zone, ct = offeringOf(mustCreate(t, c, claim("b")))
	if (cloudprovider.OfferingID{InstanceType: it, Zone: zone, CapacityType: ct}) != first {
		t.Errorf("after the mark lapsed launched %s/%s/%s, want the cheapest %s", it, zone, ct, first)
	}
}
