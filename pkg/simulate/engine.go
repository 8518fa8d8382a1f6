package simulate

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis"
	autoscalingv1beta1 "github.com/openkarpenter/karpenter/pkg/apis/autoscaling/v1beta1"
	ec2v1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	karpv1alpha1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
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
	"github.com/openkarpenter/karpenter/pkg/scheduling"
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
	e.binder = binder.New(e.kube, e.clock, binder.Options{Zones: e.cloud.Zones(), ReadNamespaces: readNamespaces})
	cluster := state.NewCluster(e.kube, e.clock)
	cluster.ReadNamespaces = readNamespaces
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

// maybeProvision runs the provisioner when a batch of pending pods is complete: no new pending
// pod for the idle window, or the max window since the batch began.
func (e *engine) maybeProvision(ctx context.Context, now time.Time) error {
	pods, err := e.unboundPods()
	if err != nil {
		return err
	}
	pending := 0
	for _, p := range pods {
		if state.IsProvisionable(p) {
			pending++
		}
	}
	if pending == 0 {
		e.batchStart, e.batchPending = time.Time{}, 0
		if e.provisionWanted {
			// The buffers' controller woke the provisioner (as its 30s resync does in a
			// cluster): their virtual pods are placed again, launching for those whose room
			// real pods took. Or a claim started deleting: its node's pods are placed.
			e.provisionWanted = false
			_, err = e.provisioner.Provision(ctx)
		}
		return err
	}
	if e.batchStart.IsZero() {
		e.batchStart, e.batchLastChange, e.batchPending = now, now, pending
		return nil
	}
	if pending != e.batchPending {
		e.batchLastChange, e.batchPending = now, pending
	}
	if now.Sub(e.batchLastChange) < e.opts.BatchIdleDuration && now.Sub(e.batchStart) < e.opts.BatchMaxDuration {
		return nil
	}
	e.batchStart, e.provisionWanted = time.Time{}, false
	_, err = e.provisioner.Provision(ctx)
	return err
}

// bufferTrigger is the provisioner's Trigger for the buffers' controller in a simulation.
type bufferTrigger struct{ e *engine }

// Trigger asks for a provisioning pass at the next pass.
func (t bufferTrigger) Trigger() { t.e.provisionWanted = true }

// reconcileBuffers resolves each CapacityBuffer when it is due: first seen, then after the
// controller's RequeueAfter, as its watch and resync would in a cluster.
func (e *engine) reconcileBuffers(ctx context.Context) error {
	var list autoscalingv1beta1.CapacityBufferList
	if err := e.kube.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	now := e.clock.Now()
	for _, cb := range list.Items {
		key := client.ObjectKeyFromObject(&cb)
		if due, ok := e.bufferDue[key]; ok && now.Before(due) {
			continue
		}
		res, err := e.buffers.Reconcile(ctx, reconcile.Request{NamespacedName: key})
		if err != nil {
			e.rec.warn(fmt.Sprintf("capacitybuffer %s: %v", cb.Name, err))
		}
		e.bufferDue[key] = now.Add(res.RequeueAfter)
		if res.RequeueAfter > 0 && (e.requeueAt.IsZero() || e.bufferDue[key].Before(e.requeueAt)) {
			e.requeueAt = e.bufferDue[key]
		}
	}
	return nil
}

// unboundPods returns the pods no node has taken yet (through the store's spec.nodeName index),
// read-only.
func (e *engine) unboundPods() ([]*corev1.Pod, error) {
	return e.pods(client.MatchingFields{"spec.nodeName": ""})
}

// pods returns the pods opts select, in List's order: the store's own, read-only (see
// state.ListPods).
func (e *engine) pods(opts ...client.ListOption) ([]*corev1.Pod, error) {
	return state.ListPods(context.Background(), e.kube, opts...)
}

