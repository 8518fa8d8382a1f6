package aws

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

// Placement groups seeded by the tests below.
const (
	pgCluster   = "pg-0a0000000000000a1" // "hpc", cluster
	pgPartition = "pg-0b0000000000000b1" // "kafka", partition, 3 partitions
	pgSpread    = "pg-0c0000000000000c1" // "quorum", spread (rack)
	pgPending   = "pg-0d0000000000000d1" // "later", cluster, still pending
	pgReplaced  = "pg-0e0000000000000e1" // "hpc" again, after the first was deleted
)

// seedPlacementGroups seeds the groups above in the fake.
func (f *fixture) seedPlacementGroups() {
	for _, g := range []fake.PlacementGroup{
		{ID: pgCluster, Name: "hpc", Strategy: fake.StrategyCluster},
		{ID: pgPartition, Name: "kafka", Strategy: fake.StrategyPartition, PartitionCount: 3},
		{ID: pgSpread, Name: "quorum", Strategy: fake.StrategySpread},
		{ID: pgPending, Name: "later", Strategy: fake.StrategyCluster, State: "pending"},
	} {
		f.aws.AddPlacementGroup(g)
	}
}

// placedNodeClass applies seed 004's NodeClass, named name, with the selector, and returns it
// with its NodePool (on-demand only, so launches are deterministic).
func (f *fixture) placedNodeClass(name string, sel *awsv1.PlacementGroupSelector) (*awsv1.EC2NodeClass, *karpv1.NodePool) {
	f.t.Helper()
	ncs, nps := readManifests(f.t, "seed-004-nodepool.yaml")
	nc, np := ncs[0], nps[0]
	nc.Name = name
	nc.Spec.PlacementGroupSelector = sel
	np.Spec.Template.Spec.NodeClassRef.Name = name
	for i, r := range np.Spec.Template.Spec.Requirements {
		if r.Key == karpv1.CapacityTypeLabelKey {
			np.Spec.Template.Spec.Requirements[i].Values = []string{karpv1.CapacityTypeOnDemand}
		}
	}
	return f.applyNodeClass(nc), np
}

// conditionReason is the reason of the NodeClass's condition of the type.
func conditionReason(nc *awsv1.EC2NodeClass, t string) string {
	if c := meta.FindStatusCondition(nc.Status.Conditions, t); c != nil {
		return c.Reason
	}
	return ""
}

