package fake_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

// TestCapacityReservations: DescribeCapacityReservations by ID and by the filters Karpenter's
// AWS provider v1.15.2 sends (state, owner-id, tag:, tag-key, instance-match-criteria), EC2's
// errors for unknown IDs and MaxResults with IDs; a fleet launching from a template that
// targets a reservation takes its slots and reports them on the instance, fails with
// ReservationCapacityExceeded when it has none, and gets the slot back on termination.
func TestCapacityReservations(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newFake(t, fake.Options{Clock: clk})
	c := ec2.NewFromConfig(f.Config())
	f.AddRole("KarpenterNodeRole")
	f.AddInstanceProfile("profile", "KarpenterNodeRole")
	end := clk.Now().Add(24 * time.Hour)
	f.AddCapacityReservation(fake.CapacityReservation{ID: "cr-00000000000000001", InstanceType: "m5.large", Zone: "us-west-2a", TotalInstanceCount: 1, Tags: map[string]string{"team": "ml"}})
	f.AddCapacityReservation(fake.CapacityReservation{ID: "cr-00000000000000002", InstanceType: "m5.xlarge", Zone: "us-west-2a", TotalInstanceCount: 2,
		ReservationType: "capacity-block", EndDate: &end, InstanceMatchCriteria: "targeted", Tags: map[string]string{"team": "ml"}})
	f.AddCapacityReservation(fake.CapacityReservation{ID: "cr-00000000000000003", InstanceType: "m5.large", Zone: "us-west-2a", TotalInstanceCount: 1,
		OwnerID: "999988887777", InstanceMatchCriteria: "open", State: "cancelled"})

	active := ec2types.Filter{Name: aws.String("state"), Values: []string{"active"}}
	for _, tc := range []struct {
		name    string
		filters []ec2types.Filter
		want    []string
	}{
		{"tags", []ec2types.Filter{active, {Name: aws.String("tag:team"), Values: []string{"ml"}}}, []string{"cr-00000000000000001", "cr-00000000000000002"}},
		{"tag-key and owner", []ec2types.Filter{active, {Name: aws.String("tag-key"), Values: []string{"team"}}, {Name: aws.String("owner-id"), Values: []string{"111122223333"}}},
			[]string{"cr-00000000000000001", "cr-00000000000000002"}},
		{"other owner", []ec2types.Filter{{Name: aws.String("owner-id"), Values: []string{"999988887777"}}}, []string{"cr-00000000000000003"}},
		{"open and active", []ec2types.Filter{active, {Name: aws.String("instance-match-criteria"), Values: []string{"open"}}}, nil},
	} {
		out, err := c.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{Filters: tc.filters, MaxResults: aws.Int32(1000)})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, r := range out.CapacityReservations {
			got = append(got, aws.ToString(r.CapacityReservationId))
		}
		if len(got) != len(tc.want) || len(got) > 0 && (got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1]) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	out, err := c.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-00000000000000002"}})
	if err != nil || len(out.CapacityReservations) != 1 {
		t.Fatalf("by id: %v %+v", err, out)
	}
	r := out.CapacityReservations[0]
	if aws.ToString(r.InstanceType) != "m5.xlarge" || aws.ToString(r.AvailabilityZone) != "us-west-2a" || aws.ToString(r.OwnerId) != "111122223333" ||
		aws.ToInt32(r.TotalInstanceCount) != 2 || aws.ToInt32(r.AvailableInstanceCount) != 2 || r.State != ec2types.CapacityReservationStateActive ||
		r.ReservationType != "capacity-block" || r.InstanceMatchCriteria != ec2types.InstanceMatchCriteriaTargeted || r.EndDate == nil || !r.EndDate.Equal(end) ||
		aws.ToBool(r.Interruptible) || len(r.Tags) != 1 {
		t.Errorf("reservation %+v", r)
	}
	if _, err := c.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-0000000000000dead"}}); apiCode(err) != "InvalidCapacityReservationId.NotFound" {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := c.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-00000000000000001"}, MaxResults: aws.Int32(10)}); apiCode(err) != "InvalidParameterCombination" {
		t.Errorf("ids with MaxResults: %v", err)
	}

	// A launch into cr-1 takes its one slot; the next is refused; termination gives it back.
	if _, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("reserved"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
		ImageId: aws.String("ami-00000000000000001"), IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("profile")},
		CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
			CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String("cr-00000000000000001")}},
	}}); err != nil {
		t.Fatal(err)
	}
	if lt := f.LaunchTemplates()[0]; lt.CapacityReservationPreference != "capacity-reservations-only" || lt.CapacityReservationID != "cr-00000000000000001" {
		t.Fatalf("template %+v", lt)
	}
	launch := func() *ec2.CreateFleetOutput {
		t.Helper()
		out, err := c.CreateFleet(ctx, fleetInput("reserved", ec2types.DefaultTargetCapacityTypeOnDemand, override("m5.large", "subnet-00000000000000001")))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := launch()
	if len(first.Instances) != 1 || len(first.Errors) != 0 {
		t.Fatalf("first launch %+v", first)
	}
	id := first.Instances[0].InstanceIds[0]
	desc, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	inst := desc.Reservations[0].Instances[0]
	if aws.ToString(inst.CapacityReservationId) != "cr-00000000000000001" || inst.CapacityReservationSpecification == nil ||
		inst.CapacityReservationSpecification.CapacityReservationPreference != ec2types.CapacityReservationPreferenceCapacityReservationsOnly || inst.InstanceLifecycle != "" {
		t.Errorf("instance %+v", inst)
	}
	second := launch()
	if len(second.Instances) != 0 || len(second.Errors) != 1 || aws.ToString(second.Errors[0].ErrorCode) != "ReservationCapacityExceeded" {
		t.Fatalf("second launch %+v", second)
	}
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	if third := launch(); len(third.Instances) != 1 {
		t.Fatalf("launch after termination %+v", third)
	}

	// A Capacity Block needs its market type.
	if _, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("block"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
		ImageId: aws.String("ami-00000000000000001"), IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("profile")},
		CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
			CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String("cr-00000000000000002")}},
		InstanceMarketOptions: &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock},
	}}); err != nil {
		t.Fatal(err)
	}
	in := fleetInput("block", ec2types.DefaultTargetCapacityTypeCapacityBlock, override("m5.xlarge", "subnet-00000000000000001"))
	in.OnDemandOptions, in.SpotOptions = nil, nil
	block, err := c.CreateFleet(ctx, in)
	if err != nil || len(block.Instances) != 1 {
		t.Fatalf("capacity block launch: %v %+v", err, block)
	}
	desc, err = c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: block.Instances[0].InstanceIds})
	if err != nil || desc.Reservations[0].Instances[0].InstanceLifecycle != ec2types.InstanceLifecycleTypeCapacityBlock {
		t.Errorf("capacity block instance: %v %+v", err, desc)
	}
}
