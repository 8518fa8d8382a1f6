package aws

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/test/metricstest"
)

// seedZoneIDs are the zone IDs of seed 004's subnets, as the fake was seeded with them.
var seedZoneIDs = map[string]string{"us-west-2a": "usw2-az1", "us-west-2b": "usw2-az2", "us-west-2c": "usw2-az3"}

// TestInterruptionMessageMetrics: every message read from the queue is counted by Karpenter's
// message type, every deletion is counted, and each message acted on is observed with its time
// on the queue from its SentTimestamp; a body that is not JSON is deleted without being counted
// as received or observed.
func TestInterruptionMessageMetrics(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	np.Spec.Template.Spec.Requirements[2].Values = []string{"spot"}
	spot := f.launchRecorded(np, "general-purpose-spot")
	id, _ := instanceIDOf(spot.Status.ProviderID)

	types := []string{metrics.MessageTypeSpotInterrupted, metrics.MessageTypeRebalanceRecommendation, metrics.MessageTypeScheduledChange,
		metrics.MessageTypeInstanceStopped, metrics.MessageTypeInstanceTerminated, metrics.MessageTypeNoOp}
	received := func() map[string]float64 {
		out := map[string]float64{}
		for _, typ := range types {
			out[typ] = testutil.ToFloat64(metrics.InterruptionReceivedMessagesTotal.WithLabelValues(typ))
		}
		return out
	}
	receivedBefore, deletedBefore := received(), testutil.ToFloat64(metrics.InterruptionDeletedMessagesTotal)
	observedBefore, secondsBefore := metricstest.Observations(t, metrics.InterruptionMessageQueueDurationSeconds)

	const other = "i-0notours000000000"
	stateChange := func(instance, state string) string {
		return fmt.Sprintf(`{"version":"0","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","detail":{"instance-id":"%s","state":"%s"}}`, instance, state)
	}
	for _, body := range []string{
		fmt.Sprintf(`{"version":"0","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{"instance-id":"%s","instance-action":"terminate"}}`, id),
		fmt.Sprintf(`{"version":"0","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","detail":{"instance-id":"%s"}}`, other),
		fmt.Sprintf(`{"version":"0","detail-type":"AWS Health Event","source":"aws.health","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"%s"}]}}`, other),
		stateChange(other, "stopping"),
		stateChange(other, "shutting-down"),
		stateChange(other, "running"), // not acted on: no_op
		`{"version":"0","detail-type":"Something Else","source":"aws.other","detail":{}}`,
		`not an event`,
	} {
		f.aws.SendMessage("karpenter-interruptions", body)
	}
	const onQueue = 45 * time.Second
	f.clock.Step(onQueue)

	c := NewInterruptionController(f.provider, nil)
	c.WaitTime = 0
	if handled, err := c.Poll(f.ctx); err != nil || len(handled) != 8 {
		t.Fatalf("Poll: %v, handled %d", err, len(handled))
	}

	want := map[string]float64{
		metrics.MessageTypeSpotInterrupted: 1, metrics.MessageTypeRebalanceRecommendation: 1, metrics.MessageTypeScheduledChange: 1,
		metrics.MessageTypeInstanceStopped: 1, metrics.MessageTypeInstanceTerminated: 1, metrics.MessageTypeNoOp: 2,
	}
	after := received()
	for _, typ := range types {
		if got := after[typ] - receivedBefore[typ]; got != want[typ] {
			t.Errorf("received %s: %v more, want %v", typ, got, want[typ])
		}
	}
	if got := testutil.ToFloat64(metrics.InterruptionDeletedMessagesTotal) - deletedBefore; got != 8 {
		t.Errorf("deleted: %v more, want 8 (every message, the unreadable one too)", got)
	}
	observed, seconds := metricstest.Observations(t, metrics.InterruptionMessageQueueDurationSeconds)
	if n := observed - observedBefore; n != 7 {
		t.Errorf("queue durations: %d more observed, want 7 (every readable message)", n)
	}
	// SentTimestamp has millisecond resolution: each message was on the queue 45s and under 1ms.
	if s := seconds - secondsBefore; s < 7*onQueue.Seconds() || s >= 7*(onQueue.Seconds()+0.001) {
		t.Errorf("queue durations sum to %vs more, want 7×45s", s)
	}
	got := &karpv1.NodeClaim{}
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(spot), got); err == nil && got.DeletionTimestamp == nil {
		t.Error("the interrupted claim is not being deleted")
	}
}

