package operator

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"

	"github.com/openkarpenter/karpenter/pkg/featuregate"
	awsprovider "github.com/openkarpenter/karpenter/pkg/providers/aws"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// Cloud provider names.
const (
	CloudProviderSim = "sim"
	CloudProviderAWS = "aws"
)

// Options configure the controller process. The zero value is not valid (CloudProvider is
// required); DefaultOptions gives Karpenter's defaults.
type Options struct {
	// CloudProvider is "sim" or "aws".
	CloudProvider string
	// ClusterName names the cluster (tags, instance profiles).
	ClusterName string
	// BatchIdleDuration and BatchMaxDuration are the provisioner's batching windows.
	BatchIdleDuration, BatchMaxDuration time.Duration
	// PreferencePolicy is "Respect" (try preferences, relax them one by one) or "Ignore".
	PreferencePolicy string
	// MinValuesPolicy is "Strict" or "BestEffort".
	MinValuesPolicy string
	// MetricsBindAddress and HealthProbeBindAddress serve /metrics and /healthz, /readyz; "0"
	// disables them.
	MetricsBindAddress, HealthProbeBindAddress string
	// LeaderElection makes only one replica act at a time; LeaderElectionNamespace holds the
	// Lease (defaults to the namespace the process runs in).
	LeaderElection          bool
	LeaderElectionNamespace string
	// LeaderElectionName names the Lease (LEADER_ELECTION_NAME, as Karpenter names it; default
	// LeaderElectionID).
	LeaderElectionName string
	// EnableProfiling serves Go's pprof profiles under /debug/pprof/ on the metrics address
	// (ENABLE_PROFILING, as Karpenter names it).
	EnableProfiling bool
	// MemoryLimit, when positive, is the container's memory limit in bytes (MEMORY_LIMIT, which
	// Karpenter's chart sets from it): the Go runtime's soft memory limit is set to 90% of it,
	// as Karpenter does, so the collector works harder before the container is killed.
	MemoryLimit int64
	// CPURequests is the controller container's CPU request in millicores (CPU_REQUESTS, which
	// Karpenter's chart sets from it; default 1000, which a value of zero or less also means, as
	// in Karpenter's options Parse). As in Karpenter, controllers that work on many objects at
	// once scale their concurrent reconciles with it (ScaledReconciles).
	CPURequests int64
	// ControllerWarmup starts the controllers' watches before this replica wins the leader
	// election, so that a new leader's caches are already full (Karpenter's
	// DISABLE_CONTROLLER_WARMUP=false; off by default, as there). It has no effect without
	// leader election.
	ControllerWarmup bool
	// LegacyNodeRepair runs, with NodeRepair, Karpenter's legacy node repair controller
	// (package repair, with the cloud's legacy policies) instead of repair as a disruption
	// method (--legacy-node-repair, LEGACY_NODE_REPAIR; off by default, as in Karpenter v1.15).
	LegacyNodeRepair bool
	// RegistrationTTL is how long a NodeClaim may take to register before it is replaced.
	RegistrationTTL time.Duration
	// SpotToSpotConsolidation lets consolidation replace a spot node with a cheaper spot node
	// (the feature gate of that name in FEATURE_GATES).
	SpotToSpotConsolidation bool
	// RepackConsolidation turns on re-pack consolidation, this project's own (the gate of that
	// name in FEATURE_GATES; off by default, as it is not Karpenter's).
	RepackConsolidation bool
	// StaticCapacity keeps static NodePools (spec.replicas set) at their size (the feature gate
	// of that name in FEATURE_GATES). Off, as by Karpenter's default, they get no nodes and a
	// Warning event (StaticCapacityDisabled) says why.
	StaticCapacity bool
	// NodeRepair repairs the nodes whose conditions match one of the cloud provider's repair
	// policies for longer than it tolerates (the feature gate of that name in FEATURE_GATES): as
	// a disruption method (package disruption, MethodRepair), or with LegacyNodeRepair the
	// legacy controller (package repair).
	NodeRepair bool
	// TerminateFirstRepair lets node repair terminate a node before its replacement when the
	// replacement cannot launch first (the feature gate of that name in FEATURE_GATES): here a
	// node of a static NodePool at its limits.nodes.
	TerminateFirstRepair bool
	// RebootForRepair is the AWS provider's gate (AWS_FEATURE_GATES): repair reboots a node
	// for the faults a reboot clears, on AWS and on the simulated cloud, which plays EC2.
	RebootForRepair bool
	// TerminateFirstDrift lets drift terminate a node before its replacement when the
	// replacement cannot launch first (the feature gate of that name in FEATURE_GATES): here a
	// drifted node of a static NodePool at its limits.nodes.
	TerminateFirstDrift bool
	// NodeOverlay applies the cluster's NodeOverlays to the instance types every controller
	// sees and the cloud launches (the feature gate of that name in FEATURE_GATES; package
	// nodeoverlay). Off, as by Karpenter's default, they are not read.
	NodeOverlay bool
	// CapacityBuffer keeps the spare capacity CapacityBuffers ask for (the feature gate of that
	// name in FEATURE_GATES; package capacitybuffer).
	CapacityBuffer bool
	// PodDeletionCostManagement writes controller.kubernetes.io/pod-deletion-cost on the
	// ReplicaSet pods of the nodes consolidation would disrupt first, and stops reading it as a
	// pod's cost (the feature gate of that name in FEATURE_GATES; package deletioncost).
	PodDeletionCostManagement bool
	// ReservedCapacity launches into the EC2 capacity reservations an EC2NodeClass selects (the
	// feature gate of that name in FEATURE_GATES, on by default as in Karpenter v1.15), on the
	// AWS cloud; off, the selector terms are ignored, as in Karpenter.
	ReservedCapacity bool
	// NodeClassCEL evaluates the CEL expressions of an EC2NodeClass's spec.kubelet per instance
	// type (the AWS provider's feature gate of that name in AWS_FEATURE_GATES), on either cloud;
	// a Sim.Cloud given ready-made keeps its own setting. Off, as by default, a NodeClass with
	// one is not Ready.
	NodeClassCEL bool
	// DRANVIDIAGPU and DRAEFA are the AWS provider's DRA gates (AWS_FEATURE_GATES). Karpenter's
	// fill the instance types' DRA devices for DRA scheduling, which runs only with
	// IGNORE_DRA_REQUESTS=false, not built here: as in Karpenter with IGNORE_DRA_REQUESTS=true
	// (its default), they change no scheduling. DRANVIDIAGPU lets an EC2NodeClass ask for GPU
	// sharing (karpenter.k8s.aws/nvidia-consumable-capacity).
	DRANVIDIAGPU, DRAEFA bool
	// SchedulerConfig is Karpenter's --scheduler-config (SCHEDULER_CONFIG): the kube-scheduler's
	// default topology spread constraints, which every pod with none of its own is scheduled
	// under in provisioning and disruption (state.ParseSchedulerConfig, state.Cluster's
	// DefaultConstraints). Empty, as by default, there are none.
	SchedulerConfig string
	// DisableClusterStateObservability leaves out the cluster state gauges and the pod startup
	// metrics (DISABLE_CLUSTER_STATE_OBSERVABILITY, as Karpenter names it).
	DisableClusterStateObservability bool
	// DisruptionPollInterval and ConsolidationValidationDelay tune the disruption controller
	// (zero means its defaults, 10s and 15s); tests shorten them.
	DisruptionPollInterval, ConsolidationValidationDelay time.Duration
	// KubeClientQPS and KubeClientBurst bound the requests to the API server.
	KubeClientQPS   float32
	KubeClientBurst int
	// Sim configures the simulated cloud.
	Sim SimOptions
	// AWS configures the AWS cloud.
	AWS AWSOptions
	// SkipControllerNameValidation allows several operators in one process (tests, the
	// simulator's comparisons); controller names must otherwise be unique per process.
	SkipControllerNameValidation bool
}

