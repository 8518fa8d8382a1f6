package simulate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis"
	ec2v1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/capacitybuffer"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/controllers"
	"github.com/openkarpenter/karpenter/pkg/disruption"
	"github.com/openkarpenter/karpenter/pkg/expiration"
	"github.com/openkarpenter/karpenter/pkg/featuregate"
	"github.com/openkarpenter/karpenter/pkg/health"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/nodeoverlay"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/reboot"
	"github.com/openkarpenter/karpenter/pkg/repair"
	"github.com/openkarpenter/karpenter/pkg/simulate/binder"
	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/termination"
)

// Start is the virtual time every simulation starts at.
var Start = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// defaultNamespace is the namespace of an object whose manifest names none.
const defaultNamespace = "default"

// qualified is how reports and timeline events name an object of a namespace: its bare name
// in namespace default (so that a workload all in default reads as before namespaces were
// kept), namespace/name elsewhere.
func qualified(namespace, name string) string {
	if namespace == "" || namespace == defaultNamespace {
		return name
	}
	return namespace + "/" + name
}

// podKey is the name reports give a pod: qualified by its namespace.
func podKey(p *corev1.Pod) string { return qualified(p.Namespace, p.Name) }

// ownerKey is the name of the workload a pod belongs to (its deployment's or jobs'), qualified
// by its namespace; empty for a pod of no workload.
func ownerKey(p *corev1.Pod) string {
	owner := p.Labels[ownerLabel]
	if owner == "" {
		return ""
	}
	return qualified(p.Namespace, owner)
}

// controllerSelector is the selector a pod's workload adds to the selector of the
// kube-scheduler's default topology spread constraints (state.Cluster.ControllerSelector): the
// pods of a deployment (as its ReplicaSet selects them) or of a StatefulSet; nil for a Job's
// pods, which the kube-scheduler deduces nothing from, and for pods of no workload.
func (e *engine) controllerSelector(pod *corev1.Pod) *metav1.LabelSelector {
	owner := pod.Labels[ownerLabel]
	if owner == "" || e.jobs[qualified(pod.Namespace, owner)] != nil {
		return nil
	}
	return &metav1.LabelSelector{MatchLabels: map[string]string{ownerLabel: owner}}
}

// Options tune a run.
type Options struct {
	// Seed, when set, overrides the workload's seed.
	Seed *int64
	// Step is the virtual time between passes while something is happening (default 1s).
	Step time.Duration
	// Progress, when set, is called with the virtual time done and the total.
	Progress func(done, total time.Duration)
	// BatchIdleDuration and BatchMaxDuration are the provisioner's batching windows
	// (defaults 1s and 10s, as in the controller).
	BatchIdleDuration, BatchMaxDuration time.Duration
	// EveryTick wakes the engine on every tick of the disruption loop even while nothing is
	// due, as a cluster's controllers run, instead of sleeping until the next timer. The
	// report is the same (a test holds it so); it exists to show that sleeping skips nothing.
	EveryTick bool
	// SchedulerConfig is the controller's --scheduler-config (state.ParseSchedulerConfig):
	// the kube-scheduler's default topology spread constraints, which the provisioner,
	// disruption and the kube-scheduler stand-in all apply to pods with none of their own.
	// The selector of each is its workload's pods, as a Deployment's ReplicaSet or a
	// StatefulSet selects them (a Job adds none); Services are not simulated, so they add
	// nothing.
	SchedulerConfig string
}

