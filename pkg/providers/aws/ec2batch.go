package aws

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// ec2BatchAPI is the EC2 API the batchers call.
type ec2BatchAPI interface {
	ec2.DescribeInstancesAPIClient
	CreateFleet(context.Context, *ec2.CreateFleetInput, ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error)
	TerminateInstances(context.Context, *ec2.TerminateInstancesInput, ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
}

// The windows of the batchers, Karpenter's: a launch waits at most a second for others like
// it, and 35ms after the last one; reads and terminations wait 100ms after the last.
var (
	createFleetWindow        = batchWindow{idle: 35 * time.Millisecond, max: time.Second, maxItems: 1000}
	describeInstancesWindow  = batchWindow{idle: 100 * time.Millisecond, max: time.Second, maxItems: 500}
	terminateInstancesWindow = batchWindow{idle: 100 * time.Millisecond, max: time.Second, maxItems: 500}
)

// ec2Batchers are the provider's way to launch, read and terminate single instances: each
// method takes a request for one instance, which the batcher merges with the like requests of
// other callers into one EC2 call, and returns that instance's part of the answer.
type ec2Batchers struct {
	createFleet        *batcher[ec2.CreateFleetInput, ec2.CreateFleetOutput]
	describeInstances  *batcher[ec2.DescribeInstancesInput, ec2.DescribeInstancesOutput]
	terminateInstances *batcher[ec2.TerminateInstancesInput, ec2.TerminateInstancesOutput]
}

// newEC2Batchers returns the batchers of the API, with windows on clk.
func newEC2Batchers(api ec2BatchAPI, clk clock.Clock) *ec2Batchers {
	return &ec2Batchers{
		// Only identical fleets merge.
		createFleet: newBatcher(metrics.BatcherCreateFleet, createFleetWindow,
			func(in *ec2.CreateFleetInput) uint64 { return hashAsSet(in) }, execCreateFleet(api), clk),
		// Reads merge when their filters are the same.
		describeInstances: newBatcher(metrics.BatcherDescribeInstances, describeInstancesWindow,
			func(in *ec2.DescribeInstancesInput) uint64 { return hashAsSet(in.Filters) }, execDescribeInstances(api), clk),
		// Terminations all merge.
		terminateInstances: newBatcher(metrics.BatcherTerminateInstances, terminateInstancesWindow,
			func(*ec2.TerminateInstancesInput) uint64 { return 0 }, execTerminateInstances(api), clk),
	}
}

// CreateFleet launches one instance (the input's TotalTargetCapacity must be 1) in a fleet
// shared with identical requests: the output holds this caller's instance, or, when the fleet
// launched fewer instances than it was asked for, none and the fleet's errors.
func (b *ec2Batchers) CreateFleet(ctx context.Context, in *ec2.CreateFleetInput) (*ec2.CreateFleetOutput, error) {
	if in.TargetCapacitySpecification == nil || aws.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity) != 1 {
		return nil, errors.New("batching a fleet request: it must ask for one instance")
	}
	return b.createFleet.add(ctx, in)
}

// DescribeInstances describes one instance (the input names exactly one), in a call shared
// with requests of the same filters.
func (b *ec2Batchers) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput) (*ec2.DescribeInstancesOutput, error) {
	if len(in.InstanceIds) != 1 {
		return nil, fmt.Errorf("batching a describe request: it must name one instance, not %d", len(in.InstanceIds))
	}
	return b.describeInstances.add(ctx, in)
}

// TerminateInstances terminates one instance (the input names exactly one), in a call shared
// with other terminations.
func (b *ec2Batchers) TerminateInstances(ctx context.Context, in *ec2.TerminateInstancesInput) (*ec2.TerminateInstancesOutput, error) {
	if len(in.InstanceIds) != 1 {
		return nil, fmt.Errorf("batching a terminate request: it must name one instance, not %d", len(in.InstanceIds))
	}
	return b.terminateInstances.add(ctx, in)
}

// tooFewInstancesCode is the fleet error given to the requests a fleet launched no instance
// for when it reported no error of its own (EC2 always reports one), as Karpenter words it.
const tooFewInstancesCode = "too few instances returned"

// execCreateFleet makes one fleet of the first input with a target capacity of one per input
// (the inputs are identical), then deals its instances out one per request, in order. Fleets
// may be partly fulfilled: the requests left without an instance get the fleet's errors (such
// as InsufficientInstanceCapacity for the pools that ran out) and no instance. A failed call
// fails every request.
func execCreateFleet(api ec2BatchAPI) func(context.Context, []*ec2.CreateFleetInput) []batchResult[ec2.CreateFleetOutput] {
	return func(ctx context.Context, inputs []*ec2.CreateFleetInput) []batchResult[ec2.CreateFleetOutput] {
		results := make([]batchResult[ec2.CreateFleetOutput], len(inputs))
		in := *inputs[0]
		capacity := *in.TargetCapacitySpecification
		capacity.TotalTargetCapacity = aws.Int32(int32(len(inputs)))
		in.TargetCapacitySpecification = &capacity
		out, err := api.CreateFleet(ctx, &in)
		if err != nil {
			for i := range results {
				results[i].err = err
			}
			return results
		}
		next := 0
		for _, fleetInstance := range out.Instances {
			for _, id := range fleetInstance.InstanceIds {
				if next == len(inputs) {
					log.FromContext(ctx).Error(fmt.Errorf("fleet %s launched more instances than asked for", aws.ToString(out.FleetId)), "ignoring instance", "instance-id", id)
					continue
				}
				one := fleetInstance
				one.InstanceIds = []string{id}
				results[next].out = &ec2.CreateFleetOutput{FleetId: out.FleetId, Errors: out.Errors, Instances: []ec2types.CreateFleetInstance{one},
					ResultMetadata: out.ResultMetadata}
				next++
			}
		}
		errs := out.Errors
		if next < len(inputs) && len(errs) == 0 {
			errs = []ec2types.CreateFleetError{{ErrorCode: aws.String(tooFewInstancesCode), ErrorMessage: aws.String(tooFewInstancesCode)}}
		}
		for ; next < len(inputs); next++ {
			results[next].out = &ec2.CreateFleetOutput{Errors: errs, ResultMetadata: out.ResultMetadata}
		}
		return results
	}
}

