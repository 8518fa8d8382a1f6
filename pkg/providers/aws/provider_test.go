package aws

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

// seed004 applies and resolves the seed 004 EC2NodeClass and returns it with its NodePool.
func (f *fixture) seed004() (*awsv1.EC2NodeClass, *karpv1.NodePool) {
	f.t.Helper()
	ncs, nps := readManifests(f.t, "seed-004-nodepool.yaml")
	if len(ncs) != 1 || len(nps) != 1 {
		f.t.Fatalf("seed 004: %d nodeclasses, %d nodepools", len(ncs), len(nps))
	}
	return f.applyNodeClass(ncs[0]), nps[0]
}

// claimFor is a NodeClaim of the NodePool with extra requirements and requests.
func claimFor(np *karpv1.NodePool, name string, requests corev1.ResourceList, extra ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	reqs := append(slices.Clone(np.Spec.Template.Spec.Requirements), req(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, np.Name))
	reqs = append(reqs, extra...)
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: np.Name, "team": "web"}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: reqs,
			Resources:    karpv1.ResourceRequirements{Requests: requests},
			NodeClassRef: np.Spec.Template.Spec.NodeClassRef,
			Taints:       []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

// TestSeed004NodeClassResolves resolves the eksctl reference EC2NodeClass: the tagged subnets
// (most free addresses first), the tagged security group, the newest AL2023 image per
// architecture through the SSM alias, and an instance profile created for the role.
func TestSeed004NodeClassResolves(t *testing.T) {
	f := newFixture(t)
	nc, _ := f.seed004()
	if s, msg := condition(nc, awsv1.ConditionTypeReady); s != metav1.ConditionTrue {
		t.Fatalf("Ready %s: %s", s, msg)
	}
	var subnets []string
	for _, s := range nc.Status.Subnets {
		subnets = append(subnets, s.ID+"@"+s.Zone)
	}
	if want := []string{"subnet-0a000000000000000@us-west-2a", "subnet-0b000000000000000@us-west-2b", "subnet-0c000000000000000@us-west-2c"}; !slices.Equal(subnets, want) {
		t.Errorf("subnets %v, want %v", subnets, want)
	}
	if len(nc.Status.SecurityGroups) != 1 || nc.Status.SecurityGroups[0].ID != "sg-0a00000000000000a" {
		t.Errorf("security groups %+v", nc.Status.SecurityGroups)
	}
	amis := map[string]string{}
	for _, a := range nc.Status.AMIs {
		amis[amiKey(a)] = a.ID
	}
	if amis["amd64"] != "ami-0a2023a00d6400001" || amis["arm64"] != "ami-0a2023a00a6400001" {
		t.Errorf("amis %v", amis)
	}
	profiles := f.aws.InstanceProfiles()
	if len(profiles) != 1 || nc.Status.InstanceProfile != profiles[0].Name || len(profiles[0].Roles) != 1 || profiles[0].Roles[0].Name != testRole {
		t.Fatalf("instance profiles %+v, status %q", profiles, nc.Status.InstanceProfile)
	}
	if profiles[0].Tags["kubernetes.io/cluster/"+testCluster] != "owned" || profiles[0].Tags[TagNodeClass] != "default" {
		t.Errorf("instance profile tags %v", profiles[0].Tags)
	}
	// Resolving again changes nothing and creates nothing.
	again := f.reconcile(nc.Name)
	if again.ResourceVersion != nc.ResourceVersion || len(f.aws.InstanceProfiles()) != 1 {
		t.Errorf("second reconcile rewrote the status or created another profile")
	}
}

// TestNodeClassNotReady covers selectors that resolve to nothing usable: each makes the
// NodeClass not ready with a message naming the field, and launches refuse it.
func TestNodeClassNotReady(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name      string
		mutate    func(*awsv1.EC2NodeClass)
		condition string
		message   string
	}{
		{"missing image", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMIFamily = strp("AL2023")
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0d0e5000e01570000"}}
		}, awsv1.ConditionTypeAMIsReady, "not found"},
		{"unpublished alias version", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@v20990101"}}
		}, awsv1.ConditionTypeAMIsReady, "spec.amiSelectorTerms[0].alias al2023@v20990101"},
		{"no subnet", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "other-cluster"}}}
		}, awsv1.ConditionTypeSubnetsReady, "spec.subnetSelectorTerms[0] (tag karpenter.sh/discovery=other-cluster) matches no subnet"},
		{"no role", func(nc *awsv1.EC2NodeClass) { nc.Spec.Role = "NoSuchRole" }, awsv1.ConditionTypeInstanceProfileReady, `spec.role "NoSuchRole" does not exist`},
		{"no instance profile", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Role = ""
			nc.Spec.InstanceProfile = strp("missing-profile")
		}, awsv1.ConditionTypeInstanceProfileReady, `spec.instanceProfile "missing-profile" does not exist`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ncs, _ := readManifests(t, "seed-004-nodepool.yaml")
			nc := ncs[0]
			nc.Name = strings.ReplaceAll(tc.name, " ", "-")
			tc.mutate(nc)
			got := f.applyNodeClass(nc)
			s, msg := condition(got, tc.condition)
			if s != metav1.ConditionFalse || !strings.Contains(msg, tc.message) {
				t.Errorf("%s = %s %q, want False containing %q", tc.condition, s, msg, tc.message)
			}
			if s, _ := condition(got, awsv1.ConditionTypeReady); s != metav1.ConditionFalse {
				t.Errorf("Ready = %s", s)
			}
			_, err := f.provider.Create(f.ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "x"},
				Spec: karpv1.NodeClaimSpec{NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nc.Name}}})
			if !cloudprovider.IsNodeClassNotReadyError(err) {
				t.Errorf("Create: %v, want NodeClassNotReady", err)
			}
		})
	}
	if n := f.aws.Calls("CreateFleet"); n != 0 {
		t.Errorf("%d fleets launched from unready NodeClasses", n)
	}
}

