package disruption

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/capacitybuffer"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/packing"
	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// Controller decides and carries out disruptions, one command at a time.
type Controller struct {
	kube     client.Client
	cluster  *state.Cluster
	launcher *provisioning.Launcher
	cloud    cloudprovider.CloudProvider
	// unavailable are the offerings that recently ran out of capacity: a replacement is
	// not planned on them (nil: none are known).
	unavailable *cloudprovider.UnavailableOfferings
	clock       clock.Clock
	events      *events.Recorder
	opts        Options

	mu      sync.Mutex
	pending *pendingCommand // consolidation waiting for validation
	// inflight are the commands being carried out, oldest first: as Karpenter's orchestration
	// queue, many at once, each NodePool's budgets bounding its own.
	inflight  []*inflightCommand
	podSets   map[string]string // node name → its pods' UIDs, to spot pod events
	observers []func(*Command)
	// decisionObservers are called with every decision (ObserveDecisions).
	decisionObservers []func(*Decision)
	// nextChange is the last decision's NextChange.
	nextChange time.Time
	// unseenNodePools is the last decision's UnseenNodePools, for the next.
	unseenNodePools []string
	// buffers, when set (the CapacityBuffer feature gate), supplies Input.BufferPods.
	buffers *capacitybuffer.Buffers
	// packing is the fleet re-packed at packedAt (PackingOf); packedAt is zeroed when a
	// command starts and when it ends, so the next pass measures the fleet afresh.
	packing  *packing.Result
	packedAt time.Time
	// repackIdle: re-pack consolidation found nothing on this packing; it is not tried again
	// before the fleet is measured anew (cheap passes, and at most one search per measure).
	repackIdle bool
	// podInfos keeps, from one pass to the next, what the solves derive from each pod;
	// secondInfos the same for the what-ifs run on the second core (Input.SecondPodInfos).
	podInfos, secondInfos *scheduler.PodInfos
	// packInfos is podInfos for the measures taken beside Decide (Options.Repack off).
	packInfos *scheduler.PodInfos
	// consolidation is the cluster's consolidation state, as Karpenter's (Input.Consolidated).
	consolidation *consolidationState
	// reboots are when node repair committed each NodeClaim's reboots, within
	// RebootHistoryWindow (Input.RecentReboots), by NodeClaim UID.
	reboots map[types.UID][]time.Time
}

// Packing returns the fleet re-packed from scratch by the last pass that measured it (every
// Options.PackingInterval, and the pass after a command starts), or nil before the first.
func (c *Controller) Packing() *packing.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.packing
}

// KeepBuffers makes consolidation keep the room of the CapacityBuffers' virtual pods (see
// Input.BufferPods).
func (c *Controller) KeepBuffers(b *capacitybuffer.Buffers) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buffers = b
}

type pendingCommand struct {
	cmd     *Command
	decided time.Time
}

type inflightCommand struct {
	cmd          *Command
	replacements []string // NodeClaim names
	started      time.Time
	disrupted    map[string]bool // candidates' NodeClaims deleted (and counted) so far
	// deleted is when every candidate's NodeClaim was deleted: the command is followed until
	// they are gone (their budget is then free for the next), at most a PollInterval.
	deleted time.Time
}

// NewController wires a disruption controller. recorder and unavailable may be nil.
func NewController(kube client.Client, cluster *state.Cluster, cp cloudprovider.CloudProvider, unavailable *cloudprovider.UnavailableOfferings,
	clk clock.Clock, recorder record.EventRecorder, opts Options) *Controller {
	return &Controller{
		kube: kube, cluster: cluster, launcher: provisioning.NewLauncher(kube, cluster), cloud: cp, unavailable: unavailable, clock: clk, events: events.NewRecorder(recorder, clk), opts: opts.withDefaults(),
		podSets: map[string]string{}, podInfos: scheduler.NewPodInfos(), secondInfos: scheduler.NewPodInfos(), packInfos: scheduler.NewPodInfos(), consolidation: newConsolidationState(),
		reboots: map[types.UID][]time.Time{},
	}
}

// Observe registers a function called with every command when it starts being carried out
// (for the simulator's report, metrics and tests). It must not block.
func (c *Controller) Observe(fn func(*Command)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.observers = append(c.observers, fn)
}

// ObserveDecisions registers a function called with every pass's decision once it is taken,
// before its command starts (for the simulator's report of the nodes repair passes over: its
// Blocked, RepairHolds and Budgets). It must not block nor keep the decision.
func (c *Controller) ObserveDecisions(fn func(*Decision)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.decisionObservers = append(c.decisionObservers, fn)
}