// TestInstanceLaunchFailureMetrics: each offering a fleet reports failing is counted by zone,
// zone ID, capacity type and Karpenter's reason, whether or not the claim then launched.
func TestInstanceLaunchFailureMetrics(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	zones := []string{"us-west-2a", "us-west-2b", "us-west-2c"}
	failures := func(zone, capacityType, reason string) float64 {
		return testutil.ToFloat64(metrics.CloudProviderInstanceLaunchFailuresTotal.WithLabelValues(zone, seedZoneIDs[zone], capacityType, reason))
	}
	before := map[string]float64{}
	for _, z := range zones {
		before[z] = failures(z, karpv1.CapacityTypeSpot, ReasonLaunchFailed)
		f.aws.SetInsufficientCapacity("m5.xlarge", z, karpv1.CapacityTypeSpot, true)
	}
	np.Spec.Template.Spec.Requirements = slices.DeleteFunc(np.Spec.Template.Spec.Requirements, func(r karpv1.NodeSelectorRequirementWithMinValues) bool {
		return r.Key == karpv1.CapacityTypeLabelKey
	})
	claim := claimFor(np, "general-purpose-ice", nil, req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge"),
		req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand"))
	launched, err := f.provider.Create(f.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if ct := launched.Labels[karpv1.CapacityTypeLabelKey]; ct != karpv1.CapacityTypeOnDemand {
		t.Fatalf("launched %s, want on-demand after spot ran out", ct)
	}
	for _, z := range zones {
		// InsufficientInstanceCapacity is not one of the causes Karpenter names.
		if got := failures(z, karpv1.CapacityTypeSpot, ReasonLaunchFailed) - before[z]; got != 1 {
			t.Errorf("spot launch failures in %s (%s): %v more, want 1", z, seedZoneIDs[z], got)
		}
	}
}

// TestSpotRoleLaunchFailureMetric: without the Spot service-linked role, each offering of the
// refused spot fleet is counted with the reason Karpenter names for it.
func TestSpotRoleLaunchFailureMetric(t *testing.T) {
	g := newFixture(t)
	_, np := g.seed004()
	zones := []string{"us-west-2a", "us-west-2b", "us-west-2c"}
	failures := func(zone, capacityType, reason string) float64 {
		return testutil.ToFloat64(metrics.CloudProviderInstanceLaunchFailuresTotal.WithLabelValues(zone, seedZoneIDs[zone], capacityType, reason))
	}
	g.aws.SetSpotServiceLinkedRole(false)
	var slrBefore float64
	for _, z := range zones {
		slrBefore += failures(z, karpv1.CapacityTypeSpot, "SpotSLRCreationFailed")
	}
	np.Spec.Template.Spec.Requirements = slices.DeleteFunc(np.Spec.Template.Spec.Requirements, func(r karpv1.NodeSelectorRequirementWithMinValues) bool {
		return r.Key == karpv1.CapacityTypeLabelKey
	})
	if _, err := g.provider.Create(g.ctx, claimFor(np, "no-spot-role", nil, req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand"))); err != nil {
		t.Fatal(err)
	}
	fleets := g.aws.Fleets()
	if len(fleets) == 0 || len(fleets[0].Errors) == 0 {
		t.Fatalf("fleets %+v: want a refused spot fleet first", fleets)
	}
	var slr float64
	for _, z := range zones {
		slr += failures(z, karpv1.CapacityTypeSpot, "SpotSLRCreationFailed")
	}
	if got := slr - slrBefore; got != float64(len(fleets[0].Errors)) {
		t.Errorf("SpotSLRCreationFailed: %v more, want one per offering the spot fleet refused (%d)", got, len(fleets[0].Errors))
	}
}

// TestLaunchFailureReasons: EC2's fleet errors get the reasons Karpenter gives them.
func TestLaunchFailureReasons(t *testing.T) {
	for _, c := range []struct{ code, message, want string }{
		{"InsufficientInstanceCapacity", "We currently do not have sufficient m5.xlarge capacity in the Availability Zone you requested (us-west-2a).", ReasonLaunchFailed},
		{"UnfulfillableCapacity", "Unable to fulfill capacity due to your request configuration.", ReasonLaunchFailed},
		{spotRoleMissingCode, "The provided credentials do not have permission to create the service-linked role for EC2 Spot Instances.", "SpotSLRCreationFailed"},
		{"UnauthorizedOperation", "You are not authorized to perform this operation.", "Unauthorized"},
		{"AuthFailure", "Not authorized for images: [ami-0123456789abcdef0]", "AMIAuthorizationFailure"},
		{"UnauthorizedOperation", "Not authorized for images: [ami-0123456789abcdef0] with an explicit deny in a service control policy", "Unauthorized"},
		{"InvalidParameter", "Security group sg-1 and subnet subnet-1 belong to different networks.", "SecurityGroupSubnetVPCMismatch"},
		{"InvalidParameterValue", "Value (karpenter-x) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name", "InstanceProfileNameInvalid"},
		{"InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID lt-1, does not exist.", "LaunchTemplateNotFound"},
		{"InvalidParameterValue", "User data is limited to 16384 bytes", "UserDataSizeLimitExceeded"},
		{"InvalidAMIID.NotFound", "The image id '[ami-1]' does not exist", "AMINotFound"},
		{"InvalidAMIID.Malformed", "Invalid id: \"ami-x\"", "InvalidAMIID"},
		{"MaxSpotInstanceCountExceeded", "Max spot instance count exceeded", "SpotQuotaExceeded"},
		{"VcpuLimitExceeded", "You have requested more vCPU capacity than your current vCPU limit of 32 allows.", "VCPULimitExceeded"},
		{subnetFullCode, "There are not enough free addresses in subnet 'subnet-1' to satisfy the requested number of instances.", subnetFullCode},
		{"PendingVerification", "Your request for accessing resources in this region is being validated.", "AccountPendingVerification"},
	} {
		if got := launchFailureReason(c.code, c.message); got != c.want {
			t.Errorf("%s: %s: reason %q, want %q", c.code, c.message, got, c.want)
		}
	}
}

// TestInstanceTerminationFailureMetric: a termination that fails (here throttled past the
// retryer's attempts, in the batched call and in the instance's own call that follows it) is
// counted by the instance's zone and zone ID; a successful retry is not.
func TestInstanceTerminationFailureMetric(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	launched, err := f.provider.Create(f.ctx, claimFor(np, "general-purpose-stuck", nil))
	if err != nil {
		t.Fatal(err)
	}
	zone := launched.Labels[corev1.LabelTopologyZone]
	failures := metrics.CloudProviderInstanceTerminationFailuresTotal.WithLabelValues(zone, seedZoneIDs[zone])
	before := testutil.ToFloat64(failures)
	f.aws.Throttle("TerminateInstances", 2*MaxAttempts)
	if err := f.provider.Delete(f.ctx, launched); err == nil {
		t.Fatal("Delete succeeded while TerminateInstances was throttled")
	}
	if got := testutil.ToFloat64(failures) - before; got != 1 {
		t.Errorf("termination failures in %s (%s): %v more, want 1", zone, seedZoneIDs[zone], got)
	}
	if err := f.provider.Delete(f.ctx, launched); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(failures) - before; got != 1 {
		t.Errorf("termination failures: %v more after a successful retry, want still 1", got)
	}
}

// TestInstanceTypeSizeGauges: building a NodeClass's instance types records each type's vCPUs
// and its memory as EC2 reports it, before the VM overhead that its capacity leaves out.
func TestInstanceTypeSizeGauges(t *testing.T) {
	f := newFixture(t)
	metrics.CloudProviderInstanceTypeCPUCores.Reset()
	metrics.CloudProviderInstanceTypeMemoryBytes.Reset()
	_, np := f.seed004() // its launch check builds the types
	its, err := f.provider.GetInstanceTypes(f.ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		vcpus  float64
		memGiB int64
	}{{"m5.large", 2, 8}, {"c6g.xlarge", 4, 8}, {"r5.2xlarge", 8, 64}} {
		if got := testutil.ToFloat64(metrics.CloudProviderInstanceTypeCPUCores.WithLabelValues(c.name)); got != c.vcpus {
			t.Errorf("%s: %v cores, want %v", c.name, got, c.vcpus)
		}
		memory := testutil.ToFloat64(metrics.CloudProviderInstanceTypeMemoryBytes.WithLabelValues(c.name))
		if memory != float64(c.memGiB<<30) {
			t.Errorf("%s: %v bytes of memory, want %d GiB", c.name, memory, c.memGiB)
		}
		i := slices.IndexFunc(its, func(it *cloudprovider.InstanceType) bool { return it.Name == c.name })
		if i < 0 {
			t.Fatalf("%s not among the instance types", c.name)
		}
		if capacity := its[i].Capacity.Memory().Value(); float64(capacity) >= memory {
			t.Errorf("%s: capacity %d bytes, want less than the %v EC2 reports (VM overhead)", c.name, capacity, memory)
		}
	}
	if n := testutil.CollectAndCount(metrics.CloudProviderInstanceTypeCPUCores); n < len(its) {
		t.Errorf("%d instance types with cores recorded, fewer than the %d built", n, len(its))
	}
}

// TestUserDataBytesGauge: creating a launch template records the size of its user data for the
// NodeClass, before base64; deleting the NodeClass drops it.
func TestUserDataBytesGauge(t *testing.T) {
	f := newFixture(t)
	nc, np := f.seed004()
	metrics.ForgetNodeClassUserData(nc.Name)
	if _, err := f.provider.Create(f.ctx, claimFor(np, "general-purpose-userdata", nil)); err != nil {
		t.Fatal(err)
	}
	lts := f.launchTemplates()
	if len(lts) == 0 || lts[len(lts)-1].UserData == "" {
		t.Fatalf("launch templates %+v: want one with user data", lts)
	}
	if got, want := testutil.ToFloat64(metrics.EC2NodeClassesUserDataBytes.WithLabelValues(nc.Name)), len(lts[len(lts)-1].UserData); got != float64(want) {
		t.Errorf("user data of %s: %v bytes, want %d (the template's, decoded)", nc.Name, got, want)
	}
	if len(metricstest.Collected(t, metrics.EC2NodeClassesUserDataBytes, map[string]string{metrics.LabelNodeClass: nc.Name})) == 0 {
		t.Fatal("no user data series for the NodeClass")
	}

	if err := env.Client.Delete(f.ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, err := NewNodeClassController(f.provider).Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.aws.LaunchTemplates()); n != 0 {
		t.Fatalf("%d launch templates left after the NodeClass was deleted", n)
	}
	if len(metricstest.Collected(t, metrics.EC2NodeClassesUserDataBytes, map[string]string{metrics.LabelNodeClass: nc.Name})) > 0 {
		t.Errorf("user data of the deleted %s still recorded", nc.Name)
	}
}