// reconcileAll calls every controller for the objects of its kind, as their watches would (the
// NodeClaims through reconcileClaims, which passes over the settled ones).
func (e *engine) reconcileAll(ctx context.Context) error {
	// Only names are read from these lists: the controllers fetch their own copies.
	var classes ec2v1.EC2NodeClassList
	if err := e.kube.List(ctx, &classes, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for _, c := range classes.Items {
		if err := e.reconcile(ctx, e.classStatus, c.Name); err != nil {
			return fmt.Errorf("nodeclass %s: %w", c.Name, err)
		}
	}
	var pools karpv1.NodePoolList
	if err := e.kube.List(ctx, &pools, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	if err := e.reconcileOverlays(ctx, classes.Items, pools.Items); err != nil {
		return err
	}
	for _, np := range pools.Items {
		if err := e.reconcile(ctx, e.poolStatus, np.Name); err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("nodepool %s status: %w", np.Name, err)
		}
		if err := e.reconcile(ctx, e.poolStatic, np.Name); err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("nodepool %s replicas: %w", np.Name, err)
		}
	}
	if e.buffers != nil {
		if err := e.reconcileBuffers(ctx); err != nil {
			return err
		}
	}
	if e.repair != nil {
		// Before the claims: a claim repair deletes is terminated in the same pass.
		var nodes corev1.NodeList
		if err := e.kube.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		for _, n := range nodes.Items {
			if err := e.reconcile(ctx, e.repair, n.Name); err != nil && !apierrors.IsConflict(err) {
				e.rec.warn(fmt.Sprintf("repairing node %s: %v", n.Name, err))
			}
		}
	}
	return e.reconcileClaims(ctx)
}

// reconcileClaims calls the lifecycle and termination controllers for the NodeClaims, as their
// watches of NodeClaims and Nodes and their requeues would, and the reboot controller for the
// ones rebooting: a claim is reconciled unless it is settled, that is initialized, not being
// deleted nor rebooting, and neither it nor a Node of its provider ID changed since both
// controllers last returned with nothing to wait for (no error, no RequeueAfter). Such a reconcile would find nothing to do; at 100,000 pods, calling both
// controllers for every claim on every pass was a tenth of a simulated day.
func (e *engine) reconcileClaims(ctx context.Context) error {
	var claims karpv1.NodeClaimList
	if err := e.kube.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := e.kube.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	nodeVersions := make(map[string]string, len(nodes.Items))
	for _, n := range nodes.Items {
		if id := n.Spec.ProviderID; id != "" {
			nodeVersions[id] += n.Name + "@" + n.ResourceVersion + " "
		}
	}
	listed := make(map[string]bool, len(claims.Items))
	now := e.clock.Now()
	var nextExpiry time.Time
	for _, c := range claims.Items {
		listed[c.Name] = true
		version := c.ResourceVersion + " " + nodeVersions[c.Status.ProviderID]
		settles := c.DeletionTimestamp == nil && c.IsInitialized()
		// As the expiration controller's requeue at each claim's expiry: an expired claim is
		// deleted, and terminated from this pass on.
		if at, ok := expiration.ExpiresAt(&c); ok && c.DeletionTimestamp == nil {
			if now.Before(at) {
				if nextExpiry.IsZero() || at.Before(nextExpiry) {
					nextExpiry = at
				}
			} else {
				if _, err := e.expiration.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: c.Name}}); err != nil && !apierrors.IsConflict(err) {
					e.rec.warn(fmt.Sprintf("expiring nodeclaim %s: %v", c.Name, err))
				}
				settles = false
			}
		}
		// As the reboot controller's watch of the NodeClaims with a Rebooting condition: a
		// reboot under way moves on every pass (it asks to be looked at again while it lasts).
		rebooting := c.IsRebooting()
		if rebooting {
			settles = false
		}
		if settles && e.settled[c.Name] == version {
			continue
		}
		delete(e.settled, c.Name)
		before := e.requeueAt
		e.requeueAt = time.Time{}
		failed := false
		if rebooting {
			if err := e.stepReboot(ctx, &c); err != nil {
				failed = true
				if !apierrors.IsConflict(err) && !cloudprovider.IsRetryable(err) {
					e.rec.warn(fmt.Sprintf("rebooting nodeclaim %s: %v", c.Name, err))
				}
			}
		}
		if err := e.reconcile(ctx, e.lifecycle, c.Name); err != nil {
			failed = true
			if !apierrors.IsConflict(err) && !cloudprovider.IsRetryable(err) {
				e.rec.warn(fmt.Sprintf("nodeclaim %s: %v", c.Name, err))
			}
		}
		// Termination follows a deleted Node for every claim, and drains and finalizes the
		// deleting ones.
		if err := e.reconcile(ctx, e.termination, c.Name); err != nil {
			failed = true
			if !apierrors.IsConflict(err) {
				e.rec.warn(fmt.Sprintf("terminating nodeclaim %s: %v", c.Name, err))
			}
		}
		if settles && !failed && e.requeueAt.IsZero() {
			e.settled[c.Name] = version
		}
		if e.requeueAt.IsZero() || (!before.IsZero() && before.Before(e.requeueAt)) {
			e.requeueAt = before
		}
		if c.DeletionTimestamp != nil && !e.deletingSeen[c.Name] {
			// As the provisioner's NodeClaim watch: a claim starting to delete wakes it.
			e.deletingSeen[c.Name] = true
			e.provisionWanted = true
		}
		if c.DeletionTimestamp != nil {
			// As the provisioner's NodeClaim watch: a claim finalized now (a launch that failed
			// at once among them) releases its pods.
			if err := e.kube.Get(ctx, client.ObjectKey{Name: c.Name}, &karpv1.NodeClaim{}); apierrors.IsNotFound(err) {
				e.provisioner.ClaimDeleted(c.Name)
			}
		}
	}
	maps.DeleteFunc(e.settled, func(name, _ string) bool { return !listed[name] })
	maps.DeleteFunc(e.deletingSeen, func(name string, _ bool) bool { return !listed[name] })
	if !nextExpiry.IsZero() && (e.requeueAt.IsZero() || nextExpiry.Before(e.requeueAt)) {
		e.requeueAt = nextExpiry
	}
	return nil
}

