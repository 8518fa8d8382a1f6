package fake_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

var ctx = context.Background()

// newFake starts a fake with two subnets, two security groups and three images.
func newFake(t *testing.T, opts fake.Options) *fake.AWS {
	t.Helper()
	f := fake.New(opts)
	t.Cleanup(f.Close)
	f.AddSubnet(fake.Subnet{ID: "subnet-00000000000000001", Zone: "us-west-2a", Tags: map[string]string{"karpenter.sh/discovery": "my-cluster", "Name": "private-a"}})
	f.AddSubnet(fake.Subnet{ID: "subnet-00000000000000002", Zone: "us-west-2b", AvailableIPs: 10, MapPublicIPOnLaunch: true, Tags: map[string]string{"karpenter.sh/discovery": "other", "Name": "public-b"}})
	f.AddSecurityGroup(fake.SecurityGroup{ID: "sg-00000000000000001", Name: "nodes", Tags: map[string]string{"karpenter.sh/discovery": "my-cluster"}})
	f.AddSecurityGroup(fake.SecurityGroup{ID: "sg-00000000000000002", Name: "other"})
	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	past := time.Now().Add(-time.Hour)
	f.AddImage(fake.Image{ID: "ami-00000000000000001", Name: "al2023-x86_64-v1", CreationDate: created, Tags: map[string]string{"team": "a"}})
	f.AddImage(fake.Image{ID: "ami-00000000000000002", Name: "al2023-arm64-v1", Architecture: "arm64", CreationDate: created})
	f.AddImage(fake.Image{ID: "ami-00000000000000003", Name: "al2023-x86_64-v0", CreationDate: created, DeprecationTime: &past, OwnerID: "137112412989", OwnerAlias: "amazon"})
	return f
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestDescribeSubnets(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ec2.NewFromConfig(f.Config())
	out, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"my-*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Subnets) != 1 {
		t.Fatalf("got %d subnets, want 1", len(out.Subnets))
	}
	s := out.Subnets[0]
	if aws.ToString(s.SubnetId) != "subnet-00000000000000001" || aws.ToString(s.AvailabilityZone) != "us-west-2a" || aws.ToString(s.AvailabilityZoneId) != "usw2-az1" ||
		aws.ToInt32(s.AvailableIpAddressCount) != 251 || aws.ToString(s.CidrBlock) != "10.0.0.0/24" || aws.ToString(s.VpcId) == "" || aws.ToBool(s.MapPublicIpOnLaunch) || len(s.Tags) != 2 {
		t.Errorf("unexpected subnet %+v", s)
	}
	for _, tc := range []struct {
		filters []ec2types.Filter
		ids     []string
		want    int
	}{
		{nil, nil, 2},
		{nil, []string{"subnet-00000000000000002"}, 1},
		{[]ec2types.Filter{{Name: aws.String("tag-key"), Values: []string{"Name"}}}, nil, 2},
		{[]ec2types.Filter{{Name: aws.String("tag:Name"), Values: []string{"*-b"}}}, nil, 1},
		{[]ec2types.Filter{{Name: aws.String("tag:Name"), Values: []string{"private-?"}}}, nil, 1},
		{[]ec2types.Filter{{Name: aws.String("tag:Name"), Values: []string{"nope", "public-b"}}}, nil, 1},
		{[]ec2types.Filter{{Name: aws.String("availability-zone"), Values: []string{"us-west-2a"}}}, nil, 1},
		{[]ec2types.Filter{{Name: aws.String("subnet-id"), Values: []string{"subnet-00000000000000002"}}, {Name: aws.String("tag:Name"), Values: []string{"private-a"}}}, nil, 0},
	} {
		out, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: tc.filters, SubnetIds: tc.ids})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Subnets) != tc.want {
			t.Errorf("filters %v ids %v: got %d subnets, want %d", tc.filters, tc.ids, len(out.Subnets), tc.want)
		}
	}
	_, err = c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0000000000000000f"}})
	if apiCode(err) != "InvalidSubnetID.NotFound" {
		t.Errorf("unknown subnet: got %v", err)
	}
	_, err = c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("bogus"), Values: []string{"x"}}}})
	if apiCode(err) != "InvalidParameterValue" {
		t.Errorf("bad filter: got %v", err)
	}
}

