package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openkarpenter/karpenter/pkg/apis"
	"github.com/openkarpenter/karpenter/pkg/capacitybuffer"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/clustermetrics"
	"github.com/openkarpenter/karpenter/pkg/controllers"
	"github.com/openkarpenter/karpenter/pkg/deletioncost"
	"github.com/openkarpenter/karpenter/pkg/disruption"
	"github.com/openkarpenter/karpenter/pkg/health"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	awsprovider "github.com/openkarpenter/karpenter/pkg/providers/aws"
	"github.com/openkarpenter/karpenter/pkg/providers/cloudmetrics"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/termination"
)

// LeaderElectionID is the default name of the Lease replicas compete for
// (Options.LeaderElectionName).
const LeaderElectionID = "karpenter-leader-election"

// Operator is a manager with Karpenter's controllers registered.
type Operator struct {
	// Manager runs the controllers.
	Manager manager.Manager
	// CloudProvider is the cloud the controllers launch in. Each controller calls it through
	// its own cloudmetrics.Wrap view; this is the provider itself.
	CloudProvider cloudprovider.CloudProvider
	// Cluster is the shared cluster state.
	Cluster *state.Cluster
	// Provisioner creates NodeClaims for pending pods.
	Provisioner *provisioning.Provisioner
	// Sim is the simulated cloud when CloudProvider is sim.
	Sim *sim.Cloud
	// AWS is the AWS cloud when CloudProvider is aws.
	AWS *awsprovider.Provider

	// checkState, when set, checks the simulated cloud's stored state before the controllers
	// start (see Start).
	checkState func(context.Context) error
}

// The simulated kubelets' request budget and how many pods they start at once: a real node's
// kubelet has 50 requests a second of its own (--kube-api-qps), so a fleet of them far more.
const (
	simKubeletQPS        = 1000
	simKubeletPodWorkers = 16
)

// profilingHandlers are Go's pprof profiles by path, as Karpenter serves them on its metrics
// address with ENABLE_PROFILING; none when off.
func profilingHandlers(enabled bool) map[string]http.Handler {
	if !enabled {
		return nil
	}
	handlers := map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
	for _, name := range []string{"allocs", "heap", "block", "goroutine", "threadcreate"} {
		handlers["/debug/pprof/"+name] = pprof.Handler(name)
	}
	return handlers
}

// registrar is what every controller offers the operator.
type registrar interface {
	Register(manager.Manager) error
}

