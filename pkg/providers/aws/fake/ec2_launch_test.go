package fake_test

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

func createTemplate(t *testing.T, c *ec2.Client, name, image, profile string) string {
	t.Helper()
	out, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{{Key: aws.String("karpenter.k8s.aws/cluster"), Value: aws.String("my-cluster")}}}},
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            aws.String(image),
			UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\necho hi"))),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(profile)},
			NetworkInterfaces:  []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{AssociatePublicIpAddress: aws.Bool(false), DeviceIndex: aws.Int32(0), Groups: []string{"sg-00000000000000001"}}},
			MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{HttpEndpoint: "enabled", HttpTokens: "required", HttpPutResponseHopLimit: aws.Int32(1),
				HttpProtocolIpv6: "disabled", InstanceMetadataTags: "disabled"},
			BlockDeviceMappings: []ec2types.LaunchTemplateBlockDeviceMappingRequest{{DeviceName: aws.String("/dev/xvda"), Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				VolumeSize: aws.Int32(20), VolumeType: "gp3", Iops: aws.Int32(3000), Throughput: aws.Int32(125), Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true)}}},
			Monitoring:        &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(true)},
			TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String("Name"), Value: aws.String("node")}}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	lt := out.LaunchTemplate
	if aws.ToString(lt.LaunchTemplateName) != name || len(aws.ToString(lt.LaunchTemplateId)) != 20 || aws.ToInt64(lt.DefaultVersionNumber) != 1 || aws.ToInt64(lt.LatestVersionNumber) != 1 ||
		lt.CreateTime == nil || len(lt.Tags) != 1 {
		t.Fatalf("unexpected template %+v", lt)
	}
	return aws.ToString(lt.LaunchTemplateId)
}

func TestLaunchTemplates(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ec2.NewFromConfig(f.Config())
	id := createTemplate(t, c, "karpenter.k8s.aws/123", "ami-00000000000000001", "profile")
	lts := f.LaunchTemplates()
	if len(lts) != 1 {
		t.Fatal(len(lts))
	}
	lt := lts[0]
	if lt.UserData != "#!/bin/bash\necho hi" || lt.InstanceProfile != "profile" || lt.MetadataOptions == nil || lt.MetadataOptions.HTTPTokens != "required" || lt.MetadataOptions.HopLimit != 1 ||
		len(lt.BlockDeviceMappings) != 1 || aws.ToInt32(lt.BlockDeviceMappings[0].EBS.VolumeSize) != 20 || lt.BlockDeviceMappings[0].EBS.VolumeType != "gp3" || !lt.Monitoring ||
		lt.AssociatePublicIP == nil || *lt.AssociatePublicIP || lt.InstanceTags["Name"] != "node" || lt.Tags["karpenter.k8s.aws/cluster"] != "my-cluster" || lt.NetworkInterfaces[0].SecurityGroupIDs[0] != "sg-00000000000000001" {
		t.Errorf("unexpected %+v", lt)
	}
	_, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("karpenter.k8s.aws/123"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-00000000000000001")}})
	if apiCode(err) != "InvalidLaunchTemplateName.AlreadyExistsException" {
		t.Errorf("duplicate: %v", err)
	}
	_, err = c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("bad-ud"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{UserData: aws.String("not base64!")}})
	if apiCode(err) != "InvalidUserData.Malformed" {
		t.Errorf("bad user data: %v", err)
	}
	_, err = c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("bad-tag"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-00000000000000001")},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{{Key: aws.String("aws:foo"), Value: aws.String("x")}}}}})
	if apiCode(err) != "InvalidParameterValue" {
		t.Errorf("aws: tag: %v", err)
	}
	out, err := c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"karpenter.k8s.aws/123"}})
	if err != nil || len(out.LaunchTemplates) != 1 || aws.ToString(out.LaunchTemplates[0].LaunchTemplateId) != id {
		t.Fatalf("describe by name: %v %+v", err, out)
	}
	out, err = c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.k8s.aws/cluster"), Values: []string{"my-*"}}}})
	if err != nil || len(out.LaunchTemplates) != 1 {
		t.Fatalf("describe by tag: %v %+v", err, out)
	}
	_, err = c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"nope"}})
	if apiCode(err) != "InvalidLaunchTemplateName.NotFoundException" {
		t.Errorf("unknown name: %v", err)
	}
	for i := range 4 {
		createTemplate(t, c, "extra-"+string(rune('a'+i)), "ami-00000000000000001", "profile")
	}
	p := ec2.NewDescribeLaunchTemplatesPaginator(c, &ec2.DescribeLaunchTemplatesInput{MaxResults: aws.Int32(2)})
	n := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(out.LaunchTemplates)
	}
	if n != 5 {
		t.Errorf("paginated %d templates", n)
	}
	if _, err := c.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(id)}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("karpenter.k8s.aws/123")})
	if apiCode(err) != "InvalidLaunchTemplateName.NotFoundException" {
		t.Errorf("delete twice: %v", err)
	}
	if _, err := c.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("extra-a")}); err != nil || len(f.LaunchTemplates()) != 3 {
		t.Errorf("delete by name: %v", err)
	}
}

