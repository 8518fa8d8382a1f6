package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/openkarpenter/karpenter/pkg/featuregate"
	"github.com/openkarpenter/karpenter/pkg/operator"
)

func newControllerCommand() *cobra.Command {
	opts := operator.DefaultOptions()
	var logLevel, logOutputPaths, logErrorOutputPaths, kubeconfig, featureGates, awsFeatureGates string
	// Karpenter's own names for three settings, so its values and environments work as they are.
	var metricsPort, healthProbePort int
	var disableLeaderElection, disableControllerWarmup bool
	// KARPENTER_SERVICE is read, as Karpenter reads it, and used by neither.
	var karpenterService string
	var unbuilt unbuiltSettings
	var fs *envFlags
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the controllers against a cluster (provisioning, node lifecycle, disruption, termination)",
		Long: `Run Karpenter's controllers against the cluster of the current kubeconfig (or the in-cluster
config). Every flag can also be set by the environment variable named in its help, the names
Karpenter's Helm chart uses.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fs.err(); err != nil {
				return usageError{err}
			}
			// Feature gates first: a gate whose feature is not built stops the controller before
			// it does anything.
			unknownGates, err := applyFeatureGates(&opts, featureGates, awsFeatureGates)
			if err != nil {
				return usageError{err}
			}
			if err := refuseUnbuiltSettings(unbuilt); err != nil {
				return usageError{err}
			}
			opts.ControllerWarmup = !disableControllerWarmup
			if err := applyKarpenterAliases(&opts, metricsPort, healthProbePort, disableLeaderElection); err != nil {
				return usageError{err}
			}
			if err := opts.Validate(); err != nil {
				return usageError{fmt.Errorf("invalid settings:\n%w", err)}
			}
			level, err := parseLogLevel(logLevel)
			if err != nil {
				return usageError{err}
			}
			logger, err := newLogger(level, logOutputPaths, logErrorOutputPaths)
			if err != nil {
				return usageError{err}
			}
			ctrl.SetLogger(logger)
			for _, unknown := range unknownGates {
				logger.Info("ignoring a feature gate this controller does not know, as Karpenter does", "setting", unknown.setting, "gate", unknown.name)
			}
			for gate, on := range map[string]bool{featuregate.DRANVIDIAGPU: opts.DRANVIDIAGPU, featuregate.DRAEFA: opts.DRAEFA} {
				if on {
					logger.Info("the feature gate changes no scheduling while pods' resource claims are ignored (IGNORE_DRA_REQUESTS=true, the only setting here), as in Karpenter with that setting", "setting", featuregate.AWS.Setting, "gate", gate)
				}
			}
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			op, err := operator.New(cfg, opts)
			if err != nil {
				return err
			}
			return op.Start(ctrl.SetupSignalHandler())
		},
	}
	fs = &envFlags{fs: cmd.Flags()}
	fs.string(&opts.CloudProvider, "cloud-provider", "CLOUD_PROVIDER", opts.CloudProvider, "cloud to launch nodes in: sim or aws")
	fs.string(&opts.ClusterName, "cluster-name", "CLUSTER_NAME", opts.ClusterName, "name of the cluster")
	fs.duration(&opts.BatchIdleDuration, "batch-idle-duration", "BATCH_IDLE_DURATION", opts.BatchIdleDuration, "end a provisioning batch after this long without new pods")
	fs.duration(&opts.BatchMaxDuration, "batch-max-duration", "BATCH_MAX_DURATION", opts.BatchMaxDuration, "end a provisioning batch after this long in any case")
	fs.string(&opts.PreferencePolicy, "preference-policy", "PREFERENCE_POLICY", opts.PreferencePolicy, "Respect or Ignore preferred affinities when provisioning")
	fs.string(&opts.MinValuesPolicy, "min-values-policy", "MIN_VALUES_POLICY", opts.MinValuesPolicy, "Strict or BestEffort")
	fs.string(&opts.MetricsBindAddress, "metrics-bind-address", "METRICS_BIND_ADDRESS", opts.MetricsBindAddress, "address of /metrics; 0 disables")
	fs.string(&opts.HealthProbeBindAddress, "health-probe-bind-address", "HEALTH_PROBE_BIND_ADDRESS", opts.HealthProbeBindAddress, "address of /healthz and /readyz; 0 disables")
	fs.int(&metricsPort, "metrics-port", "METRICS_PORT", 0, "port of /metrics on every interface, as Karpenter names it; overrides --metrics-bind-address when set")
	fs.int(&healthProbePort, "health-probe-port", "HEALTH_PROBE_PORT", 0, "port of /healthz and /readyz on every interface, as Karpenter names it; overrides --health-probe-bind-address when set")
	fs.bool(&opts.LeaderElection, "leader-elect", "LEADER_ELECT", opts.LeaderElection, "elect a leader so that only one replica acts")
	fs.bool(&disableLeaderElection, "disable-leader-election", "DISABLE_LEADER_ELECTION", false, "run without leader election, as Karpenter names it (the same as --leader-elect=false)")
	fs.string(&opts.LeaderElectionNamespace, "leader-election-namespace", "LEADER_ELECTION_NAMESPACE", opts.LeaderElectionNamespace, "namespace of the leader election Lease")
	fs.string(&opts.SchedulerConfig, "scheduler-config", "SCHEDULER_CONFIG", "", "the parts of the cluster's kube-scheduler configuration scheduling must mirror, as a YAML or JSON document: today podTopologySpread.defaultConstraints, given to every pod with no topology spread constraint of its own under the selector the kube-scheduler deduces for it; empty means none")
	fs.bool(&unbuilt.ignoreDRARequests, "ignore-dra-requests", "IGNORE_DRA_REQUESTS", true, "pods with resource claims (Dynamic Resource Allocation) are not provisioned for, as by Karpenter's default; false (DRA scheduling) is not built here")
	fs.bool(&opts.AWS.EnableZonalShift, "enable-zonal-shift", "ENABLE_ZONAL_SHIFT", false, "honour the cluster's ARC zonal shifts (aws): no launches into, nor terminations, reboots or tagging in, a zone traffic is shifted away from; the cluster must have zonal shift enabled")
	fs.bool(&opts.EnableProfiling, "enable-profiling", "ENABLE_PROFILING", false, "serve Go's pprof profiles under /debug/pprof/ on the metrics address")
	fs.string(&opts.LeaderElectionName, "leader-election-name", "LEADER_ELECTION_NAME", opts.LeaderElectionName, "name of the leader election Lease")
	fs.int64(&opts.MemoryLimit, "memory-limit", "MEMORY_LIMIT", opts.MemoryLimit, "the container's memory limit in bytes (Karpenter's chart sets it); when positive the Go runtime's soft memory limit is 90% of it")
	fs.int64(&opts.CPURequests, "cpu-requests", "CPU_REQUESTS", opts.CPURequests, "the container's CPU request in millicores (Karpenter's chart sets it); controllers that work on many objects at once scale their concurrency with it, as Karpenter's do")
	fs.bool(&disableControllerWarmup, "disable-controller-warmup", "DISABLE_CONTROLLER_WARMUP", !opts.ControllerWarmup, "do not start the controllers' watches before this replica is elected leader (with false, a new leader's caches are already full)")
	fs.bool(&opts.LegacyNodeRepair, "legacy-node-repair", "LEGACY_NODE_REPAIR", opts.LegacyNodeRepair, "When set with the NodeRepair feature gate, Karpenter runs the legacy node repair controller instead of node repair as a disruption method. The legacy controller only replaces nodes: it does not support terminate-first repair, reboot, repair policy priority or termination grace periods, or the karpenter.sh/do-not-repair annotation. NOTE: The legacy node repair controller is planned for deprecation. If you use it because the new one does not work for you, please open an issue with your use case or problem.")
	fs.string(&karpenterService, "karpenter-service", "KARPENTER_SERVICE", "", "the Service of Karpenter's former webhook; Karpenter v1.15 reads it and uses it nowhere, nor does this controller")
	fs.duration(&opts.RegistrationTTL, "registration-ttl", "REGISTRATION_TTL", opts.RegistrationTTL, "replace NodeClaims that do not register within this time")
	fs.float32(&opts.KubeClientQPS, "kube-client-qps", "KUBE_CLIENT_QPS", opts.KubeClientQPS, "requests per second to the API server")
	fs.int(&opts.KubeClientBurst, "kube-client-burst", "KUBE_CLIENT_BURST", opts.KubeClientBurst, "burst of requests to the API server")
	fs.string(&kubeconfig, "kubeconfig", "KUBECONFIG", "", "kubeconfig of the cluster; empty means the in-cluster config or ~/.kube/config")
	fs.string(&featureGates, "feature-gates", "FEATURE_GATES", "", "Karpenter's feature gates, Name=true,Other=false; unset gates take Karpenter's defaults ("+
		featuregate.Karpenter.Defaults().String()+"); a gate turned on whose feature is not built stops the controller, an unknown one is logged and ignored")
	fs.string(&awsFeatureGates, "aws-feature-gates", "AWS_FEATURE_GATES", "", "the AWS provider's feature gates, as Karpenter's ("+featuregate.AWS.Defaults().String()+")")
	fs.string(&logLevel, "log-level", "LOG_LEVEL", "info", "log level: debug, info or error")
	fs.string(&logOutputPaths, "log-output-paths", "LOG_OUTPUT_PATHS", "stdout", "comma-separated destinations of the logs: stdout, stderr or file paths")
	fs.string(&logErrorOutputPaths, "log-error-output-paths", "LOG_ERROR_OUTPUT_PATHS", "stderr", "comma-separated destinations of the logger's own errors (a log line it could not write): stdout, stderr or file paths")
	fs.bool(&opts.DisableClusterStateObservability, "disable-cluster-state-observability", "DISABLE_CLUSTER_STATE_OBSERVABILITY", false, "leave out the cluster state gauges and pod startup metrics")
	fs.string(&opts.AWS.ClusterEndpoint, "cluster-endpoint", "CLUSTER_ENDPOINT", "", "API server URL nodes join (aws; empty means the EKS cluster's)")
	fs.string(&opts.AWS.ClusterCABundle, "cluster-ca-bundle", "CLUSTER_CA_BUNDLE", "", "base64 PEM of the cluster CA given to nodes (aws; empty means the kubeconfig's or EKS's)")
	fs.string(&opts.AWS.InterruptionQueue, "interruption-queue", "INTERRUPTION_QUEUE", "", "SQS queue of spot interruption, rebalance, scheduled change and state change events (aws; empty disables)")
	fs.bool(&opts.AWS.IsolatedVPC, "isolated-vpc", "ISOLATED_VPC", false, "do not call the Pricing API; use the shipped on-demand prices (aws)")
	fs.int(&opts.AWS.ReservedENIs, "reserved-enis", "RESERVED_ENIS", 0, "network interfaces kept from pods when computing max pods (aws)")
	fs.float64(&opts.AWS.VMMemoryOverheadPercent, "vm-memory-overhead-percent", "VM_MEMORY_OVERHEAD_PERCENT", opts.AWS.VMMemoryOverheadPercent, "share of instance memory lost to virtualization (aws)")
	fs.bool(&opts.AWS.EKSControlPlane, "eks-control-plane", "EKS_CONTROL_PLANE", false, "read the cluster's Kubernetes version from EKS DescribeCluster rather than the API server (aws)")
	fs.duration(&opts.AWS.Refresh.AMIs, "ami-refresh-interval", "AMI_REFRESH_INTERVAL", opts.AWS.Refresh.AMIs, "how often an EC2NodeClass's images are read from EC2 again, at least 1m (aws)")
	fs.duration(&opts.AWS.Refresh.Subnets, "subnet-refresh-interval", "SUBNET_REFRESH_INTERVAL", opts.AWS.Refresh.Subnets, "how often an EC2NodeClass's subnets are read from EC2 again, at least 1m (aws)")
	fs.duration(&opts.AWS.Refresh.SecurityGroups, "security-group-refresh-interval", "SECURITY_GROUP_REFRESH_INTERVAL", opts.AWS.Refresh.SecurityGroups, "how often an EC2NodeClass's security groups are read from EC2 again, at least 1m (aws)")
	fs.bool(&opts.AWS.DisableDryRun, "disable-dry-run", "DISABLE_DRY_RUN", false, "If true, then disable dry run validation for EC2NodeClasses: no launch template is created and no CreateFleet or RunInstances dry-run to check the controller's permissions (aws)")
	fs.int64(&opts.Sim.Seed, "sim-seed", "SIM_SEED", opts.Sim.Seed, "seed of the simulated cloud")
	fs.duration(&opts.Sim.LaunchLatency, "sim-launch-latency", "SIM_LAUNCH_LATENCY", opts.Sim.LaunchLatency, "simulated time from launch to node registration")
	fs.duration(&opts.Sim.ReadyDelay, "sim-ready-delay", "SIM_READY_DELAY", opts.Sim.ReadyDelay, "simulated time from registration to node Ready")
	fs.duration(&opts.Sim.StartupTaintDelay, "sim-startup-taint-delay", "SIM_STARTUP_TAINT_DELAY", opts.Sim.StartupTaintDelay, "simulated time from node Ready until the agents on it lift its NodePool's startupTaints")
	fs.string(&opts.Sim.StateConfigMap, "sim-state-configmap", "SIM_STATE_CONFIGMAP", "karpenter-sim-state", "ConfigMap in the leader election namespace keeping the simulated instances across restarts and leader changes; empty keeps them in memory")
	fs.bool(&opts.Sim.MarkPodsRunning, "sim-mark-pods-running", "SIM_MARK_PODS_RUNNING", opts.Sim.MarkPodsRunning, "report pods bound to simulated nodes as Running")
	fs.float64(&opts.Sim.LaunchErrorRate, "sim-launch-error-rate", "SIM_LAUNCH_ERROR_RATE", opts.Sim.LaunchErrorRate, "share of simulated launches, in [0, 1], that fail with a retryable error; 0 disables")
	fs.duration(&opts.Sim.LaunchJitter, "sim-launch-jitter", "SIM_LAUNCH_JITTER", opts.Sim.LaunchJitter, "extra random launch latency, uniform in [0, jitter), added to --sim-launch-latency")
	fs.float64(&opts.Sim.InstanceLossRate, "sim-instance-loss-rate", "SIM_INSTANCE_LOSS_RATE", opts.Sim.InstanceLossRate, "expected simulated instances vanishing out of band per instance-hour (each loss time is drawn at launch and kept in --sim-state-configmap); 0 disables")
	fs.float64(&opts.Sim.APIThrottleRate, "sim-api-throttle-rate", "SIM_API_THROTTLE_RATE", opts.Sim.APIThrottleRate, "share of simulated cloud API calls, in [0, 1], refused with a retryable RequestLimitExceeded error; 0 disables")
	fs.float64(&opts.Sim.NodeFailureRate, "sim-node-failure-rate", "SIM_NODE_FAILURE_RATE", opts.Sim.NodeFailureRate, "expected failures per simulated node-hour: a failed node reports Ready Unknown, as when its kubelet stops, until node repair (FEATURE_GATES NodeRepair=true) replaces it 30 minutes later; 0 disables")
	completeValues(cmd, "cloud-provider", "sim", "aws")
	completeValues(cmd, "log-level", "debug", "info", "error")
	return cmd
}

// applyKarpenterAliases applies the settings given under Karpenter's names: ports instead of
// bind addresses, and leader election disabled rather than enabled.
func applyKarpenterAliases(opts *operator.Options, metricsPort, healthProbePort int, disableLeaderElection bool) error {
	for _, p := range []struct {
		flag, env string
		port      int
		addr      *string
	}{
		{"--metrics-port", "METRICS_PORT", metricsPort, &opts.MetricsBindAddress},
		{"--health-probe-port", "HEALTH_PROBE_PORT", healthProbePort, &opts.HealthProbeBindAddress},
	} {
		switch {
		case p.port < 0 || p.port > 65535:
			return fmt.Errorf("%s (%s) %d: must be a port, 1 to 65535", p.flag, p.env, p.port)
		case p.port > 0:
			*p.addr = fmt.Sprintf(":%d", p.port)
		}
	}
	if disableLeaderElection {
		opts.LeaderElection = false
	}
	return nil
}

func parseLogLevel(s string) (zapcore.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return zapcore.DebugLevel, nil
	case "info", "":
		return zapcore.InfoLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	return 0, fmt.Errorf("--log-level (LOG_LEVEL) %q: must be debug, info or error", s)
}

// envFlags defines flags that default from environment variables, so both work and the flag
// wins. Malformed variables are collected and reported before the command runs.
type envFlags struct {
	fs   *pflag.FlagSet
	errs []string
}

func envOr(name, fallback string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return fallback
}

func (e *envFlags) err() error {
	if len(e.errs) == 0 {
		return nil
	}
	return fmt.Errorf("invalid environment variables: %s", strings.Join(e.errs, "; "))
}

func (e *envFlags) string(p *string, name, env, def, usage string) {
	e.fs.StringVar(p, name, envOr(env, def), usage+" ("+env+")")
}

func (e *envFlags) bool(p *bool, name, env string, def bool, usage string) {
	v, err := strconv.ParseBool(envOr(env, strconv.FormatBool(def)))
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s: %v", env, err))
		v = def
	}
	e.fs.BoolVar(p, name, v, usage+" ("+env+")")
}

func (e *envFlags) duration(p *time.Duration, name, env string, def time.Duration, usage string) {
	v, err := time.ParseDuration(envOr(env, def.String()))
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s: %v", env, err))
		v = def
	}
	e.fs.DurationVar(p, name, v, usage+" ("+env+")")
}

func (e *envFlags) int64(p *int64, name, env string, def int64, usage string) {
	v, err := strconv.ParseInt(envOr(env, strconv.FormatInt(def, 10)), 10, 64)
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s: %v", env, err))
		v = def
	}
	e.fs.Int64Var(p, name, v, usage+" ("+env+")")
}

func (e *envFlags) float32(p *float32, name, env string, def float32, usage string) {
	v, err := strconv.ParseFloat(envOr(env, strconv.FormatFloat(float64(def), 'f', -1, 32)), 32)
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s: %v", env, err))
		v = float64(def)
	}
	e.fs.Float32Var(p, name, float32(v), usage+" ("+env+")")
}

func (e *envFlags) float64(p *float64, name, env string, def float64, usage string) {
	v, err := strconv.ParseFloat(envOr(env, strconv.FormatFloat(def, 'f', -1, 64)), 64)
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s: %v", env, err))
		v = def
	}
	e.fs.Float64Var(p, name, v, usage+" ("+env+")")
}

func (e *envFlags) int(p *int, name, env string, def int, usage string) {
	v, err := strconv.Atoi(envOr(env, strconv.Itoa(def)))
	if err != nil {
		e.errs = append(e.errs, fmt.Sprintf("%s: %v", env, err))
		v = def
	}
	e.fs.IntVar(p, name, v, usage+" ("+env+")")
}

// restConfig loads the cluster's config: an explicit kubeconfig file, else controller-runtime's
// search (in-cluster, then ~/.kube/config).
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return ctrl.GetConfig()
}

// unbuiltSettings are Karpenter v1.15's settings whose feature is not built here: read, so
// that a value other than Karpenter's default stops the controller with a message rather than
// being ignored.
type unbuiltSettings struct {
	ignoreDRARequests bool
}

// refuseUnbuiltSettings names each unbuilt setting set away from Karpenter's default.
func refuseUnbuiltSettings(u unbuiltSettings) error {
	var errs []error
	if !u.ignoreDRARequests {
		errs = append(errs, errors.New("--ignore-dra-requests=false (IGNORE_DRA_REQUESTS): provisioning for pods with resource claims (Dynamic Resource Allocation) is not built here; leave it true, Karpenter's default"))
	}
	return errors.Join(errs...)
}

// unknownGate is a gate name a setting set that its table does not know.
type unknownGate struct{ setting, name string }

// applyFeatureGates reads Karpenter's and the AWS provider's feature gates (package
// featuregate) into opts: the gates that switch a feature here set it; a malformed item or a
// gate turned on whose feature is not built is an error naming it. Names neither table knows
// are accepted, as Karpenter accepts them, and returned for the caller to log.
func applyFeatureGates(opts *operator.Options, karpenterGates, awsGates string) ([]unknownGate, error) {
	gates, err := featuregate.Karpenter.Parse(karpenterGates)
	if err != nil {
		return nil, err
	}
	aws, err := featuregate.AWS.Parse(awsGates)
	if err != nil {
		return nil, err
	}
	var unknown []unknownGate
	for _, name := range gates.Unknown() {
		unknown = append(unknown, unknownGate{featuregate.Karpenter.Setting, name})
	}
	for _, name := range aws.Unknown() {
		unknown = append(unknown, unknownGate{featuregate.AWS.Setting, name})
	}
	opts.SpotToSpotConsolidation = gates.Enabled(featuregate.SpotToSpotConsolidation)
	opts.RepackConsolidation = gates.Enabled(featuregate.RepackConsolidation)
	opts.StaticCapacity = gates.Enabled(featuregate.StaticCapacity)
	opts.NodeRepair = gates.Enabled(featuregate.NodeRepair)
	opts.TerminateFirstRepair = gates.Enabled(featuregate.TerminateFirstRepair)
	opts.TerminateFirstDrift = gates.Enabled(featuregate.TerminateFirstDrift)
	opts.NodeOverlay = gates.Enabled(featuregate.NodeOverlay)
	opts.CapacityBuffer = gates.Enabled(featuregate.CapacityBuffer)
	opts.RebootForRepair = aws.Enabled(featuregate.RebootForRepair)
	opts.PodDeletionCostManagement = gates.Enabled(featuregate.PodDeletionCostManagement)
	opts.ReservedCapacity = gates.Enabled(featuregate.ReservedCapacity)
	opts.NodeClassCEL = aws.Enabled(featuregate.NodeClassCEL)
	opts.DRANVIDIAGPU = aws.Enabled(featuregate.DRANVIDIAGPU)
	opts.DRAEFA = aws.Enabled(featuregate.DRAEFA)
	return unknown, nil
}

// newLogger returns the controller's JSON logger at level, writing its lines to the
// comma-separated outputPaths and its own errors to errorOutputPaths ("stdout", "stderr" or
// file paths, as Karpenter's LOG_OUTPUT_PATHS and LOG_ERROR_OUTPUT_PATHS).
func newLogger(level zapcore.Level, outputPaths, errorOutputPaths string) (logr.Logger, error) {
	out, err := openLogPaths("--log-output-paths (LOG_OUTPUT_PATHS)", outputPaths)
	if err != nil {
		return logr.Logger{}, err
	}
	errOut, err := openLogPaths("--log-error-output-paths (LOG_ERROR_OUTPUT_PATHS)", errorOutputPaths)
	if err != nil {
		return logr.Logger{}, err
	}
	return zap.New(zap.Level(level), zap.JSONEncoder(), zap.WriteTo(out), zap.RawZapOpts(uberzap.ErrorOutput(errOut))), nil
}

// openLogPaths opens the comma-separated log destinations; the files stay open for the
// process's life.
func openLogPaths(setting, paths string) (zapcore.WriteSyncer, error) {
	var list []string
	for _, p := range strings.Split(paths, ",") {
		if p = strings.TrimSpace(p); p != "" {
			list = append(list, p)
		}
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s is empty: give stdout, stderr or file paths, comma-separated", setting)
	}
	out, _, err := uberzap.Open(list...)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", setting, paths, err)
	}
	return out, nil
}