// Start runs a pass every PassInterval on the clock until ctx is done (a controller-runtime
// Runnable).
func (c *Controller) Start(ctx context.Context) error {
	for {
		if err := c.Step(ctx); err != nil {
			log.FromContext(ctx).Error(err, "disruption pass failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(c.PassInterval()):
		}
	}
}

// PassInterval is the time until the next pass: FollowInterval while a command is in flight,
// else PollInterval.
func (c *Controller) PassInterval() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.inflight) > 0 {
		return c.opts.FollowInterval
	}
	return c.opts.PollInterval
}

// NeedLeaderElection makes disruption run only on the leader.
func (c *Controller) NeedLeaderElection() bool { return true }

// Register adds the controller to a manager.
func (c *Controller) Register(mgr manager.Manager) error {
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("registering disruption controller: %w", err)
	}
	return nil
}

// Pending returns the consolidation command waiting for validation, if any.
func (c *Controller) Pending() *Command {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		return nil
	}
	return c.pending.cmd
}

// NextWakeup is the next moment the controller has reason to decide again though nothing in
// the cluster changed: the last decision's NextChange, or when a pending consolidation is
// validated. Zero when there is none. A driver of virtual time (simulate) wakes it then.
func (c *Controller) NextWakeup() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := c.nextChange
	if c.pending != nil {
		if t := c.pending.decided.Add(c.opts.ValidationDelay); next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return next
}

// InFlight returns the command in flight, if any: its replacements launching, or its
// candidates going.
func (c *Controller) InFlight() *Command {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.inflight) == 0 {
		return nil
	}
	return c.inflight[0].cmd
}

// Step runs one pass: follow every command in flight, then decide and start the next one.
func (c *Controller) Step(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	logger := log.FromContext(ctx).WithName("disruption")
	ctx = log.IntoContext(ctx, logger)
	now := c.clock.Now()
	var followErrs []error
	for _, f := range slices.Clone(c.inflight) {
		done, err := c.follow(ctx, f, now)
		if err != nil {
			followErrs = append(followErrs, err)
		}
		if done {
			c.packedAt = time.Time{} // the fleet changed: measure it afresh, and re-pack may try again
		}
	}
	if err := c.decide(ctx, logger, now); err != nil {
		followErrs = append(followErrs, err)
	}
	return errors.Join(followErrs...)
}

// decide takes a decision on the cluster as it is, commands in flight included (their nodes
// are marked and count against their NodePools' budgets), and starts its command.
func (c *Controller) decide(ctx context.Context, logger logr.Logger, now time.Time) error {
	in, err := c.input(ctx, now)
	if err != nil {
		return err
	}
	if len(in.UnseenNodePools) > 0 {
		logger.V(1).Info("prioritizing nodepools that have not yet been considered due to timeouts in previous runs", "nodepools", strings.Join(in.UnseenNodePools, ", "))
	}
	measure := c.packing == nil || c.packedAt.IsZero() || now.Sub(c.packedAt) >= c.opts.PackingInterval
	var measured chan *packing.Result
	switch {
	case measure && c.opts.Repack:
		// Re-pack consolidation decides on the measure: take it first.
		c.packing, c.packedAt, c.repackIdle = PackingOf(*in), now, false
		recordPacking(c.packing)
		// The re-pack solved every pod that runs: what was not solved since the last one is
		// of pods gone or changed.
		c.podInfos.Prune()
		c.secondInfos.Prune()
	case measure:
		// Only the metrics read the measure: take it on the other core while Decide runs. Both
		// only read the input, and the re-pack keeps what it derives from pods apart
		// (packInfos: PodInfos is not safe for concurrent use).
		packIn := *in
		packIn.PodInfos, packIn.SecondPodInfos = c.packInfos, nil
		measured = make(chan *packing.Result, 1)
		go func() { measured <- PackingOf(packIn) }()
	}
	if !c.repackIdle {
		in.Packing = c.packing
	}
	decision := Decide(*in)
	if measured != nil {
		c.packing, c.packedAt, c.repackIdle = <-measured, now, false
		recordPacking(c.packing)
		c.packInfos.Prune()
		// Decide solved the pods of its candidates since the last measure: the others are
		// derived again when they become candidates.
		c.podInfos.Prune()
		c.secondInfos.Prune()
	}
	if in.Packing != nil && decision.Command == nil && decision.evaluated(MethodRepack) && !decision.repackWaits {
		c.repackIdle = true
	}
	c.nextChange, c.unseenNodePools = decision.NextChange, decision.UnseenNodePools
	c.consolidation.settle(decision)
	logTimeouts(logger, decision)
	recordDecisionGauges(decision)
	recordEvaluation(decision)
	for _, p := range decision.Problems {
		logger.Error(p, "invalid disruption settings")
	}
	for _, p := range decision.PodProblems {
		// As Karpenter: the value is ignored, and the pod says so.
		c.events.Publish(invalidDoNotDisruptEvent(p.Pod, p.Err))
	}
	for _, p := range decision.TimedProtections {
		c.events.Publish(doNotDisruptTimedEvent(p.Pod, p.Until, now))
	}
	if err := c.writeConditions(ctx, in, decision); err != nil {
		return err
	}
	c.reportBlocked(in, decision)
	for _, fn := range c.decisionObservers {
		fn(decision)
	}

	cmd := decision.Command
	if c.pending != nil && (cmd == nil || c.pending.cmd.Key() != cmd.Key()) {
		// The consolidation waiting for validation is not decided again: it failed validation.
		metrics.DisruptionValidationFailed(consolidationType(c.pending.cmd.Method))
		if karpentersConsolidation(c.pending.cmd.Method) {
			reason := rejectionReason(c.pending.cmd, decision)
			for _, cand := range c.pending.cmd.Candidates {
				c.events.Publish(consolidationRejectedEvents(c.pending.cmd, cand, reason)...)
			}
		}
		c.pending = nil
	}
	if cmd == nil {
		return nil
	}
	if cmd.Reason == karpv1.DisruptionReasonEmpty || cmd.Reason == karpv1.DisruptionReasonUnderutilized {
		// Consolidation waits, then acts only if a fresh decision is the same.
		if c.pending == nil { // a different pending command was dropped above
			c.pending = &pendingCommand{cmd: cmd, decided: now}
			logger.V(1).Info("consolidation pending validation", "method", cmd.Method, "nodes", cmd.NodeNames(), "savings", cmd.Savings)
			c.publishConsolidationFound(in, cmd)
			return nil
		}
		if now.Sub(c.pending.decided) < c.opts.ValidationDelay {
			return nil
		}
	}
	c.pending = nil
	return c.execute(ctx, cmd, now)
}

