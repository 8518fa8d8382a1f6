package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/capacitybuffer"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// Options tune the provisioner.
type Options struct {
	// BatchIdleDuration ends a batch when no pod arrived for this long (default 1s).
	BatchIdleDuration time.Duration
	// BatchMaxDuration ends a batch this long after it started (default 10s).
	BatchMaxDuration time.Duration
	// IgnorePreferences treats preferred affinities as absent (Karpenter's preference policy
	// "Ignore").
	IgnorePreferences bool
	// MinValuesBestEffort relaxes minValues that cannot be met (policy "BestEffort").
	MinValuesBestEffort bool
}

// Provisioner creates NodeClaims for pods that cannot be scheduled.
type Provisioner struct {
	kubeClient    client.Client
	cluster       *state.Cluster
	launcher      *Launcher
	cloudProvider cloudprovider.CloudProvider
	unavailable   *cloudprovider.UnavailableOfferings
	events        *events.Recorder
	// podEvents limits the Nominated Events, across pods, as Karpenter's.
	podEvents events.RateLimiter
	batcher   *Batcher
	clock     clock.Clock
	opts      Options
	observers []func(*Decision)
	// buffers, when set (the CapacityBuffer feature gate), adds the buffers' virtual pods to
	// every pass.
	buffers *capacitybuffer.Buffers
	// saidNoScheduler is set while pods wait untried past NoSchedulerAfter and the log has said
	// so (warnNoScheduler).
	saidNoScheduler bool
}

// NoSchedulerAfter is how long a pending pod of the default scheduler may wait with no
// PodScheduled condition before the provisioner logs that no kube-scheduler seems to be
// running: the kube-scheduler tries every pod within seconds, even in a burst of thousands.
const NoSchedulerAfter = time.Minute

// warnNoScheduler logs, once while it lasts, that unbound pods of the default scheduler have
// waited NoSchedulerAfter untried: Karpenter launches nodes for them, but only a scheduler
// binds them, so on a control plane without one nothing runs and nothing else says why.
func (p *Provisioner) warnNoScheduler(ctx context.Context, pods []*corev1.Pod) {
	now := p.clock.Now()
	var waiting *corev1.Pod
	for _, pod := range pods {
		terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
		if pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && !terminal && untried(pod) && now.Sub(pod.CreationTimestamp.Time) >= NoSchedulerAfter {
			waiting = pod
			break
		}
	}
	if waiting == nil {
		p.saidNoScheduler = false
		return
	}
	if p.saidNoScheduler {
		return
	}
	p.saidNoScheduler = true
	log.FromContext(ctx).Info("pending pods have no PodScheduled condition: no kube-scheduler seems to be running (Karpenter launches nodes for them, but only a kube-scheduler binds pods to nodes)",
		"pod", client.ObjectKeyFromObject(waiting).String(), "waiting", now.Sub(waiting.CreationTimestamp.Time).Round(time.Second).String())
}

// untried reports whether the kube-scheduler has not tried the pod: it is for the default
// scheduler and has no PodScheduled condition.
func untried(pod *corev1.Pod) bool {
	if pod.Spec.SchedulerName != "" && pod.Spec.SchedulerName != corev1.DefaultSchedulerName {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return false
		}
	}
	return true
}

// KeepBuffers makes every pass place the virtual pods of the CapacityBuffers too, after the
// pending pods: nodes launch for those that fit nowhere, but none is nominated or reported,
// and each buffer's Provisioning condition says where they went (package capacitybuffer).
func (p *Provisioner) KeepBuffers(b *capacitybuffer.Buffers) { p.buffers = b }

// Observe registers a function called with every decision after it is carried out (for
// metrics, the simulator's report and tests). It must not block.
func (p *Provisioner) Observe(fn func(*Decision)) { p.observers = append(p.observers, fn) }

// NewProvisioner wires a provisioner. recorder may be nil.
func NewProvisioner(kubeClient client.Client, cluster *state.Cluster, cp cloudprovider.CloudProvider,
	unavailable *cloudprovider.UnavailableOfferings, recorder record.EventRecorder, c clock.Clock, opts Options) *Provisioner {
	return &Provisioner{
		kubeClient: kubeClient, cluster: cluster, launcher: NewLauncher(kubeClient, cluster), cloudProvider: cp, unavailable: unavailable,
		events: events.NewRecorder(recorder, c), podEvents: events.NewRateLimiter(5, 10, c),
		batcher: NewBatcher(c, opts.BatchIdleDuration, opts.BatchMaxDuration), clock: c, opts: opts,
	}
}