func TestDescribeSecurityGroups(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ec2.NewFromConfig(f.Config())
	out, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"my-cluster"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.SecurityGroups) != 1 || aws.ToString(out.SecurityGroups[0].GroupId) != "sg-00000000000000001" || aws.ToString(out.SecurityGroups[0].GroupName) != "nodes" ||
		aws.ToString(out.SecurityGroups[0].VpcId) == "" || len(out.SecurityGroups[0].Tags) != 1 {
		t.Fatalf("unexpected %+v", out.SecurityGroups)
	}
	out, err = c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupNames: []string{"other"}})
	if err != nil || len(out.SecurityGroups) != 1 || aws.ToString(out.SecurityGroups[0].GroupId) != "sg-00000000000000002" {
		t.Fatalf("by name: %v %+v", err, out)
	}
	out, err = c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("group-name"), Values: []string{"no*"}}}})
	if err != nil || len(out.SecurityGroups) != 1 {
		t.Fatalf("group-name filter: %v %+v", err, out)
	}
	_, err = c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-0000000000000000f"}})
	if apiCode(err) != "InvalidGroup.NotFound" {
		t.Errorf("unknown group: got %v", err)
	}
}

func TestDescribeImages(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ec2.NewFromConfig(f.Config())
	out, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("name"), Values: []string{"al2023-*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Images) != 2 {
		t.Fatalf("got %d images, want 2 (the deprecated one hidden)", len(out.Images))
	}
	i := out.Images[0]
	if aws.ToString(i.ImageId) != "ami-00000000000000001" || aws.ToString(i.Name) != "al2023-x86_64-v1" || i.Architecture != ec2types.ArchitectureValuesX8664 ||
		aws.ToString(i.CreationDate) != "2025-01-02T03:04:05.000Z" || i.State != ec2types.ImageStateAvailable || aws.ToString(i.OwnerId) != "111122223333" || len(i.Tags) != 1 {
		t.Errorf("unexpected image %+v", i)
	}
	out, err = c.DescribeImages(ctx, &ec2.DescribeImagesInput{IncludeDeprecated: aws.Bool(true), Owners: []string{"amazon"}})
	if err != nil || len(out.Images) != 1 || aws.ToString(out.Images[0].DeprecationTime) == "" {
		t.Fatalf("include deprecated: %v %+v", err, out)
	}
	out, err = c.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ami-00000000000000003"}})
	if err != nil || len(out.Images) != 1 {
		t.Fatalf("deprecated by id: %v %+v", err, out)
	}
	out, err = c.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"self"}, Filters: []ec2types.Filter{{Name: aws.String("architecture"), Values: []string{"arm64"}}}})
	if err != nil || len(out.Images) != 1 || out.Images[0].Architecture != ec2types.ArchitectureValuesArm64 {
		t.Fatalf("arch filter: %v %+v", err, out)
	}
	_, err = c.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"ami-0000000000000000f"}})
	if apiCode(err) != "InvalidAMIID.NotFound" {
		t.Errorf("unknown image: got %v", err)
	}
	// pagination
	for n := 4; n < 20; n++ {
		f.AddImage(fake.Image{ID: "ami-" + pad17(n), Name: "many-" + strconv.Itoa(n)})
	}
	p := ec2.NewDescribeImagesPaginator(c, &ec2.DescribeImagesInput{MaxResults: aws.Int32(6), Filters: []ec2types.Filter{{Name: aws.String("name"), Values: []string{"many-*"}}}})
	total, pages := 0, 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		total += len(out.Images)
		pages++
	}
	if total != 16 || pages != 3 {
		t.Errorf("paginated %d images in %d pages, want 16 in 3", total, pages)
	}
}

func pad17(n int) string {
	s := strconv.FormatInt(int64(n), 16)
	for len(s) < 17 {
		s = "0" + s
	}
	return s
}