// SimOptions configure the simulated cloud provider.
type SimOptions struct {
	// Seed makes the simulated cloud's choices reproducible.
	Seed int64
	// LaunchLatency is the time from launch until the instance's node registers.
	LaunchLatency time.Duration
	// ReadyDelay is the time from registration until the node is Ready.
	ReadyDelay time.Duration
	// StartupTaintDelay is the time from the node being Ready until its NodeClaim's startup
	// taints are lifted, as the agents they wait for (a CNI such as Cilium) would.
	StartupTaintDelay time.Duration
	// Zones are the simulated availability zones (default us-east-1a/b/c).
	Zones []string
	// MarkPodsRunning makes the simulated kubelet report bound pods Running.
	MarkPodsRunning bool
	// RegisterWithTaints are taints every simulated Node registers with beyond its claim's
	// (sim.KubeletOptions.RegisterWithTaints), for tests of nodes that cannot take their pods.
	RegisterWithTaints []corev1.Taint
	// StateConfigMap names the ConfigMap (in the leader election namespace) that keeps the
	// simulated instances, so that a restarted or newly elected replica finds them; empty keeps
	// them in memory only.
	StateConfigMap string
	// NodeFailureRate is the expected number of node failures per simulated node-hour
	// (sim.FaultPlan.NodeFailureRate): a failed node reports Ready Unknown, for node repair to
	// replace.
	NodeFailureRate float64
	// LaunchErrorRate is the share of launches that fail with a retryable error
	// (sim.FaultPlan.CreateErrorRate), in [0, 1].
	LaunchErrorRate float64
	// LaunchJitter adds a uniformly random delay in [0, LaunchJitter) to each launch's latency
	// (sim.FaultPlan.LaunchJitter).
	LaunchJitter time.Duration
	// InstanceLossRate is the expected number of instances vanishing out of band per
	// instance-hour (sim.FaultPlan.InstanceLossRate); their loss times are kept in the state
	// ConfigMap, so a restarted controller agrees on them.
	InstanceLossRate float64
	// APIThrottleRate is the share of cloud API calls refused with a retryable
	// RequestLimitExceeded error before doing anything (sim.FaultPlan.ThrottleRate), in [0, 1].
	APIThrottleRate float64
	// Cloud, when set, is used instead of a new simulated cloud: the cloud outlives a
	// controller restart, and tests and the simulator configure its faults and capacity.
	Cloud *sim.Cloud
}