// Trigger asks for a provisioning pass after the current batch window.
func (p *Provisioner) Trigger() { p.batcher.Trigger() }

// Start runs batches until ctx is done (a controller-runtime Runnable).
func (p *Provisioner) Start(ctx context.Context) error {
	for p.batcher.Wait(ctx) {
		if _, err := p.Provision(ctx); err != nil {
			log.FromContext(ctx).Error(err, "provisioning failed")
			p.Trigger() // try again after the next window
		}
	}
	return nil
}

// NeedLeaderElection makes the provisioner run only on the leader.
func (p *Provisioner) NeedLeaderElection() bool { return true }

// Decision is what one provisioning pass did.
type Decision struct {
	// Results are the scheduler's decisions.
	Results *scheduler.Results
	// Created are the NodeClaims created, in the order of Results.NewClaims.
	Created []*karpv1.NodeClaim
	// Refused are the pods that the nodes they were nominated to turned away since the last
	// pass, with what differed.
	Refused []Refusal
}

// Provision runs one pass: snapshot, schedule, create NodeClaims, nominate, explain.
func (p *Provisioner) Provision(ctx context.Context) (*Decision, error) {
	snap, err := p.cluster.SyncSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	refused := p.judgeMisses(ctx, snap)
	p.warnNoScheduler(ctx, snap.Pods)
	var virtual []*corev1.Pod
	if p.buffers != nil {
		if virtual, err = p.buffers.VirtualPods(ctx); err != nil {
			return nil, err
		}
	}
	deleting, err := p.deletingPods(ctx, snap)
	if err != nil {
		return nil, err
	}
	if len(snap.Pending) == 0 && len(virtual) == 0 && len(deleting) == 0 {
		p.recordBuffers(ctx, capacitybuffer.Outcome{})
		metrics.SetIgnoredPods(0)
		metrics.SetSchedulingOutcome(metrics.ControllerProvisioner, 0, nil)
		decision := &Decision{Results: &scheduler.Results{}, Refused: refused}
		if len(refused) > 0 {
			for _, fn := range p.observers {
				fn(decision)
			}
		}
		return decision, nil
	}
	input, pools, unschedulable, err := p.input(ctx, snap, deleting)
	if err != nil {
		return nil, err
	}
	metrics.SetIgnoredPods(len(unschedulable))
	// The count takes the cluster state's lock once per pending pod: only for a debug log.
	if debug := log.FromContext(ctx).V(1); debug.Enabled() {
		if again := p.plannedBefore(snap.Pending); again > 0 {
			debug.Info("planning pods again", "pods", again, "pending", len(snap.Pending))
		}
	}
	arriving, arrivals := p.arrivingReplicas(ctx, snap)
	input.Pods = append(input.Pods, arriving...)
	// The snapshot's pods carry the default topology spread constraints already; stand-ins
	// copy theirs from a pending pod.
	input.Pods = append(input.Pods, p.cluster.DefaultSpread(ctx, virtual)...)
	start := time.Now()
	results := p.solve(input)
	logRefusals(ctx, results)
	logDecisions(ctx, input.Pods, results, time.Since(start))
	var extracted scheduler.Results
	var claimIndex map[types.UID]int // the stand-ins' new claims, by index in results.NewClaims
	if len(arrivals) > 0 || len(deleting) > 0 {
		// Their room is launched; stand-ins are not pods, and the deleting nodes' pods are
		// bound: neither is nominated nor reported.
		moving := make(map[types.UID]bool, len(deleting))
		for _, pod := range deleting {
			moving[pod.UID] = true
		}
		claimIndex = map[types.UID]int{}
		for i, c := range results.NewClaims {
			for _, pod := range c.Pods {
				if _, ok := arrivals[pod.UID]; ok {
					claimIndex[pod.UID] = i
				}
			}
		}
		extracted = results.Extract(func(pod *corev1.Pod) bool {
			_, arriving := arrivals[pod.UID]
			return moving[pod.UID] || arriving
		})
	}
	results.PodErrors = append(results.PodErrors, unschedulable...)
	p.recordBuffers(ctx, capacitybuffer.Split(results))
	p.markDecisions(results)
	decision := &Decision{Results: results, Refused: refused}
	for _, c := range results.NewClaims {
		claim, err := p.launcher.Launch(ctx, pools[c.NodePool], c, metrics.ReasonProvisioned)
		if err != nil {
			return decision, err
		}
		decision.Created = append(decision.Created, claim)
		for _, pod := range c.Pods {
			p.cluster.Nominate(pod, claim.Name, true)
			p.events.Publish(nominatedEvent(pod, claim.Name, "", p.podEvents))
		}
	}
	names := make([]string, len(decision.Created))
	for i, claim := range decision.Created {
		names[i] = claim.Name
	}
	p.cluster.RecordBatch(names...)
	p.reserveArrivals(arrivals, extracted, claimIndex, decision.Created)
	targets := placementTargets(snap)
	for _, pl := range results.ExistingPlacements {
		p.cluster.Nominate(pl.Pod, pl.Node, false)
		target, ok := targets[pl.Node]
		if !ok {
			target[1] = pl.Node
		}
		p.events.Publish(nominatedEvent(pl.Pod, target[0], target[1], p.podEvents))
	}
	for _, pe := range results.PodErrors {
		p.events.Publish(failedSchedulingEvent(pe.Pod, pe.Err))
	}
	for _, fn := range p.observers {
		fn(decision)
	}
	return decision, nil
}