// reconcileOverlays evaluates the NodeOverlays again, as the controller's watches would, when
// an overlay or a NodePool changed generation or an EC2NodeClass changed at all since the last
// evaluation (or it left a NodePool unevaluated), before the NodePools are used.
func (e *engine) reconcileOverlays(ctx context.Context, classes []ec2v1.EC2NodeClass, pools []karpv1.NodePool) error {
	if e.overlays == nil {
		return nil
	}
	var overlays karpv1alpha1.NodeOverlayList
	if err := e.kube.List(ctx, &overlays, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	var seen strings.Builder
	for _, o := range overlays.Items {
		fmt.Fprintf(&seen, "o/%s/%d ", o.Name, o.Generation)
	}
	for _, np := range pools {
		fmt.Fprintf(&seen, "p/%s/%d ", np.Name, np.Generation)
	}
	for _, c := range classes {
		fmt.Fprintf(&seen, "c/%s/%s ", c.Name, c.ResourceVersion)
	}
	if seen.String() == e.overlaysSeen {
		return nil
	}
	if _, err := e.overlays.Reconcile(ctx, request("nodeoverlays")); err != nil {
		// A NodePool whose NodeClass is not ready yet is evaluated again next pass.
		e.overlaysSeen = ""
		if apierrors.IsConflict(err) {
			return nil
		}
		if msg := fmt.Sprintf("evaluating nodeoverlays: %v", err); msg != e.overlaysWarned {
			e.rec.warn(msg)
			e.overlaysWarned = msg
		}
		return nil
	}
	e.overlaysSeen = seen.String()
	return nil
}

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
}

// reconcile calls a controller for the object of that name, as its watch would, and notes when
// it asked to look again (its RequeueAfter): the engine wakes then even if nothing else is due.
func (e *engine) reconcile(ctx context.Context, r reconcile.Reconciler, name string) error {
	res, err := r.Reconcile(ctx, request(name))
	if res.RequeueAfter > 0 {
		if at := e.clock.Now().Add(res.RequeueAfter); e.requeueAt.IsZero() || at.Before(e.requeueAt) {
			e.requeueAt = at
		}
	}
	return err
}