// logTimeouts says, in Karpenter's words, which consolidation searches of the decision ran
// out of time.
func logTimeouts(logger logr.Logger, d *Decision) {
	for _, t := range d.Timeouts {
		switch {
		case t.Method == MethodSingleNode:
			logger.V(1).Info("abandoning single-node consolidation due to timeout", "candidates_evaluated", t.Evaluated)
		case t.Method == MethodRepack:
			logger.V(1).Info("abandoning re-pack consolidation due to timeout", "last_batch_size", t.Evaluated)
		case d.Command != nil && d.Command.Method == MethodMultiNode:
			logger.V(1).Info("stopping multi-node consolidation after timeout, returning last valid command", "nodes", d.Command.NodeNames())
		default:
			logger.V(1).Info("failed to find a multi-node consolidation after timeout", "last_batch_size", t.Evaluated)
		}
	}
}

// input reads what Decide needs.
func (c *Controller) input(ctx context.Context, now time.Time) (*Input, error) {
	snap, err := c.cluster.SyncSnapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("taking snapshot: %w", err)
	}
	pdbs, err := state.ListPDBs(ctx, c.kube)
	if err != nil {
		return nil, err
	}
	in := &Input{
		Now: now, RecentReboots: c.recentReboots(now), Nodes: snap.Nodes, Pending: snap.Pending, NodePools: snap.NodePools, DaemonSets: snap.DaemonSets, NamespaceLabels: snap.NamespaceLabels,
		CloudDrift:         map[string]cloudprovider.DriftReason{},
		VolumeRequirements: map[types.UID]scheduling.Requirements{}, Options: c.opts,
		Clock: c.clock, UnseenNodePools: c.unseenNodePools, PodInfos: c.podInfos, SecondPodInfos: c.secondInfos, PDBs: pdbs,
	}
	if c.buffers != nil {
		if in.BufferPods, err = c.buffers.VirtualPods(ctx); err != nil {
			return nil, err
		}
		in.BufferPods = c.cluster.DefaultSpread(ctx, in.BufferPods)
	}
	// As the provisioner's: no replacement on what just ran out.
	var errs map[string]error
	in.InstanceTypes, errs = state.LaunchableInstanceTypes(ctx, c.cloud, snap.NodePools, c.unavailable)
	for _, np := range snap.NodePools {
		if err := errs[np.Name]; err != nil {
			log.FromContext(ctx).Error(err, "cannot list instance types", "nodepool", np.Name)
		}
	}
	in.Consolidated = c.consolidation.observe(snap, now)
	c.trackPodEvents(ctx, snap, now)
	if err := c.volumeRequirements(ctx, snap, in); err != nil {
		return nil, err
	}
	c.cloudDrift(ctx, snap, in)
	return in, nil
}

