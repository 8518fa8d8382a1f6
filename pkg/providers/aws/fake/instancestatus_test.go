package fake_test

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

// launchInstances launches n on-demand m5.large instances and returns their IDs.
func launchInstances(t *testing.T, f *fake.AWS, c *ec2.Client, n int) []string {
	t.Helper()
	f.AddRole("KarpenterNodeRole")
	f.AddInstanceProfile("profile", "KarpenterNodeRole")
	createTemplate(t, c, "lt-status", "ami-00000000000000001", "profile")
	var ids []string
	for range n {
		out, err := c.CreateFleet(ctx, fleetInput("lt-status", ec2types.DefaultTargetCapacityTypeOnDemand, override("m5.large", "subnet-00000000000000001")))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, out.Instances[0].InstanceIds...)
	}
	return ids
}

// describeStatus returns every page of DescribeInstanceStatus, by instance ID in order.
func describeStatus(t *testing.T, c *ec2.Client, in *ec2.DescribeInstanceStatusInput) (ids []string, byID map[string]ec2types.InstanceStatus) {
	t.Helper()
	byID = map[string]ec2types.InstanceStatus{}
	pages := ec2.NewDescribeInstanceStatusPaginator(c, in)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range out.InstanceStatuses {
			ids = append(ids, aws.ToString(s.InstanceId))
			byID[aws.ToString(s.InstanceId)] = s
		}
	}
	return ids, byID
}

func filter(name string, values ...string) []ec2types.Filter {
	return []ec2types.Filter{{Name: aws.String(name), Values: values}}
}