func TestDescribeInstanceTypes(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ec2.NewFromConfig(f.Config())
	entries, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	p := ec2.NewDescribeInstanceTypesPaginator(c, &ec2.DescribeInstanceTypesInput{})
	got := map[string]ec2types.InstanceTypeInfo{}
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.InstanceTypes) > 100 {
			t.Fatalf("page of %d", len(out.InstanceTypes))
		}
		for _, it := range out.InstanceTypes {
			got[string(it.InstanceType)] = it
		}
	}
	if len(got) != len(entries) || len(got) < 1000 {
		t.Fatalf("got %d types, want %d", len(got), len(entries))
	}
	for _, e := range entries {
		it := got[e.Name]
		if aws.ToInt32(it.VCpuInfo.DefaultVCpus) != int32(e.VCPU) || aws.ToInt64(it.MemoryInfo.SizeInMiB) != e.MemoryMiB {
			t.Fatalf("%s: cpu/memory %+v %+v", e.Name, it.VCpuInfo, it.MemoryInfo)
		}
		if arch := string(it.ProcessorInfo.SupportedArchitectures[0]); (e.Arch == "amd64") != (arch == "x86_64") {
			t.Fatalf("%s: arch %s", e.Name, arch)
		}
		if aws.ToBool(it.BareMetal) != e.BareMetal || aws.ToBool(it.BurstablePerformanceSupported) != e.Burstable || string(it.Hypervisor) != e.Hypervisor {
			t.Fatalf("%s: metal/burst/hypervisor", e.Name)
		}
		if e.GPUCount > 0 && (it.GpuInfo == nil || aws.ToInt32(it.GpuInfo.Gpus[0].Count) != int32(e.GPUCount) || aws.ToString(it.GpuInfo.Gpus[0].Name) != e.GPUName ||
			aws.ToInt32(it.GpuInfo.Gpus[0].MemoryInfo.SizeInMiB) != int32(e.GPUMemoryMiB)) {
			t.Fatalf("%s: gpus %+v", e.Name, it.GpuInfo)
		}
		if e.NeuronCores > 0 && (it.NeuronInfo == nil || aws.ToInt32(it.NeuronInfo.NeuronDevices[0].Count)*aws.ToInt32(it.NeuronInfo.NeuronDevices[0].CoreInfo.Count) != int32(e.NeuronCores)) {
			t.Fatalf("%s: neuron %+v", e.Name, it.NeuronInfo)
		}
		if e.LocalNVMeGiB > 0 && (it.InstanceStorageInfo == nil || aws.ToInt64(it.InstanceStorageInfo.TotalSizeInGB) != e.LocalNVMeGiB || it.InstanceStorageInfo.NvmeSupport != ec2types.EphemeralNvmeSupportRequired) {
			t.Fatalf("%s: storage %+v", e.Name, it.InstanceStorageInfo)
		}
		if aws.ToInt32(it.NetworkInfo.MaximumNetworkInterfaces) != int32(e.ENIs) || aws.ToInt32(it.NetworkInfo.Ipv4AddressesPerInterface) != int32(e.IPv4PerENI) ||
			aws.ToBool(it.NetworkInfo.EfaSupported) != (e.EFAInterfaces > 0) {
			t.Fatalf("%s: network %+v", e.Name, it.NetworkInfo)
		}
		if e.NetworkBandwidthMbps > 0 && int64(aws.ToFloat64(it.NetworkInfo.NetworkCards[0].BaselineBandwidthInGbps)*1000+0.5) != e.NetworkBandwidthMbps {
			t.Fatalf("%s: bandwidth %v", e.Name, aws.ToFloat64(it.NetworkInfo.NetworkCards[0].BaselineBandwidthInGbps))
		}
		if e.CPUClockMHz > 0 && int(aws.ToFloat64(it.ProcessorInfo.SustainedClockSpeedInGhz)*1000+0.5) != e.CPUClockMHz {
			t.Fatalf("%s: clock", e.Name)
		}
		spot := len(it.SupportedUsageClasses) == 2 && it.SupportedUsageClasses[1] == ec2types.UsageClassTypeSpot
		if spot != e.HasPrice() || aws.ToBool(it.FreeTierEligible) {
			t.Fatalf("%s: usage classes %v", e.Name, it.SupportedUsageClasses)
		}
	}
	out, err := c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.large", "m6g.large"}})
	if err != nil || len(out.InstanceTypes) != 2 || aws.ToString(out.InstanceTypes[0].ProcessorInfo.Manufacturer) != "Intel" {
		t.Fatalf("by name: %v %+v", err, out)
	}
	_, err = c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.huge"}})
	if apiCode(err) != "InvalidInstanceType" {
		t.Errorf("unknown type: %v", err)
	}
	f.SetInstanceTypes(entries[:3])
	out, err = c.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{})
	if err != nil || len(out.InstanceTypes) != 3 || out.NextToken != nil {
		t.Fatalf("after SetInstanceTypes: %v %d", err, len(out.InstanceTypes))
	}
}