func fleetInput(lt string, capacityType ec2types.DefaultTargetCapacityType, overrides ...ec2types.FleetLaunchTemplateOverridesRequest) *ec2.CreateFleetInput {
	return &ec2.CreateFleetInput{
		Type:                        ec2types.FleetTypeInstant,
		LaunchTemplateConfigs:       []ec2types.FleetLaunchTemplateConfigRequest{{LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(lt), Version: aws.String("$Latest")}, Overrides: overrides}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: capacityType},
		SpotOptions:                 &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
		OnDemandOptions:             &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")}}},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")}}},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")}}},
		},
	}
}

func override(it, subnet string) ec2types.FleetLaunchTemplateOverridesRequest {
	return ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(it), SubnetId: aws.String(subnet)}
}

func TestCreateFleetAndInstances(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newFake(t, fake.Options{Clock: clk})
	c := ec2.NewFromConfig(f.Config())
	f.AddRole("KarpenterNodeRole")
	f.AddInstanceProfile("profile", "KarpenterNodeRole")
	createTemplate(t, c, "lt-x86", "ami-00000000000000001", "profile")
	createTemplate(t, c, "lt-noprofile", "ami-00000000000000001", "missing")

	// on-demand lowest price: the cheapest of m5.large, m5.xlarge, c5.large.
	in := fleetInput("lt-x86", ec2types.DefaultTargetCapacityTypeOnDemand,
		override("m5.xlarge", "subnet-00000000000000001"), override("c5.large", "subnet-00000000000000002"), override("m5.large", "subnet-00000000000000001"))
	out, err := c.CreateFleet(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 || len(out.Errors) != 0 || aws.ToString(out.FleetId) == "" {
		t.Fatalf("unexpected %+v", out)
	}
	c5, _ := catalog.Lookup("c5.large")
	m5, _ := catalog.Lookup("m5.large")
	want := "c5.large"
	if m5.OnDemandPrice < c5.OnDemandPrice {
		want = "m5.large"
	}
	fi := out.Instances[0]
	if string(fi.InstanceType) != want || fi.Lifecycle != ec2types.InstanceLifecycleOnDemand || string(fi.LaunchTemplateAndOverrides.Overrides.InstanceType) != want ||
		aws.ToString(fi.LaunchTemplateAndOverrides.LaunchTemplateSpecification.LaunchTemplateId) == "" {
		t.Errorf("chose %+v, want %s", fi, want)
	}
	id := fi.InstanceIds[0]
	if len(id) != 19 {
		t.Errorf("instance id %q", id)
	}
	desc, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	inst := desc.Reservations[0].Instances[0]
	if aws.ToString(inst.InstanceId) != id || string(inst.InstanceType) != want || aws.ToString(inst.ImageId) != "ami-00000000000000001" || inst.State.Name != ec2types.InstanceStateNameRunning ||
		aws.ToInt32(inst.State.Code) != 16 || aws.ToString(inst.Placement.AvailabilityZone) == "" || aws.ToString(inst.SubnetId) == "" || aws.ToString(inst.PrivateDnsName) == "" ||
		aws.ToString(inst.PrivateIpAddress) == "" || inst.LaunchTime == nil || inst.InstanceLifecycle != "" || inst.Architecture != ec2types.ArchitectureValuesX8664 ||
		inst.IamInstanceProfile == nil || aws.ToString(inst.IamInstanceProfile.Arn) != "arn:aws:iam::111122223333:instance-profile/profile" || aws.ToString(inst.IamInstanceProfile.Id) == "" ||
		len(inst.SecurityGroups) != 1 || aws.ToString(inst.SecurityGroups[0].GroupName) != "nodes" || len(inst.Tags) != 2 || inst.CapacityReservationId != nil {
		t.Errorf("unexpected instance %+v", inst)
	}
	// EC2 places the instance by zone ID too: the ID of its zone in this account.
	if zone, zoneID := aws.ToString(inst.Placement.AvailabilityZone), aws.ToString(inst.Placement.AvailabilityZoneId); zoneID != map[string]string{"us-west-2a": "usw2-az1", "us-west-2b": "usw2-az2", "us-west-2c": "usw2-az3"}[zone] {
		t.Errorf("placement in %s has zone ID %q", zone, zoneID)
	}
	fleets := f.Fleets()
	if len(fleets) != 1 || fleets[0].UserData != "#!/bin/bash\necho hi" || fleets[0].CapacityType != "on-demand" || len(fleets[0].LaunchTemplateConfigs[0].Overrides) != 3 ||
		fleets[0].OnDemandAllocationStrategy != "lowest-price" || len(fleets[0].TagSpecifications) != 3 || fleets[0].InstanceIDs[0] != id {
		t.Errorf("fleet record %+v", fleets)
	}

	// spot with ICE on the cheapest pool: the next cheapest launches, the ICE is reported.
	spotIn := fleetInput("lt-x86", ec2types.DefaultTargetCapacityTypeSpot, override("m5.large", "subnet-00000000000000001"), override("m5.large", "subnet-00000000000000002"))
	cheapZone, otherZone := "us-west-2a", "us-west-2b"
	if catalog.SpotPrice(m5.OnDemandPrice, m5.Family, "us-west-2b") < catalog.SpotPrice(m5.OnDemandPrice, m5.Family, "us-west-2a") {
		cheapZone, otherZone = otherZone, cheapZone
	}
	f.SetInsufficientCapacity("m5.large", cheapZone, "spot", true)
	out, err = c.CreateFleet(ctx, spotIn)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientInstanceCapacity" ||
		aws.ToString(out.Errors[0].LaunchTemplateAndOverrides.Overrides.AvailabilityZone) != cheapZone || out.Errors[0].Lifecycle != ec2types.InstanceLifecycleSpot {
		t.Fatalf("ICE fallback: %+v", out)
	}
	spotInst, _ := f.Instance(out.Instances[0].InstanceIds[0])
	if spotInst.Zone != otherZone || spotInst.CapacityType != "spot" || spotInst.SpotInstanceRequestID == "" {
		t.Errorf("spot instance %+v", spotInst)
	}
	f.SetInsufficientCapacity("m5.large", otherZone, "spot", true)
	// The SDK filled in a ClientToken: the same request is idempotent and answers the same.
	if again, err := c.CreateFleet(ctx, spotIn); err != nil || aws.ToString(again.FleetId) != aws.ToString(out.FleetId) {
		t.Fatalf("idempotent retry: %v", err)
	}
	spotIn.ClientToken = nil
	out, err = c.CreateFleet(ctx, spotIn)
	if err != nil || len(out.Instances) != 0 || len(out.Errors) != 2 {
		t.Fatalf("all ICE: %v %+v", err, out)
	}

	// validation errors
	for _, tc := range []struct {
		in   *ec2.CreateFleetInput
		code string
	}{
		{fleetInput("lt-x86", "on-demand", override("m6g.large", "subnet-00000000000000001")), "InvalidParameterValue"}, // arm64 type, x86 AMI
		{fleetInput("lt-x86", "on-demand", override("m5.large", "subnet-0000000000000000f")), "InvalidSubnetID.NotFound"},
		{fleetInput("lt-x86", "on-demand", override("m5.enormous", "subnet-00000000000000001")), "InvalidParameterValue"},
		{fleetInput("nope", "on-demand", override("m5.large", "subnet-00000000000000001")), "InvalidLaunchTemplateName.NotFoundException"},
		{fleetInput("lt-noprofile", "on-demand", override("m5.large", "subnet-00000000000000001")), "InvalidParameterValue"},
		{func() *ec2.CreateFleetInput {
			in := fleetInput("lt-x86", "on-demand", override("m5.large", "subnet-00000000000000001"))
			in.LaunchTemplateConfigs[0].Overrides[0].ImageId = aws.String("ami-0000000000000000f")
			return in
		}(), "InvalidAMIID.NotFound"},
	} {
		out, err := c.CreateFleet(ctx, tc.in)
		if err != nil || len(out.Instances) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != tc.code {
			t.Errorf("want %s: %v %+v", tc.code, err, out)
		}
	}
	f.RemoveOffering("m5.large", "us-west-2a")
	out, err = c.CreateFleet(ctx, fleetInput("lt-x86", "on-demand", override("m5.large", "subnet-00000000000000001")))
	if err != nil || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "Unsupported" {
		t.Errorf("removed offering: %v %+v", err, out)
	}
	many := fleetInput("lt-x86", "on-demand")
	for range 301 {
		many.LaunchTemplateConfigs[0].Overrides = append(many.LaunchTemplateConfigs[0].Overrides, override("m5.large", "subnet-00000000000000002"))
	}
	if _, err := c.CreateFleet(ctx, many); apiCode(err) == "" {
		t.Errorf("301 overrides accepted")
	}
	maintain := fleetInput("lt-x86", "on-demand", override("m5.large", "subnet-00000000000000002"))
	maintain.Type = ec2types.FleetTypeMaintain
	if _, err := c.CreateFleet(ctx, maintain); apiCode(err) != "InvalidParameterValue" {
		t.Errorf("maintain fleet: %v", err)
	}

	// DescribeInstances filters and pagination.
	d, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/nodepool"), Values: []string{"def*"}},
		{Name: aws.String("instance-state-name"), Values: []string{"running", "pending"}}}})
	if err != nil || len(d.Reservations) != 2 {
		t.Fatalf("filtered describe: %v %+v", err, d)
	}
	if d.Reservations[1].Instances[0].InstanceLifecycle != ec2types.InstanceLifecycleTypeSpot || aws.ToString(d.Reservations[1].Instances[0].SpotInstanceRequestId) == "" {
		t.Errorf("spot lifecycle missing")
	}
	_, err = c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
	if apiCode(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("unknown instance: %v", err)
	}
	_, err = c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"bogus"}})
	if apiCode(err) != "InvalidInstanceID.Malformed" {
		t.Errorf("malformed instance: %v", err)
	}

	// CreateTags
	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("default-abc")}}}); err != nil {
		t.Fatal(err)
	}
	if i, _ := f.Instance(id); i.Tags["karpenter.sh/nodeclaim"] != "default-abc" {
		t.Errorf("tag not set: %v", i.Tags)
	}
	_, err = c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: []ec2types.Tag{{Key: aws.String("aws:x"), Value: aws.String("y")}}})
	if apiCode(err) != "InvalidParameterValue" {
		t.Errorf("aws: tag: %v", err)
	}
	_, err = c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{"i-0123456789abcdef0"}, Tags: []ec2types.Tag{{Key: aws.String("a"), Value: aws.String("b")}}})
	if apiCode(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("tag unknown instance: %v", err)
	}
	if _, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{id}, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim")}}}); err != nil {
		t.Fatal(err)
	}
	if i, _ := f.Instance(id); i.Tags["karpenter.sh/nodeclaim"] != "" {
		t.Errorf("tag not deleted: %v", i.Tags)
	}

	// TerminateInstances
	term, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil || len(term.TerminatingInstances) != 1 || term.TerminatingInstances[0].CurrentState.Name != ec2types.InstanceStateNameShuttingDown ||
		term.TerminatingInstances[0].PreviousState.Name != ec2types.InstanceStateNameRunning {
		t.Fatalf("terminate: %v %+v", err, term)
	}
	term, err = c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil || term.TerminatingInstances[0].CurrentState.Name != ec2types.InstanceStateNameTerminated {
		t.Fatalf("terminate twice: %v %+v", err, term)
	}
	d, err = c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || d.Reservations[0].Instances[0].State.Name != ec2types.InstanceStateNameTerminated || aws.ToInt32(d.Reservations[0].Instances[0].State.Code) != 48 {
		t.Fatalf("terminated describe: %v %+v", err, d)
	}
	clk.Step(61 * time.Minute)
	_, err = c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if apiCode(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("expired terminated instance: %v", err)
	}
	_, err = c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
	if apiCode(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("terminate unknown: %v", err)
	}
	if len(f.Instances()) != 2 {
		t.Errorf("Instances() = %d", len(f.Instances()))
	}

	// Pagination of DescribeInstances.
	for range 6 {
		if _, err := c.CreateFleet(ctx, fleetInput("lt-x86", "on-demand", override("m5.large", "subnet-00000000000000002"))); err != nil {
			t.Fatal(err)
		}
	}
	p := ec2.NewDescribeInstancesPaginator(c, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)})
	n := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Reservations {
			n += len(r.Instances)
		}
	}
	if n != 7 {
		t.Errorf("paginated %d instances, want 7", n)
	}
}