func strp(s string) *string { return &s }

// TestCreateLaunchesThroughFleet launches a claim of the seed 004 NodePool: one instant
// on-demand fleet with lowest-price allocation over every compatible type × zone, from a launch
// template holding the image, the AL2023 NodeConfig and IMDSv2, with the claim's tags.
func TestCreateLaunchesThroughFleet(t *testing.T) {
	f := newFixture(t)
	nc, np := f.seed004()
	checked := f.aws.Calls("CreateLaunchTemplate") // the NodeClass's launch check's template
	claim := claimFor(np, "general-purpose-abcde", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("6Gi")})
	launched, err := f.provider.Create(f.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	fleets := f.aws.Fleets()
	if len(fleets) != 1 {
		t.Fatalf("%d fleets", len(fleets))
	}
	fl := fleets[0]
	if fl.Type != "instant" || fl.CapacityType != "on-demand" || fl.OnDemandAllocationStrategy != "lowest-price" || fl.TotalTargetCapacity != 1 {
		t.Errorf("fleet %+v", fl)
	}
	types := map[string]bool{}
	zones := map[string]bool{}
	var overrides []fake.FleetOverride
	for _, c := range fl.LaunchTemplateConfigs {
		overrides = append(overrides, c.Overrides...)
	}
	for _, o := range overrides {
		types[o.InstanceType] = true
		zones[o.AvailabilityZone] = true
		if !strings.HasPrefix(o.SubnetID, "subnet-0") || o.SubnetID == "subnet-0f000000000000000" {
			t.Errorf("override in subnet %s", o.SubnetID)
		}
		cat := o.InstanceType[:1]
		if cat != "c" && cat != "m" && cat != "r" {
			t.Errorf("override %s is not c, m or r", o.InstanceType)
		}
	}
	if len(types) != maxFleetInstanceTypes || len(zones) != 3 || len(overrides) != 3*maxFleetInstanceTypes {
		t.Errorf("%d overrides of %d types in %d zones", len(overrides), len(types), len(zones))
	}
	// The instance and what the claim says of it.
	insts := f.aws.Instances()
	if len(insts) != 1 {
		t.Fatalf("%d instances", len(insts))
	}
	in := insts[0]
	if launched.Status.ProviderID != "aws:///"+in.Zone+"/"+in.ID || launched.Labels[corev1.LabelInstanceTypeStable] != in.Type ||
		launched.Labels[karpv1.CapacityTypeLabelKey] != "on-demand" || launched.Status.ImageID != "ami-0a2023a00d6400001" || in.ImageID != "ami-0a2023a00d6400001" {
		t.Errorf("claim %v %s %s; instance %+v", launched.Labels, launched.Status.ProviderID, launched.Status.ImageID, in)
	}
	for k, v := range map[string]string{"karpenter.sh/nodepool": "general-purpose",
		"karpenter.k8s.aws/ec2nodeclass": "default", "kubernetes.io/cluster/" + testCluster: "owned"} {
		if in.Tags[k] != v {
			t.Errorf("instance tag %s = %q, want %q", k, in.Tags[k], v)
		}
	}
	// As in Karpenter, no tag names the claim at launch (the tagger adds it), so that like
	// launches make identical fleet requests, which merge.
	if v, ok := in.Tags[TagNodeClaim]; ok {
		t.Errorf("instance launched with %s=%s", TagNodeClaim, v)
	}
	if in.InstanceProfile != nc.Status.InstanceProfile || !slices.Equal(in.SecurityGroupIDs, []string{"sg-0a00000000000000a"}) {
		t.Errorf("instance profile %q, groups %v", in.InstanceProfile, in.SecurityGroupIDs)
	}
	lts := f.launchTemplates()
	if len(lts) == 0 {
		t.Fatal("no launch template")
	}
	lt := lts[0]
	if !strings.HasPrefix(lt.Name, LaunchTemplatePrefix) || lt.ImageID != "ami-0a2023a00d6400001" || lt.MetadataOptions == nil || lt.MetadataOptions.HTTPTokens != "required" || lt.MetadataOptions.HopLimit != 1 {
		t.Errorf("launch template %+v", lt)
	}
	for _, want := range []string{"application/node.eks.aws", "apiVersion: node.eks.aws/v1alpha1", "name: " + testCluster, "apiServerEndpoint: " + testEndpoint,
		"cidr: 10.100.0.0/16", "karpenter.sh/nodepool=general-purpose", "team=web",
		// Every family but Custom, as v1.15.2's InjectDoNotSyncTaintsLabel: the kubelet registers the taints.
		"karpenter.sh/do-not-sync-taints=true", "key: dedicated", "effect: NoSchedule",
		"key: karpenter.sh/unregistered", "effect: NoExecute", base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----"))[:20]} {
		if !strings.Contains(lt.UserData, want) {
			t.Errorf("user data lacks %q:\n%s", want, lt.UserData)
		}
	}
	if len(lt.BlockDeviceMappings) != 1 || lt.BlockDeviceMappings[0].DeviceName != "/dev/xvda" || *lt.BlockDeviceMappings[0].EBS.VolumeSize != 20 {
		t.Errorf("block devices %+v", lt.BlockDeviceMappings)
	}
	// A second claim with the same settings reuses the template.
	if _, err := f.provider.Create(f.ctx, claimFor(np, "general-purpose-fghij", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")})); err != nil {
		t.Fatal(err)
	}
	if n := f.aws.Calls("CreateLaunchTemplate") - checked; n != len(lts) {
		t.Errorf("CreateLaunchTemplate called %d times for %d templates", n, len(lts))
	}
	// Get, List and Delete see the instance by its tags and provider ID.
	got, err := f.provider.Get(f.ctx, launched.Status.ProviderID)
	if err != nil || got.Status.ProviderID != launched.Status.ProviderID || got.Labels[karpv1.NodePoolLabelKey] != "general-purpose" {
		t.Fatalf("Get: %v %+v", err, got)
	}
	list, err := f.provider.List(f.ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("List: %v, %d instances", err, len(list))
	}
	if err := f.provider.Delete(f.ctx, launched); err != nil {
		t.Fatal(err)
	}
	if err := f.provider.Delete(f.ctx, launched); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("second Delete: %v, want NodeClaimNotFound", err)
	}
	if _, err := f.provider.Get(f.ctx, launched.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get after Delete: %v", err)
	}
}