// engine is one simulation run.
type engine struct {
	w       *Workload
	opts    Options
	clock   *clocktesting.FakeClock
	kube    *memory.Client
	cloud   *sim.Cloud
	kubelet *sim.Kubelet
	binder  *binder.Binder
	// requeueAt is the earliest moment a controller asked, in the current pass, to be called
	// again (reconcile.Result.RequeueAfter); zero for none.
	requeueAt time.Time
	// lastDisruption is when the disruption loop last ran (every Controller.PassInterval),
	// and disruptionSaw the store's resource version after it: a later change wakes it.
	lastDisruption time.Time
	disruptionSaw  uint64

	provisioner *provisioning.Provisioner
	nomination  *provisioning.NominationController
	interrupts  *sim.InterruptionController
	cluster     *state.Cluster
	lifecycle   *nodeclaim.LifecycleController
	gc          *nodeclaim.GarbageCollector
	// reservationExpiry deletes the NodeClaims in expiring Capacity Blocks.
	reservationExpiry *expiration.ReservationController
	// capacityType turns reserved nodes on-demand when their reservation ends.
	capacityType *expiration.CapacityTypeController
	poolStatus   *nodepool.StatusController
	poolStatic   *nodepool.StaticController
	classStatus  *sim.NodeClassStatusController
	termination  *termination.Controller
	disruption   *disruption.Controller
	// expiration deletes the NodeClaims past their expireAfter.
	expiration *expiration.Controller
	// repair is the legacy node repair controller, nil unless the NodeRepair feature gate is
	// on and the workload asks for it (legacyNodeRepair).
	repair *repair.Controller
	// repairPolicies are the cloud's repair policies that repair as a disruption method acts
	// by, nil unless the NodeRepair gate is on without legacyNodeRepair; repairDecision is the
	// disruption controller's last decision while they are set (see noteRepairs).
	repairPolicies *health.Matcher
	repairDecision *disruption.Decision
	// reboot carries out the reboots repair commits (the AWS gate RebootForRepair).
	reboot *reboot.Controller
	// overlays evaluates the NodeOverlays, nil unless the NodeOverlay feature gate is on;
	// overlaysSeen is what it last evaluated (see reconcileOverlays).
	overlays     *nodeoverlay.Controller
	overlaysSeen string
	// overlaysWarned is the last evaluation error warned of, so that it is warned of once.
	overlaysWarned string
	// buffers resolves CapacityBuffers, nil unless the CapacityBuffer feature gate is on;
	// bufferDue is when each is resolved again (its RequeueAfter).
	buffers   *capacitybuffer.Controller
	bufferDue map[types.NamespacedName]time.Time
	// provisionWanted says something woke the provisioner, which then runs even without
	// pending pods: the buffers' controller, or a NodeClaim starting to delete (its node's
	// pods are placed while it drains); deletingSeen are the claims seen deleting.
	provisionWanted bool
	deletingSeen    map[string]bool
	// settled holds, by NodeClaim name, the versions of the claim and of its Nodes when the
	// lifecycle and termination controllers last had nothing more to do for it (see
	// reconcileClaims).
	settled map[string]string

	// deployments and jobs are by their qualified names (see qualified).
	deployments map[string]*deploymentState
	jobs        map[string]*jobsState
	// tracked follows the workloads' pods (see syncWorkloads).
	tracked   *podTracker
	shortages []shortage
	next      int // next timeline event

	batchStart, batchLastChange time.Time
	batchPending                int

	rec *recorder
}

type deploymentState struct {
	spec *Deployment
	// template is the pods' template: the spec's, with the annotations set since.
	template *corev1.PodTemplateSpec
	replicas int
	serial   int
}

type jobsState struct {
	spec    *Jobs
	created int
}

type shortage struct {
	spec  *CapacityShortage
	until time.Time
}

// Run simulates a workload and returns its report.
func Run(ctx context.Context, w *Workload, opts Options) (*Report, error) {
	if logr.FromContextOrDiscard(ctx).GetSink() == nil {
		// The controllers log through the context; without a logger of the caller's they stay
		// quiet rather than fall back to controller-runtime's global logger.
		ctx = logr.NewContext(ctx, logr.Discard())
	}
	e, err := newEngine(ctx, w, opts)
	if err != nil {
		return nil, err
	}
	return e.run(ctx)
}