// driftCheckParallelism is how many drift checks run at once: a cloud may answer each after a
// batching window (the AWS provider's DescribeInstances batcher waits 100 ms for others to
// join), so one after another a pass would take that long per node.
const driftCheckParallelism = 100

// cloudDrift asks the cloud provider, concurrently, which initialized nodes have drifted from
// their NodeClass, into in.CloudDrift.
func (c *Controller) cloudDrift(ctx context.Context, snap *state.Snapshot, in *Input) {
	var claims []*karpv1.NodeClaim
	for _, sn := range snap.Nodes {
		if sn.NodeClaim != nil && sn.Node != nil && !sn.MarkedForDeletion && sn.Initialized() {
			claims = append(claims, sn.NodeClaim)
		}
	}
	reasons := make([]cloudprovider.DriftReason, len(claims))
	workqueue.ParallelizeUntil(ctx, driftCheckParallelism, len(claims), func(i int) {
		reason, err := c.cloud.IsDrifted(ctx, claims[i])
		if err != nil {
			if !cloudprovider.IsNodeClaimNotFoundError(err) {
				log.FromContext(ctx).V(1).Info("cannot check drift", "nodeclaim", claims[i].Name, "error", err.Error())
			}
			return
		}
		reasons[i] = reason
	})
	for i, reason := range reasons {
		if reason != "" {
			in.CloudDrift[claims[i].Name] = reason
		}
	}
}

// trackPodEvents stamps status.lastPodEventTime on claims whose pods changed since the last
// pass (in the snapshot at once, and on the server).
func (c *Controller) trackPodEvents(ctx context.Context, snap *state.Snapshot, now time.Time) {
	seen := map[string]bool{}
	for _, sn := range snap.Nodes {
		if sn.NodeClaim == nil || sn.Node == nil {
			continue
		}
		uids := make([]string, 0, len(sn.Pods))
		for _, pod := range sn.Pods {
			if state.IsReschedulable(pod) && pod.Spec.NodeName != "" {
				uids = append(uids, string(pod.UID))
			}
		}
		sort.Strings(uids)
		set := strings.Join(uids, ",")
		name := sn.Node.Name
		seen[name] = true
		prev, known := c.podSets[name]
		c.podSets[name] = set
		if !known || prev == set {
			continue
		}
		claim := sn.NodeClaim.DeepCopy()
		claim.Status.LastPodEventTime = metav1.NewTime(now)
		if err := c.kube.Status().Patch(ctx, claim, client.MergeFrom(sn.NodeClaim)); err != nil && !apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("cannot record pod event time", "nodeclaim", claim.Name, "error", err.Error())
		}
		sn.NodeClaim = claim
	}
	for name := range c.podSets {
		if !seen[name] {
			delete(c.podSets, name)
		}
	}
}

// writeConditions records the Consolidatable and Drifted conditions where they changed.
func (c *Controller) writeConditions(ctx context.Context, in *Input, d *Decision) error {
	claims := map[string]*karpv1.NodeClaim{}
	for _, sn := range in.Nodes {
		if sn.NodeClaim != nil {
			claims[sn.NodeClaim.Name] = sn.NodeClaim
		}
	}
	var errs []error
	for _, st := range d.Claims {
		orig := claims[st.NodeClaim]
		if orig == nil {
			continue
		}
		claim := orig.DeepCopy()
		cond := metav1.Condition{Type: karpv1.ConditionTypeConsolidatable, Status: metav1.ConditionFalse,
			Reason: st.ConsolidatableReason, Message: st.ConsolidatableMessage, ObservedGeneration: claim.Generation}
		if st.Consolidatable {
			cond.Status = metav1.ConditionTrue
		}
		changed := setCondition(claim, cond, in.Now)
		if st.Drifted != "" {
			changed = setCondition(claim, metav1.Condition{Type: karpv1.ConditionTypeDrifted, Status: metav1.ConditionTrue,
				Reason: st.Drifted, ObservedGeneration: claim.Generation}, in.Now) || changed
		} else if meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeDrifted) != nil {
			meta.RemoveStatusCondition(&claim.Status.Conditions, karpv1.ConditionTypeDrifted)
			changed = true
		}
		if !changed {
			continue
		}
		err := c.kube.Status().Patch(ctx, claim, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("updating conditions of nodeclaim %s: %w", claim.Name, err))
		}
	}
	return errors.Join(errs...)
}