// AWSOptions configure the AWS cloud provider; their flags and environment variables are named
// as in Karpenter's Helm chart.
type AWSOptions struct {
	// ClusterEndpoint is the API server URL nodes join (CLUSTER_ENDPOINT); empty means EKS's.
	ClusterEndpoint string
	// ClusterCABundle is the base64 PEM of the cluster CA given to nodes (CLUSTER_CA_BUNDLE);
	// empty means the kubeconfig's, else EKS's.
	ClusterCABundle string
	// InterruptionQueue is the SQS queue of interruption events (INTERRUPTION_QUEUE); empty
	// disables interruption handling.
	InterruptionQueue string
	// IsolatedVPC skips the Pricing API (ISOLATED_VPC).
	IsolatedVPC bool
	// ReservedENIs are network interfaces kept from pods (RESERVED_ENIS).
	ReservedENIs int
	// VMMemoryOverheadPercent is memory lost to virtualization (VM_MEMORY_OVERHEAD_PERCENT).
	VMMemoryOverheadPercent float64
	// EKSControlPlane reads the cluster's Kubernetes version from EKS DescribeCluster rather
	// than from the API server (EKS_CONTROL_PLANE).
	EKSControlPlane bool
	// Refresh is how often an EC2NodeClass's images, subnets and security groups are read from
	// EC2 again (AMI_REFRESH_INTERVAL, SUBNET_REFRESH_INTERVAL, SECURITY_GROUP_REFRESH_INTERVAL;
	// default and minimum one minute, as in Karpenter).
	Refresh awsprovider.RefreshIntervals
	// DisableDryRun skips the launch check of EC2NodeClass validation (DISABLE_DRY_RUN), as in
	// Karpenter: false (the default) makes a NodeClass Ready only once the controller may
	// create its launch template and dry-run a CreateFleet and a RunInstances from it
	// (ValidationSucceeded False with CreateLaunchTemplateAuthCheckFailed,
	// CreateFleetAuthCheckFailed or RunInstancesAuthCheckFailed otherwise); true makes no
	// such call, so a missing permission shows only when a launch fails.
	DisableDryRun bool
	// EnableZonalShift honours the cluster's Amazon Application Recovery Controller zonal
	// shifts (ENABLE_ZONAL_SHIFT), as the AWS provider v1.15.2: at start the cluster must be a
	// resource ARC zonal shift manages (else the controller stops); every 30 seconds its shifts
	// are read, offerings in a zone traffic is shifted away from are unavailable, no instance
	// there is terminated, rebooted or tagged, and the NodePools that may launch there get a
	// ZonalShiftActive (then ZonalShiftCleared) Event. The simulated cloud has no zonal shifts:
	// it is refused there.
	EnableZonalShift bool
	// Config, when set, is used instead of the SDK's default configuration chain (tests point
	// it at an in-process far end).
	Config *aws.Config
}