func newEngine(ctx context.Context, w *Workload, opts Options) (*engine, error) {
	if opts.Step <= 0 {
		opts.Step = time.Second
	}
	seed := w.Seed
	if opts.Seed != nil {
		seed = *opts.Seed
	}
	e := &engine{w: w, opts: opts, clock: clocktesting.NewFakeClock(Start), deployments: map[string]*deploymentState{}, jobs: map[string]*jobsState{},
		settled: map[string]string{}, deletingSeen: map[string]bool{}}
	e.kube = memory.New(awsv1.NewScheme(), e.clock, memory.WithSeed(uint64(seed)), memory.WithAutoCreateNamespaces())
	e.tracked = newPodTracker()
	e.kube.OnChange(e.tracked.observe)
	if err := nodeclaim.IndexFields(ctx, e.kube); err != nil {
		return nil, err
	}
	// The kubelets and quiet list Pending pods every pass: through an index, not a scan.
	if err := sim.IndexFields(ctx, e.kube); err != nil {
		return nil, err
	}
	launch, ready, startup := 30*time.Second, 10*time.Second, sim.DefaultStartupTaintDelay
	if w.Cloud.LaunchLatency != nil {
		launch = w.Cloud.LaunchLatency.Duration
	}
	if w.Cloud.ReadyDelay != nil {
		ready = w.Cloud.ReadyDelay.Duration
	}
	if w.Cloud.StartupTaintDelay != nil {
		startup = w.Cloud.StartupTaintDelay.Duration
	}
	// featureGates holds Karpenter's gates and the AWS provider's (NodeClassCEL,
	// RebootForRepair), each checked against its own table.
	karpenterGates, awsGates := map[string]bool{}, map[string]bool{}
	for name, v := range w.FeatureGates {
		if _, ok := featuregate.AWS.Lookup(name); ok {
			awsGates[name] = v
		} else {
			karpenterGates[name] = v
		}
	}
	aws, err := featuregate.AWS.FromMap(awsGates)
	if err != nil {
		return nil, err
	}
	nodeClassCEL := aws.Enabled(featuregate.NodeClassCEL)
	// Workload files are checked at parse time; manifests and cluster dumps (the gates at
	// their defaults) here.
	if problems := kubeletExpressionProblems(w.Objects, nodeClassCEL); len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	// ParseWorkload refuses these with their lines; a workload built in code is checked too.
	if problems := w.repairProblems(); len(problems) > 0 {
		p := problems[0]
		return nil, fmt.Errorf("%s%s: %s", p[0], p[1], p[2])
	}
	gates, err := featuregate.Karpenter.FromMap(karpenterGates)
	if err != nil {
		return nil, err
	}
	unavailable := cloudprovider.NewUnavailableOfferings(e.clock, 0)
	reservations := w.Cloud.reservations()
	e.cloud, err = sim.New(sim.Options{Clock: e.clock, NodeClasses: e.kube, Seed: seed, Zones: w.Cloud.Zones, LaunchLatency: launch,
		Faults: sim.FaultPlan{CreateErrorRate: w.Cloud.CreateErrorRate}, Unavailable: unavailable, NodeClassCEL: nodeClassCEL,
		RebootForRepair: aws.Enabled(featuregate.RebootForRepair), Reservations: reservations,
		ReservedCapacity: gates.Enabled(featuregate.ReservedCapacity)})
	if err != nil {
		return nil, fmt.Errorf("simulated cloud: %w", err)
	}
	if e.kubelet, err = sim.NewKubelet(e.cloud, e.kube, sim.KubeletOptions{ReadyDelay: ready, StartupTaintDelay: startup, MarkPodsRunning: true, RegisterWithTaints: w.Cloud.registerWithTaints}); err != nil {
		return nil, err
	}
	// A namespaceSelector selects by the labels of the Namespaces among the manifests, unless
	// they are not known (a cluster read without its Namespaces): then every namespace.
	readNamespaces := !w.namespacesUnknown
	defaults, err := state.ParseSchedulerConfig(opts.SchedulerConfig)
	if err != nil {
		return nil, fmt.Errorf("--scheduler-config: %w", err)
	}
	e.binder = binder.New(e.kube, e.clock, binder.Options{Zones: e.cloud.Zones(), ReadNamespaces: readNamespaces,
		DefaultConstraints: defaults, ControllerSelector: e.controllerSelector})
	cluster := state.NewCluster(e.kube, e.clock)
	cluster.ReadNamespaces = readNamespaces
	cluster.DefaultConstraints, cluster.ControllerSelector = defaults, e.controllerSelector
	e.cluster = cluster
	e.interrupts = sim.NewInterruptionController(e.cloud, e.kube, unavailable, nil)
	e.rec = newRecorder(w, seed, e.clock.Now)
	e.kube.OnChange(e.rec.hist.observe)
	classes, reserving := map[string]*ec2v1.EC2NodeClass{}, false
	var pools []*karpv1.NodePool
	for _, o := range w.Objects {
		switch o := o.(type) {
		case *ec2v1.EC2NodeClass:
			classes[o.Name] = o
			warning := reservationWarning(o, reservations, gates.Enabled(featuregate.ReservedCapacity))
			if warning != "" {
				e.rec.warn(warning)
			}
			reserving = reserving || warning == "" && len(o.Spec.CapacityReservationSelectorTerms) > 0
		case *karpv1.NodePool:
			pools = append(pools, o)
		}
	}
	if reserving {
		for _, warning := range reservedCapacityUnused(pools, classes) {
			e.rec.warn(warning)
		}
	}
	// A workload file is this project's own: a name it misspells is refused, where the
	// controller, reading Karpenter's settings, logs and ignores it as Karpenter does.
	for _, name := range gates.Unknown() {
		if err := featuregate.Karpenter.Check(name, w.FeatureGates[name]); err != nil {
			return nil, err
		}
	}
	nodeRepair := gates.Enabled(featuregate.NodeRepair)
	// Node repair as Karpenter v1.15 runs it by default: a disruption method, by the cloud's
	// repair policies compiled once, as the operator does (an invalid set stops it); with
	// legacyNodeRepair, the legacy controller instead (--legacy-node-repair).
	if nodeRepair && !w.LegacyNodeRepair && len(e.cloud.RepairPolicies()) > 0 {
		if e.repairPolicies, err = health.NewMatcher(e.cloud.RepairPolicies()); err != nil {
			return nil, fmt.Errorf("node repair: %w", err)
		}
	}
	set := controllers.New(controllers.Deps{Kube: e.kube, Cluster: cluster, Cloud: e.cloud, Instances: recordingLauncher{InstanceLifecycle: e.cloud, rec: e.rec}, Unavailable: unavailable, Clock: e.clock},
		controllers.Options{
			Disruption: disruption.Options{SpotToSpotConsolidation: gates.Enabled(featuregate.SpotToSpotConsolidation), Repack: gates.Enabled(featuregate.RepackConsolidation),
				TerminateFirstDrift: gates.Enabled(featuregate.TerminateFirstDrift), TerminateFirstRepair: gates.Enabled(featuregate.TerminateFirstRepair),
				Repair: e.repairPolicies},
			NodeRepair:       nodeRepair,
			LegacyNodeRepair: w.LegacyNodeRepair,
			NodeOverlay:      gates.Enabled(featuregate.NodeOverlay),
			CapacityBuffer:   gates.Enabled(featuregate.CapacityBuffer),
			// Consolidation then weighs pods without controller.kubernetes.io/pod-deletion-cost.
			// The controller writing it (set.DeletionCost) is not driven: the simulator's pods
			// have no ReplicaSet to read it, and its scale-down removes the newest pods.
			PodDeletionCostManagement: gates.Enabled(featuregate.PodDeletionCostManagement),
		})
	e.provisioner, e.nomination, e.lifecycle, e.termination, e.disruption = set.Provisioner, set.Nomination, set.Lifecycle, set.Termination, set.Disruption
	e.gc, e.poolStatus, e.poolStatic, e.repair, e.overlays = set.GarbageCollector, set.NodePoolStatus, set.Static, set.Repair, set.Overlays
	e.expiration, e.reboot = set.Expiration, set.Reboot
	e.reservationExpiry, e.capacityType = set.ReservationExpiry, set.CapacityType
	e.classStatus = sim.NewNodeClassStatusController(e.kube, e.cloud)
	e.provisioner.Observe(e.rec.decision)
	e.disruption.Observe(e.rec.disrupted)
	if e.repairPolicies != nil {
		e.disruption.ObserveDecisions(func(d *disruption.Decision) { e.repairDecision = d })
	}
	e.expiration.Observe(e.rec.expired)
	e.reservationExpiry.Observe(e.rec.reservationExpired)
	if e.repair != nil {
		e.repair.Observe(e.rec.repaired)
	}
	if set.Buffers != nil {
		e.buffers, e.bufferDue = capacitybuffer.NewController(e.kube, e.clock, bufferTrigger{e}), map[types.NamespacedName]time.Time{}
	}
	if opts.BatchIdleDuration <= 0 {
		e.opts.BatchIdleDuration = provisioning.DefaultBatchIdleDuration
	}
	if opts.BatchMaxDuration <= 0 {
		e.opts.BatchMaxDuration = provisioning.DefaultBatchMaxDuration
	}
	// Namespaces first: an object of a namespace not yet created creates it, without labels.
	namespaces := slices.Clone(w.Objects)
	slices.SortStableFunc(namespaces, func(a, b client.Object) int {
		_, nsA := a.(*corev1.Namespace)
		_, nsB := b.(*corev1.Namespace)
		switch {
		case nsA == nsB:
			return 0
		case nsA:
			return -1
		}
		return 1
	})
	for _, obj := range namespaces {
		if err := e.kube.Create(ctx, obj.DeepCopyObject().(client.Object)); err != nil {
			return nil, fmt.Errorf("creating %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, qualified(obj.GetNamespace(), obj.GetName()), err)
		}
	}
	if w.setup != nil {
		if err := w.setup(ctx, e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *engine) run(ctx context.Context) (*Report, error) {
	end := Start.Add(e.w.Duration.Duration)
	for {
		now := e.clock.Now()
		before := e.kube.ResourceVersion()
		if err := e.pass(ctx, now); err != nil {
			return nil, fmt.Errorf("at %s: %w", now.Sub(Start), err)
		}
		// A pass that wrote anything may have given some controller more to do next pass.
		changed := e.kube.ResourceVersion() != before
		if err := e.rec.sample(ctx, e, now); err != nil {
			return nil, err
		}
		if e.opts.Progress != nil {
			e.opts.Progress(now.Sub(Start), e.w.Duration.Duration)
		}
		if !now.Before(end) {
			break
		}
		next := now.Add(e.opts.Step)
		if quiet, err := e.quiet(ctx); err != nil {
			return nil, err
		} else if quiet && !changed {
			next = e.nextWakeup(now)
			// The state holds until next: record it as it is now, not as last sampled.
			if err := e.rec.sampleNow(ctx, e, now); err != nil {
				return nil, err
			}
		}
		if next.After(end) {
			next = end
		}
		e.clock.SetTime(next)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return e.rec.report(ctx, e)
}

// pass runs every controller once at the current virtual time, in the order their effects
// flow: workloads create pods, the binder binds what fits, the provisioner and disruption act,
// the lifecycle, NodePool and termination controllers follow up, the kubelets report.
func (e *engine) pass(ctx context.Context, now time.Time) error {
	e.requeueAt = time.Time{}
	if err := e.applyEvents(ctx, now); err != nil {
		return err
	}
	// As the interruption controller polling its queue: notices given act at once.
	if err := e.interrupts.Step(ctx); err != nil {
		e.rec.warn(fmt.Sprintf("handling interruptions: %v", err))
	}
	if err := e.syncWorkloads(ctx, now); err != nil {
		return err
	}
	if err := e.syncDaemonSets(ctx); err != nil {
		return err
	}
	bound, err := e.binder.Step(ctx)
	if err != nil {
		return err
	}
	// As kube-controller-manager's disruption controller: PDBs' allowed disruptions.
	e.kube.SyncDisruptionBudgets()
	for key := range bound.Bound {
		ns, name, _ := strings.Cut(key, "/")
		e.rec.bound(qualified(ns, name), now)
	}
	if err := e.maybeProvision(ctx, now); err != nil {
		return err
	}
	// The disruption loop at its in-cluster cadence: a pass every PassInterval.
	if e.lastDisruption.IsZero() || now.Sub(e.lastDisruption) >= e.disruption.PassInterval() {
		e.lastDisruption = now
		// An error here (a command abandoned because its replacement could not launch, among
		// them) is what the controller would log before its next pass: the run goes on.
		if err := e.disruption.Step(ctx); err != nil {
			e.rec.warn(fmt.Sprintf("disruption: %v", err))
		}
		if err := e.noteRepairs(ctx); err != nil {
			return err
		}
		e.disruptionSaw = e.kube.ResourceVersion()
	}
	if err := e.reconcileAll(ctx); err != nil {
		return err
	}
	for _, target := range e.cluster.NominationTargets() {
		if err := e.reconcile(ctx, e.nomination, target); err != nil {
			return fmt.Errorf("nominating pods to %s: %w", target, err)
		}
	}
	if err := e.kubelet.Step(ctx); err != nil {
		return err
	}
	if now.Second() == 0 {
		if err := e.gc.Step(ctx); err != nil {
			return err
		}
		// Every minute, as the AWS provider's capacityreservation.expiration controller.
		if err := e.reservationExpiry.Step(ctx); err != nil {
			return err
		}
		// And as its capacityreservation.capacitytype controller.
		if err := e.capacityType.Step(ctx); err != nil {
			return err
		}
	}
	e.kube.CollectGarbage()
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