// quiet reports whether nothing will change until the next timeline event or job completion:
// no pod waits, no claim or node is on its way.
func (e *engine) quiet(ctx context.Context) (bool, error) {
	if pods, err := e.unboundPods(); err != nil || len(pods) > 0 {
		return false, err
	}
	if starting, err := e.pods(client.MatchingFields{"status.phase": string(corev1.PodPending)}); err != nil || len(starting) > 0 {
		return false, err
	}
	var claims karpv1.NodeClaimList
	if err := e.kube.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	for _, c := range claims.Items {
		if c.DeletionTimestamp != nil || !c.IsInitialized() {
			return false, nil
		}
	}
	for _, in := range e.cloud.Instances() {
		if in.State == sim.InstanceStatePending {
			return false, nil
		}
	}
	if e.disruption.Pending() != nil || e.disruption.InFlight() != nil {
		return false, nil
	}
	return len(e.cloud.Interruptions()) == e.rec.interruptionsSeen, nil
}

// nextWakeup is the next virtual time something is due while the cluster is quiet: a timeline
// event, a job finishing or a capacity shortage ending (else the end of the run). Nothing
// changes on its own in between, so the engine jumps there.
func (e *engine) nextWakeup(now time.Time) time.Time {
	next := Start.Add(e.w.Duration.Duration)
	if e.next < len(e.w.Timeline) {
		if at := Start.Add(e.w.Timeline[e.next].At.Duration); at.Before(next) {
			next = at
		}
	}
	for _, t := range e.rec.jobEnds {
		if t.After(now) && t.Before(next) {
			next = t
		}
	}
	for _, s := range e.shortages {
		if s.until.After(now) && s.until.Before(next) {
			next = s.until
		}
	}
	// Every controller's own timers: what each asked to be requeued after in the last pass,
	// and when disruption's decision may change with time (consolidateAfter, expireAfter,
	// do-not-disrupt durations, budget windows).
	// Disruption acts on the first tick of its loop at or after its moment.
	for _, t := range []time.Time{e.requeueAt, e.disruptionTick(e.disruption.NextWakeup())} {
		if t.After(now) && t.Before(next) {
			next = t
		}
	}
	// The cluster changed since the disruption loop last looked (or EveryTick): its next tick.
	if e.opts.EveryTick || e.kube.ResourceVersion() != e.disruptionSaw {
		if t := e.disruptionTick(now.Add(time.Nanosecond)); t.Before(next) {
			next = t
		}
	}
	if !next.After(now) {
		next = now.Add(e.opts.Step)
	}
	return next
}

// disruptionTick is the first tick of the disruption loop at or after t (zero for zero).
func (e *engine) disruptionTick(t time.Time) time.Time {
	if t.IsZero() || !t.After(e.lastDisruption) {
		return t
	}
	poll := e.disruption.PassInterval()
	ticks := (t.Sub(e.lastDisruption) + poll - 1) / poll
	return e.lastDisruption.Add(ticks * poll)
}