// plannedBefore counts the pods an earlier pass placed (on a node or a claim it launched): they
// wait for capacity again because their nomination ended (see state.Miss) or their claim went.
func (p *Provisioner) plannedBefore(pods []*corev1.Pod) int {
	n := 0
	for _, pod := range pods {
		if !p.cluster.PodScheduling(pod.UID).Schedulable.IsZero() {
			n++
		}
	}
	return n
}

// recordBuffers sets the buffers' Provisioning condition from where the pass put their virtual
// pods (which are no longer in its results).
func (p *Provisioner) recordBuffers(ctx context.Context, o capacitybuffer.Outcome) {
	if p.buffers == nil {
		return
	}
	if err := p.buffers.Provisioned(ctx, o); err != nil {
		log.FromContext(ctx).Error(err, "updating CapacityBuffer provisioning status")
	}
}

// solve runs the scheduler on the input, reporting the run's progress and outcome in the
// scheduler metrics.
func (p *Provisioner) solve(input scheduler.Input) *scheduler.Results {
	input.Progress = &scheduler.Progress{}
	input.Options.CountEffectiveZones = true
	run := metrics.StartSchedulingRun(metrics.ControllerProvisioner, string(uuid.NewUUID()), input.Progress.Queued)
	start := time.Now()
	results := scheduler.Solve(input)
	metrics.ObserveSchedulingDuration(metrics.ControllerProvisioner, time.Since(start))
	run.Finish()
	metrics.SetSchedulingOutcome(metrics.ControllerProvisioner, len(results.PodErrors), results.PendingByEffectiveZone)
	return results
}

// markDecisions records in the cluster state when the pass placed its pods or could not, and
// observes how long the pods decided on for the first time waited for it.
func (p *Provisioner) markDecisions(results *scheduler.Results) {
	placed := make([]*corev1.Pod, 0, len(results.ExistingPlacements))
	for _, pl := range results.ExistingPlacements {
		placed = append(placed, pl.Pod)
	}
	for _, c := range results.NewClaims {
		placed = append(placed, c.Pods...)
	}
	failed := make([]*corev1.Pod, len(results.PodErrors))
	for i, pe := range results.PodErrors {
		failed[i] = pe.Pod
	}
	metrics.ObserveSchedulingDecisions(p.cluster.MarkSchedulingDecisions(placed, failed))
}

// deletingPods are the pods of the nodes marked for deletion (a NodeClaim deleted, expired or
// repaired, a disruption command's candidates once its replacements are launched) that will
// move soon: Karpenter's provisioner places them beside the pending pods
// (provisioner.go Schedule, v1.15.0: nodes.Deleting().CurrentlyReschedulablePods), so that
// their new room launches while the node drains rather than after. A disruption command's pods
// find their replacements' room there.
func (p *Provisioner) deletingPods(ctx context.Context, snap *state.Snapshot) ([]*corev1.Pod, error) {
	var marked []*state.StateNode
	for _, sn := range snap.Nodes {
		if sn.MarkedForDeletion && sn.Node != nil && len(sn.Pods) > 0 {
			marked = append(marked, sn)
		}
	}
	if len(marked) == 0 {
		return nil, nil
	}
	pdbs, err := state.ListPDBs(ctx, p.kubeClient)
	if err != nil {
		return nil, err
	}
	idx, now := state.NewPDBIndex(pdbs), p.clock.Now()
	var out []*corev1.Pod
	for _, sn := range marked {
		out = append(out, sn.ReschedulablePods(idx, now)...)
	}
	return out, nil
}

