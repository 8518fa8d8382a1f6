package operator_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/openkarpenter/karpenter/pkg/operator"
)

// TestValidateSimFaults: every fault setting of the simulated cloud out of range is reported,
// naming its flag and environment variable; the ranges' ends are accepted.
func TestValidateSimFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*operator.SimOptions)
		want   string // empty: valid
	}{
		{"all at their ends", func(o *operator.SimOptions) {
			o.LaunchErrorRate, o.APIThrottleRate, o.InstanceLossRate, o.LaunchJitter = 1, 1, 1000, time.Hour
		}, ""},
		{"launch error rate above 1", func(o *operator.SimOptions) { o.LaunchErrorRate = 1.01 }, "--sim-launch-error-rate (SIM_LAUNCH_ERROR_RATE) 1.01: must be a share in [0, 1]"},
		{"launch error rate NaN", func(o *operator.SimOptions) { o.LaunchErrorRate = math.NaN() }, "--sim-launch-error-rate (SIM_LAUNCH_ERROR_RATE) NaN"},
		{"negative throttle rate", func(o *operator.SimOptions) { o.APIThrottleRate = -0.5 }, "--sim-api-throttle-rate (SIM_API_THROTTLE_RATE) -0.5: must be a share in [0, 1]"},
		{"negative jitter", func(o *operator.SimOptions) { o.LaunchJitter = -time.Second }, "--sim-launch-jitter (SIM_LAUNCH_JITTER) -1s: must not be negative"},
		{"infinite loss rate", func(o *operator.SimOptions) { o.InstanceLossRate = math.Inf(1) }, "--sim-instance-loss-rate (SIM_INSTANCE_LOSS_RATE) +Inf: must be a non-negative number"},
		{"negative node failure rate", func(o *operator.SimOptions) { o.NodeFailureRate = -1 }, "--sim-node-failure-rate (SIM_NODE_FAILURE_RATE) -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := operator.DefaultOptions()
			tc.change(&opts.Sim)
			err := opts.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestSimFaultsReachTheCloud: the controller's simulated cloud injects the faults its options
// ask for: at a throttle rate of 1 every call is refused with RequestLimitExceeded.
func TestSimFaultsReachTheCloud(t *testing.T) {
	opts := operator.DefaultOptions()
	opts.LeaderElection = false
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.SkipControllerNameValidation = true
	opts.Sim.APIThrottleRate = 1
	op, err := operator.New(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.Sim.List(t.Context()); err == nil || !strings.Contains(err.Error(), "RequestLimitExceeded") {
		t.Errorf("List at a throttle rate of 1 = %v, want RequestLimitExceeded", err)
	}
}

// TestLeaderElectionName: the Lease's name defaults to Karpenter's and may be changed
// (LEADER_ELECTION_NAME), but not emptied.
func TestLeaderElectionName(t *testing.T) {
	opts := operator.DefaultOptions()
	if opts.LeaderElectionName != "karpenter-leader-election" {
		t.Errorf("default Lease name %q, want Karpenter's karpenter-leader-election", opts.LeaderElectionName)
	}
	opts.LeaderElectionName = ""
	if err := opts.Validate(); err == nil || !strings.Contains(err.Error(), "--leader-election-name (LEADER_ELECTION_NAME)") {
		t.Errorf("an empty Lease name: %v", err)
	}
}

// TestScaledReconciles: concurrency grows with CPU_REQUESTS as Karpenter v1.15.0 scales it
// (pkg/utils/controller/controller.go LinearScaleReconciles with CPUCount): the minimum at up to
// one core, the maximum from sixty, linear between on whole cores.
func TestScaledReconciles(t *testing.T) {
	for _, tc := range []struct {
		millicores int64
		want       int
	}{{-5, 100}, {0, 100}, {100, 100}, {1000, 100}, {1001, 183}, {2000, 183}, {30000, 2508}, {60000, 5000}, {96000, 5000}} {
		opts := operator.DefaultOptions()
		opts.CPURequests = tc.millicores
		if got := opts.ScaledReconciles(100, 5000); got != tc.want {
			t.Errorf("CPURequests %d: %d reconciles, want %d", tc.millicores, got, tc.want)
		}
	}
}