// New builds the manager and registers the controllers.
func New(cfg *rest.Config, opts Options) (*Operator, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.MemoryLimit > 0 {
		// As Karpenter: a soft limit at 90% of the container's, so garbage collection speeds
		// up before the kernel's limit is reached.
		debug.SetMemoryLimit(int64(float64(opts.MemoryLimit) * 0.9))
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = opts.KubeClientQPS, opts.KubeClientBurst
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        apis.NewScheme(),
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsBindAddress, ExtraHandlers: profilingHandlers(opts.EnableProfiling)},
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              opts.LeaderElectionName,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		// controller-runtime 0.23's priority queue can deadlock on shutdown (a ready item sent to
		// a worker that already left, under the queue's lock: kubernetes-sigs/controller-runtime
		// issue 3538, fixed after 0.23.3), holding a stopping replica for the full 30s grace
		// period; the classic rate-limited queue has no such race.
		// Warm-up starts the watches before the election is won; controller-runtime ignores it
		// without leader election, and Karpenter sets it only with (operator.go, v1.15.0).
		Controller: config.Controller{SkipNameValidation: &opts.SkipControllerNameValidation, UsePriorityQueue: ptr.To(false),
			EnableWarmup: ptr.To(opts.LeaderElection && opts.ControllerWarmup)},
		// The one ConfigMap read (the simulated cloud's state) is read directly: caching would
		// watch every ConfigMap in the cluster.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.ConfigMap{}}}},
		// The informers ride out an API server outage without growing their backoff, so the
		// caches catch up within a second of its return (see newInformer).
		Cache: cache.Options{NewInformer: newInformer},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if opts.HealthProbeBindAddress != "0" {
		if err := errors.Join(mgr.AddHealthzCheck("healthz", healthz.Ping), mgr.AddReadyzCheck("readyz", healthz.Ping)); err != nil {
			return nil, err
		}
	}
	clk := clock.RealClock{}
	op := &Operator{Manager: mgr, Cluster: state.NewCluster(mgr.GetClient(), clk)}
	op.Cluster.NominationGrace = max(2*opts.BatchMaxDuration, 10*time.Second)
	// Validate parsed it.
	op.Cluster.DefaultConstraints, _ = state.ParseSchedulerConfig(opts.SchedulerConfig)
	if len(op.Cluster.DefaultConstraints) > 0 {
		mgr.GetLogger().Info("scheduler-config is set: pods with no topology spread constraints of their own are scheduled under these defaults", "default-topology-spread-constraints", op.Cluster.DefaultConstraints)
	}
	recorder := mgr.GetEventRecorderFor("karpenter")
	var registrars []registrar
	unavailable := cloudprovider.NewUnavailableOfferings(clk, 0)
	switch opts.CloudProvider {
	case CloudProviderSim:
		cloud := opts.Sim.Cloud
		if cloud == nil {
			var store sim.Store
			if opts.Sim.StateConfigMap != "" {
				namespace, name, reader := stateNamespace(opts), opts.Sim.StateConfigMap, mgr.GetAPIReader()
				store = sim.NewConfigMapStore(mgr.GetClient(), namespace, name)
				op.checkState = func(ctx context.Context) error {
					_, err := sim.LoadConfigMapState(ctx, reader, namespace, name)
					return err
				}
			}
			if cloud, err = sim.New(sim.Options{Clock: clk, NodeClasses: mgr.GetClient(), Seed: opts.Sim.Seed, Zones: opts.Sim.Zones, LaunchLatency: opts.Sim.LaunchLatency, Store: store, Unavailable: unavailable,
				Faults: opts.Sim.faultPlan(), RebootForRepair: opts.RebootForRepair, NodeClassCEL: opts.NodeClassCEL, DRANVIDIAGPU: opts.DRANVIDIAGPU,
				ReservedCapacity: opts.ReservedCapacity}); err != nil {
				return nil, err
			}
		}
		if err := sim.IndexFields(context.Background(), mgr.GetFieldIndexer()); err != nil {
			return nil, err
		}
		// The simulated kubelets write through a client of their own, as the nodes' kubelets
		// would: starting a burst's pods must not spend the controller's request budget
		// (--kube-client-qps), nor wait for it.
		kubeletConfig := rest.CopyConfig(cfg)
		kubeletConfig.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(simKubeletQPS, 2*simKubeletQPS)
		kubeletClient, err := client.New(kubeletConfig, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), Cache: &client.CacheOptions{Reader: mgr.GetCache()}})
		if err != nil {
			return nil, fmt.Errorf("creating the simulated kubelets' client: %w", err)
		}
		kubelet, err := sim.NewKubelet(cloud, kubeletClient, sim.KubeletOptions{ReadyDelay: opts.Sim.ReadyDelay, StartupTaintDelay: opts.Sim.StartupTaintDelay, MarkPodsRunning: opts.Sim.MarkPodsRunning,
			RegisterWithTaints: opts.Sim.RegisterWithTaints, PodWorkers: simKubeletPodWorkers})
		if err != nil {
			return nil, err
		}
		if err := mgr.Add(leaderOnly{kubelet}); err != nil {
			return nil, err
		}
		if err := mgr.Add(leaderOnly{sim.NewInterruptionController(cloud, mgr.GetClient(), unavailable, recorder)}); err != nil {
			return nil, err
		}
		op.Sim, op.CloudProvider = cloud, cloud
		registrars = append(registrars, sim.NewNodeClassStatusController(mgr.GetClient(), cloud))
	case CloudProviderAWS:
		provider, aws, err := newAWS(cfg, mgr, clk, unavailable, recorder, opts)
		if err != nil {
			return nil, err
		}
		op.CloudProvider, op.AWS = provider, provider
		registrars = append(registrars, aws...)
	}
	if err := errors.Join(
		nodeclaim.IndexFields(context.Background(), mgr.GetFieldIndexer()),
		termination.IndexFields(context.Background(), mgr.GetFieldIndexer()),
	); err != nil {
		return nil, fmt.Errorf("indexing fields: %w", err)
	}
	var repairPolicies *health.Matcher
	if opts.NodeRepair && !opts.LegacyNodeRepair && len(op.CloudProvider.RepairPolicies()) > 0 {
		// As Karpenter's NewRepairPolicyMatcher at start: an invalid set stops the controller.
		if repairPolicies, err = health.NewMatcher(op.CloudProvider.RepairPolicies()); err != nil {
			return nil, fmt.Errorf("node repair: %w", err)
		}
	}
	set := controllers.New(controllers.Deps{
		Kube: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Cluster: op.Cluster, Cloud: op.CloudProvider,
		Unavailable: unavailable, Clock: clk, Recorder: recorder,
	}, controllers.Options{
		Provisioning: provisioning.Options{
			BatchIdleDuration:   opts.BatchIdleDuration,
			BatchMaxDuration:    opts.BatchMaxDuration,
			IgnorePreferences:   opts.PreferencePolicy == "Ignore",
			MinValuesBestEffort: opts.MinValuesPolicy == "BestEffort",
		},
		Disruption: disruption.Options{
			SpotToSpotConsolidation: opts.SpotToSpotConsolidation,
			Repack:                  opts.RepackConsolidation,
			PollInterval:            opts.DisruptionPollInterval,
			ValidationDelay:         opts.ConsolidationValidationDelay,
			Repair:                  repairPolicies,
			TerminateFirstRepair:    opts.TerminateFirstRepair,
			TerminateFirstDrift:     opts.TerminateFirstDrift,
		},
		RegistrationTTL: opts.RegistrationTTL,
		// Karpenter's node termination controller: 100 at one core, 5000 at sixty
		// (node/termination/controller.go's minReconciles and maxReconciles).
		TerminationReconciles:     opts.ScaledReconciles(100, 5000),
		RegistrationHealth:        true,
		NodeRepair:                opts.NodeRepair,
		LegacyNodeRepair:          opts.LegacyNodeRepair,
		NodeOverlay:               opts.NodeOverlay,
		CapacityBuffer:            opts.CapacityBuffer,
		PodDeletionCostManagement: opts.PodDeletionCostManagement,
		// Karpenter's deletion cost queue: as its eviction queue, 100 at one core, 5000 at sixty.
		DeletionCostReconciles: opts.ScaledReconciles(deletioncost.DefaultQueueReconciles, 5000),
		CloudMetrics:           true,
	})
	op.Provisioner = set.Provisioner
	if set.Overlays != nil {
		registrars = append(registrars, set.Overlays)
	}
	if set.Buffers != nil {
		// The buffers' controller resolves each buffer and wakes the provisioner, whose every
		// pass places the buffers' virtual pods.
		registrars = append(registrars, capacitybuffer.NewController(mgr.GetClient(), clk, op.Provisioner))
	}
	// cloud is what the controllers see: with the NodeOverlay gate on, the instance types as
	// the NodeOverlays adjust them.
	cloud := set.Cloud
	registrars = append(registrars, provisioning.NewPodController(mgr.GetClient(), op.Provisioner), set.Nomination,
		provisioning.NewSchedulerCheck(mgr.GetAPIReader(), clk.Now))
	if !opts.DisableClusterStateObservability {
		// The state gauges, served while this replica leads, and the pod metrics.
		registrars = append(registrars,
			clustermetrics.NewCollector(op.Cluster, cloudmetrics.Wrap(cloud, metrics.ControllerMetrics)),
			clustermetrics.NewPodController(mgr.GetClient(), op.Cluster, clk))
	}
	registrars = append(registrars, lifecycleControllers(mgr, set, recorder, opts)...)
	if set.DeletionCost != nil {
		registrars = append(registrars, set.DeletionCostQueue, set.DeletionCost)
	}
	for _, r := range registrars {
		if err := r.Register(mgr); err != nil {
			return nil, fmt.Errorf("registering %T: %w", r, err)
		}
	}
	return op, nil
}

// Start runs the manager until ctx is done. With a simulated cloud whose stored state cannot be
// its own (another program's ConfigMap, a corrupt state), it returns that error, which says
// how to fix it, before starting anything: reported once, rather than by every controller
// on every call. A state that cannot be read yet (the API server unreachable) is left to the
// controllers, which retry.
func (o *Operator) Start(ctx context.Context) error {
	if o.checkState != nil {
		if err := o.checkState(ctx); errors.Is(err, sim.ErrUnusableState) {
			return err
		}
	}
	return o.Manager.Start(ctx)
}

// stateNamespace is where the simulated cloud keeps its state: the leader election namespace,
// else the namespace the process runs in, else "default".
func stateNamespace(opts Options) string {
	if opts.LeaderElectionNamespace != "" {
		return opts.LeaderElectionNamespace
	}
	if ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(ns) > 0 {
		return strings.TrimSpace(string(ns))
	}
	return "default"
}

// leaderOnly runs a runnable only on the elected leader.
type leaderOnly struct {
	manager.Runnable
}

// NeedLeaderElection makes the runnable wait for leadership.
func (leaderOnly) NeedLeaderElection() bool { return true }
