package aws

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/test/metricstest"
)

// batchOnFakeClock makes the provider's batchers run their windows on a fake clock of their
// own, which the test steps to close a window once every request it expects is in.
func (f *fixture) batchOnFakeClock() *clocktesting.FakeClock {
	clk := clocktesting.NewFakeClock(time.Now())
	f.provider.batch = newEC2Batchers(f.provider.clients.EC2, clk)
	return clk
}

// waiting is the number of requests in the batcher's open window.
func (b *batcher[In, Out]) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.count
}

// awaitWaiting waits until the batcher's open window holds n requests.
func awaitWaiting[In, Out any](t *testing.T, b *batcher[In, Out], n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for b.waiting() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the %s batcher holds %d requests, want %d", b.name, b.waiting(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// launched is the outcome of one Create.
type launched struct {
	claim *karpv1.NodeClaim
	err   error
}

// launchTogether creates the claims at once, waits until their fleet requests are all in the
// create_fleet batcher's window and closes it (clk is the batchers'); it returns the outcomes
// in the claims' order.
func (f *fixture) launchTogether(clk *clocktesting.FakeClock, claims ...*karpv1.NodeClaim) []launched {
	f.t.Helper()
	done := make([]chan launched, len(claims))
	for i, c := range claims {
		done[i] = make(chan launched, 1)
		go func() {
			out, err := f.provider.Create(f.ctx, c)
			done[i] <- launched{out, err}
		}()
	}
	awaitWaiting(f.t, f.provider.batch.createFleet, len(claims))
	clk.Step(createFleetWindow.idle)
	out := make([]launched, len(claims))
	for i := range done {
		out[i] = <-done[i]
	}
	return out
}

// batcherTotals are the sample counts and sums of the batcher's two histograms.
type batcherTotals struct {
	windows, calls uint64
	seconds, size  float64
}

func readBatcherTotals(t *testing.T, name string) batcherTotals {
	t.Helper()
	var b batcherTotals
	b.windows, b.seconds = metricstest.Observations(t, metrics.CloudProviderBatcherBatchTimeSeconds.WithLabelValues(name))
	b.calls, b.size = metricstest.Observations(t, metrics.CloudProviderBatcherBatchSize.WithLabelValues(name))
	return b
}

// since is what the histograms recorded after before.
func (b batcherTotals) since(before batcherTotals) batcherTotals {
	return batcherTotals{windows: b.windows - before.windows, calls: b.calls - before.calls,
		seconds: math.Round((b.seconds-before.seconds)*1e6) / 1e6, size: b.size - before.size}
}

// TestLaunchesOfOneShapeShareAFleet: claims of the same shape launched together make one
// CreateFleet call for all of them, and each gets an instance of its own; the window and the
// batch are observed under batcher="create_fleet"; every permission check of the shared fleet
// is allowed by both IAM policies.
func TestLaunchesOfOneShapeShareAFleet(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	clk := f.batchOnFakeClock()
	before := readBatcherTotals(t, metrics.BatcherCreateFleet)
	var claims []*karpv1.NodeClaim
	for i := range 4 {
		claims = append(claims, claimFor(np, fmt.Sprintf("general-purpose-%d", i), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}))
	}
	results := f.launchTogether(clk, claims...)

	fleets := f.aws.Fleets()
	if len(fleets) != 1 || fleets[0].TotalTargetCapacity != 4 || len(fleets[0].InstanceIDs) != 4 {
		t.Fatalf("%d fleets, want one of 4 instances: %+v", len(fleets), fleets)
	}
	seen := map[string]string{}
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("%s: %v", claims[i].Name, r.err)
		}
		id := instanceIDOfClaim(t, r.claim)
		if other, dup := seen[id]; dup {
			t.Errorf("%s and %s got the same instance %s", other, r.claim.Name, id)
		}
		seen[id] = r.claim.Name
		if !slices.Contains(fleets[0].InstanceIDs, id) {
			t.Errorf("%s got %s, which the fleet did not launch (%v)", r.claim.Name, id, fleets[0].InstanceIDs)
		}
		inst, _ := f.aws.Instance(id)
		if r.claim.Labels[corev1.LabelInstanceTypeStable] != inst.Type || r.claim.Labels[corev1.LabelTopologyZone] != inst.Zone {
			t.Errorf("%s says %s in %s; its instance is %s in %s", r.claim.Name, r.claim.Labels[corev1.LabelInstanceTypeStable],
				r.claim.Labels[corev1.LabelTopologyZone], inst.Type, inst.Zone)
		}
	}
	got := readBatcherTotals(t, metrics.BatcherCreateFleet).since(before)
	if want := (batcherTotals{windows: 1, seconds: createFleetWindow.idle.Seconds(), calls: 1, size: 4}); got != want {
		t.Errorf("create_fleet histograms recorded %+v, want %+v", got, want)
	}
	expectAllowed(t, f.aws, "karpenter-interruptions", f.aws.Authorizations())
}