// applyEvents carries out the timeline events that are due.
func (e *engine) applyEvents(ctx context.Context, now time.Time) error {
	for e.next < len(e.w.Timeline) && !Start.Add(e.w.Timeline[e.next].At.Duration).After(now) {
		ev := e.w.Timeline[e.next]
		e.next++
		e.rec.log(timelineEntry(&ev))
		switch {
		case ev.Deploy != nil:
			e.deployments[ev.Deploy.key()] = &deploymentState{spec: ev.Deploy, template: ev.Deploy.template, replicas: ev.Deploy.Replicas}
			if ev.Deploy.MinAvailable != nil {
				minAvailable := intstr.FromInt32(int32(*ev.Deploy.MinAvailable))
				pdb := &policyv1.PodDisruptionBudget{
					ObjectMeta: metav1.ObjectMeta{Name: ev.Deploy.Name, Namespace: ev.Deploy.namespace()},
					Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: ev.Deploy.template.Labels}},
				}
				if err := e.kube.Create(ctx, pdb); err != nil {
					return err
				}
			}
		case ev.Scale != nil:
			e.deployments[cmp.Or(ev.Scale.target, ev.Scale.Name)].replicas = ev.Scale.Replicas
		case ev.Delete != nil:
			key := cmp.Or(ev.Delete.target, ev.Delete.Name)
			ns, name := defaultNamespace, key
			if d, ok := e.deployments[key]; ok {
				d.replicas = 0
				ns, name = d.spec.namespace(), d.spec.Name
			}
			if j, ok := e.jobs[key]; ok {
				ns, name = j.spec.namespace(), j.spec.Name
			}
			delete(e.jobs, key)
			if err := e.deleteOwnedPods(ctx, ns, name); err != nil {
				return err
			}
		case ev.Jobs != nil:
			e.jobs[ev.Jobs.key()] = &jobsState{spec: ev.Jobs}
		case ev.Interrupt != nil:
			e.interrupt(ev.Interrupt.Count)
		case ev.CapacityShortage != nil:
			s := ev.CapacityShortage
			e.cloud.SetOfferingAvailable(s.InstanceType, s.Zone, s.CapacityType, false)
			e.shortages = append(e.shortages, shortage{spec: s, until: now.Add(s.For.Duration)})
		case ev.Apply != "":
			for _, obj := range ev.applied {
				if err := e.apply(ctx, obj); err != nil {
					return err
				}
			}
		case ev.Annotate != nil:
			if err := e.annotate(ctx, ev.Annotate); err != nil {
				return err
			}
		case ev.Unhealthy != nil:
			e.sicken(ev.Unhealthy)
		}
	}
	kept := e.shortages[:0]
	for _, s := range e.shortages {
		if !s.until.After(now) {
			e.cloud.SetOfferingAvailable(s.spec.InstanceType, s.spec.Zone, s.spec.CapacityType, true)
			continue
		}
		kept = append(kept, s)
	}
	e.shortages = kept
	return nil
}

// interrupt sends notices to the oldest running spot instances.
func (e *engine) interrupt(count int) {
	for _, in := range e.cloud.Instances() {
		if count == 0 {
			return
		}
		if in.State == sim.InstanceStateRunning && in.CapacityType == karpv1.CapacityTypeSpot {
			if err := e.cloud.Interrupt(in.ProviderID); err == nil {
				e.rec.log(LogEntry{Kind: LogInterruption, Message: fmt.Sprintf("spot interruption warning for instance %s (%s): reclaimed in %s", in.ID, in.InstanceType, sim.DefaultInterruptionNotice), Nodes: []string{in.Hostname}})
				count--
			}
		}
	}
}

// sicken makes the oldest running instances (of the event's NodePool) whose Node does not
// report the event's condition yet report it from now on.
func (e *engine) sicken(u *Unhealthy) {
	left := u.Count
	for _, in := range e.cloud.Instances() {
		if left == 0 {
			return
		}
		if in.State != sim.InstanceStateRunning || (u.NodePool != "" && in.NodePoolName != u.NodePool) ||
			slices.ContainsFunc(in.Conditions, func(c sim.NodeCondition) bool { return string(c.Type) == u.Condition }) {
			continue
		}
		cond := sim.NodeCondition{Type: corev1.NodeConditionType(u.Condition), Status: corev1.ConditionStatus(u.Status), Reason: u.Reason}
		if err := e.cloud.MakeUnhealthy(in.ProviderID, cond); err != nil {
			e.rec.warn(fmt.Sprintf("making instance %s unhealthy: %v", in.ID, err))
			continue
		}
		what := fmt.Sprintf("node of instance %s (%s) reports %s %s", in.ID, in.InstanceType, u.Condition, u.Status)
		if u.Reason != "" {
			what += " (" + u.Reason + ")"
		}
		e.rec.log(LogEntry{Kind: LogUnhealthy, Message: what, Nodes: []string{in.Hostname}})
		left--
	}
	if left > 0 {
		e.rec.warn(fmt.Sprintf("unhealthy: %d of %d nodes made unhealthy, the others are not running or already report %s", u.Count-left, u.Count, u.Condition))
	}
}