// setCondition sets cond unless an equal one is there, and reports whether it changed.
func setCondition(claim *karpv1.NodeClaim, cond metav1.Condition, now time.Time) bool {
	if old := meta.FindStatusCondition(claim.Status.Conditions, cond.Type); old != nil &&
		old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message {
		return false
	}
	cond.LastTransitionTime = metav1.NewTime(now)
	meta.SetStatusCondition(&claim.Status.Conditions, cond)
	return true
}

// reportBlocked says, in Events, why nodes stay: DisruptionBlocked on the Node and NodeClaim of
// each protected node, Unconsolidatable on those single-node consolidation could not act on,
// and DisruptionBlocked on each NodePool whose budgets allow no disruption for a reason, each
// deduplicated as Karpenter's (see events.go).
func (c *Controller) reportBlocked(in *Input, d *Decision) {
	nodes := map[string]*corev1.Node{}
	claims := map[string]*karpv1.NodeClaim{}
	for _, sn := range in.Nodes {
		if sn.Node != nil {
			nodes[sn.Node.Name] = sn.Node
		}
		if sn.NodeClaim != nil {
			claims[sn.NodeClaim.Name] = sn.NodeClaim
		}
	}
	for _, b := range d.Blocked {
		c.events.Publish(blockedEvents(nodes[b.Node], claims[b.NodeClaim], b.Reason)...)
	}
	for _, u := range d.Unconsolidatable {
		c.events.Publish(unconsolidatableEvents(nodes[u.Node], claims[u.NodeClaim], u.Reason)...)
	}
	pools := map[string]*karpv1.NodePool{}
	for _, np := range in.NodePools {
		pools[np.Name] = np
	}
	for _, b := range d.BlockedPools {
		c.events.Publish(nodePoolBlockedEvent(pools[b.NodePool], b.Reason))
	}
	for _, h := range d.RepairHolds {
		c.events.Publish(nodeRepairBlockedEvents(nodes[h.Node], claims[h.NodeClaim], pools[h.NodePool], h.Message)...)
	}
}

// karpentersConsolidation reports whether the method is one of Karpenter's consolidation
// searches, whose commands it announces (ConsolidationCandidate, ConsolidationRejected).
func karpentersConsolidation(method string) bool {
	return method == MethodMultiNode || method == MethodSingleNode
}

// publishConsolidationFound announces a consolidation command decided for the first time, as
// Karpenter's computeConsolidation and Balanced evaluator do: ConsolidationCandidate on each
// node a replacing command would remove, ConsolidationApproved with its Balanced scores.
func (c *Controller) publishConsolidationFound(in *Input, cmd *Command) {
	if karpentersConsolidation(cmd.Method) && len(cmd.Replacements) > 0 {
		for _, cand := range cmd.Candidates {
			c.events.Publish(consolidationCandidateEvents(cmd, cand)...)
		}
	}
	if len(cmd.Scores) > 0 {
		pools := map[string]*karpv1.NodePool{}
		for _, np := range in.NodePools {
			pools[np.Name] = np
		}
		c.events.Publish(consolidationApprovedEvents(cmd, pools)...)
	}
}

// rejectionReason is Karpenter's category of a consolidation that failed validation, read from
// the decision that did not take it again: "budget" when a NodePool of its nodes allows no more
// disruption for its reason, "churn" when one of its nodes is protected or not consolidatable
// any more, "scheduling" otherwise (its pods no longer fit as planned).
func rejectionReason(cmd *Command, d *Decision) string {
	pools, nodes, claims := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, cand := range cmd.Candidates {
		pools[cand.NodePool.Name], nodes[cand.Name()], claims[cand.NodeClaim.Name] = true, true, true
	}
	for _, b := range d.BlockedPools {
		if pools[b.NodePool] && b.Reason == cmd.Reason {
			return "budget"
		}
	}
	for _, b := range d.Blocked {
		if nodes[b.Node] {
			return "churn"
		}
	}
	for _, s := range d.Claims {
		if claims[s.NodeClaim] && !s.Consolidatable {
			return "churn"
		}
	}
	return "scheduling"
}