// TestCreateFleetFillsPoolsWithRoom: a fleet of several instances fills its pools in order,
// each as far as its room goes (SetPoolCapacity), reporting InsufficientInstanceCapacity for
// each pool that fell short; when all fall short it launches fewer than asked for.
func TestCreateFleetFillsPoolsWithRoom(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ec2.NewFromConfig(f.Config())
	f.AddRole("KarpenterNodeRole")
	f.AddInstanceProfile("profile", "KarpenterNodeRole")
	createTemplate(t, c, "lt-x86", "ami-00000000000000001", "profile")
	// The same type in two zones: the same on-demand price, so the pools fill in this order.
	fleet := func(n int32) *ec2.CreateFleetOutput {
		t.Helper()
		in := fleetInput("lt-x86", ec2types.DefaultTargetCapacityTypeOnDemand,
			override("m5.large", "subnet-00000000000000001"), override("m5.large", "subnet-00000000000000002"))
		in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(n)
		out, err := c.CreateFleet(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	type pool struct {
		zone string
		n    int
	}
	launched := func(out *ec2.CreateFleetOutput) (got []pool) {
		for _, fi := range out.Instances {
			got = append(got, pool{aws.ToString(fi.LaunchTemplateAndOverrides.Overrides.AvailabilityZone), len(fi.InstanceIds)})
		}
		return got
	}
	iced := func(out *ec2.CreateFleetOutput) (zones []string) {
		for _, e := range out.Errors {
			if aws.ToString(e.ErrorCode) == "InsufficientInstanceCapacity" {
				zones = append(zones, aws.ToString(e.LaunchTemplateAndOverrides.Overrides.AvailabilityZone))
			}
		}
		return zones
	}

	f.SetPoolCapacity("m5.large", "us-west-2a", "on-demand", 1)
	out := fleet(3)
	if got := launched(out); !slices.Equal(got, []pool{{"us-west-2a", 1}, {"us-west-2b", 2}}) || !slices.Equal(iced(out), []string{"us-west-2a"}) {
		t.Errorf("launched %v, out of capacity in %v; want 1 in us-west-2a (then out) and 2 in us-west-2b", got, iced(out))
	}
	f.SetPoolCapacity("m5.large", "us-west-2b", "on-demand", 1)
	out = fleet(3)
	if got := launched(out); !slices.Equal(got, []pool{{"us-west-2b", 1}}) || !slices.Equal(iced(out), []string{"us-west-2a", "us-west-2b"}) {
		t.Errorf("launched %v, out of capacity in %v; want 1 of 3 in us-west-2b, both pools out", got, iced(out))
	}
	if fl := f.Fleets(); fl[1].TotalTargetCapacity != 3 || len(fl[1].InstanceIDs) != 1 {
		t.Errorf("fleet record %+v", fl[1])
	}
	f.SetPoolCapacity("m5.large", "us-west-2a", "on-demand", -1)
	if got := launched(fleet(2)); !slices.Equal(got, []pool{{"us-west-2a", 2}}) {
		t.Errorf("after lifting the limit: launched %v", got)
	}
}

// TestLaunchTemplateNetworkAndCPUOptions: the fake reads a launch template's interface prefix
// counts, IPv6 settings, connection tracking and CPU options, and refuses what EC2 refuses: IP
// settings on an EFA-only interface, timeouts out of bounds, a primary IPv6 address without
// IPv6 addresses, two interfaces at one attachment, an unknown nested virtualization value. A
// template enabling nested virtualization launches only types that report the feature.
func TestLaunchTemplateNetworkAndCPUOptions(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ec2.NewFromConfig(f.Config())
	f.AddRole("KarpenterNodeRole")
	f.AddInstanceProfile("profile", "KarpenterNodeRole")
	create := func(name string, cpu *ec2types.LaunchTemplateCpuOptionsRequest, nis ...ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest) error {
		_, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId: aws.String("ami-00000000000000001"), IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("profile")},
			NetworkInterfaces: nis, CpuOptions: cpu,
		}})
		return err
	}
	conntrack := &ec2types.ConnectionTrackingSpecificationRequest{TcpEstablishedTimeout: aws.Int32(3600), UdpStreamTimeout: aws.Int32(120), UdpTimeout: aws.Int32(45)}
	primary := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{NetworkCardIndex: aws.Int32(0), DeviceIndex: aws.Int32(0), InterfaceType: aws.String("interface"),
		Groups: []string{"sg-00000000000000001"}, Ipv6PrefixCount: aws.Int32(2), PrimaryIpv6: aws.Bool(true), Ipv6AddressCount: aws.Int32(1), ConnectionTrackingSpecification: conntrack}
	efaOnly := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{NetworkCardIndex: aws.Int32(1), DeviceIndex: aws.Int32(0), InterfaceType: aws.String("efa-only"),
		Groups: []string{"sg-00000000000000001"}}
	if err := create("nested", &ec2types.LaunchTemplateCpuOptionsRequest{NestedVirtualization: ec2types.NestedVirtualizationSpecificationEnabled}, primary, efaOnly); err != nil {
		t.Fatal(err)
	}
	lt := f.LaunchTemplates()[0]
	if lt.NestedVirtualization != "enabled" || len(lt.NetworkInterfaces) != 2 {
		t.Fatalf("template %+v", lt)
	}
	got, efa := lt.NetworkInterfaces[0], lt.NetworkInterfaces[1]
	if aws.ToInt32(got.IPv6PrefixCount) != 2 || got.IPv4PrefixCount != nil || !aws.ToBool(got.PrimaryIPv6) || aws.ToInt32(got.IPv6AddressCount) != 1 || got.ConnectionTracking == nil ||
		aws.ToInt32(got.ConnectionTracking.TCPEstablishedTimeout) != 3600 || aws.ToInt32(got.ConnectionTracking.UDPStreamTimeout) != 120 || aws.ToInt32(got.ConnectionTracking.UDPTimeout) != 45 {
		t.Errorf("primary interface %+v", got)
	}
	if efa.InterfaceType != "efa-only" || aws.ToInt32(efa.NetworkCardIndex) != 1 || efa.ConnectionTracking != nil || efa.IPv4PrefixCount != nil {
		t.Errorf("efa-only interface %+v", efa)
	}

	with := func(change func(*ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest)) ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
		ni := primary
		ct := *conntrack
		ni.ConnectionTrackingSpecification = &ct
		change(&ni)
		return ni
	}
	for _, tc := range []struct {
		name string
		cpu  *ec2types.LaunchTemplateCpuOptionsRequest
		nis  []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest
		code string
	}{
		{"prefixes on efa-only", nil, []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{primary, func() ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
			e := efaOnly
			e.Ipv4PrefixCount = aws.Int32(1)
			return e
		}()}, "InvalidParameterValue"},
		{"public IP on efa-only", nil, []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{primary, func() ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
			e := efaOnly
			e.AssociatePublicIpAddress = aws.Bool(true)
			return e
		}()}, "InvalidParameterValue"},
		{"tcp timeout below 60", nil, []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{with(func(n *ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest) {
			n.ConnectionTrackingSpecification.TcpEstablishedTimeout = aws.Int32(59)
		})}, "InvalidParameterValue"},
		{"udp stream timeout above 180", nil, []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{with(func(n *ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest) {
			n.ConnectionTrackingSpecification.UdpStreamTimeout = aws.Int32(181)
		})}, "InvalidParameterValue"},
		{"udp timeout above 60", nil, []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{with(func(n *ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest) {
			n.ConnectionTrackingSpecification.UdpTimeout = aws.Int32(61)
		})}, "InvalidParameterValue"},
		{"primary IPv6 without addresses", nil, []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{with(func(n *ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest) {
			n.Ipv6AddressCount = nil
		})}, "InvalidParameterCombination"},
		{"negative prefix count", nil, []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{with(func(n *ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest) {
			n.Ipv6PrefixCount = aws.Int32(-1)
		})}, "InvalidParameterValue"},
		{"two interfaces at one attachment", nil, []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{primary, primary}, "InvalidParameterValue"},
		{"unknown nested virtualization", &ec2types.LaunchTemplateCpuOptionsRequest{NestedVirtualization: "sometimes"}, nil, "InvalidParameterValue"},
	} {
		if err := create("bad-"+strings.ReplaceAll(tc.name, " ", "-"), tc.cpu, tc.nis...); apiCode(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}

	// Nested virtualization: only types reporting the feature launch.
	out, err := c.CreateFleet(ctx, fleetInput("nested", ec2types.DefaultTargetCapacityTypeOnDemand, override("c6in.32xlarge", "subnet-00000000000000001")))
	if err != nil || len(out.Instances) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "UnsupportedOperation" {
		t.Fatalf("nested virtualization on a type without it: %v %+v", err, out)
	}
	f.SetProcessorFeatures("c6in.32xlarge", "nested-virtualization")
	types, err := c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"c6in.32xlarge"}})
	if err != nil || len(types.InstanceTypes) != 1 {
		t.Fatal(err)
	}
	info := types.InstanceTypes[0]
	if !slices.Contains(info.ProcessorInfo.SupportedFeatures, ec2types.SupportedAdditionalProcessorFeatureNestedVirtualization) ||
		aws.ToInt32(info.NetworkInfo.MaximumNetworkCards) != 2 || len(info.NetworkInfo.NetworkCards) != 2 || aws.ToInt32(info.NetworkInfo.NetworkCards[1].NetworkCardIndex) != 1 {
		t.Errorf("c6in.32xlarge %+v %+v", info.ProcessorInfo, info.NetworkInfo)
	}
	out, err = c.CreateFleet(ctx, fleetInput("nested", ec2types.DefaultTargetCapacityTypeOnDemand, override("c6in.32xlarge", "subnet-00000000000000001")))
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("nested virtualization on a type with it: %v %+v", err, out)
	}
}