// DefaultOptions are Karpenter's defaults, on the simulated cloud; the feature gates are at
// Karpenter's defaults (package featuregate).
func DefaultOptions() Options {
	gates := featuregate.Karpenter.Defaults()
	return Options{
		SpotToSpotConsolidation:   gates.Enabled(featuregate.SpotToSpotConsolidation),
		RepackConsolidation:       gates.Enabled(featuregate.RepackConsolidation),
		StaticCapacity:            gates.Enabled(featuregate.StaticCapacity),
		NodeRepair:                gates.Enabled(featuregate.NodeRepair),
		TerminateFirstRepair:      gates.Enabled(featuregate.TerminateFirstRepair),
		TerminateFirstDrift:       gates.Enabled(featuregate.TerminateFirstDrift),
		NodeOverlay:               gates.Enabled(featuregate.NodeOverlay),
		CapacityBuffer:            gates.Enabled(featuregate.CapacityBuffer),
		PodDeletionCostManagement: gates.Enabled(featuregate.PodDeletionCostManagement),
		ReservedCapacity:          gates.Enabled(featuregate.ReservedCapacity),
		NodeClassCEL:              featuregate.AWS.Defaults().Enabled(featuregate.NodeClassCEL),
		CloudProvider:             CloudProviderSim,
		BatchIdleDuration:         time.Second,
		BatchMaxDuration:          10 * time.Second,
		PreferencePolicy:          "Respect",
		MinValuesPolicy:           "Strict",
		MetricsBindAddress:        ":8080",
		HealthProbeBindAddress:    ":8081",
		LeaderElection:            true,
		LeaderElectionName:        LeaderElectionID,
		MemoryLimit:               -1,
		CPURequests:               1000,
		RegistrationTTL:           15 * time.Minute,
		KubeClientQPS:             200,
		KubeClientBurst:           300,
		Sim:                       SimOptions{LaunchLatency: 5 * time.Second, ReadyDelay: 5 * time.Second, StartupTaintDelay: sim.DefaultStartupTaintDelay, MarkPodsRunning: true},
		AWS:                       AWSOptions{VMMemoryOverheadPercent: 0.075, Refresh: awsprovider.DefaultRefreshIntervals},
	}
}