// execute starts carrying out a command.
func (c *Controller) execute(ctx context.Context, cmd *Command, now time.Time) error {
	logger := log.FromContext(ctx)
	// As Karpenter records the command's results: the nodes that take the candidates' pods are
	// nominated, so that no other command disrupts them meanwhile.
	destinations := make([]string, 0, len(cmd.Placements))
	for _, pl := range cmd.Placements {
		destinations = append(destinations, pl.Node)
	}
	c.cluster.NominateNodes(destinations...)
	c.packedAt = time.Time{} // the next pass measures the fleet afresh
	for _, fn := range c.observers {
		fn(cmd)
	}
	recordDecision(cmd)
	logger.Info("disrupting", "method", cmd.Method, "reason", cmd.Reason, "nodes", cmd.NodeNames(),
		"replacements", len(cmd.Replacements), "savings", fmt.Sprintf("%.4f", cmd.Savings), "message", cmd.Message())
	if cmd.Reboot {
		return c.commitReboot(ctx, cmd, now)
	}
	for _, cand := range cmd.Candidates {
		if err := c.taint(ctx, cand.Node.Name, true); err != nil {
			c.abandon(ctx, nil, cmd, nil)
			return err
		}
	}
	names := make([]string, 0, 2*len(cmd.Candidates))
	for _, cand := range cmd.Candidates {
		names = append(names, cand.Name(), cand.NodeClaim.Name)
	}
	if cmd.static() {
		// Marked before the replacement exists, as Karpenter marks a static node pending
		// disruption first: the static NodePool controller must never take the replacement
		// for an extra claim.
		c.cluster.MarkForDeletion(names...)
	}
	var created []string
	for _, r := range cmd.Replacements {
		claim, err := c.launcher.Launch(ctx, r.NodePool, r.Claim, metrics.DisruptionReason(cmd.Reason))
		if err != nil {
			c.abandon(ctx, nil, cmd, created)
			return fmt.Errorf("replacing for %s: %w", cmd.Method, err)
		}
		created = append(created, claim.Name)
		c.events.Publish(launchingEvent(claim, cmd.Reason))
	}
	// Marked once the replacements exist, as Karpenter's queue marks them (StartCommand): the
	// provisioner places the pods of marked nodes, and finds the replacements' room for them
	// rather than launching more. The taint keeps new pods off the nodes meanwhile.
	c.cluster.MarkForDeletion(names...)
	f := &inflightCommand{cmd: cmd, replacements: created, started: now, disrupted: map[string]bool{}}
	c.inflight = append(c.inflight, f)
	if len(created) == 0 {
		_, err := c.follow(ctx, f, now)
		return err
	}
	return nil
}

// recentReboots counts the reboots committed within RebootHistoryWindow of now, per NodeClaim
// UID, and forgets older ones.
func (c *Controller) recentReboots(now time.Time) map[types.UID]int {
	out := map[types.UID]int{}
	for uid, at := range c.reboots {
		at = slices.DeleteFunc(at, func(t time.Time) bool { return !t.After(now.Add(-RebootHistoryWindow)) })
		if len(at) == 0 {
			delete(c.reboots, uid)
			continue
		}
		c.reboots[uid] = at
		out[uid] = len(at)
	}
	return out
}

// commitReboot hands a reboot command's node to the reboot controller (package reboot), as
// Karpenter's Repair.commitReboot: its NodeClaim gets the drain bound (the
// karpenter.sh/reboot-termination-grace-period annotation: the command's DrainBound, else its
// own terminationGracePeriod, else none, an unbounded drain), then its DisruptionReason
// (Unhealthy) and Rebooting (True, RebootRequested) conditions. Both writes are optimistically
// locked, so a NodeClaim already rebooting or deleting, or changed since it was read, is left
// alone. The reboot counts towards RebootsBeforeReplacement once committed.
func (c *Controller) commitReboot(ctx context.Context, cmd *Command, now time.Time) error {
	cand := cmd.Candidates[0]
	var claim karpv1.NodeClaim
	if err := c.kube.Get(ctx, client.ObjectKeyFromObject(cand.NodeClaim), &claim); err != nil {
		return client.IgnoreNotFound(err)
	}
	if claim.IsRebooting() || claim.DeletionTimestamp != nil {
		return nil
	}
	bound := cand.DrainBound
	if bound == nil && claim.Spec.TerminationGracePeriod != nil {
		bound = &claim.Spec.TerminationGracePeriod.Duration
	}
	base := claim.DeepCopy()
	if bound != nil {
		if claim.Annotations == nil {
			claim.Annotations = map[string]string{}
		}
		claim.Annotations[karpv1.RebootTerminationGracePeriodAnnotationKey] = bound.String()
	} else {
		delete(claim.Annotations, karpv1.RebootTerminationGracePeriodAnnotationKey) // an earlier reboot's
	}
	if !maps.Equal(base.Annotations, claim.Annotations) {
		if err := c.kube.Patch(ctx, &claim, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("committing the reboot of nodeclaim %s: %w", claim.Name, err)
		}
	}
	base = claim.DeepCopy()
	setCondition(&claim, metav1.Condition{Type: karpv1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue,
		Reason: string(cmd.Reason), Message: cmd.Message()}, now)
	setCondition(&claim, metav1.Condition{Type: karpv1.ConditionTypeRebooting, Status: metav1.ConditionTrue,
		Reason: karpv1.RebootReasonRequested, Message: fmt.Sprintf("rebooting for %s/%s", cand.Repair.Condition, cand.Repair.Reason)}, now)
	if err := c.kube.Status().Patch(ctx, &claim, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("committing the reboot of nodeclaim %s: %w", claim.Name, err)
	}
	c.reboots[claim.UID] = append(c.reboots[claim.UID], now)
	recordDisrupted(cmd, cand)
	log.FromContext(ctx).Info("committed node reboot", "nodeclaim", claim.Name, "node", cand.Name())
	return nil
}