// TestLaunchTemplateNitroEnclaves: EnclaveOptions reach the template; only types
// DescribeInstanceTypes reports supporting Nitro Enclaves launch from one enabling them.
func TestLaunchTemplateNitroEnclaves(t *testing.T) {
	f := newFake(t, fake.Options{Clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	c := ec2.NewFromConfig(f.Config())
	f.AddRole("KarpenterNodeRole")
	f.AddInstanceProfile("profile", "KarpenterNodeRole")
	if _, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("enclaves"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
		ImageId: aws.String("ami-00000000000000001"), IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("profile")},
		EnclaveOptions: &ec2types.LaunchTemplateEnclaveOptionsRequest{Enabled: aws.Bool(true)},
	}}); err != nil {
		t.Fatal(err)
	}
	if lt := f.LaunchTemplates()[0]; lt.NitroEnclaves == nil || !*lt.NitroEnclaves {
		t.Fatalf("enclave options %v, want enabled", lt.NitroEnclaves)
	}
	out, err := c.CreateFleet(ctx, fleetInput("enclaves", ec2types.DefaultTargetCapacityTypeOnDemand, override("m6i.xlarge", "subnet-00000000000000001")))
	if err != nil || len(out.Instances) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "UnsupportedOperation" {
		t.Fatalf("enclaves on a type without them: %v %+v", err, out)
	}
	f.SetNitroEnclavesSupported("m6i.xlarge")
	types, err := c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m6i.xlarge", "m6i.large"}})
	if err != nil || len(types.InstanceTypes) != 2 {
		t.Fatal(err)
	}
	for _, info := range types.InstanceTypes {
		want := ec2types.NitroEnclavesSupportUnsupported
		if info.InstanceType == "m6i.xlarge" {
			want = ec2types.NitroEnclavesSupportSupported
		}
		if info.NitroEnclavesSupport != want {
			t.Errorf("%s NitroEnclavesSupport %q, want %q", info.InstanceType, info.NitroEnclavesSupport, want)
		}
	}
	out, err = c.CreateFleet(ctx, fleetInput("enclaves", ec2types.DefaultTargetCapacityTypeOnDemand, override("m6i.xlarge", "subnet-00000000000000001")))
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("enclaves on a type with them: %v %+v", err, out)
	}
}

