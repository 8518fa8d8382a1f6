package cloudprovider_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

func TestTypedErrorsThroughWrapping(t *testing.T) {
	cause := errors.New("InvalidInstanceID.NotFound")
	ice := cloudprovider.NewInsufficientCapacityError(cause,
		cloudprovider.OfferingID{InstanceType: "m5.large", Zone: "us-east-1b", CapacityType: "spot"},
		cloudprovider.OfferingID{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot"},
	)
	errs := map[string]error{
		"not found":  cloudprovider.NewNodeClaimNotFoundError(cause),
		"ice":        ice,
		"not ready":  cloudprovider.NewNodeClassNotReadyError(nil),
		"create":     cloudprovider.NewCreateError(cause, "LaunchFailed", "launch template missing"),
		"terminal":   cloudprovider.NewTerminalCreateError(nil, "NoCompatibleInstanceTypes", "no instance type fits"),
		"plain":      cause,
		"nil":        nil,
		"joined ice": errors.Join(errors.New("other"), ice),
		"double-wrapped": fmt.Errorf("launching nodeclaim: %w", fmt.Errorf("creating fleet: %w",
			cloudprovider.NewNodeClaimNotFoundError(nil))),
	}
	type is struct{ notFound, ice, notReady, create, terminal, retryable bool }
	want := map[string]is{
		"not found":      {notFound: true, retryable: true},
		"ice":            {ice: true, retryable: true},
		"not ready":      {notReady: true, retryable: true},
		"create":         {create: true, retryable: true},
		"terminal":       {create: true, terminal: true},
		"plain":          {retryable: true},
		"nil":            {},
		"joined ice":     {ice: true, retryable: true},
		"double-wrapped": {notFound: true, retryable: true},
	}
	for name, err := range errs {
		for _, wrapped := range []error{err, fmt.Errorf("reconciling: %w", err)} {
			if err == nil {
				wrapped = nil
			}
			got := is{
				notFound:  cloudprovider.IsNodeClaimNotFoundError(wrapped),
				ice:       cloudprovider.IsInsufficientCapacityError(wrapped),
				notReady:  cloudprovider.IsNodeClassNotReadyError(wrapped),
				create:    cloudprovider.IsCreateError(wrapped),
				terminal:  cloudprovider.IsTerminalCreateError(wrapped),
				retryable: cloudprovider.IsRetryable(wrapped),
			}
			if got != want[name] {
				t.Errorf("%s (%v): got %+v, want %+v", name, wrapped, got, want[name])
			}
		}
	}

	if err := cloudprovider.IgnoreNodeClaimNotFoundError(fmt.Errorf("deleting: %w", cloudprovider.NewNodeClaimNotFoundError(nil))); err != nil {
		t.Errorf("IgnoreNodeClaimNotFoundError(not found) = %v", err)
	}
	if err := cloudprovider.IgnoreNodeClaimNotFoundError(cause); err != cause {
		t.Errorf("IgnoreNodeClaimNotFoundError(other) = %v", err)
	}
	if !errors.Is(errs["create"], cause) {
		t.Error("CreateError does not unwrap to its cause")
	}
	var target *cloudprovider.CreateError
	if !errors.As(fmt.Errorf("x: %w", errs["terminal"]), &target) || target.ConditionReason != "NoCompatibleInstanceTypes" {
		t.Errorf("errors.As CreateError: %+v", target)
	}
}

func TestInsufficientCapacityOfferings(t *testing.T) {
	a := cloudprovider.OfferingID{InstanceType: "c5.large", Zone: "us-east-1a", CapacityType: "spot"}
	b := cloudprovider.OfferingID{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand"}
	c := cloudprovider.OfferingID{InstanceType: "m5.large", Zone: "us-east-1b", CapacityType: "spot"}
	err := fmt.Errorf("launching: %w", errors.Join(
		cloudprovider.NewInsufficientCapacityError(nil, c, a),
		fmt.Errorf("fleet: %w", cloudprovider.NewInsufficientCapacityError(errors.New("boom"), b, a)),
	))
	if got, want := cloudprovider.InsufficientCapacityOfferings(err), []cloudprovider.OfferingID{a, b, c}; !reflect.DeepEqual(got, want) {
		t.Errorf("InsufficientCapacityOfferings = %v, want %v", got, want)
	}
	if got := cloudprovider.InsufficientCapacityOfferings(errors.New("x")); got != nil {
		t.Errorf("no ICE: %v", got)
	}
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) || len(ice.Offerings) != 2 || ice.Offerings[0] != a {
		t.Errorf("errors.As: %+v", ice)
	}
}

func TestErrorMessages(t *testing.T) {
	var ids []cloudprovider.OfferingID
	for _, z := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		ids = append(ids, cloudprovider.OfferingID{InstanceType: "m5.large", Zone: "us-east-1" + z, CapacityType: "spot"})
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{cloudprovider.NewNodeClaimNotFoundError(nil), "nodeclaim not found"},
		{cloudprovider.NewNodeClaimNotFoundError(errors.New("i-123 terminated")), "nodeclaim not found: i-123 terminated"},
		{cloudprovider.NewNodeClassNotReadyError(errors.New("no subnets")), "nodeclass not ready: no subnets"},
		{cloudprovider.NewInsufficientCapacityError(nil, ids[1], ids[0]), "insufficient capacity for m5.large/us-east-1a/spot, m5.large/us-east-1b/spot"},
		{cloudprovider.NewInsufficientCapacityError(errors.New("InsufficientInstanceCapacity"), ids...),
			"insufficient capacity for m5.large/us-east-1a/spot, m5.large/us-east-1b/spot, m5.large/us-east-1c/spot, m5.large/us-east-1d/spot, m5.large/us-east-1e/spot and 2 more: InsufficientInstanceCapacity"},
		{cloudprovider.NewCreateError(errors.New("throttled"), "Throttled", "request limit"), "creating instance: request limit: throttled"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}