// TestDescribeInstanceStatus: every running instance's checks are ok until a test fails one
// or schedules an event; the filters select by check, reachability, event and state;
// terminated instances only appear with IncludeAllInstances, their checks not applicable;
// pages follow MaxResults; parameters are validated as EC2 does.
func TestDescribeInstanceStatus(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newFake(t, fake.Options{Clock: clk})
	c := ec2.NewFromConfig(f.Config())
	ids := launchInstances(t, f, c, 7)

	all, byID := describeStatus(t, c, &ec2.DescribeInstanceStatusInput{})
	if !slices.Equal(all, ids) {
		t.Fatalf("described %v, launched %v", all, ids)
	}
	healthy := byID[ids[0]]
	for name, s := range map[string]*ec2types.InstanceStatusSummary{"instance": healthy.InstanceStatus, "system": healthy.SystemStatus} {
		if s == nil || s.Status != ec2types.SummaryStatusOk || len(s.Details) != 1 || s.Details[0].Name != ec2types.StatusNameReachability ||
			s.Details[0].Status != ec2types.StatusTypePassed || s.Details[0].ImpairedSince != nil {
			t.Errorf("%s status of a new instance: %+v", name, s)
		}
	}
	if healthy.AttachedEbsStatus == nil || healthy.AttachedEbsStatus.Status != ec2types.SummaryStatusOk || healthy.InstanceState.Name != ec2types.InstanceStateNameRunning ||
		aws.ToInt32(healthy.InstanceState.Code) != 16 || aws.ToString(healthy.AvailabilityZone) != "us-west-2a" || aws.ToString(healthy.AvailabilityZoneId) != "usw2-az1" || len(healthy.Events) != 0 {
		t.Errorf("unexpected status %+v", healthy)
	}

	// ids[1]'s instance check fails from an hour ago, ids[2]'s system check from now; ids[3]
	// has a maintenance event, ids[4] a reboot; ids[5] is terminated.
	since := clk.Now().Add(-time.Hour)
	if !f.SetStatusCheck(ids[1], fake.StatusCheckInstance, fake.StatusCheck{Status: "impaired", ImpairedSince: since}) ||
		!f.SetStatusCheck(ids[2], fake.StatusCheckSystem, fake.StatusCheck{Status: "impaired"}) {
		t.Fatal("no instance")
	}
	notBefore := clk.Now().Add(48 * time.Hour)
	maintenance, ok := f.ScheduleEvent(ids[3], fake.InstanceEvent{Code: "system-maintenance", NotBefore: notBefore, NotAfter: notBefore.Add(2 * time.Hour)})
	if !ok {
		t.Fatal("no instance")
	}
	if _, ok := f.ScheduleEvent(ids[4], fake.InstanceEvent{Code: "instance-reboot", Description: "Scheduled reboot"}); !ok {
		t.Fatal("no instance")
	}
	if f.SetStatusCheck("i-00000000000000000", fake.StatusCheckInstance, fake.StatusCheck{Status: "impaired"}) {
		t.Error("an unknown instance was impaired")
	}
	if !f.TerminateInstance(ids[5]) {
		t.Fatal("no instance")
	}

	_, byID = describeStatus(t, c, &ec2.DescribeInstanceStatusInput{InstanceIds: []string{ids[1], ids[2], ids[3]}})
	if d := byID[ids[1]].InstanceStatus; d.Status != ec2types.SummaryStatusImpaired || d.Details[0].Status != ec2types.StatusTypeFailed || !aws.ToTime(d.Details[0].ImpairedSince).Equal(since) {
		t.Errorf("impaired instance status: %+v", d)
	}
	if d := byID[ids[1]].SystemStatus; d.Status != ec2types.SummaryStatusOk {
		t.Errorf("the system status of an instance whose instance check failed: %+v", d)
	}
	if d := byID[ids[2]].SystemStatus; d.Status != ec2types.SummaryStatusImpaired || !aws.ToTime(d.Details[0].ImpairedSince).Equal(clk.Now()) {
		t.Errorf("impaired system status: %+v", d)
	}
	if e := byID[ids[3]].Events; len(e) != 1 || e[0].Code != ec2types.EventCodeSystemMaintenance || aws.ToString(e[0].InstanceEventId) != maintenance ||
		aws.ToString(e[0].Description) == "" || !aws.ToTime(e[0].NotBefore).Equal(notBefore) || !aws.ToTime(e[0].NotAfter).Equal(notBefore.Add(2*time.Hour)) || e[0].NotBeforeDeadline != nil {
		t.Errorf("scheduled event: %+v", e)
	}

	for _, tc := range []struct {
		name string
		in   ec2.DescribeInstanceStatusInput
		want []string
	}{
		{"instance check impaired", ec2.DescribeInstanceStatusInput{Filters: filter("instance-status.status", "impaired")}, ids[1:2]},
		{"instance check failed", ec2.DescribeInstanceStatusInput{Filters: filter("instance-status.reachability", "failed")}, ids[1:2]},
		{"system check impaired", ec2.DescribeInstanceStatusInput{Filters: filter("system-status.status", "impaired")}, ids[2:3]},
		{"either check passed", ec2.DescribeInstanceStatusInput{Filters: filter("system-status.reachability", "passed")}, []string{ids[0], ids[1], ids[3], ids[4], ids[6]}},
		{"Karpenter's event codes", ec2.DescribeInstanceStatusInput{Filters: filter("event.code", "instance-reboot", "system-reboot", "system-maintenance", "instance-retirement", "instance-stop")}, ids[3:5]},
		{"event description", ec2.DescribeInstanceStatusInput{Filters: filter("event.description", "Scheduled*")}, ids[4:5]},
		{"event ID", ec2.DescribeInstanceStatusInput{Filters: filter("event.instance-event-id", maintenance)}, ids[3:4]},
		{"event not before", ec2.DescribeInstanceStatusInput{Filters: filter("event.not-before", notBefore.Format("2006-01-02T15:04:05.000Z"))}, ids[3:4]},
		{"filters AND", ec2.DescribeInstanceStatusInput{Filters: append(filter("instance-status.status", "impaired"), filter("event.code", "system-maintenance")...)}, nil},
		{"zone", ec2.DescribeInstanceStatusInput{Filters: filter("availability-zone-id", "usw2-az2")}, nil},
		{"terminated, by default", ec2.DescribeInstanceStatusInput{Filters: filter("instance-state-name", "terminated")}, nil},
		{"terminated, all instances", ec2.DescribeInstanceStatusInput{Filters: filter("instance-state-code", "48"), IncludeAllInstances: aws.Bool(true)}, ids[5:6]},
		{"by ID, not running", ec2.DescribeInstanceStatusInput{InstanceIds: ids[5:6]}, nil},
		{"pages of 5", ec2.DescribeInstanceStatusInput{MaxResults: aws.Int32(5)}, []string{ids[0], ids[1], ids[2], ids[3], ids[4], ids[6]}},
	} {
		got, byID := describeStatus(t, c, &tc.in)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		if tc.name == "terminated, all instances" {
			s := byID[ids[5]]
			if s.InstanceStatus.Status != ec2types.SummaryStatusNotApplicable || s.SystemStatus.Status != ec2types.SummaryStatusNotApplicable || len(s.InstanceStatus.Details) != 0 {
				t.Errorf("terminated instance's status %+v", s)
			}
		}
	}
	first, err := c.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{MaxResults: aws.Int32(5)})
	if err != nil || len(first.InstanceStatuses) != 5 || aws.ToString(first.NextToken) == "" {
		t.Errorf("first page of 5: %v, %d statuses, token %q", err, len(first.InstanceStatuses), aws.ToString(first.NextToken))
	}

	for _, tc := range []struct {
		name string
		in   ec2.DescribeInstanceStatusInput
		code string
	}{
		{"tag filter", ec2.DescribeInstanceStatusInput{Filters: filter("tag:Name", "node")}, "InvalidParameterValue"},
		{"unknown filter", ec2.DescribeInstanceStatusInput{Filters: filter("instance-type", "m5.large")}, "InvalidParameterValue"},
		{"filter without values", ec2.DescribeInstanceStatusInput{Filters: filter("event.code")}, "InvalidParameterValue"},
		{"small page", ec2.DescribeInstanceStatusInput{MaxResults: aws.Int32(4)}, "InvalidParameterValue"},
		{"page and IDs", ec2.DescribeInstanceStatusInput{MaxResults: aws.Int32(5), InstanceIds: ids[:1]}, "InvalidParameterCombination"},
		{"unknown instance", ec2.DescribeInstanceStatusInput{InstanceIds: []string{"i-00000000000000000"}}, "InvalidInstanceID.NotFound"},
		{"malformed instance", ec2.DescribeInstanceStatusInput{InstanceIds: []string{"i-xyz"}}, "InvalidInstanceID.Malformed"},
		{"bad token", ec2.DescribeInstanceStatusInput{NextToken: aws.String("x")}, "InvalidPaginationToken"},
		{"dry run", ec2.DescribeInstanceStatusInput{DryRun: aws.Bool(true)}, "DryRunOperation"},
	} {
		if _, err := c.DescribeInstanceStatus(ctx, &tc.in); apiCode(err) != tc.code {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.code)
		}
	}

	// Healed and cleared: nothing is unhealthy any more.
	f.SetStatusCheck(ids[1], fake.StatusCheckInstance, fake.StatusCheck{Status: "ok"})
	f.SetStatusCheck(ids[2], fake.StatusCheckSystem, fake.StatusCheck{Status: "ok"})
	if !f.RemoveEvent(ids[3], maintenance) || f.RemoveEvent(ids[3], maintenance) {
		t.Error("RemoveEvent: the event is not removed exactly once")
	}
	_, byID = describeStatus(t, c, &ec2.DescribeInstanceStatusInput{InstanceIds: ids[1:4]})
	if d := byID[ids[1]].InstanceStatus; d.Status != ec2types.SummaryStatusOk || d.Details[0].Status != ec2types.StatusTypePassed || d.Details[0].ImpairedSince != nil {
		t.Errorf("healed instance status: %+v", d)
	}
	if got, _ := describeStatus(t, c, &ec2.DescribeInstanceStatusInput{Filters: filter("event.code", "system-maintenance")}); len(got) != 0 {
		t.Errorf("a removed event is still listed: %v", got)
	}
}

// TestDenyEC2: a denied action answers UnauthorizedOperation, its permission check still
// recorded, until allowed again.
func TestDenyEC2(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := ec2.NewFromConfig(f.Config())
	f.DenyEC2("DescribeInstanceStatus")
	if _, err := c.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{}); apiCode(err) != "UnauthorizedOperation" {
		t.Fatalf("got %v, want UnauthorizedOperation", err)
	}
	if _, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil {
		t.Errorf("another action was denied: %v", err)
	}
	if n := f.Calls("DescribeInstanceStatus"); n != 1 {
		t.Errorf("%d calls: UnauthorizedOperation must not be retried", n)
	}
	f.AllowEC2("DescribeInstanceStatus")
	if _, err := c.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{}); err != nil {
		t.Fatal(err)
	}
	var checks []string
	for _, az := range f.Authorizations() {
		if az.Action == "ec2:DescribeInstanceStatus" && az.Resource == "*" {
			checks = append(checks, az.Action)
		}
	}
	if len(checks) != 2 {
		t.Errorf("%d ec2:DescribeInstanceStatus checks recorded, want 2", len(checks))
	}
}