// TestSpotICEFallsBackToOnDemand: with spot out of capacity everywhere for the claim's type,
// the spot fleet fails, its offerings are marked unavailable for the scheduler, and an
// on-demand fleet launches at once (seed 002's fallback).
func TestSpotICEFallsBackToOnDemand(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	for _, z := range []string{"us-west-2a", "us-west-2b", "us-west-2c"} {
		f.aws.SetInsufficientCapacity("m5.xlarge", z, "spot", true)
	}
	np.Spec.Template.Spec.Requirements = slices.DeleteFunc(np.Spec.Template.Spec.Requirements, func(r karpv1.NodeSelectorRequirementWithMinValues) bool {
		return r.Key == karpv1.CapacityTypeLabelKey
	})
	claim := claimFor(np, "general-purpose-spot", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge"),
		req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand"))
	launched, err := f.provider.Create(f.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if ct := launched.Labels[karpv1.CapacityTypeLabelKey]; ct != "on-demand" {
		t.Errorf("launched %s", ct)
	}
	fleets := f.aws.Fleets()
	if len(fleets) != 2 || fleets[0].CapacityType != "spot" || fleets[0].SpotAllocationStrategy != "price-capacity-optimized" || fleets[1].CapacityType != "on-demand" {
		t.Fatalf("fleets %+v", fleets)
	}
	for _, z := range []string{"us-west-2a", "us-west-2b", "us-west-2c"} {
		if !f.provider.Unavailable().IsUnavailable(cloudprovider.OfferingID{InstanceType: "m5.xlarge", Zone: z, CapacityType: "spot"}) {
			t.Errorf("spot m5.xlarge in %s not marked unavailable", z)
		}
	}
	// The scheduler now sees those offerings unavailable.
	its, err := f.provider.GetInstanceTypes(f.ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if it.Name != "m5.xlarge" {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == "spot" && o.Available {
				t.Errorf("offering %+v still available", o)
			}
		}
	}
	// With on-demand out too, Create reports insufficient capacity naming the offerings.
	for _, z := range []string{"us-west-2a", "us-west-2b", "us-west-2c"} {
		f.aws.SetInsufficientCapacity("m5.xlarge", z, "on-demand", true)
	}
	_, err = f.provider.Create(f.ctx, claimFor(np, "general-purpose-none", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge")))
	if !cloudprovider.IsInsufficientCapacityError(err) || len(cloudprovider.InsufficientCapacityOfferings(err)) != 6 {
		t.Errorf("Create: %v (%d offerings)", err, len(cloudprovider.InsufficientCapacityOfferings(err)))
	}
}

// TestThrottlingIsRetried: RequestLimitExceeded answers are retried with backoff by the
// provider's retryer, and the launch succeeds.
func TestThrottlingIsRetried(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	f.aws.Throttle("CreateFleet", 3)
	f.aws.Throttle("DescribeInstances", 2)
	before := f.aws.Calls("CreateFleet") // the NodeClass's launch check
	launched, err := f.provider.Create(f.ctx, claimFor(np, "general-purpose-throttled", nil))
	if err != nil {
		t.Fatal(err)
	}
	if n := f.aws.Calls("CreateFleet") - before; n != 4 {
		t.Errorf("CreateFleet called %d times, want 4 (3 throttled)", n)
	}
	if _, err := f.provider.Get(f.ctx, launched.Status.ProviderID); err != nil {
		t.Fatal(err)
	}
	if n := f.aws.Calls("DescribeInstances"); n != 3 {
		t.Errorf("DescribeInstances called %d times, want 3", n)
	}
	// More throttling than the retryer's attempts surfaces as a retryable error.
	f.aws.Throttle("CreateFleet", MaxAttempts)
	if _, err := f.provider.Create(f.ctx, claimFor(np, "general-purpose-gives-up", nil)); err == nil || cloudprovider.IsInsufficientCapacityError(err) || !cloudprovider.IsRetryable(err) {
		t.Errorf("Create: %v, want a retryable error", err)
	}
}

// TestCustomFamilyPassesUserData launches from the kOps-generated EC2NodeClass (seed 001):
// amiFamily Custom gets exactly the nodeup script, its block devices and instance profile, and
// no EKS lookup.
func TestCustomFamilyPassesUserData(t *testing.T) {
	f := newFixture(t)
	ncs, nps := readManifests(t, "seed-001-kops-generated.yaml")
	f.aws.AddSubnet(fakeSubnet("subnet-0e000000000000001", "us-west-2a", map[string]string{"KubernetesCluster": "my-cluster.example.com", "kops.k8s.io/instance-group/nodes": "true"}))
	f.aws.AddSecurityGroup(fakeGroup("sg-0c00000000000000c", "nodes.my-cluster.example.com", map[string]string{"KubernetesCluster": "my-cluster.example.com", "Name": "nodes.my-cluster.example.com"}))
	f.aws.AddSecurityGroup(fakeGroup("sg-0123456789abcdef0", "extra", nil))
	f.aws.AddInstanceProfile("nodes.my-cluster.example.com", "nodes.my-cluster.example.com")
	nc := f.applyNodeClass(ncs[0])
	if s, msg := condition(nc, awsv1.ConditionTypeReady); s != metav1.ConditionTrue {
		t.Fatalf("Ready %s: %s", s, msg)
	}
	if len(nc.Status.SecurityGroups) != 2 || nc.Status.AMIs[0].ID != "ami-0ab0124040d640000" || nc.Status.InstanceProfile != "nodes.my-cluster.example.com" {
		t.Errorf("status %+v", nc.Status)
	}
	np := nps[0]
	if _, err := f.provider.Create(f.ctx, claimFor(np, "nodes-abcde", nil)); err != nil {
		t.Fatal(err)
	}
	lt := f.launchTemplates()[0]
	if lt.UserData != *ncs[0].Spec.UserData {
		t.Errorf("user data %q, want the nodeup script %q", lt.UserData, *ncs[0].Spec.UserData)
	}
	if len(lt.BlockDeviceMappings) != 1 || lt.BlockDeviceMappings[0].DeviceName != "/dev/sda1" || *lt.BlockDeviceMappings[0].EBS.VolumeSize != 128 ||
		*lt.BlockDeviceMappings[0].EBS.IOPS != 3000 || lt.AssociatePublicIP == nil || *lt.AssociatePublicIP {
		t.Errorf("launch template %+v", lt)
	}
	if n := f.aws.Calls("DescribeCluster"); n != 0 {
		t.Errorf("DescribeCluster called %d times for a Custom NodeClass", n)
	}
	if in := f.aws.Instances()[0]; in.Tags["kops.k8s.io/instancegroup"] != "nodes" || in.Tags["KubernetesCluster"] != "my-cluster.example.com" {
		t.Errorf("instance tags %v", in.Tags)
	}
}