// follow moves a command in flight on: delete the candidates once every replacement is
// initialized, or abandon it. It reports whether the command is over.
func (c *Controller) follow(ctx context.Context, f *inflightCommand, now time.Time) (bool, error) {
	if !f.deleted.IsZero() {
		return c.candidatesGone(ctx, f, now)
	}
	ready := true
	for _, name := range f.replacements {
		var claim karpv1.NodeClaim
		err := c.kube.Get(ctx, client.ObjectKey{Name: name}, &claim)
		switch {
		case apierrors.IsNotFound(err) || err == nil && claim.DeletionTimestamp != nil:
			c.abandon(ctx, f, f.cmd, f.replacements)
			return true, fmt.Errorf("replacement nodeclaim %s is gone; abandoned disrupting %v", name, f.cmd.NodeNames())
		case err != nil:
			return false, fmt.Errorf("getting replacement nodeclaim %s: %w", name, err)
		case !claim.IsInitialized():
			ready = false
			c.events.Publish(waitingOnReadinessEvent(&claim))
		}
	}
	if !ready {
		if now.Sub(f.started) >= c.opts.ReplacementTimeout {
			c.abandon(ctx, f, f.cmd, f.replacements)
			return true, fmt.Errorf("replacements %v did not initialize within %s; abandoned disrupting %v", f.replacements, c.opts.ReplacementTimeout, f.cmd.NodeNames())
		}
		return false, nil
	}
	var errs []error
	for _, cand := range f.cmd.Candidates {
		claim := cand.NodeClaim.DeepCopy()
		setCondition(claim, metav1.Condition{Type: karpv1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue,
			Reason: string(f.cmd.Reason), Message: f.cmd.Message()}, now)
		if err := c.kube.Status().Patch(ctx, claim, client.MergeFrom(cand.NodeClaim)); err != nil && !apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("cannot record disruption reason", "nodeclaim", claim.Name, "error", err.Error())
		}
		if cand.DrainBound != nil && !f.disrupted[cand.NodeClaim.Name] {
			// As Karpenter's queue: the deadline is stamped once the replacements are ready, so
			// their launch does not eat into the drain's time.
			if err := nodeclaim.TightenTerminationTimestamp(ctx, c.kube, cand.NodeClaim, now.Add(*cand.DrainBound)); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := c.kube.Delete(ctx, cand.NodeClaim); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", cand.NodeClaim.Name, err))
				continue
			}
		} else if !f.disrupted[cand.NodeClaim.Name] {
			f.disrupted[cand.NodeClaim.Name] = true
			recordDisrupted(f.cmd, cand)
		}
		c.events.Publish(terminatingEvents(cand.Node, cand.NodeClaim, f.cmd.Reason)...)
	}
	if len(errs) > 0 {
		return false, errors.Join(errs...) // retried on the next pass
	}
	f.deleted = now
	return c.candidatesGone(ctx, f, now)
}

// recordDisrupted counts a candidate whose NodeClaim a command deleted, in
// karpenter_nodeclaims_disrupted_total and karpenter_pods_disruption_initiated_total (and for
// repair, recordRepaired).
func recordDisrupted(cmd *Command, cand *Candidate) {
	if cand.Repair != nil {
		recordRepaired(cand)
		return
	}
	policy := "" // as Karpenter: a policy only for consolidation, not drift
	if consolidationType(cmd.Method) != "" {
		policy = metrics.ConsolidationPolicy(cand.NodePool.Spec.Disruption.ConsolidationPolicy)
	}
	metrics.NodeClaimDisrupted(metrics.DisruptionReason(cmd.Reason), cand.NodePool.Name, cand.CapacityType, policy, metrics.TerminationMode(cand.NodeClaim))
	metrics.PodsDisruptionInitiated(len(cand.Pods), metrics.DisruptionReason(cmd.Reason), cand.NodePool.Name, cand.CapacityType, policy, metrics.TerminationMode(cand.NodeClaim))
}