const ownerLabel = "simulate.karpenter.sh/owner"

// syncWorkloads plays the Deployment and Job controllers: keeps each deployment at its
// replicas, starts jobs' pods, finishes pods whose runtime is over, and replaces pods whose
// node went away. It reads the pods through the tracker, not the store: only the pods of
// nodes gone, of jobs and of deployments scaled down are visited.
func (e *engine) syncWorkloads(ctx context.Context, now time.Time) error {
	var nodes corev1.NodeList
	if err := e.kube.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	exists := map[string]bool{}
	for _, n := range nodes.Items {
		if n.DeletionTimestamp == nil {
			exists[n.Name] = true
		}
	}
	// A pod whose node is gone is lost, as pod garbage collection would find it.
	var lost []*corev1.Pod
	for node := range e.tracked.onNode {
		if exists[node] {
			continue
		}
		pods, err := e.pods(client.MatchingFields{"spec.nodeName": node})
		if err != nil {
			return err
		}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodSucceeded {
				lost = append(lost, p)
			}
		}
	}
	for _, p := range sortedByName(lost) {
		if err := e.kube.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	// Jobs' pods that ran their runtime succeed.
	var done []*corev1.Pod
	for owner, j := range e.jobs {
		for _, p := range e.tracked.byOwner[owner] {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
				continue
			}
			end := runningSince(p).Add(j.spec.Runtime.Duration)
			e.rec.jobEnds[podKey(p)] = end
			if !now.Before(end) {
				done = append(done, p)
			}
		}
	}
	for _, p := range sortedByName(done) {
		if err := e.finishPod(ctx, p); err != nil {
			return err
		}
		delete(e.rec.jobEnds, podKey(p))
	}
	for _, name := range sortedKeys(e.deployments) {
		d := e.deployments[name]
		if d.spec.stateful != nil {
			if err := e.syncStatefulSet(ctx, d, e.tracked.livePods(name)); err != nil {
				return err
			}
			continue
		}
		have := e.tracked.live[name]
		for i := have; i < d.replicas; i++ {
			d.serial++
			if err := e.createPod(ctx, d.spec.namespace(), d.spec.Name, d.serial, d.template, nil); err != nil {
				return err
			}
		}
		if have > d.replicas {
			// Scale down removes the newest pods first, as a ReplicaSet prefers unready and
			// young pods.
			live := e.tracked.livePods(name)
			sort.Slice(live, func(i, j int) bool {
				if a, b := live[i].CreationTimestamp, live[j].CreationTimestamp; !a.Equal(&b) {
					return a.After(b.Time)
				}
				return live[i].Name > live[j].Name
			})
			for _, p := range live[:len(live)-d.replicas] {
				if err := e.kube.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
					return err
				}
			}
		}
	}
	for _, name := range sortedKeys(e.jobs) {
		j := e.jobs[name]
		for ; j.created < j.spec.Count; j.created++ {
			if err := e.createPod(ctx, j.spec.namespace(), j.spec.Name, j.created+1, j.spec.template, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// daemonTolerations are the tolerations the DaemonSet controller adds to every pod it makes
// (Kubernetes' AddOrUpdateDaemonPodTolerations): its pods run on nodes not ready or
// unreachable, under pressure, or cordoned.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// syncDaemonSets plays the DaemonSet controller: every node that is not being deleted runs one
// pod of each DaemonSet whose pods select its labels and tolerate its taints (besides those
// every daemon pod tolerates, daemonTolerations). The pod is created bound to its node and
// owned by its DaemonSet, as the controller's pods are, so that the binder sees its requests
// and host ports, the reports its requests, and Karpenter's controllers take it for a daemon
// pod (not reschedulable: a node with only daemon pods is empty). A node that goes loses its
// daemon pods with its other pods (syncWorkloads).
func (e *engine) syncDaemonSets(ctx context.Context) error {
	var daemonSets appsv1.DaemonSetList
	if err := e.kube.List(ctx, &daemonSets, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	if len(daemonSets.Items) == 0 {
		return nil
	}
	var nodes corev1.NodeList
	if err := e.kube.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if node.DeletionTimestamp != nil {
			continue
		}
		taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool {
			return scheduling.Tolerates(daemonTolerations, []corev1.Taint{t}) == nil
		})
		present := e.tracked.daemons[node.Name]
		for j := range daemonSets.Items {
			ds := &daemonSets.Items[j]
			if ds.DeletionTimestamp != nil || present[ds.UID] > 0 || !state.DaemonSetSchedules(ds, node.Labels, taints) {
				continue
			}
			if err := e.createDaemonPod(ctx, ds, node.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// createDaemonPod creates the pod of a DaemonSet on a node, as the DaemonSet controller would
// (named <daemonset>-<node>, cut with a hash to a name's bound). A pod of that name still being
// deleted there is left to go first.
func (e *engine) createDaemonPod(ctx context.Context, ds *appsv1.DaemonSet, node string) error {
	tmpl := &ds.Spec.Template
	controller := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: daemonPodName(ds.Name, node), Namespace: ds.Namespace, Labels: maps.Clone(tmpl.Labels), Annotations: maps.Clone(tmpl.Annotations),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &controller, BlockOwnerDeletion: &controller}},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = node
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, daemonTolerations...)
	if err := e.kube.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating pod %s of daemonset %s on node %s: %w", podKey(pod), qualified(ds.Namespace, ds.Name), node, err)
	}
	return nil
}

// daemonPodName is the name of a DaemonSet's pod on a node: <daemonset>-<node>, cut to 253
// characters (a pod name's bound) with a hash of the whole when longer.
func daemonPodName(daemonSet, node string) string {
	name := daemonSet + "-" + node
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:240], ".-") + "-" + hex.EncodeToString(sum[:])[:8]
}