// TestPlacementGroupResolves: the selector resolves, by name or by ID, to the NodeClass's
// PlacementGroupReady condition, part of Ready, as the AWS provider v1.15.2's
// PlacementGroupReconciler.Reconcile (pkg/controllers/nodeclass/placementgroup.go) with its
// provider's lookup (pkg/providers/placementgroup/provider.go, DefaultProvider.Get;
// types.go, Query.DescribePlacementGroupsInput: by GroupIds or GroupNames, filtered to
// state=available): True without a selector or with a group found; PlacementGroupNotFound
// when EC2 lists no available group (one still pending); PlacementGroupResolutionFailed when
// EC2 refuses the lookup (a name it does not know: InvalidPlacementGroup.Unknown). Lookups are
// answered from memory for a minute (awscache.DefaultTTL).
func TestPlacementGroupResolves(t *testing.T) {
	f := newFixture(t)
	f.seedPlacementGroups()
	for _, tc := range []struct {
		name       string
		sel        *awsv1.PlacementGroupSelector
		status     metav1.ConditionStatus
		reason     string
		msg        string
		readyFalse bool
	}{
		{"none", nil, metav1.ConditionTrue, awsv1.ConditionTypePlacementGroupReady, "", false},
		{"by-name", &awsv1.PlacementGroupSelector{Name: strp("hpc")}, metav1.ConditionTrue, awsv1.ConditionTypePlacementGroupReady, "", false},
		{"by-id", &awsv1.PlacementGroupSelector{ID: strp(pgPartition)}, metav1.ConditionTrue, awsv1.ConditionTypePlacementGroupReady, "", false},
		{"pending", &awsv1.PlacementGroupSelector{ID: strp(pgPending)}, metav1.ConditionFalse, ReasonPlacementGroupNotFound, `Placement group "` + pgPending + `" not found`, true},
		{"unknown", &awsv1.PlacementGroupSelector{Name: strp("nowhere")}, metav1.ConditionFalse, ReasonPlacementGroupResolutionFailed, "InvalidPlacementGroup.Unknown", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, _ := f.placedNodeClass(tc.name, tc.sel)
			s, msg := condition(nc, awsv1.ConditionTypePlacementGroupReady)
			if s != tc.status || conditionReason(nc, awsv1.ConditionTypePlacementGroupReady) != tc.reason || !strings.Contains(msg, tc.msg) {
				t.Errorf("PlacementGroupReady %s %s %q, want %s %s naming %q", s, conditionReason(nc, awsv1.ConditionTypePlacementGroupReady), msg, tc.status, tc.reason, tc.msg)
			}
			if ready, msg := condition(nc, awsv1.ConditionTypeReady); (ready == metav1.ConditionFalse) != tc.readyFalse {
				t.Errorf("Ready %s %q", ready, msg)
			}
		})
	}
	// The pending group becomes available: within the minute the lookup is remembered, after
	// it the NodeClass resolves.
	f.aws.SetPlacementGroupState(pgPending, "available")
	if nc := f.reconcile("pending"); conditionReason(nc, awsv1.ConditionTypePlacementGroupReady) != ReasonPlacementGroupNotFound {
		t.Errorf("within the minute: %v", nc.Status.Conditions)
	}
	f.clock.Step(placementGroupTTL)
	if nc := f.reconcile("pending"); conditionReason(nc, awsv1.ConditionTypeReady) != awsv1.ConditionTypeReady {
		s, msg := condition(nc, awsv1.ConditionTypeReady)
		t.Errorf("after the minute Ready %s %q", s, msg)
	}
}

// TestPlacementGroupRestrictsInstanceTypes: a NodeClass's instance types are those whose
// DescribeInstanceTypes PlacementGroupInfo lists its group's strategy, as the AWS provider
// v1.15.2's placementGroupCheck (pkg/providers/instancetype/compatibility/compatibility.go,
// IsCompatibleWithNodeClass), and each carries karpenter.k8s.aws/placement-group-id, as its
// offering provider adds it to every type's requirements
// (pkg/providers/instancetype/offering/offering.go, InjectOfferings). Burstable types take no
// cluster group in the fake, as in EC2; a type set to spread only takes no partition group.
func TestPlacementGroupRestrictsInstanceTypes(t *testing.T) {
	f := newFixture(t)
	f.seedPlacementGroups()
	f.aws.SetPlacementStrategies("m5.large", fake.StrategySpread)
	_, plain := f.placedNodeClass("plain", nil)
	_, cluster := f.placedNodeClass("cluster", &awsv1.PlacementGroupSelector{Name: strp("hpc")})
	_, partition := f.placedNodeClass("partition", &awsv1.PlacementGroupSelector{ID: strp(pgPartition)})
	_, spread := f.placedNodeClass("spread", &awsv1.PlacementGroupSelector{Name: strp("quorum")})
	names := func(np *karpv1.NodePool) map[string]*cloudprovider.InstanceType {
		its, err := f.provider.GetInstanceTypes(f.ctx, np)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*cloudprovider.InstanceType{}
		for _, it := range its {
			out[it.Name] = it
		}
		return out
	}
	p, c, pa, s := names(plain), names(cluster), names(partition), names(spread)
	for _, tc := range []struct {
		pool  string
		types map[string]*cloudprovider.InstanceType
		name  string
		want  bool
		id    string
	}{
		{"plain", p, "t3.large", true, ""}, {"plain", p, "m5.large", true, ""},
		{"cluster", c, "t3.large", false, ""}, {"cluster", c, "m5.large", false, ""}, {"cluster", c, "c5.large", true, pgCluster},
		{"partition", pa, "t3.large", true, pgPartition}, {"partition", pa, "m5.large", false, ""},
		{"spread", s, "m5.large", true, pgSpread}, {"spread", s, "t3.large", true, pgSpread},
	} {
		it, ok := tc.types[tc.name]
		if ok != tc.want {
			t.Errorf("%s offers %s: %t, want %t", tc.pool, tc.name, ok, tc.want)
			continue
		}
		if ok && it.Labels[awsv1.LabelPlacementGroupID] != tc.id {
			t.Errorf("%s's %s is labelled placement-group-id %q, want %q", tc.pool, tc.name, it.Labels[awsv1.LabelPlacementGroupID], tc.id)
		}
	}
}

