package fake_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

// expectAPIError fails the test unless err is the EC2 error of the code and HTTP status.
func expectAPIError(t *testing.T, what string, err error, code string, status int) {
	t.Helper()
	var re *awshttp.ResponseError
	if apiCode(err) != code || !errors.As(err, &re) || re.HTTPStatusCode() != status {
		t.Errorf("%s: got %v, want %s (HTTP %d)", what, err, code, status)
	}
}

func runInput(lt, instanceType, subnet string) *ec2.RunInstancesInput {
	tags := []ec2types.Tag{{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("")}}
	return &ec2.RunInstancesInput{
		DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		LaunchTemplate:    &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String(lt), Version: aws.String("$Latest")},
		InstanceType:      ec2types.InstanceType(instanceType),
		NetworkInterfaces: []ec2types.InstanceNetworkInterfaceSpecification{{DeviceIndex: aws.Int32(0), SubnetId: aws.String(subnet)}},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: tags}, {ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
			{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: tags}},
	}
}

// TestDryRuns: CreateFleet, RunInstances and CreateLaunchTemplate with DryRun set answer
// DryRunOperation (HTTP 412) when the request is valid, record the permission checks EC2 makes
// (resources to be created as /*), and create, launch or consume nothing; RunInstances checks
// the launch first, so a missing instance profile or template is its error; without DryRun the
// fake refuses RunInstances.
func TestDryRuns(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ec2.NewFromConfig(f.Config())
	f.AddRole("KarpenterNodeRole")
	f.AddInstanceProfile("profile", "KarpenterNodeRole")
	createTemplate(t, c, "lt-x86", "ami-00000000000000001", "profile")
	createTemplate(t, c, "lt-noprofile", "ami-00000000000000001", "missing")
	before := len(f.Authorizations())
	subnets := f.Subnets()

	in := fleetInput("lt-x86", ec2types.DefaultTargetCapacityTypeOnDemand, override("m5.large", "subnet-00000000000000001"))
	in.DryRun = aws.Bool(true)
	_, err := c.CreateFleet(ctx, in)
	expectAPIError(t, "CreateFleet", err, "DryRunOperation", http.StatusPreconditionFailed)
	_, err = c.RunInstances(ctx, runInput("lt-x86", "m5.large", "subnet-00000000000000002"))
	expectAPIError(t, "RunInstances", err, "DryRunOperation", http.StatusPreconditionFailed)
	_, err = c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{DryRun: aws.Bool(true), LaunchTemplateName: aws.String("lt-dry"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-00000000000000001")}})
	expectAPIError(t, "CreateLaunchTemplate", err, "DryRunOperation", http.StatusPreconditionFailed)

	// What the launch would use is checked first.
	_, err = c.RunInstances(ctx, runInput("lt-noprofile", "m5.large", "subnet-00000000000000001"))
	if expectAPIError(t, "missing profile", err, "InvalidParameterValue", http.StatusBadRequest); err == nil || !strings.Contains(err.Error(), "Invalid IAM Instance Profile name") {
		t.Errorf("missing profile: %v", err)
	}
	_, err = c.RunInstances(ctx, runInput("lt-none", "m5.large", "subnet-00000000000000001"))
	expectAPIError(t, "missing template", err, "InvalidLaunchTemplateName.NotFoundException", http.StatusBadRequest)
	_, err = c.RunInstances(ctx, runInput("lt-x86", "m6g.large", "subnet-00000000000000001"))
	expectAPIError(t, "architecture", err, "InvalidParameterValue", http.StatusBadRequest)
	real := runInput("lt-x86", "m5.large", "subnet-00000000000000001")
	real.DryRun = nil
	_, err = c.RunInstances(ctx, real)
	expectAPIError(t, "without DryRun", err, "UnsupportedOperation", http.StatusBadRequest)

	if n := len(f.LaunchTemplates()); n != 2 {
		t.Errorf("%d launch templates, want the 2 made for real", n)
	}
	if len(f.Fleets()) != 0 || len(f.Instances()) != 0 {
		t.Errorf("a dry run recorded %d fleets, %d instances", len(f.Fleets()), len(f.Instances()))
	}
	for i, s := range f.Subnets() {
		if s.AvailableIPs != subnets[i].AvailableIPs {
			t.Errorf("subnet %s: %d free addresses, %d before", s.ID, s.AvailableIPs, subnets[i].AvailableIPs)
		}
	}
	got := map[string]bool{}
	for _, az := range f.Authorizations()[before:] {
		key := az.Action + " " + az.Resource[strings.LastIndex(az.Resource, ":")+1:]
		if v := az.Context["ec2:CreateAction"]; len(v) > 0 {
			key += " by " + v[0]
		}
		if v := az.Context["ec2:InstanceType"]; len(v) > 0 {
			key += " of " + v[0]
		}
		got[key] = true
	}
	for _, want := range []string{
		"ec2:CreateFleet fleet/*", "ec2:CreateTags fleet/* by CreateFleet", "ec2:CreateFleet launch-template/" + f.LaunchTemplates()[0].ID,
		"ec2:RunInstances instance/* of m5.large", "ec2:CreateTags instance/* by RunInstances", "ec2:RunInstances volume/*", "ec2:RunInstances network-interface/*",
		"ec2:RunInstances subnet/subnet-00000000000000002", "ec2:RunInstances security-group/sg-00000000000000001",
		"ec2:RunInstances launch-template/" + f.LaunchTemplates()[0].ID, "iam:PassRole role/KarpenterNodeRole",
		"ec2:CreateLaunchTemplate launch-template/*",
	} {
		if !got[want] {
			t.Errorf("no check %q among %v", want, got)
		}
	}
}

// TestDeniedLaunchActions: a denied launch action answers UnauthorizedOperation (HTTP 403), dry
// run or not, with an encoded authorization failure message naming the action, as EC2 does.
func TestDeniedLaunchActions(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ec2.NewFromConfig(f.Config())
	f.AddRole("KarpenterNodeRole")
	f.AddInstanceProfile("profile", "KarpenterNodeRole")
	createTemplate(t, c, "lt-x86", "ami-00000000000000001", "profile")
	fleet := fleetInput("lt-x86", ec2types.DefaultTargetCapacityTypeOnDemand, override("m5.large", "subnet-00000000000000001"))
	fleet.DryRun = aws.Bool(true)
	calls := map[string]func() error{
		"CreateFleet": func() error { _, err := c.CreateFleet(ctx, fleet); return err },
		"RunInstances": func() error {
			_, err := c.RunInstances(ctx, runInput("lt-x86", "m5.large", "subnet-00000000000000001"))
			return err
		},
		"CreateLaunchTemplate": func() error {
			_, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("lt-denied"),
				LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-00000000000000001")}})
			return err
		},
	}
	for action, call := range calls {
		f.DenyEC2(action)
		err := call()
		expectAPIError(t, action, err, "UnauthorizedOperation", http.StatusForbidden)
		var ae smithy.APIError
		if !errors.As(err, &ae) {
			continue
		}
		_, encoded, ok := strings.Cut(ae.ErrorMessage(), "Encoded authorization failure message: ")
		if !ok || !strings.Contains(ae.ErrorMessage(), "not authorized to perform: ec2:"+action) {
			t.Errorf("%s: message %q", action, ae.ErrorMessage())
			continue
		}
		decoded, err := fake.DecodeAuthorizationMessage(encoded)
		var doc struct {
			Allowed bool
			Context struct{ Action string }
		}
		if err != nil || json.Unmarshal([]byte(decoded), &doc) != nil || doc.Allowed || doc.Context.Action != "ec2:"+action {
			t.Errorf("%s: decoded %q (%v)", action, decoded, err)
		}
		f.AllowEC2(action)
	}
	if n := len(f.LaunchTemplates()); n != 1 {
		t.Errorf("%d launch templates after a denied CreateLaunchTemplate", n)
	}
}

// TestUserDataLimit: EC2 refuses user data over 16 KB, decoded.
func TestUserDataLimit(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ec2.NewFromConfig(f.Config())
	for _, n := range []int{16384, 16385} {
		_, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("lt-" + string(rune('a'+n%2))),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{UserData: aws.String(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", n))))}})
		switch {
		case n == 16384 && err != nil:
			t.Errorf("%d bytes: %v", n, err)
		case n > 16384 && (apiCode(err) != "InvalidUserData.Malformed" || !strings.Contains(err.Error(), "User data is limited to 16384 bytes")):
			t.Errorf("%d bytes: %v", n, err)
		}
	}
}