// TestLaunchesOfOtherShapesDoNotMerge: in the same window, claims of another shape (here
// another instance category) get a fleet of their own; only identical requests merge.
func TestLaunchesOfOtherShapesDoNotMerge(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	clk := f.batchOnFakeClock()
	before := readBatcherTotals(t, metrics.BatcherCreateFleet)
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	results := f.launchTogether(clk,
		claimFor(np, "general-purpose-a1", cpu),
		claimFor(np, "general-purpose-a2", cpu),
		claimFor(np, "general-purpose-b1", cpu, req("karpenter.k8s.aws/instance-category", corev1.NodeSelectorOpIn, "r")))
	for _, r := range results {
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	var capacities []int32
	for _, fl := range f.aws.Fleets() {
		capacities = append(capacities, fl.TotalTargetCapacity)
	}
	slices.Sort(capacities)
	if !slices.Equal(capacities, []int32{1, 2}) {
		t.Errorf("fleets of %v instances, want one of 2 and one of 1", capacities)
	}
	if c := results[2].claim.Labels["karpenter.k8s.aws/instance-category"]; c != "r" {
		t.Errorf("the r claim launched a %q instance", c)
	}
	got := readBatcherTotals(t, metrics.BatcherCreateFleet).since(before)
	if want := (batcherTotals{windows: 1, seconds: createFleetWindow.idle.Seconds(), calls: 2, size: 3}); got != want {
		t.Errorf("create_fleet histograms recorded %+v, want %+v", got, want)
	}
}

// TestPartlyFulfilledFleet: a shared fleet that launches fewer instances than asked for (its
// only pool has room for two of three) gives one to each of two claims; the third gets the
// fleet's InsufficientInstanceCapacity error, as an insufficient-capacity error, and the
// offering is marked unavailable.
func TestPartlyFulfilledFleet(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	clk := f.batchOnFakeClock()
	const typ, zone = "m5.large", "us-west-2a"
	f.aws.SetPoolCapacity(typ, zone, karpv1.CapacityTypeOnDemand, 2)
	only := []karpv1.NodeSelectorRequirementWithMinValues{
		req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, typ), req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone)}
	results := f.launchTogether(clk, claimFor(np, "general-purpose-1", nil, only...), claimFor(np, "general-purpose-2", nil, only...),
		claimFor(np, "general-purpose-3", nil, only...))

	fleets := f.aws.Fleets()
	if len(fleets) != 1 || fleets[0].TotalTargetCapacity != 3 || len(fleets[0].InstanceIDs) != 2 {
		t.Fatalf("fleets %+v, want one asking for 3 that launched 2", fleets)
	}
	if e := fleets[0].Errors; len(e) != 1 || e[0].Code != "InsufficientInstanceCapacity" || e[0].InstanceType != typ || e[0].Zone != zone {
		t.Errorf("fleet errors %+v", e)
	}
	var got []string
	for i, r := range results {
		switch {
		case r.err == nil:
			got = append(got, instanceIDOfClaim(t, r.claim))
		case !cloudprovider.IsInsufficientCapacityError(r.err):
			t.Errorf("claim %d: %v, want an instance or an insufficient capacity error", i+1, r.err)
		}
	}
	slices.Sort(got)
	if want := slices.Sorted(slices.Values(fleets[0].InstanceIDs)); !slices.Equal(got, want) {
		t.Errorf("the claims got instances %v, want one each of the fleet's %v (and an error for the third)", got, want)
	}
	if !f.provider.Unavailable().IsUnavailable(cloudprovider.OfferingID{InstanceType: typ, Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand}) {
		t.Error("the pool that ran out is not marked unavailable")
	}
}