func TestDescribeInstanceTypeOfferings(t *testing.T) {
	entries, _ := catalog.Load()
	f := newFake(t, fake.Options{Catalog: entries[:10], Zones: []string{"us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"}})
	c := ec2.NewFromConfig(f.Config())
	f.RemoveOffering(entries[0].Name, "us-west-2d")
	count := func(in *ec2.DescribeInstanceTypeOfferingsInput) int {
		t.Helper()
		p := ec2.NewDescribeInstanceTypeOfferingsPaginator(c, in)
		n := 0
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range out.InstanceTypeOfferings {
				if o.InstanceType == "" || aws.ToString(o.Location) == "" || o.LocationType == "" {
					t.Fatalf("incomplete offering %+v", o)
				}
			}
			n += len(out.InstanceTypeOfferings)
		}
		return n
	}
	if n := count(&ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, MaxResults: aws.Int32(7)}); n != 39 {
		t.Errorf("zone offerings: %d, want 39", n)
	}
	if n := count(&ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, Filters: []ec2types.Filter{{Name: aws.String("location"), Values: []string{"us-west-2d"}}}}); n != 9 {
		t.Errorf("2d offerings: %d, want 9", n)
	}
	if n := count(&ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, Filters: []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{entries[1].Name}}}}); n != 4 {
		t.Errorf("type offerings: %d, want 4", n)
	}
	if n := count(&ec2.DescribeInstanceTypeOfferingsInput{}); n != 10 {
		t.Errorf("region offerings: %d, want 10", n)
	}
}

func TestDescribeSpotPriceHistory(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ec2.NewFromConfig(f.Config())
	out, err := c.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{
		StartTime: aws.Time(time.Now()), ProductDescriptions: []string{"Linux/UNIX"}, InstanceTypes: []ec2types.InstanceType{"m5.large"}, AvailabilityZone: aws.String("us-west-2b")})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := catalog.Lookup("m5.large")
	if len(out.SpotPriceHistory) != 1 {
		t.Fatalf("got %d prices", len(out.SpotPriceHistory))
	}
	sp := out.SpotPriceHistory[0]
	want := catalog.SpotPrice(e.OnDemandPrice, e.Family, "us-west-2b")
	got, _ := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
	if got < want-1e-6 || got > want+1e-6 || sp.Timestamp == nil || sp.InstanceType != "m5.large" || aws.ToString(sp.AvailabilityZone) != "us-west-2b" || sp.ProductDescription != ec2types.RIProductDescriptionLinuxUnix {
		t.Errorf("unexpected %+v (want price %v)", sp, want)
	}
	p := ec2.NewDescribeSpotPriceHistoryPaginator(c, &ec2.DescribeSpotPriceHistoryInput{ProductDescriptions: []string{"Linux/UNIX"},
		Filters: []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{"m5.*", "c5.*"}}}, MaxResults: aws.Int32(10)})
	n := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(out.SpotPriceHistory)
	}
	if n < 30 || n%3 != 0 {
		t.Errorf("got %d m5/c5 prices", n)
	}
	out, err = c.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{ProductDescriptions: []string{"Windows"}})
	if err != nil || len(out.SpotPriceHistory) != 0 {
		t.Errorf("windows: %v %d", err, len(out.SpotPriceHistory))
	}
}

func TestThrottleEC2(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ec2.NewFromConfig(f.Config())
	f.Throttle("DescribeSubnets", 2)
	if _, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil {
		t.Fatal(err)
	}
	if n := f.Calls("DescribeSubnets"); n != 3 {
		t.Errorf("calls = %d, want 3", n)
	}
	f.Throttle("DescribeSubnets", 5)
	_, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if apiCode(err) != "RequestLimitExceeded" {
		t.Errorf("exhausted retries: %v", err)
	}
}

func TestSSMGetParameter(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ssm.NewFromConfig(f.Config())
	f.PutParameter("/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id", "ami-00000000000000001")
	out, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id")})
	if err != nil {
		t.Fatal(err)
	}
	p := out.Parameter
	if aws.ToString(p.Value) != "ami-00000000000000001" || p.Type != "String" || p.Version != 1 || p.LastModifiedDate == nil ||
		aws.ToString(p.ARN) != "arn:aws:ssm:us-west-2:111122223333:parameter/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id" {
		t.Errorf("unexpected %+v", p)
	}
	_, err = c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/nope")})
	if apiCode(err) != "ParameterNotFound" {
		t.Errorf("unknown parameter: %v", err)
	}
	f.Throttle("GetParameter", 1)
	if _, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id")}); err != nil || f.Calls("GetParameter") != 4 {
		t.Errorf("throttled: %v, %d calls", err, f.Calls("GetParameter"))
	}
}