// execDescribeInstances describes the instances of every input (they share their filters) in
// one paginated call and gives each request the reservation of its instance. Instances the
// call did not return (it fails as a whole when one ID is unknown, and a zone's trouble can
// hide all of its instances) are described one by one, concurrently, each request getting
// that call's answer or error.
func execDescribeInstances(api ec2BatchAPI) func(context.Context, []*ec2.DescribeInstancesInput) []batchResult[ec2.DescribeInstancesOutput] {
	return func(ctx context.Context, inputs []*ec2.DescribeInstancesInput) []batchResult[ec2.DescribeInstancesOutput] {
		results := make([]batchResult[ec2.DescribeInstancesOutput], len(inputs))
		ids, byID := requestsByInstance(inputs, func(in *ec2.DescribeInstancesInput) string { return in.InstanceIds[0] })
		merged := *inputs[0]
		merged.InstanceIds = ids
		for pages := ec2.NewDescribeInstancesPaginator(api, &merged); pages.HasMorePages(); {
			page, err := pages.NextPage(ctx)
			if err != nil {
				break // described one by one below
			}
			for _, r := range page.Reservations {
				for _, inst := range r.Instances {
					for _, i := range byID[aws.ToString(inst.InstanceId)] {
						results[i].out = &ec2.DescribeInstancesOutput{ResultMetadata: page.ResultMetadata, Reservations: []ec2types.Reservation{{
							OwnerId: r.OwnerId, RequesterId: r.RequesterId, ReservationId: r.ReservationId, Instances: []ec2types.Instance{inst}}}}
					}
				}
			}
		}
		answerAlone(ids, byID, results, func(id string) (*ec2.DescribeInstancesOutput, error) {
			return api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: merged.Filters, InstanceIds: []string{id}})
		})
		return results
	}
}

// execTerminateInstances terminates the instances of every input in one call and gives each
// request the state change of its instance. Instances the call did not leave shutting down or
// terminated (it fails as a whole when one ID is unknown, and one protected instance can fail
// its zone's) are terminated one by one, concurrently, each request getting that call's
// answer or error.
func execTerminateInstances(api ec2BatchAPI) func(context.Context, []*ec2.TerminateInstancesInput) []batchResult[ec2.TerminateInstancesOutput] {
	return func(ctx context.Context, inputs []*ec2.TerminateInstancesInput) []batchResult[ec2.TerminateInstancesOutput] {
		results := make([]batchResult[ec2.TerminateInstancesOutput], len(inputs))
		ids, byID := requestsByInstance(inputs, func(in *ec2.TerminateInstancesInput) string { return in.InstanceIds[0] })
		merged := *inputs[0]
		merged.InstanceIds = ids
		out, err := api.TerminateInstances(ctx, &merged)
		if err != nil {
			log.FromContext(ctx).Error(err, "terminating instances together failed; terminating them one by one", "instances", len(merged.InstanceIds))
			out = &ec2.TerminateInstancesOutput{}
		}
		for _, change := range out.TerminatingInstances {
			if s := change.CurrentState; s == nil || s.Name != ec2types.InstanceStateNameShuttingDown && s.Name != ec2types.InstanceStateNameTerminated {
				continue
			}
			for _, i := range byID[aws.ToString(change.InstanceId)] {
				results[i].out = &ec2.TerminateInstancesOutput{TerminatingInstances: []ec2types.InstanceStateChange{change}, ResultMetadata: out.ResultMetadata}
			}
		}
		answerAlone(ids, byID, results, func(id string) (*ec2.TerminateInstancesOutput, error) {
			return api.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
		})
		return results
	}
}

// requestsByInstance are the instances the requests name, each once in the order of the
// requests, and the indexes of the requests that name each (several may name the same one).
func requestsByInstance[In any](inputs []*In, instance func(*In) string) (ids []string, byID map[string][]int) {
	byID = make(map[string][]int, len(inputs))
	for i, in := range inputs {
		id := instance(in)
		if _, seen := byID[id]; !seen {
			ids = append(ids, id)
		}
		byID[id] = append(byID[id], i)
	}
	return ids, byID
}

// answerAlone calls call for each of the instances whose requests the merged call left
// without an answer, concurrently, and gives those requests that call's answer or error.
func answerAlone[Out any](ids []string, byID map[string][]int, results []batchResult[Out], call func(id string) (*Out, error)) {
	var wg sync.WaitGroup
	for _, id := range ids {
		if results[byID[id][0]].out != nil {
			continue
		}
		wg.Go(func() {
			out, err := call(id)
			for _, i := range byID[id] {
				results[i] = batchResult[Out]{out: out, err: err}
			}
		})
	}
	wg.Wait()
}