// candidatesGone ends a command in flight once its candidates' NodeClaims are gone, or a
// PollInterval after they were deleted (a drain a PodDisruptionBudget holds up waits for the
// budget, not for the next decision), and reports whether it ended.
func (c *Controller) candidatesGone(ctx context.Context, f *inflightCommand, now time.Time) (bool, error) {
	if now.Sub(f.deleted) < c.opts.PollInterval {
		for _, cand := range f.cmd.Candidates {
			var claim karpv1.NodeClaim
			err := c.kube.Get(ctx, client.ObjectKey{Name: cand.NodeClaim.Name}, &claim)
			if err == nil {
				return false, nil
			}
			if !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("getting nodeclaim %s: %w", cand.NodeClaim.Name, err)
			}
		}
	}
	c.forget(f)
	return true, nil
}

// forget drops a command from those in flight.
func (c *Controller) forget(f *inflightCommand) {
	c.inflight = slices.DeleteFunc(c.inflight, func(g *inflightCommand) bool { return g == f })
}

// abandon undoes a command: unmark and untaint its nodes, delete replacements not initialized.
// f is the command in flight, nil for one that failed before it was.
func (c *Controller) abandon(ctx context.Context, f *inflightCommand, cmd *Command, replacements []string) {
	logger := log.FromContext(ctx)
	for _, cand := range cmd.Candidates {
		c.cluster.UnmarkForDeletion(cand.Name(), cand.NodeClaim.Name)
		if err := c.taint(ctx, cand.Node.Name, false); err != nil {
			logger.Error(err, "cannot untaint node", "node", cand.Node.Name)
		}
		c.events.Publish(abandonedEvent(cand.Node, cmd.Message()))
	}
	failed := 0
	for _, name := range replacements {
		var claim karpv1.NodeClaim
		if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, &claim); err != nil {
			failed++ // gone, or unreadable: not initialized either way
			continue
		}
		if !claim.IsInitialized() {
			failed++
			if err := c.kube.Delete(ctx, &claim); err != nil && !apierrors.IsNotFound(err) {
				logger.Error(err, "cannot delete replacement", "nodeclaim", name)
			}
		}
	}
	metrics.DisruptionQueueFailed(consolidationType(cmd.Method), decisionOf(cmd), metrics.DisruptionReason(cmd.Reason), failed)
	if f != nil {
		c.forget(f)
	}
}

// taint adds (or removes) the karpenter.sh/disrupted:NoSchedule taint, so the kube-scheduler
// stops placing pods on a node about to go.
func (c *Controller) taint(ctx context.Context, name string, add bool) error {
	var node corev1.Node
	if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("getting node %s: %w", name, err)
	}
	has := -1
	for i, t := range node.Spec.Taints {
		if t.Key == karpv1.DisruptedTaintKey {
			has = i
		}
	}
	orig := node.DeepCopy()
	switch {
	case add && has < 0:
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule})
	case !add && has >= 0:
		node.Spec.Taints = append(node.Spec.Taints[:has:has], node.Spec.Taints[has+1:]...)
	default:
		return nil
	}
	if err := c.kube.Patch(ctx, &node, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("tainting node %s: %w", name, err)
	}
	return nil
}

// volumeRequirements records, for each pod disruption might move, the node requirements its
// PersistentVolumes impose, so that a replacement or a receiving node is one the pod's volumes
// can be attached to.
func (c *Controller) volumeRequirements(ctx context.Context, snap *state.Snapshot, in *Input) error {
	add := func(pod *corev1.Pod) error {
		reqs, err := provisioning.VolumeRequirements(ctx, c.kube, pod)
		if provisioning.IsMissingVolume(err) {
			// A running pod's volumes were there when it was placed (and the API server's
			// protection finalizers keep a claim and volume in use): nothing to impose, as
			// before. A pending pod missing one waits for it, as the provisioner leaves it.
			return nil
		}
		if err != nil {
			return fmt.Errorf("volume requirements of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if reqs.Len() > 0 {
			in.VolumeRequirements[pod.UID] = reqs
		}
		return nil
	}
	for _, sn := range snap.Nodes {
		// The pods that may move: those of candidates and of nodes being deleted.
		if sn.Node == nil || sn.NodeClaim == nil && !sn.MarkedForDeletion {
			continue
		}
		for _, pod := range sn.Pods {
			if pod.Spec.NodeName == "" || !state.IsReschedulable(pod) {
				continue
			}
			if err := add(pod); err != nil {
				return err
			}
		}
	}
	for _, pod := range snap.Pending {
		if err := add(pod); err != nil {
			return err
		}
	}
	return nil
}