// TestPartitionPlacement: a launch template's Placement.PartitionNumber puts the instance in
// that partition of a partition placement group (DescribeInstances reports it); a number beyond
// the group's partition count is refused with InvalidParameterValue; a partition out of
// capacity fails a launch targeting it with InsufficientInstanceCapacity, and a launch
// targeting none goes to another partition.
func TestPartitionPlacement(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ec2.NewFromConfig(f.Config())
	const pg = "pg-0b0000000000000b1"
	f.AddPlacementGroup(fake.PlacementGroup{ID: pg, Name: "kafka", Strategy: fake.StrategyPartition, PartitionCount: 3})
	template := func(name string, partition int32) {
		t.Helper()
		pl := &ec2types.LaunchTemplatePlacementRequest{GroupId: aws.String(pg)}
		if partition != 0 {
			pl.PartitionNumber = aws.Int32(partition)
		}
		if _, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-00000000000000001"), Placement: pl}}); err != nil {
			t.Fatal(err)
		}
	}
	template("lt-p2", 2)
	template("lt-p4", 4)
	template("lt-any", 0)
	launch := func(lt string) (*ec2.CreateFleetOutput, fake.Instance) {
		t.Helper()
		in := fleetInput(lt, ec2types.DefaultTargetCapacityTypeOnDemand, override("m5.large", "subnet-00000000000000001"))
		in.TagSpecifications = nil
		out, err := c.CreateFleet(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Instances) == 0 {
			return out, fake.Instance{}
		}
		inst, _ := f.Instance(out.Instances[0].InstanceIds[0])
		return out, inst
	}
	if _, inst := launch("lt-p2"); inst.PlacementGroupID != pg || inst.PartitionNumber != 2 {
		t.Errorf("targeting partition 2: instance in %q partition %d", inst.PlacementGroupID, inst.PartitionNumber)
	} else if desc, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{inst.ID}}); err != nil ||
		aws.ToInt32(desc.Reservations[0].Instances[0].Placement.PartitionNumber) != 2 {
		t.Errorf("DescribeInstances: %v", err)
	}
	if out, _ := launch("lt-p4"); len(out.Instances) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InvalidParameterValue" {
		t.Errorf("partition 4 of 3: %+v", out.Errors)
	}
	f.SetPartitionInsufficientCapacity(pg, 2, true)
	if out, _ := launch("lt-p2"); len(out.Instances) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientInstanceCapacity" {
		t.Errorf("partition 2 out of capacity: %+v", out.Errors)
	}
	f.SetPartitionInsufficientCapacity(pg, 1, true)
	if _, inst := launch("lt-any"); inst.PartitionNumber != 3 {
		t.Errorf("EC2's pick with 1 and 2 out of capacity: partition %d, want 3", inst.PartitionNumber)
	}
}