// sortedByName sorts pods by namespace and name, as List returns them, and returns them.
func sortedByName(pods []*corev1.Pod) []*corev1.Pod {
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return pods
}

// podReady reports whether the pod runs and is Ready.
func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func runningSince(p *corev1.Pod) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return p.CreationTimestamp.Time
}

// syncStatefulSet plays the StatefulSet controller for a deployment read from a StatefulSet:
// its pods are <name>-0 to <name>-<replicas-1>, and a missing one is created once its name is
// free (its predecessor gone). With ordered (OrderedReady) pod management, one is created only
// when all below it run and are Ready. (A plain-manifest workload never scales it down.)
func (e *engine) syncStatefulSet(ctx context.Context, d *deploymentState, live []*corev1.Pod) error {
	s, ns, name := d.spec.stateful, d.spec.namespace(), d.spec.Name
	byName := map[string]*corev1.Pod{}
	for _, p := range live {
		byName[p.Name] = p
	}
	for i := 0; i < d.replicas; i++ {
		podName := name + "-" + strconv.Itoa(i)
		if p := byName[podName]; p != nil {
			if s.ordered && !podReady(p) {
				break
			}
			continue
		}
		if e.podExists(ctx, ns, podName) {
			if s.ordered {
				break
			}
			continue // its predecessor is still being deleted
		}
		if err := e.createPod(ctx, ns, name, i, d.template, s); err != nil {
			return err
		}
		if s.ordered {
			break
		}
	}
	return nil
}

// podExists reports whether a pod of that namespace and name is in the store, being deleted or
// not.
func (e *engine) podExists(ctx context.Context, namespace, name string) bool {
	return e.kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.Pod{}, client.UnsafeDisableDeepCopy) == nil
}