// input builds the scheduler's input from a snapshot and the pods of deleting nodes. The
// pending pods no node would take whatever the scheduler decides (a volume that does not
// exist) are left out of it, each with its error; such deleting pods are left out silently.
func (p *Provisioner) input(ctx context.Context, snap *state.Snapshot, deleting []*corev1.Pod) (scheduler.Input, map[string]*karpv1.NodePool, []scheduler.PodError, error) {
	in := scheduler.Input{
		Pods:               make([]*corev1.Pod, 0, len(snap.Pending)),
		Options:            scheduler.Options{IgnorePreferences: p.opts.IgnorePreferences, MinValuesBestEffort: p.opts.MinValuesBestEffort},
		VolumeRequirements: map[types.UID]scheduling.Requirements{},
		Avoid:              snap.Avoid,
		DaemonPods:         state.DaemonPods(snap.DaemonSets),
		NamespaceLabels:    snap.NamespaceLabels,
	}
	pools := map[string]*karpv1.NodePool{}
	ready := slices.DeleteFunc(slices.Clone(snap.NodePools), func(np *karpv1.NodePool) bool { return !nodepool.IsReady(np) })
	typesByPool, errs := state.LaunchableInstanceTypes(ctx, p.cloudProvider, ready, p.unavailable)
	schedulerPools, _, invalid := state.SchedulerNodePools(ready, typesByPool, snap.Nodes)
	byName := make(map[string]*scheduler.NodePool, len(schedulerPools))
	for _, pool := range schedulerPools {
		byName[pool.Name] = pool
	}
	for _, np := range ready {
		if err := errs[np.Name]; err != nil {
			log.FromContext(ctx).Error(err, "skipping nodepool: cannot list its instance types", "nodepool", np.Name)
		}
		if err := invalid[np.Name]; err != nil {
			log.FromContext(ctx).Error(err, "skipping nodepool with invalid requirements", "nodepool", np.Name)
		}
		pool := byName[np.Name]
		if pool == nil {
			continue
		}
		// As Karpenter: a NodePool whose requirements leave no instance type to launch says
		// so. It stays in the scheduler's input, where it can launch nothing either, so that
		// the pods' FailedScheduling says which of its requirements is at fault.
		if compatible, err := scheduler.CompatibleInstanceTypes(pool, p.opts.MinValuesBestEffort); len(compatible) == 0 || err != nil {
			log.FromContext(ctx).Info("nodepool requirements filtered out all instance types", "nodepool", np.Name, "minValuesIncompatibleErr", err)
			p.events.Publish(noCompatibleInstanceTypesEvent(np, err != nil))
		}
		pools[np.Name] = np
	}
	in.NodePools = schedulerPools
	// Initialized capacity first, then capacity still launching.
	in.Nodes = snap.SchedulerNodes()
	var unschedulable []scheduler.PodError
	pending := len(snap.Pending)
	for i, pod := range append(snap.Pending[:pending:pending], deleting...) {
		reqs, err := VolumeRequirements(ctx, p.kubeClient, pod)
		if IsMissingVolume(err) {
			// As Karpenter: the kube-scheduler will not place it, so no node is made for it.
			if i < pending {
				unschedulable = append(unschedulable, scheduler.PodError{Pod: pod, Err: err})
			}
			continue
		}
		if err != nil {
			return in, nil, nil, err
		}
		in.Pods = append(in.Pods, pod)
		if reqs.Len() > 0 {
			in.VolumeRequirements[pod.UID] = reqs
		}
	}
	return in, pools, unschedulable, nil
}

// logDecisions logs a pass's outcome in Karpenter's words: the pods it found when it launches
// for some ("found provisionable pod(s)", up to five named), the new claims and their pods, and
// the nodes (launched or launching) that take the others.
func logDecisions(ctx context.Context, pods []*corev1.Pod, results *scheduler.Results, took time.Duration) {
	onNew := 0
	for _, c := range results.NewClaims {
		onNew += len(c.Pods)
	}
	if onNew == 0 {
		return
	}
	l := log.FromContext(ctx)
	names := make([]string, 0, 6)
	for i, pod := range pods {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d other(s)", len(pods)-5))
			break
		}
		names = append(names, pod.Namespace+"/"+pod.Name)
	}
	l.Info("found provisionable pod(s)", "Pods", strings.Join(names, ", "), "duration", took)
	l.Info("computed new nodeclaim(s) to fit pod(s)", "nodeclaims", len(results.NewClaims), "pods", onNew)
	nodes := map[string]bool{}
	for _, pl := range results.ExistingPlacements {
		nodes[pl.Node] = true
	}
	if len(results.ExistingPlacements) > 0 {
		l.Info("computed unready node(s) will fit pod(s)", "nodes", len(nodes), "pods", len(results.ExistingPlacements))
	}
}