// TestFailedFleetFailsEveryLaunch: when the shared CreateFleet call fails as a whole (here
// throttled past the retryer's attempts), every claim of the batch gets the error; the call
// was made once (with its retries), not once per claim.
func TestFailedFleetFailsEveryLaunch(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	clk := f.batchOnFakeClock()
	f.aws.Throttle("CreateFleet", MaxAttempts)
	before := f.aws.Calls("CreateFleet") // the NodeClass's launch check
	results := f.launchTogether(clk, claimFor(np, "general-purpose-1", nil), claimFor(np, "general-purpose-2", nil))
	for i, r := range results {
		if !cloudprovider.IsCreateError(r.err) || !strings.Contains(r.err.Error(), "RequestLimitExceeded") {
			t.Errorf("claim %d: %v, want a create error of the throttled call", i+1, r.err)
		}
	}
	if n := f.aws.Calls("CreateFleet") - before; n != MaxAttempts {
		t.Errorf("%d CreateFleet requests, want the %d attempts of one call", n, MaxAttempts)
	}
}

// TestDeletionsShareCalls: claims deleted together are read with one DescribeInstances call
// and terminated with one TerminateInstances call; the windows and batches are observed under
// batcher="describe_instances" and "terminate_instances".
func TestDeletionsShareCalls(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	clk := f.batchOnFakeClock()
	var claims []*karpv1.NodeClaim
	for i := range 3 {
		claims = append(claims, claimFor(np, fmt.Sprintf("general-purpose-%d", i), nil))
	}
	results := f.launchTogether(clk, claims...)
	describes, terminates := f.aws.Calls("DescribeInstances"), f.aws.Calls("TerminateInstances")
	describeBefore, terminateBefore := readBatcherTotals(t, metrics.BatcherDescribeInstances), readBatcherTotals(t, metrics.BatcherTerminateInstances)

	done := make(chan error, len(results))
	for _, r := range results {
		if r.err != nil {
			t.Fatal(r.err)
		}
		go func() { done <- f.provider.Delete(f.ctx, r.claim) }()
	}
	awaitWaiting(t, f.provider.batch.describeInstances, len(results))
	clk.Step(describeInstancesWindow.idle)
	awaitWaiting(t, f.provider.batch.terminateInstances, len(results))
	clk.Step(terminateInstancesWindow.idle)
	for range results {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := f.aws.Calls("DescribeInstances") - describes; n != 1 {
		t.Errorf("%d DescribeInstances calls, want 1", n)
	}
	if n := f.aws.Calls("TerminateInstances") - terminates; n != 1 {
		t.Errorf("%d TerminateInstances calls, want 1", n)
	}
	for _, r := range results {
		if inst, _ := f.aws.Instance(instanceIDOfClaim(t, r.claim)); inst.State != "terminated" {
			t.Errorf("%s: instance %s is %s", r.claim.Name, inst.ID, inst.State)
		}
	}
	want := batcherTotals{windows: 1, seconds: 0.1, calls: 1, size: 3}
	if got := readBatcherTotals(t, metrics.BatcherDescribeInstances).since(describeBefore); got != want {
		t.Errorf("describe_instances histograms recorded %+v, want %+v", got, want)
	}
	if got := readBatcherTotals(t, metrics.BatcherTerminateInstances).since(terminateBefore); got != want {
		t.Errorf("terminate_instances histograms recorded %+v, want %+v", got, want)
	}
}

// TestBatchedCallsFallBackOneByOne: a merged DescribeInstances or TerminateInstances call that
// fails as a whole (one of its instances does not exist) is made again for each instance
// alone, so the others still get their answer and only the unknown one its error.
func TestBatchedCallsFallBackOneByOne(t *testing.T) {
	f := newFixture(t)
	_, np := f.seed004()
	clk := f.batchOnFakeClock()
	results := f.launchTogether(clk, claimFor(np, "general-purpose-1", nil), claimFor(np, "general-purpose-2", nil))
	const unknown = "i-0123456789abcdef0"
	ids := []string{instanceIDOfClaim(t, results[0].claim), instanceIDOfClaim(t, results[1].claim), unknown}
	b := f.provider.batch

	type answer struct {
		id  string
		err error
	}
	together := func(action string, call func(id string) (string, error), pending func() int, window time.Duration) map[string]answer {
		t.Helper()
		calls := f.aws.Calls(action)
		done := make(chan answer, len(ids))
		for _, id := range ids {
			go func() {
				got, err := call(id)
				done <- answer{got, err}
			}()
		}
		deadline := time.Now().Add(time.Minute)
		for pending() < len(ids) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		clk.Step(window)
		out := map[string]answer{}
		for range ids {
			a := <-done
			out[a.id] = a
		}
		// The merged call, then each instance alone.
		if n := f.aws.Calls(action) - calls; n != 1+len(ids) {
			t.Errorf("%d %s calls, want %d", n, action, 1+len(ids))
		}
		return out
	}

	described := together("DescribeInstances", func(id string) (string, error) {
		out, err := b.DescribeInstances(f.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			return id, err
		}
		if found := instancesOf(out.Reservations); len(found) != 1 || found[0].id() != id {
			return id, fmt.Errorf("described %v", found)
		}
		return id, nil
	}, b.describeInstances.waiting, describeInstancesWindow.idle)
	terminated := together("TerminateInstances", func(id string) (string, error) {
		out, err := b.TerminateInstances(f.ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			return id, err
		}
		if c := out.TerminatingInstances; len(c) != 1 || aws.ToString(c[0].InstanceId) != id || c[0].CurrentState.Name != ec2types.InstanceStateNameShuttingDown {
			return id, fmt.Errorf("state changes %+v", c)
		}
		return id, nil
	}, b.terminateInstances.waiting, terminateInstancesWindow.idle)
	for what, answers := range map[string]map[string]answer{"describe": described, "terminate": terminated} {
		for _, id := range ids[:2] {
			if err := answers[id].err; err != nil {
				t.Errorf("%s %s: %v", what, id, err)
			}
		}
		if err := answers[unknown].err; !isNotFound(err) {
			t.Errorf("%s %s: %v, want not found", what, unknown, err)
		}
	}
}

// testBatcher is a batcher of ints on a fake clock: requests hash by hash(input), each gets
// its input times ten, and the inputs of each call are recorded.
type testBatcher struct {
	*batcher[int, int]
	t     *testing.T
	clk   *clocktesting.FakeClock
	calls chan []int
	// results are the answers to the requests, by input.
	results map[int]chan int
}

func newTestBatcher(t *testing.T, window batchWindow, hash func(int) uint64) *testBatcher {
	tb := &testBatcher{t: t, clk: clocktesting.NewFakeClock(time.Now()), calls: make(chan []int, 10), results: map[int]chan int{}}
	tb.batcher = newBatcher("test", window, func(in *int) uint64 { return hash(*in) },
		func(_ context.Context, inputs []*int) []batchResult[int] {
			var call []int
			var out []batchResult[int]
			for _, in := range inputs {
				call = append(call, *in)
				answer := *in * 10
				out = append(out, batchResult[int]{out: &answer})
			}
			tb.calls <- call
			return out
		}, tb.clk)
	return tb
}

// send makes request n and, unless inWindow is 0, waits until the open window holds it as
// its inWindow-th request.
func (tb *testBatcher) send(n, inWindow int) {
	tb.t.Helper()
	result := make(chan int, 1)
	tb.results[n] = result
	go func() {
		out, err := tb.add(context.Background(), &n)
		if err != nil {
			tb.t.Error(err)
			return
		}
		result <- *out
	}()
	if inWindow > 0 {
		awaitWaiting(tb.t, tb.batcher, inWindow)
	}
}

// step moves the clock on and waits until the window has measured its deadline again (it has
// a timer set) or closed (it holds no request).
func (tb *testBatcher) step(d time.Duration) {
	tb.t.Helper()
	tb.clk.Step(d)
	deadline := time.Now().Add(time.Minute)
	for !tb.clk.HasWaiters() && tb.waiting() > 0 {
		if time.Now().After(deadline) {
			tb.t.Fatal("the window neither set its timer again nor closed")
		}
		time.Sleep(time.Millisecond)
	}
}

// expectCalls waits for the calls and checks their inputs (calls sorted by first input) and
// each request's answer.
func (tb *testBatcher) expectCalls(want ...[]int) {
	tb.t.Helper()
	var got [][]int
	for range want {
		got = append(got, <-tb.calls)
	}
	slices.SortFunc(got, func(a, b []int) int { return a[0] - b[0] })
	if !slices.EqualFunc(got, want, slices.Equal) {
		tb.t.Errorf("calls %v, want %v", got, want)
	}
	for n, ch := range tb.results {
		if out := <-ch; out != n*10 {
			tb.t.Errorf("request %d got %d", n, out)
		}
	}
}

// TestBatchWindows: a window closes idle after its last request (each arrival moves that on),
// at its maximum after its first whatever keeps arriving, or as soon as it holds maxItems; its
// requests of the same hash go to one call in arrival order, each caller getting its own
// answer; the window's time and each call's size are observed under the batcher's name.
func TestBatchWindows(t *testing.T) {
	const idle, maxOpen = 35 * time.Millisecond, 100 * time.Millisecond
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	one := func(int) uint64 { return 0 }
	t.Run("idle after the last request", func(t *testing.T) {
		before := readBatcherTotals(t, "test")
		tb := newTestBatcher(t, batchWindow{idle: idle, max: maxOpen}, one)
		tb.send(1, 1)
		tb.step(ms(20))
		tb.send(2, 2)
		tb.step(ms(20)) // the first request's idle time is over, not the second's
		if n := tb.waiting(); n != 2 {
			t.Fatalf("the window closed %s after its first request, %s after its last", ms(40), ms(20))
		}
		tb.step(ms(15))
		tb.expectCalls([]int{1, 2})
		if got, want := readBatcherTotals(t, "test").since(before), (batcherTotals{windows: 1, seconds: 0.055, calls: 1, size: 2}); got != want {
			t.Errorf("histograms recorded %+v, want %+v", got, want)
		}
	})
	t.Run("at the maximum", func(t *testing.T) {
		tb := newTestBatcher(t, batchWindow{idle: idle, max: maxOpen}, one)
		tb.send(1, 1)
		for n := 2; n <= 4; n++ { // a request every 30ms keeps it from going idle
			tb.step(ms(30))
			tb.send(n, n)
		}
		tb.step(ms(10))
		tb.expectCalls([]int{1, 2, 3, 4})
	})
	t.Run("full", func(t *testing.T) {
		tb := newTestBatcher(t, batchWindow{idle: time.Hour, max: time.Hour, maxItems: 3}, one)
		tb.send(1, 1)
		tb.send(2, 2)
		tb.send(3, 0)
		tb.expectCalls([]int{1, 2, 3}) // no clock step
	})
	t.Run("one call per hash", func(t *testing.T) {
		before := readBatcherTotals(t, "test")
		tb := newTestBatcher(t, batchWindow{idle: idle, max: maxOpen}, func(n int) uint64 { return uint64(n % 2) })
		for n := 1; n <= 5; n++ {
			tb.send(n, n)
		}
		tb.step(idle)
		tb.expectCalls([]int{1, 3, 5}, []int{2, 4})
		if got, want := readBatcherTotals(t, "test").since(before), (batcherTotals{windows: 1, seconds: idle.Seconds(), calls: 2, size: 5}); got != want {
			t.Errorf("histograms recorded %+v, want %+v", got, want)
		}
	})
}

// TestHashAsSet: requests hash by content, whatever the order of their lists and maps; any
// difference of a field, a list element or a pointer set or not makes another hash.
func TestHashAsSet(t *testing.T) {
	fleet := func(mutate ...func(*ec2.CreateFleetInput)) *ec2.CreateFleetInput {
		in := &ec2.CreateFleetInput{
			Type: ec2types.FleetTypeInstant,
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1),
				DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
				LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("lt-a"), Version: aws.String("$Latest")},
				Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{
					{InstanceType: "m5.large", SubnetId: aws.String("subnet-a"), AvailabilityZone: aws.String("us-west-2a")},
					{InstanceType: "m5.large", SubnetId: aws.String("subnet-b"), AvailabilityZone: aws.String("us-west-2b")},
				},
			}},
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance,
				Tags: []ec2types.Tag{{Key: aws.String("a"), Value: aws.String("1")}, {Key: aws.String("b"), Value: aws.String("2")}}}},
		}
		for _, m := range mutate {
			m(in)
		}
		return in
	}
	base := hashAsSet(fleet())
	for _, tc := range []struct {
		name   string
		mutate func(*ec2.CreateFleetInput)
		same   bool
	}{
		{"identical", func(*ec2.CreateFleetInput) {}, true},
		{"overrides in another order", func(in *ec2.CreateFleetInput) { slices.Reverse(in.LaunchTemplateConfigs[0].Overrides) }, true},
		{"tags in another order", func(in *ec2.CreateFleetInput) { slices.Reverse(in.TagSpecifications[0].Tags) }, true},
		{"another tag value", func(in *ec2.CreateFleetInput) { in.TagSpecifications[0].Tags[0].Value = aws.String("3") }, false},
		{"an override less", func(in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].Overrides = in.LaunchTemplateConfigs[0].Overrides[:1]
		}, false},
		{"an override twice", func(in *ec2.CreateFleetInput) {
			o := in.LaunchTemplateConfigs[0].Overrides
			in.LaunchTemplateConfigs[0].Overrides = []ec2types.FleetLaunchTemplateOverridesRequest{o[0], o[0]}
		}, false},
		{"another capacity type", func(in *ec2.CreateFleetInput) {
			in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeSpot
		}, false},
		{"a context", func(in *ec2.CreateFleetInput) { in.Context = aws.String("") }, false},
		{"a valid-until time", func(in *ec2.CreateFleetInput) { in.ValidUntil = aws.Time(time.Unix(1, 0)) }, false},
	} {
		if got := hashAsSet(fleet(tc.mutate)) == base; got != tc.same {
			t.Errorf("%s: same hash %v, want %v", tc.name, got, tc.same)
		}
	}
	if a, b := hashAsSet(fleet(func(in *ec2.CreateFleetInput) { in.ValidUntil = aws.Time(time.Unix(1, 0)) })),
		hashAsSet(fleet(func(in *ec2.CreateFleetInput) { in.ValidUntil = aws.Time(time.Unix(2, 0)) })); a == b {
		t.Error("times one second apart hash alike")
	}
	filters := func(values ...string) []ec2types.Filter {
		return []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: values}}
	}
	if hashAsSet(filters("running", "pending")) != hashAsSet(filters("pending", "running")) || hashAsSet(filters("running")) == hashAsSet(filters("pending")) {
		t.Error("filters hash by their values, in any order")
	}
}