// createPod creates the pod serial of the workload owner of namespace from its template, and
// first the pod's claims when the workload is a StatefulSet (stateful set).
func (e *engine) createPod(ctx context.Context, namespace, owner string, serial int, tmpl *corev1.PodTemplateSpec, stateful *statefulSet) error {
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Name = owner + "-" + strconv.Itoa(serial)
	pod.Namespace = namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[ownerLabel] = owner
	if stateful != nil {
		// As the StatefulSet controller: the pod's claims first, unless they exist already.
		for _, pvc := range stateful.podClaims(pod, owner, serial) {
			if err := e.kube.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating persistentvolumeclaim %s: %w", pvc.Name, err)
			}
		}
	}
	if err := e.kube.Create(ctx, pod); err != nil {
		return fmt.Errorf("creating pod %s: %w", podKey(pod), err)
	}
	e.rec.podCreated(pod)
	return nil
}

func (e *engine) finishPod(ctx context.Context, shared *corev1.Pod) error {
	p := shared.DeepCopy()
	p.Status.Phase = corev1.PodSucceeded
	if err := e.kube.Status().Update(ctx, p); err != nil && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// apply creates the object, or replaces the labels, annotations and spec of the one there, as
// kubectl apply of a whole manifest would.
func (e *engine) apply(ctx context.Context, obj client.Object) error {
	desired := obj.DeepCopyObject().(client.Object)
	current := desired.DeepCopyObject().(client.Object)
	err := e.kube.Get(ctx, client.ObjectKeyFromObject(desired), current)
	if apierrors.IsNotFound(err) {
		return e.kube.Create(ctx, desired)
	}
	if err != nil {
		return err
	}
	switch d := desired.(type) {
	case *karpv1.NodePool:
		c := current.(*karpv1.NodePool)
		c.Labels, c.Annotations, c.Spec = d.Labels, d.Annotations, d.Spec
	case *ec2v1.EC2NodeClass:
		c := current.(*ec2v1.EC2NodeClass)
		c.Labels, c.Annotations, c.Spec = d.Labels, d.Annotations, d.Spec
	}
	return e.kube.Update(ctx, current)
}

// annotate sets annotations on a deployment's pods, now and from now on, or on the oldest
// nodes and their NodeClaims.
func (e *engine) annotate(ctx context.Context, a *Annotate) error {
	if a.Deployment != "" {
		d := e.deployments[cmp.Or(a.target, a.Deployment)]
		template := d.template.DeepCopy()
		if template.Annotations == nil {
			template.Annotations = map[string]string{}
		}
		maps.Copy(template.Annotations, a.Annotations)
		d.template = template
		var pods corev1.PodList
		if err := e.kube.List(ctx, &pods, client.InNamespace(d.spec.namespace()), client.MatchingLabels{ownerLabel: d.spec.Name}); err != nil {
			return err
		}
		for i := range pods.Items {
			if err := e.setAnnotations(ctx, &pods.Items[i], a.Annotations); err != nil {
				return err
			}
		}
		return nil
	}
	var nodes corev1.NodeList
	if err := e.kube.List(ctx, &nodes); err != nil {
		return err
	}
	slices.SortFunc(nodes.Items, func(x, y corev1.Node) int {
		if c := x.CreationTimestamp.Compare(y.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	})
	var claims karpv1.NodeClaimList
	if err := e.kube.List(ctx, &claims); err != nil {
		return err
	}
	for i := range nodes.Items[:min(a.Nodes, len(nodes.Items))] {
		node := &nodes.Items[i]
		if err := e.setAnnotations(ctx, node, a.Annotations); err != nil {
			return err
		}
		for j := range claims.Items {
			if claims.Items[j].Status.NodeName == node.Name {
				if err := e.setAnnotations(ctx, &claims.Items[j], a.Annotations); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (e *engine) setAnnotations(ctx context.Context, obj client.Object, annotations map[string]string) error {
	merged := maps.Clone(obj.GetAnnotations())
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, annotations)
	obj.SetAnnotations(merged)
	return client.IgnoreNotFound(e.kube.Update(ctx, obj))
}

// deleteOwnedPods deletes the pods of the workload owner of namespace.
func (e *engine) deleteOwnedPods(ctx context.Context, namespace, owner string) error {
	var pods corev1.PodList
	if err := e.kube.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{ownerLabel: owner}); err != nil {
		return err
	}
	for i := range pods.Items {
		if err := e.kube.Delete(ctx, &pods.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
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