// TestPlacementGroupLaunch: a claim launches into the NodeClass's group: its launch template's
// Placement.GroupId is the group, as the AWS provider v1.15.2's launch templates
// (pkg/providers/launchtemplate/types.go, the placement builder; launchtemplate.go,
// EnsureAll), and the claim is labelled with the group, as its instanceToNodeClaim
// (pkg/cloudprovider/cloudprovider.go). A cluster group holds one zone: the fake refuses a
// launch into another zone, as EC2 does, so a claim that allows every zone lands in the zone
// of the group's first instance, and one that allows another zone only fails; upstream pins no
// zone itself either (its offerings are not restricted by strategy).
func TestPlacementGroupLaunch(t *testing.T) {
	f := newFixture(t)
	f.seedPlacementGroups()
	_, np := f.placedNodeClass("cluster", &awsv1.PlacementGroupSelector{Name: strp("hpc")})
	first, err := f.provider.Create(f.ctx, claimFor(np, "first", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large"),
		req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2b")))
	if err != nil {
		t.Fatal(err)
	}
	if first.Labels[awsv1.LabelPlacementGroupID] != pgCluster || first.Labels[corev1.LabelTopologyZone] != "us-west-2b" {
		t.Errorf("labels %v, want placement-group-id %s in us-west-2b", first.Labels, pgCluster)
	}
	if _, ok := first.Labels[awsv1.LabelPlacementGroupPartition]; ok {
		t.Errorf("a cluster group's claim is labelled with a partition: %v", first.Labels)
	}
	fl := f.aws.Fleets()
	if lt := templateNamed(t, f.aws, fl[0].LaunchTemplateName); lt.PlacementGroupID != pgCluster || lt.PlacementGroupName != "" || lt.PartitionNumber != 0 {
		t.Errorf("launch template placement %q %q %d, want group id %s", lt.PlacementGroupID, lt.PlacementGroupName, lt.PartitionNumber, pgCluster)
	}
	id, _ := instanceIDOf(first.Status.ProviderID)
	if inst, _ := f.aws.Instance(id); inst.PlacementGroupID != pgCluster || inst.PlacementGroupName != "hpc" {
		t.Errorf("instance placed in %q %q", inst.PlacementGroupID, inst.PlacementGroupName)
	}
	if got, err := f.provider.Get(f.ctx, first.Status.ProviderID); err != nil || got.Labels[awsv1.LabelPlacementGroupID] != pgCluster {
		t.Errorf("Get labels %v (%v), want placement-group-id %s", got.Labels, err, pgCluster)
	}

	anywhere, err := f.provider.Create(f.ctx, claimFor(np, "anywhere", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large")))
	if err != nil {
		t.Fatal(err)
	}
	if z := anywhere.Labels[corev1.LabelTopologyZone]; z != "us-west-2b" {
		t.Errorf("a claim allowing every zone launched in %s, want the group's us-west-2b", z)
	}
	if _, err := f.provider.Create(f.ctx, claimFor(np, "elsewhere", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large"),
		req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2a"))); err == nil || !strings.Contains(err.Error(), "cluster placement group") {
		t.Errorf("a launch into another zone of the cluster group: %v, want EC2's refusal", err)
	}
}

// TestPlacementGroupPartitionLabel: in a partition group EC2 picks the partition (the
// template names no PartitionNumber, as the AWS provider v1.15.2's EnsureAll sets one only for
// a claim that targets a partition), and the claim is labelled
// karpenter.k8s.aws/placement-group-partition with it, as its PlacementGroupRegistrationHook
// (pkg/cloudprovider/registrationhooks/placementgrouphook.go, Registered) fills the label from
// DescribeInstances; Get and List label it from the instance's placement.
func TestPlacementGroupPartitionLabel(t *testing.T) {
	f := newFixture(t)
	f.seedPlacementGroups()
	_, np := f.placedNodeClass("partition", &awsv1.PlacementGroupSelector{Name: strp("kafka")})
	seen := map[string]bool{}
	for _, name := range []string{"broker-0", "broker-1", "broker-2"} {
		claim, err := f.provider.Create(f.ctx, claimFor(np, name, nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")))
		if err != nil {
			t.Fatal(err)
		}
		part := claim.Labels[awsv1.LabelPlacementGroupPartition]
		if claim.Labels[awsv1.LabelPlacementGroupID] != pgPartition || part == "" {
			t.Fatalf("labels %v, want placement-group-id %s and a partition", claim.Labels, pgPartition)
		}
		seen[part] = true
		got, err := f.provider.Get(f.ctx, claim.Status.ProviderID)
		if err != nil || got.Labels[awsv1.LabelPlacementGroupPartition] != part {
			t.Errorf("Get labels %v (%v), want partition %s", got.Labels, err, part)
		}
	}
	if len(seen) != 3 {
		t.Errorf("partitions %v, want EC2's 1, 2 and 3 (the fake fills the emptiest)", seen)
	}
	for _, lt := range f.launchTemplates() {
		if lt.PlacementGroupID != pgPartition || lt.PartitionNumber != 0 {
			t.Errorf("launch template placement %q %d, want %s and no partition", lt.PlacementGroupID, lt.PartitionNumber, pgPartition)
		}
	}
}

// TestPlacementGroupDrift: a claim drifts with PlacementGroupDrift when its placement group
// label is not the group its NodeClass resolves to now, as the AWS provider v1.15.2's
// isPlacementGroupDrifted (pkg/cloudprovider/drift.go): here the group named by the selector
// was deleted and made again, so the same name is another group. (A changed selector drifts
// first by the NodeClass hash, which includes it: TestNodeClassHashKeepsExistingHashes.)
func TestPlacementGroupDrift(t *testing.T) {
	f := newFixture(t)
	f.seedPlacementGroups()
	_, np := f.placedNodeClass("cluster", &awsv1.PlacementGroupSelector{Name: strp("hpc")})
	launched, err := f.provider.Create(f.ctx, claimFor(np, "drift", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large")))
	if err != nil {
		t.Fatal(err)
	}
	if reason, err := f.provider.IsDrifted(f.ctx, launched); err != nil || reason != "" {
		t.Fatalf("drift before any change: %q %v", reason, err)
	}
	f.aws.SetPlacementGroupState(pgCluster, "deleted")
	f.aws.AddPlacementGroup(fake.PlacementGroup{ID: pgReplaced, Name: "hpc", Strategy: fake.StrategyCluster})
	f.clock.Step(placementGroupTTL + time.Second)
	f.reconcile("cluster")
	if reason, err := f.provider.IsDrifted(f.ctx, launched); err != nil || reason != cloudprovider.DriftReasonPlacementGroup {
		t.Errorf("drift %q %v, want %s", reason, err, cloudprovider.DriftReasonPlacementGroup)
	}
	// A claim launched without a group, of a NodeClass that now has one, drifts too.
	plain := launched.DeepCopy()
	delete(plain.Labels, awsv1.LabelPlacementGroupID)
	if reason, _ := f.provider.IsDrifted(f.ctx, plain); reason != cloudprovider.DriftReasonPlacementGroup {
		t.Errorf("a claim without a group: drift %q, want %s", reason, cloudprovider.DriftReasonPlacementGroup)
	}
}

// TestSpreadPlacementGroupLimit: a rack spread group holds seven running instances per zone;
// EC2 refuses the eighth with InsufficientInstanceCapacity and its spread limit message, which
// the AWS provider v1.15.2 tells apart (pkg/errors/errors.go,
// IsSpreadPlacementGroupLimitError). The fleet's other zones then take the launch, and the
// offering is not marked out of capacity for NodeClasses outside the group.
func TestSpreadPlacementGroupLimit(t *testing.T) {
	f := newFixture(t)
	f.seedPlacementGroups()
	_, np := f.placedNodeClass("spread", &awsv1.PlacementGroupSelector{Name: strp("quorum")})
	inZone := req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2a")
	m5 := req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")
	for i := range 7 {
		if _, err := f.provider.Create(f.ctx, claimFor(np, "member-"+strings.Repeat("x", i+1), nil, m5, inZone)); err != nil {
			t.Fatalf("member %d: %v", i+1, err)
		}
	}
	if _, err := f.provider.Create(f.ctx, claimFor(np, "eighth", nil, m5, inZone)); err == nil || !strings.Contains(err.Error(), "spread placement group") {
		t.Errorf("an eighth instance in us-west-2a: %v, want EC2's spread limit", err)
	}
	if f.provider.Unavailable().IsUnavailable(cloudprovider.OfferingID{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: karpv1.CapacityTypeOnDemand}) {
		t.Errorf("the spread limit marked m5.large in us-west-2a out of capacity for every NodeClass")
	}
	other, err := f.provider.Create(f.ctx, claimFor(np, "ninth", nil, m5))
	if err != nil {
		t.Fatal(err)
	}
	if z := other.Labels[corev1.LabelTopologyZone]; z == "us-west-2a" {
		t.Errorf("a claim allowing every zone launched in the full %s", z)
	}
}

// typeNamed is the NodePool's instance type of the name, failing the test without it.
func (f *fixture) typeNamed(np *karpv1.NodePool, name string) *cloudprovider.InstanceType {
	f.t.Helper()
	its, err := f.provider.GetInstanceTypes(f.ctx, np)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, it := range its {
		if it.Name == name {
			return it
		}
	}
	f.t.Fatalf("nodepool %s offers no %s", np.Name, name)
	return nil
}

// TestPartitionOfferings: a partition group's partitions are offerings, as the AWS provider
// v1.15.2's PlacementGroupResolver expands each offering into one per partition 1 to the
// group's PartitionCount (pkg/providers/instancetype/offering/placement_group_resolver.go,
// ResolveOfferings; the count read from DescribePlacementGroups), each labelling its node
// karpenter.k8s.aws/placement-group-partition; so requirements, affinity and topology spread
// on that label find new nodes. Every offering of a group's NodeClass is scoped to the group;
// a cluster group has no partitions, and a NodeClass without a group is untouched.
func TestPartitionOfferings(t *testing.T) {
	f := newFixture(t)
	f.seedPlacementGroups()
	_, plain := f.placedNodeClass("plain", nil)
	_, cluster := f.placedNodeClass("cluster", &awsv1.PlacementGroupSelector{Name: strp("hpc")})
	_, partition := f.placedNodeClass("partition", &awsv1.PlacementGroupSelector{ID: strp(pgPartition)})
	base := f.typeNamed(plain, "m5.large")
	for _, o := range base.Offerings {
		if o.PlacementGroupID != "" || o.PlacementPartition != 0 {
			t.Errorf("a NodeClass without a group has offering %s", o.ID("m5.large"))
		}
	}
	for _, o := range f.typeNamed(cluster, "c5.large").Offerings {
		if o.PlacementGroupID != pgCluster || o.PlacementPartition != 0 {
			t.Errorf("a cluster group's offering %s", o.ID("c5.large"))
		}
	}
	it := f.typeNamed(partition, "m5.large")
	if len(it.Offerings) != 3*len(base.Offerings) {
		t.Fatalf("%d offerings in the partition group, want 3 × %d", len(it.Offerings), len(base.Offerings))
	}
	for i, o := range it.Offerings {
		want := base.Offerings[i/3]
		want.PlacementGroupID, want.PlacementPartition = pgPartition, int32(i%3+1)
		if o != want {
			t.Errorf("offering %d = %+v, want %+v", i, o, want)
		}
		if got := it.NodeLabels(o)[awsv1.LabelPlacementGroupPartition]; got != strconv.Itoa(i%3+1) {
			t.Errorf("offering %s labels its node partition %q", o.ID(it.Name), got)
		}
	}
}

// TestPartitionTargetedLaunch: a claim that requires partitions launches into the lowest of
// them, as the AWS provider v1.15.2 (pkg/providers/launchtemplate/launchtemplate.go, EnsureAll:
// the lowest partition of the claim's requirement; types.go, buildPlacement:
// Placement.PartitionNumber): the launch template names it, the fake puts the instance there
// (EC2's own pick would be partition 1, the emptiest) and the claim is labelled with it, as
// upstream's instanceToNodeClaim labels the targeted partition
// (pkg/cloudprovider/cloudprovider.go). A claim requiring a partition the group does not have
// finds no offering.
func TestPartitionTargetedLaunch(t *testing.T) {
	f := newFixture(t)
	f.seedPlacementGroups()
	_, np := f.placedNodeClass("partition", &awsv1.PlacementGroupSelector{Name: strp("kafka")})
	m5 := req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")
	for _, tc := range []struct {
		name string
		reqs karpv1.NodeSelectorRequirementWithMinValues
		want int
	}{
		{"in-2", req(awsv1.LabelPlacementGroupPartition, corev1.NodeSelectorOpIn, "2"), 2},
		{"in-3-2", req(awsv1.LabelPlacementGroupPartition, corev1.NodeSelectorOpIn, "3", "2"), 2},
		{"notin-1-2", req(awsv1.LabelPlacementGroupPartition, corev1.NodeSelectorOpNotIn, "1", "2"), 3},
	} {
		claim, err := f.provider.Create(f.ctx, claimFor(np, tc.name, nil, m5, tc.reqs))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := strconv.Itoa(tc.want)
		if claim.Labels[awsv1.LabelPlacementGroupPartition] != want || claim.Labels[awsv1.LabelPlacementGroupID] != pgPartition {
			t.Errorf("%s: labels %v, want partition %s of %s", tc.name, claim.Labels, want, pgPartition)
		}
		id, _ := instanceIDOf(claim.Status.ProviderID)
		inst, _ := f.aws.Instance(id)
		if inst.PlacementGroupID != pgPartition || inst.PartitionNumber != tc.want {
			t.Errorf("%s: instance in %q partition %d, want %d", tc.name, inst.PlacementGroupID, inst.PartitionNumber, tc.want)
		}
		if lt := templateNamed(t, f.aws, inst.LaunchTemplateName); lt.PlacementGroupID != pgPartition || lt.PartitionNumber != tc.want {
			t.Errorf("%s: launch template placement %q %d, want partition %d", tc.name, lt.PlacementGroupID, lt.PartitionNumber, tc.want)
		}
		if got, err := f.provider.Get(f.ctx, claim.Status.ProviderID); err != nil || got.Labels[awsv1.LabelPlacementGroupPartition] != want {
			t.Errorf("%s: Get labels %v (%v), want partition %s", tc.name, got.Labels, err, want)
		}
	}
	_, err := f.provider.Create(f.ctx, claimFor(np, "in-4", nil, m5, req(awsv1.LabelPlacementGroupPartition, corev1.NodeSelectorOpIn, "4")))
	if err == nil || !cloudprovider.IsTerminalCreateError(err) {
		t.Errorf("a claim requiring partition 4 of 3: %v, want no compatible offering", err)
	}
}

// TestPartitionOutOfCapacity: a targeted partition that runs out of capacity is marked
// unavailable for that partition of the group only, as the AWS provider v1.15.2 scopes the mark
// (pkg/providers/instance/instance.go, launchInstance: awscache.WithPlacementGroup and
// WithPlacementGroupPartition): the group's other partitions, and the NodeClass without the
// group, keep the offering; a claim allowing partitions 1 and 2 then targets 2. A claim
// targeting no partition is marked for the whole group.
func TestPartitionOutOfCapacity(t *testing.T) {
	f := newFixture(t)
	f.seedPlacementGroups()
	_, plain := f.placedNodeClass("plain", nil)
	_, np := f.placedNodeClass("partition", &awsv1.PlacementGroupSelector{Name: strp("kafka")})
	m5 := req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")
	zoneA := req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2a")
	f.aws.SetPartitionInsufficientCapacity(pgPartition, 1, true)
	_, err := f.provider.Create(f.ctx, claimFor(np, "in-1", nil, m5, zoneA, req(awsv1.LabelPlacementGroupPartition, corev1.NodeSelectorOpIn, "1")))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("partition 1 out of capacity: %v", err)
	}
	id := func(partition int32) cloudprovider.OfferingID {
		return cloudprovider.OfferingID{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: karpv1.CapacityTypeOnDemand, PlacementGroupID: pgPartition, PlacementPartition: partition}
	}
	if got := cloudprovider.InsufficientCapacityOfferings(err); !slices.Contains(got, id(1)) {
		t.Errorf("offerings out of capacity %v, want %s", got, id(1))
	}
	available := map[int32]bool{}
	for _, o := range f.typeNamed(np, "m5.large").Offerings {
		if o.Zone == "us-west-2a" && o.CapacityType == karpv1.CapacityTypeOnDemand {
			available[o.PlacementPartition] = o.Available
		}
	}
	if !reflect.DeepEqual(available, map[int32]bool{1: false, 2: true, 3: true}) {
		t.Errorf("m5.large in us-west-2a, on-demand, by partition: available %v, want only 1 out", available)
	}
	for _, o := range f.typeNamed(plain, "m5.large").Offerings {
		if o.Zone == "us-west-2a" && o.CapacityType == karpv1.CapacityTypeOnDemand && !o.Available {
			t.Errorf("the NodeClass without the group lost %s", o.ID("m5.large"))
		}
	}
	claim, err := f.provider.Create(f.ctx, claimFor(np, "in-1-2", nil, m5, zoneA, req(awsv1.LabelPlacementGroupPartition, corev1.NodeSelectorOpIn, "1", "2")))
	if err != nil || claim.Labels[awsv1.LabelPlacementGroupPartition] != "2" {
		t.Fatalf("a claim allowing partitions 1 and 2: %v, want partition 2", err)
	}

	// Every partition out: a claim that targets none fails for the group as a whole.
	f.aws.SetPartitionInsufficientCapacity(pgPartition, 2, true)
	f.aws.SetPartitionInsufficientCapacity(pgPartition, 3, true)
	_, err = f.provider.Create(f.ctx, claimFor(np, "anywhere", nil, m5, zoneA))
	if got := cloudprovider.InsufficientCapacityOfferings(err); !slices.Contains(got, id(0)) {
		t.Errorf("untargeted launch out of capacity: %v, want %s", err, id(0))
	}
	if !f.provider.Unavailable().IsUnavailable(id(3)) || f.provider.Unavailable().IsUnavailable(cloudprovider.OfferingID{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: karpv1.CapacityTypeOnDemand}) {
		t.Errorf("a mark of the group must reach its partitions and not the offering outside it")
	}
}