// Validate reports every invalid option, naming the flag and environment variable to fix.
func (o Options) Validate() error {
	var errs []error
	switch o.CloudProvider {
	case CloudProviderSim:
		if o.AWS.EnableZonalShift {
			errs = append(errs, errors.New("--enable-zonal-shift (ENABLE_ZONAL_SHIFT): ARC zonal shifts are AWS's, and the simulated cloud has none; leave it false, or use --cloud-provider aws"))
		}
	case CloudProviderAWS:
		if o.ClusterName == "" {
			errs = append(errs, errors.New("--cluster-name (CLUSTER_NAME) is required with --cloud-provider aws"))
		}
		if o.AWS.ReservedENIs < 0 {
			errs = append(errs, fmt.Errorf("--reserved-enis (RESERVED_ENIS) %d: must not be negative", o.AWS.ReservedENIs))
		}
		if v := o.AWS.VMMemoryOverheadPercent; v < 0 || v >= 1 {
			errs = append(errs, fmt.Errorf("--vm-memory-overhead-percent (VM_MEMORY_OVERHEAD_PERCENT) %v: must be a fraction in [0, 1), such as 0.075", v))
		}
		if err := o.AWS.Refresh.Validate(); err != nil {
			errs = append(errs, err)
		}
	default:
		errs = append(errs, fmt.Errorf("--cloud-provider %q: must be %q or %q", o.CloudProvider, CloudProviderSim, CloudProviderAWS))
	}
	if o.BatchIdleDuration <= 0 {
		errs = append(errs, fmt.Errorf("--batch-idle-duration (BATCH_IDLE_DURATION) %s: must be positive", o.BatchIdleDuration))
	}
	if o.BatchMaxDuration < o.BatchIdleDuration {
		errs = append(errs, fmt.Errorf("--batch-max-duration (BATCH_MAX_DURATION) %s: must be at least the idle duration %s", o.BatchMaxDuration, o.BatchIdleDuration))
	}
	if o.PreferencePolicy != "Respect" && o.PreferencePolicy != "Ignore" {
		errs = append(errs, fmt.Errorf("--preference-policy (PREFERENCE_POLICY) %q: must be Respect or Ignore", o.PreferencePolicy))
	}
	if o.MinValuesPolicy != "Strict" && o.MinValuesPolicy != "BestEffort" {
		errs = append(errs, fmt.Errorf("--min-values-policy (MIN_VALUES_POLICY) %q: must be Strict or BestEffort", o.MinValuesPolicy))
	}
	if o.KubeClientQPS <= 0 || o.KubeClientBurst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-client-qps (KUBE_CLIENT_QPS) %v and --kube-client-burst (KUBE_CLIENT_BURST) %d: must be positive", o.KubeClientQPS, o.KubeClientBurst))
	}
	if o.LeaderElectionName == "" {
		errs = append(errs, fmt.Errorf("--leader-election-name (LEADER_ELECTION_NAME): must not be empty (Karpenter's default is %q)", LeaderElectionID))
	}
	if o.RegistrationTTL <= 0 {
		errs = append(errs, fmt.Errorf("--registration-ttl %s: must be positive", o.RegistrationTTL))
	}
	if _, err := state.ParseSchedulerConfig(o.SchedulerConfig); err != nil {
		errs = append(errs, fmt.Errorf("--scheduler-config (SCHEDULER_CONFIG): %w", err))
	}
	if o.DisruptionPollInterval < 0 || o.ConsolidationValidationDelay < 0 {
		errs = append(errs, errors.New("the disruption poll interval and consolidation validation delay must not be negative"))
	}
	for _, r := range []struct {
		flag, env string
		rate      float64
	}{
		{"--sim-node-failure-rate", "SIM_NODE_FAILURE_RATE", o.Sim.NodeFailureRate},
		{"--sim-instance-loss-rate", "SIM_INSTANCE_LOSS_RATE", o.Sim.InstanceLossRate},
	} {
		if math.IsNaN(r.rate) || math.IsInf(r.rate, 0) || r.rate < 0 {
			errs = append(errs, fmt.Errorf("%s (%s) %v: must be a non-negative number of events per instance-hour", r.flag, r.env, r.rate))
		}
	}
	for _, r := range []struct {
		flag, env string
		share     float64
	}{
		{"--sim-launch-error-rate", "SIM_LAUNCH_ERROR_RATE", o.Sim.LaunchErrorRate},
		{"--sim-api-throttle-rate", "SIM_API_THROTTLE_RATE", o.Sim.APIThrottleRate},
	} {
		if math.IsNaN(r.share) || r.share < 0 || r.share > 1 {
			errs = append(errs, fmt.Errorf("%s (%s) %v: must be a share in [0, 1], such as 0.2", r.flag, r.env, r.share))
		}
	}
	if o.Sim.LaunchJitter < 0 {
		errs = append(errs, fmt.Errorf("--sim-launch-jitter (SIM_LAUNCH_JITTER) %s: must not be negative", o.Sim.LaunchJitter))
	}
	if o.Sim.LaunchLatency < 0 || o.Sim.ReadyDelay < 0 || o.Sim.StartupTaintDelay < 0 {
		errs = append(errs, errors.New("--sim-launch-latency, --sim-ready-delay and --sim-startup-taint-delay must not be negative"))
	}
	return errors.Join(errs...)
}

// ScaledReconciles is how many reconciles a controller runs at once for CPURequests, scaled
// as Karpenter scales it (utils/controller.LinearScaleReconciles in v1.15.0): minimum at one
// core, maximum at sixty, linear between.
func (o Options) ScaledReconciles(minimum, maximum int) int {
	millicores := o.CPURequests
	if millicores <= 0 {
		millicores = 1000
	}
	cores := int(math.Ceil(float64(millicores) / 1000))
	n := minimum + int(float64(maximum-minimum)/59*float64(cores-1))
	return min(max(n, minimum), maximum)
}

// faultPlan is the simulated cloud's fault plan the options ask for.
func (o SimOptions) faultPlan() sim.FaultPlan {
	return sim.FaultPlan{
		NodeFailureRate:  o.NodeFailureRate,
		CreateErrorRate:  o.LaunchErrorRate,
		LaunchJitter:     o.LaunchJitter,
		InstanceLossRate: o.InstanceLossRate,
		ThrottleRate:     o.APIThrottleRate,
	}
}
