package simulate

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/disruption"
	"github.com/openkarpenter/karpenter/pkg/expiration"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/repair"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// sampleInterval is how often the report's time series is sampled.
const sampleInterval = time.Minute

// Report is what a simulation produced. It holds no wall-clock figures, so the same workload
// and seed give a byte-identical JSON report.
type Report struct {
	// Version is the version of karpenter that ran it (set by the command; empty otherwise).
	Version string `json:"version"`
	// Command is the command line that ran it, as "karpenter simulate ARGS" (set by the
	// command; empty otherwise): the text report names the commands that show an alternative.
	// Not in the JSON, which is the same for the same run whatever the files are called.
	Command string `json:"-"`
	// Workload is the workload's name; Seed the seed used; Duration the virtual time simulated.
	Workload string `json:"workload"`
	Seed     int64  `json:"seed"`
	Duration string `json:"duration"`
	// DurationSeconds is Duration in seconds, as every other time of the report.
	DurationSeconds int64 `json:"durationSeconds"`
	Cost            Costs `json:"cost"`
	Nodes           Nodes `json:"nodes"`
	Pods            Pods  `json:"pods"`
	Util            Util  `json:"utilization"`
	// Packing is the fleet's packing ratio at its peak and at the end (ours).
	Packing Packing `json:"packing"`
	// Disruptions counts the nodes removed, by reason in Karpenter's words (RemovalReasons:
	// Empty, Underutilized, Drifted, Expired, Interrupted, Unhealthy, and Deleted).
	Disruptions map[string]int `json:"disruptions"`
	// DisruptionMethods counts the nodes disruption and node repair chose to remove, by
	// method (emptiness, single-node consolidation, drift, repair, …).
	DisruptionMethods map[string]int `json:"disruptionMethods"`
	// Repairs sum up node repair (with the NodeRepair gate): the nodes removed, the reboots
	// and how they ended, the holds; absent when repair did nothing.
	Repairs *RepairCounts `json:"repairs,omitempty"`
	// NodePools are each NodePool's settings and results, by name.
	NodePools []NodePoolReport `json:"nodePools"`
	// Series samples the cluster every minute of virtual time.
	Series []Sample `json:"series"`
	// Fleet is the final set of nodes.
	Fleet []FleetNode `json:"fleet"`
	// NodeHistory is every node launched, in launch order.
	NodeHistory []NodeRecord `json:"nodeHistory"`
	// PodHistory is every pod created, in creation order.
	PodHistory []PodRecord `json:"podHistory"`
	// Reservations are the workload's capacity reservations (cloud.reservations) and how the
	// run used them; absent without any.
	Reservations []ReservationUse `json:"reservations,omitempty"`
	// FailedLaunches are the launches the cloud refused for want of capacity, in order.
	FailedLaunches []FailedLaunch `json:"failedLaunches"`
	// Events is what happened, in order: the timeline's events, launches and launches
	// refused, disruptions (with their method, reason and whether they delete or replace),
	// pods turned away by their nodes, interruption notices and instance terminations.
	Events []LogEntry `json:"events"`
	// Warnings are controller errors seen along the way, and what the workload asks for that
	// the simulated cloud does not have (capacity reservations).
	Warnings []string `json:"warnings,omitempty"`
}

// Costs are in dollars: per hour at the peak and at the end, and spent over the run.
type Costs struct {
	PeakPerHour  float64 `json:"peakPerHour"`
	FinalPerHour float64 `json:"finalPerHour"`
	Total        float64 `json:"total"`
}

// Nodes counts nodes launched, at the peak and at the end, and by type.
type Nodes struct {
	Launched int         `json:"launched"`
	Peak     int         `json:"peak"`
	Final    int         `json:"final"`
	ByType   []TypeCount `json:"byType"`
}

// TypeCount is how many instances of one type and capacity type were launched.
type TypeCount struct {
	InstanceType string  `json:"instanceType"`
	CapacityType string  `json:"capacityType"`
	Count        int     `json:"count"`
	PricePerHour float64 `json:"pricePerHour"`
}

// Pods summarises how long pods waited for a node.
type Pods struct {
	Created        int     `json:"created"`
	Scheduled      int     `json:"scheduled"`
	NeverScheduled int     `json:"neverScheduled"`
	PendingMeanS   float64 `json:"pendingMeanSeconds"`
	PendingP95S    float64 `json:"pendingP95Seconds"`
	PendingMaxS    float64 `json:"pendingMaxSeconds"`
	// PendingHistogram is the distribution of the scheduled pods' waits.
	PendingHistogram []PendingBucket `json:"pendingHistogram"`
	// Unscheduled says, per workload, why the pods still without a node at the end have none.
	Unscheduled []Unscheduled `json:"unscheduled,omitempty"`
}

// Unscheduled is how many of one workload's pods had no node at the end, and why: the
// provisioner's last error for them, or that they were still waiting for a node.
type Unscheduled struct {
	Workload string `json:"workload"`
	Pods     int    `json:"pods"`
	Reason   string `json:"reason"`
}

// waitingReason is the reason given for pods pending at the end that the provisioner last
// placed (or has not yet seen): they were waiting for a node to launch or become ready.
const waitingReason = "still waiting for a node when the run ended"

// Util is the share of the fleet's allocatable cpu and memory that pods requested, averaged
// over the samples that had nodes, and at the end.
type Util struct {
	CPUMean    float64 `json:"cpuMean"`
	MemoryMean float64 `json:"memoryMean"`
	CPUFinal   float64 `json:"cpuFinal"`
	MemFinal   float64 `json:"memoryFinal"`
}

// Sample is the cluster at one minute.
type Sample struct {
	AtSeconds   int64   `json:"at"`
	Nodes       int     `json:"nodes"`
	CostPerHour float64 `json:"costPerHour"`
	Pending     int     `json:"pending"`
	Running     int     `json:"running"`
	CPUUtil     float64 `json:"cpuUtilization"`
	MemUtil     float64 `json:"memoryUtilization"`
	// SpotNodes, OnDemandNodes and ReservedNodes split Nodes by capacity type; NodePools by
	// NodePool.
	SpotNodes     int            `json:"spotNodes"`
	OnDemandNodes int            `json:"onDemandNodes"`
	ReservedNodes int            `json:"reservedNodes,omitempty"`
	NodePools     map[string]int `json:"nodePools,omitempty"`
	// PackingRatio is the disruption controller's last measure of the fleet's packing ratio
	// (Packing); 0 before its first.
	PackingRatio float64 `json:"packingRatio"`
}

// LogEntry is one thing that happened during a run.
type LogEntry struct {
	// AtSeconds is when, from the start.
	AtSeconds int64 `json:"at"`
	// Kind is timeline, launch, launchFailed, disruption, refusal, interruption, unhealthy,
	// reboot or termination.
	Kind string `json:"kind"`
	// Event is a timeline entry's event: deploy, scale, delete, jobs, interrupt,
	// capacityShortage, apply, annotate or unhealthy.
	Event string `json:"event,omitempty"`
	// Message says what happened.
	Message string `json:"message"`
	// Method, Reason and Action (delete or replace) describe a disruption (a termination's
	// Reason is why its node was removed, as in the node history); node repair's are
	// method repair, reason Unhealthy, and action delete, replace, reboot, or blocked when
	// it passed an unhealthy node over (do-not-repair, budgets, more than 20% unhealthy, …);
	// a reboot's progress is method repair and action issued, succeeded or failed. Nodes are
	// the nodes it removes, or the node of a refusal, an interruption, a fault, a reboot or
	// a termination.
	Method string   `json:"method,omitempty"`
	Reason string   `json:"reason,omitempty"`
	Action string   `json:"action,omitempty"`
	Nodes  []string `json:"nodes,omitempty"`
}

// Kinds of log entry.
const (
	LogTimeline = "timeline"
	LogLaunch   = "launch"
	// LogLaunchFailed: the cloud had no capacity for a NodeClaim.
	LogLaunchFailed = "launchFailed"
	LogDisruption   = "disruption"
	LogRefusal      = "refusal"
	LogInterruption = "interruption"
	// LogUnhealthy: a node began to report an unhealthy condition (the unhealthy event).
	LogUnhealthy = "unhealthy"
	// LogReboot: a reboot node repair committed moved on: issued, succeeded or failed (Action).
	LogReboot      = "reboot"
	LogTermination = "termination"
)

// FleetNode is one node at the end, with how full it is.
type FleetNode struct {
	Name            string  `json:"name"`
	InstanceType    string  `json:"instanceType"`
	CapacityType    string  `json:"capacityType"`
	Zone            string  `json:"zone"`
	PricePerHour    float64 `json:"pricePerHour"`
	Pods            int     `json:"pods"`
	CPURequested    float64 `json:"cpuRequested"`
	CPUAllocatable  float64 `json:"cpuAllocatable"`
	MemRequestedGiB float64 `json:"memoryRequestedGiB"`
	MemAllocGiB     float64 `json:"memoryAllocatableGiB"`
	// StaysBecause says why disruption leaves the node at the end of the run, in Karpenter's
	// words (the reasons of its Unconsolidatable and DisruptionBlocked events, from the same
	// decision); WouldChange what would let disruption act on it, empty when nothing a user
	// sets would; DisruptedNext is true when the next pass would act on it (the run ended
	// before the cluster settled).
	StaysBecause  string `json:"staysBecause,omitempty"`
	WouldChange   string `json:"wouldChange,omitempty"`
	DisruptedNext bool   `json:"disruptedNext,omitempty"`
}

// recorder collects what happens during a run.
type recorder struct {
	w    *Workload
	seed int64
	// created and scheduled are by pod: its name (podKey), and for a pod that replaced another
	// of the same name (a StatefulSet's) "name#2", "name#3", …; current gives a name's latest.
	created           map[string]time.Time
	scheduled         map[string]time.Duration
	current           map[string]string
	incarnations      map[string]int
	jobEnds           map[string]time.Time
	samples           []Sample
	lastSample        time.Time
	warnings          []string
	interruptionsSeen int
	decisions         int
	commands          map[string]int
	// repairHolds are the unhealthy nodes whose repair is held now, with why (logged once
	// each, see repairHold); rebootsOf are the reboots repair committed, by NodeClaim, within
	// disruption.RebootHistoryWindow; repairs sums node repair up.
	repairHolds map[string]string
	rebootsOf   map[string][]time.Time
	repairs     RepairCounts
	// podErrors holds the provisioner's last error for each pod it could not place.
	podErrors map[string]string
	// now is the virtual clock; events the log so far.
	now    func() time.Time
	events []LogEntry
	// hist follows nodes and pods through the store's changes.
	hist *history
	// requests are the pods' requests, summed by node at every sample.
	requests scheduling.RequestsCache
}

func newRecorder(w *Workload, seed int64, now func() time.Time) *recorder {
	return &recorder{w: w, seed: seed, created: map[string]time.Time{}, scheduled: map[string]time.Duration{}, current: map[string]string{}, incarnations: map[string]int{},
		jobEnds: map[string]time.Time{}, commands: map[string]int{}, repairHolds: map[string]string{}, rebootsOf: map[string][]time.Time{}, podErrors: map[string]string{}, now: now, hist: newHistory(now)}
}

// log appends an entry at the current virtual time.
func (r *recorder) log(e LogEntry) {
	e.AtSeconds = int64(r.now().Sub(Start) / time.Second)
	r.events = append(r.events, e)
	if e.Kind == LogInterruption {
		for _, n := range e.Nodes {
			r.hist.removing(n, string(karpv1.DisruptionReasonInterrupted))
		}
	}
}

// decision counts the provisioner's decisions and keeps, per pod, why it could not be placed;
// a pod placed later loses its error.
func (r *recorder) decision(d *provisioning.Decision) {
	r.decisions++
	if d == nil || d.Results == nil {
		return
	}
	for _, c := range d.Results.NewClaims {
		for _, p := range c.Pods {
			delete(r.podErrors, podKey(p))
		}
	}
	for _, pl := range d.Results.ExistingPlacements {
		delete(r.podErrors, podKey(pl.Pod))
	}
	for _, pe := range d.Results.PodErrors {
		r.podErrors[podKey(pe.Pod)] = pe.Err.Error()
	}
	for _, refusal := range d.Refused {
		pod := qualified(refusal.Pod.Namespace, refusal.Pod.Name)
		if _, known := r.podErrors[pod]; !known {
			r.podErrors[pod] = refusal.Message()
		}
		r.log(LogEntry{Kind: LogRefusal, Message: fmt.Sprintf("pod %s: %s", pod, refusal.Message()), Nodes: []string{refusal.Node}})
	}
	for i, claim := range d.Created {
		if i < len(d.Results.NewClaims) {
			c := d.Results.NewClaims[i]
			r.log(LogEntry{Kind: LogLaunch, Message: fmt.Sprintf("nodeclaim %s of nodepool %s for %d pods, from $%.4f/h (%d instance types)", claim.Name, c.NodePool, len(c.Pods), c.Price, len(c.InstanceTypes))})
		}
	}
}

// unscheduled groups the pods without a node at the end by workload and reason.
func (r *recorder) unscheduled(ctx context.Context, e *engine) ([]Unscheduled, error) {
	var pods corev1.PodList
	if err := e.kube.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	counts := map[[2]string]int{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		workload := ownerKey(p)
		if workload == "" {
			workload = podKey(p)
		}
		reason, ok := r.podErrors[podKey(p)]
		if !ok {
			reason = waitingReason
		}
		counts[[2]string{workload, reason}]++
	}
	var out []Unscheduled
	for k, n := range counts {
		out = append(out, Unscheduled{Workload: k[0], Pods: n, Reason: k[1]})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Workload != out[j].Workload {
			return out[i].Workload < out[j].Workload
		}
		return out[i].Reason < out[j].Reason
	})
	return out, nil
}

// disrupted logs a disruption command as it starts and counts the nodes it removes, by
// method; node repair's reboots remove none (see repairing).
func (r *recorder) disrupted(cmd *disruption.Command) {
	action := "delete"
	if len(cmd.Replacements) > 0 {
		action = "replace"
	}
	entry := LogEntry{Kind: LogDisruption, Message: cmd.Message(), Method: cmd.Method, Reason: string(cmd.Reason), Action: action, Nodes: cmd.NodeNames()}
	if cmd.Method == disruption.MethodRepair && len(cmd.Candidates) == 1 && !r.repairing(cmd, &entry) {
		r.log(entry)
		return
	}
	r.commands[cmd.Method] += len(cmd.Candidates)
	r.log(entry)
	for _, n := range cmd.NodeNames() {
		r.hist.removing(n, string(cmd.Reason))
	}
}

// MethodRepair is the method of node repair's entries in the log and the report's
// disruptions: disruption.MethodRepair, and the legacy controller's.
const MethodRepair = disruption.MethodRepair

// MethodExpiration is the method of expiry's entries in the log and the report's disruptions.
const MethodExpiration = "expiration"

// expired logs an expired NodeClaim's deletion.
func (r *recorder) expired(x expiration.Expiry) {
	r.commands[MethodExpiration]++
	node := x.Node
	if node == "" {
		node = x.NodeClaim
	}
	r.hist.removing(node, string(karpv1.DisruptionReasonExpired))
	r.log(LogEntry{Kind: LogDisruption, Method: MethodExpiration, Reason: string(karpv1.DisruptionReasonExpired), Action: "delete", Nodes: []string{node},
		Message: fmt.Sprintf("expired: deleting node %s, %s after its launch; its %d pods are evicted and provisioned for while it drains", node, x.ExpireAfter, x.Pods)})
}

// reservationExpired logs the deletion of a node whose capacity reservation is expiring.
func (r *recorder) reservationExpired(x expiration.Expiry) {
	node := x.Node
	if node == "" {
		node = x.NodeClaim
	}
	r.hist.removing(node, RemovalReservationExpiring)
	r.log(LogEntry{Kind: LogDisruption, Reason: RemovalReservationExpiring, Action: "delete", Nodes: []string{node},
		Message: fmt.Sprintf("capacity reservation %s is expiring (a Capacity Block, 40 minutes before its end): deleting node %s, as the AWS provider does; its pods are evicted and provisioned for while it drains", x.Reservation, node)})
}

// repaired logs node repair's deletions, and the first time the safety valve holds a node.
func (r *recorder) repaired(rep repair.Outcome) {
	cond := fmt.Sprintf("%s %s since t=%s", rep.Condition.Type, rep.Condition.Status, rep.Condition.LastTransitionTime.Sub(Start))
	entry := LogEntry{Kind: LogDisruption, Method: MethodRepair, Reason: string(karpv1.DisruptionReasonUnhealthy), Nodes: []string{rep.Node}}
	if rep.Blocked != "" {
		r.repairHold(rep.Node, cond, rep.Blocked)
		return
	}
	delete(r.repairHolds, rep.Node)
	r.commands[MethodRepair]++
	r.repairs.Removed++
	entry.Action = "delete"
	r.hist.removing(rep.Node, string(karpv1.DisruptionReasonUnhealthy))
	entry.Message = fmt.Sprintf("repairing node %s: %s, past the %s its repair policy tolerates; its pods are deleted at once", rep.Node, cond, rep.Toleration)
	r.log(entry)
}

func (r *recorder) warn(msg string) {
	if len(r.warnings) < 20 {
		r.warnings = append(r.warnings, msg)
	}
}

// podCreated notes a new pod, a new incarnation of its name if the name was used before.
func (r *recorder) podCreated(p *corev1.Pod) {
	name := podKey(p)
	r.incarnations[name]++
	key := name
	if n := r.incarnations[name]; n > 1 {
		key = name + "#" + strconv.Itoa(n)
	}
	r.current[name] = key
	r.created[key] = p.CreationTimestamp.Time
	r.hist.created(p, key)
}

// bound notes when a pod (by podKey) was bound to a node.
func (r *recorder) bound(name string, now time.Time) {
	key, ok := r.current[name]
	if !ok {
		return
	}
	if _, done := r.scheduled[key]; done {
		return
	}
	r.scheduled[key] = now.Sub(r.created[key])
}

// sample records the cluster once a minute of virtual time.
func (r *recorder) sample(ctx context.Context, e *engine, now time.Time) error {
	r.interruptionsSeen = len(e.cloud.Interruptions())
	if !r.lastSample.IsZero() && now.Sub(r.lastSample) < sampleInterval && now.Before(Start.Add(r.w.Duration.Duration)) {
		return nil
	}
	return r.sampleNow(ctx, e, now)
}

// sampleNow records the cluster now, replacing a sample taken at the same second.
func (r *recorder) sampleNow(ctx context.Context, e *engine, now time.Time) error {
	r.lastSample = now
	s, _, err := snapshot(ctx, e)
	if err != nil {
		return err
	}
	s.AtSeconds = int64(now.Sub(Start) / time.Second)
	s.PackingRatio = packingRatio(e)
	if n := len(r.samples); n > 0 && r.samples[n-1].AtSeconds == s.AtSeconds {
		r.samples[n-1] = s
		return nil
	}
	r.samples = append(r.samples, s)
	return nil
}

// snapshot measures the cluster now.
func snapshot(ctx context.Context, e *engine) (Sample, []FleetNode, error) {
	var s Sample
	var nodes corev1.NodeList
	if err := e.kube.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return s, nil, err
	}
	pods, err := e.pods()
	if err != nil {
		return s, nil, err
	}
	byNode := map[string][]corev1.ResourceList{}
	podsOn := map[string]int{}
	for _, p := range pods {
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		case p.Spec.NodeName == "":
			s.Pending++
		default:
			s.Running++
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], e.rec.requests.Get(p))
			podsOn[p.Spec.NodeName]++
		}
	}
	e.rec.requests.Prune()
	instances := map[string]sim.Instance{}
	for _, in := range e.cloud.Instances() {
		if in.State != sim.InstanceStateTerminated {
			instances[in.ProviderID] = in
		}
	}
	var fleet []FleetNode
	var cpuReq, cpuAlloc, memReq, memAlloc float64
	for _, n := range nodes.Items {
		in, ok := instances[n.Spec.ProviderID]
		if !ok || n.DeletionTimestamp != nil {
			continue
		}
		req := scheduling.Merge(byNode[n.Name]...)
		alloc := n.Status.Allocatable
		f := FleetNode{
			Name: n.Name, InstanceType: in.InstanceType, CapacityType: in.CapacityType, Zone: in.Zone, PricePerHour: in.Price, Pods: podsOn[n.Name],
			CPURequested: float64(req.Cpu().MilliValue()) / 1000, CPUAllocatable: float64(alloc.Cpu().MilliValue()) / 1000,
			MemRequestedGiB: float64(req.Memory().Value()) / (1 << 30), MemAllocGiB: float64(alloc.Memory().Value()) / (1 << 30),
		}
		fleet = append(fleet, f)
		cpuReq, cpuAlloc, memReq, memAlloc = cpuReq+f.CPURequested, cpuAlloc+f.CPUAllocatable, memReq+f.MemRequestedGiB, memAlloc+f.MemAllocGiB
	}
	s.Nodes = len(instances)
	for _, in := range instances {
		switch in.CapacityType {
		case karpv1.CapacityTypeSpot:
			s.SpotNodes++
		case karpv1.CapacityTypeOnDemand:
			s.OnDemandNodes++
		case karpv1.CapacityTypeReserved:
			s.ReservedNodes++
		}
		if s.NodePools == nil {
			s.NodePools = map[string]int{}
		}
		s.NodePools[in.NodePoolName]++
	}
	s.CostPerHour = round(e.cloud.Cost())
	if cpuAlloc > 0 {
		s.CPUUtil = round(cpuReq / cpuAlloc)
	}
	if memAlloc > 0 {
		s.MemUtil = round(memReq / memAlloc)
	}
	sort.Slice(fleet, func(i, j int) bool { return fleet[i].Name < fleet[j].Name })
	return s, fleet, nil
}

func round(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// report assembles the report at the end of the run.
func (r *recorder) report(ctx context.Context, e *engine) (*Report, error) {
	final, fleet, err := snapshot(ctx, e)
	if err != nil {
		return nil, err
	}
	if fleet == nil {
		fleet = []FleetNode{} // an empty list in JSON, not null
	}
	if err := explainFleet(ctx, e, fleet); err != nil {
		return nil, err
	}
	rep := &Report{Workload: r.w.Name, Seed: r.seed, Duration: r.w.Duration.String(), DurationSeconds: int64(r.w.Duration.Seconds()), Series: r.samples, Fleet: fleet, Warnings: r.warnings,
		DisruptionMethods: maps.Clone(r.commands)}
	if r.repairs != (RepairCounts{}) {
		repairs := r.repairs
		rep.Repairs = &repairs
	}
	instances := e.cloud.Instances()
	byType := map[[2]string]*TypeCount{}
	rep.Nodes.ByType = []TypeCount{}
	for _, in := range instances {
		rep.Nodes.Launched++
		key := [2]string{in.InstanceType, in.CapacityType}
		if byType[key] == nil {
			byType[key] = &TypeCount{InstanceType: in.InstanceType, CapacityType: in.CapacityType, PricePerHour: in.Price}
		}
		byType[key].Count++
	}
	interrupted := map[string]bool{}
	for _, n := range e.cloud.Interruptions() {
		interrupted[n.ProviderID] = true
	}
	end := r.now()
	rep.NodeHistory = r.hist.nodeHistory(instances, interrupted, end)
	rep.PodHistory = r.hist.podHistory(end)
	rep.FailedLaunches = slices.Clone(r.hist.launches)
	if rep.FailedLaunches == nil {
		rep.FailedLaunches = []FailedLaunch{}
	}
	rep.Disruptions = removalCounts(rep.NodeHistory)
	if rep.NodePools, err = nodePools(ctx, e.kube, rep.NodeHistory, r.samples, rep.FailedLaunches); err != nil {
		return nil, err
	}
	rep.Events = r.eventLog(instances, rep.NodeHistory)
	rep.Reservations = reservationUse(r.w.Cloud.reservations(), instances, end)
	for _, tc := range byType {
		rep.Nodes.ByType = append(rep.Nodes.ByType, *tc)
	}
	sort.Slice(rep.Nodes.ByType, func(i, j int) bool {
		a, b := rep.Nodes.ByType[i], rep.Nodes.ByType[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.InstanceType < b.InstanceType || a.InstanceType == b.InstanceType && a.CapacityType < b.CapacityType
	})
	var cpuSum, memSum float64
	withNodes := 0
	for _, s := range r.samples {
		rep.Cost.PeakPerHour = math.Max(rep.Cost.PeakPerHour, s.CostPerHour)
		rep.Nodes.Peak = max(rep.Nodes.Peak, s.Nodes)
		if s.Nodes > 0 {
			cpuSum, memSum, withNodes = cpuSum+s.CPUUtil, memSum+s.MemUtil, withNodes+1
		}
	}
	if withNodes > 0 {
		rep.Util.CPUMean, rep.Util.MemoryMean = round(cpuSum/float64(withNodes)), round(memSum/float64(withNodes))
	}
	rep.Util.CPUFinal, rep.Util.MemFinal = final.CPUUtil, final.MemUtil
	rep.Cost.FinalPerHour = final.CostPerHour
	if rep.Packing, err = packingReport(ctx, e, r.samples); err != nil {
		return nil, err
	}
	rep.Cost.Total = round(e.cloud.Spend())
	rep.Nodes.Final = final.Nodes
	rep.Pods.Created = len(r.created)
	waits := make([]float64, 0, len(r.scheduled))
	for _, d := range r.scheduled {
		waits = append(waits, d.Seconds())
	}
	sort.Float64s(waits)
	rep.Pods.PendingHistogram = pendingHistogram(waits)
	rep.Pods.Scheduled = len(waits)
	rep.Pods.NeverScheduled = final.Pending
	if final.Pending > 0 {
		if rep.Pods.Unscheduled, err = r.unscheduled(ctx, e); err != nil {
			return nil, err
		}
	}
	if len(waits) > 0 {
		sum := 0.0
		for _, w := range waits {
			sum += w
		}
		rep.Pods.PendingMeanS = round(sum / float64(len(waits)))
		rep.Pods.PendingP95S = waits[int(math.Ceil(0.95*float64(len(waits))))-1]
		rep.Pods.PendingMaxS = waits[len(waits)-1]
	}
	return rep, nil
}

// text writes the report as a terminal summary.
func (rep *Report) text(b *strings.Builder) {
	fmt.Fprintf(b, "Simulated %q for %s (seed %d)\n\n", rep.Workload, rep.Duration, rep.Seed)
	fmt.Fprintf(b, "Cost      $%.2f/hour at peak, $%.2f/hour at the end, $%.2f in total\n", rep.Cost.PeakPerHour, rep.Cost.FinalPerHour, rep.Cost.Total)
	fmt.Fprintf(b, "Nodes     %d launched, %d at peak, %d at the end\n", rep.Nodes.Launched, rep.Nodes.Peak, rep.Nodes.Final)
	fmt.Fprintf(b, "Pods      %d created, %d scheduled, %d never scheduled\n", rep.Pods.Created, rep.Pods.Scheduled, rep.Pods.NeverScheduled)
	if rep.Pods.Scheduled == 0 && rep.Pods.NeverScheduled > 0 {
		b.WriteString("Pending   no pod was scheduled (see below)\n")
	} else {
		fmt.Fprintf(b, "Pending   mean %s, p95 %s, max %s\n", seconds(rep.Pods.PendingMeanS), seconds(rep.Pods.PendingP95S), seconds(rep.Pods.PendingMaxS))
	}
	fmt.Fprintf(b, "Requested %.0f%% of cpu and %.0f%% of memory on average (%.0f%% and %.0f%% at the end)\n",
		100*rep.Util.CPUMean, 100*rep.Util.MemoryMean, 100*rep.Util.CPUFinal, 100*rep.Util.MemFinal)
	writePackingText(b, rep.Packing)
	if len(rep.Disruptions) > 0 {
		fmt.Fprintf(b, "Removed   %s\n", removals(rep.Disruptions))
	}
	if r := rep.Repairs; r != nil {
		fmt.Fprintf(b, "Repairs   %d %s removed", r.Removed, plural(r.Removed, "node", "nodes"))
		if r.Escalated > 0 {
			fmt.Fprintf(b, " (%d after %d reboots)", r.Escalated, disruption.RebootsBeforeReplacement)
		}
		if r.Reboots > 0 {
			fmt.Fprintf(b, ", %d %s (%d succeeded, %d failed)", r.Reboots, plural(r.Reboots, "reboot", "reboots"), r.RebootsSucceeded, r.RebootsFailed)
		}
		fmt.Fprintf(b, ", %d %s\n", r.Blocked, plural(r.Blocked, "hold", "holds"))
	}
	var repairs []LogEntry
	for _, e := range rep.Events {
		if (e.Kind == LogDisruption || e.Kind == LogReboot) && e.Method == MethodRepair {
			repairs = append(repairs, e)
		}
	}
	if len(repairs) > 0 {
		b.WriteString("\nNode repair\n")
		for _, e := range repairs {
			fmt.Fprintf(b, "  %-9s %s\n", time.Duration(e.AtSeconds)*time.Second, e.Message)
		}
	}
	if len(rep.Pods.Unscheduled) > 0 {
		b.WriteString("\nPods never scheduled, by workload\n")
		for _, u := range rep.Pods.Unscheduled {
			fmt.Fprintf(b, "  %s: %d %s: %s\n", u.Workload, u.Pods, plural(u.Pods, "pod", "pods"), u.Reason)
		}
	}
	writeStaysText(b, rep.Fleet, rep.Command)
	if len(rep.NodePools) > 0 {
		b.WriteString("\nBy NodePool\n")
		tw := tabwriter.NewWriter(b, 2, 4, 2, ' ', 0)
		reserved := slices.ContainsFunc(rep.NodePools, func(np NodePoolReport) bool { return np.Results.LaunchedReserved > 0 })
		reservedHeader := ""
		if reserved {
			reservedHeader = "RESERVED\t"
		}
		fmt.Fprintf(tw, "  NODEPOOL\tLAUNCHED\tSPOT\tON-DEMAND\t%sPEAK\tFINAL\t$/HOUR AT END\tSPENT ($)\tNO CAPACITY\tREMOVED\n", reservedHeader)
		for _, np := range rep.NodePools {
			r := np.Results
			reservedCount := ""
			if reserved {
				reservedCount = fmt.Sprintf("%d\t", r.LaunchedReserved)
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%s%d\t%d\t%.4f\t%.2f\t%d\t%s\n", np.Name, r.Launched, r.LaunchedSpot, r.LaunchedOnDemand, reservedCount, r.Peak, r.Final,
				r.FinalPerHour, r.Cost, r.FailedLaunches, removals(r.Removed))
		}
		_ = tw.Flush()
	}
	writeReservationsText(b, rep.Reservations)
	if n := len(rep.FailedLaunches); n > 0 {
		fmt.Fprintf(b, "\n%d %s refused for want of capacity (the offerings tried are in --output json)\n", n, plural(n, "launch", "launches"))
	}
	b.WriteString("\nNodes launched by instance type\n")
	tw := tabwriter.NewWriter(b, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tCAPACITY\tCOUNT\t$/HOUR EACH")
	for _, tc := range rep.Nodes.ByType {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%.4f\n", tc.InstanceType, tc.CapacityType, tc.Count, tc.PricePerHour)
	}
	_ = tw.Flush()
	if len(rep.Warnings) > 0 {
		b.WriteString("\nWarnings\n")
		for _, wmsg := range rep.Warnings {
			fmt.Fprintf(b, "  %s\n", wmsg)
		}
	}
}

// removals lists removal counts as "Empty 3, Underutilized 2", in RemovalReasons' order (any
// other reason after them, by name); "none" when there are none.
func removals(byReason map[string]int) string {
	var parts []string
	for _, k := range orderedReasons(byReason) {
		parts = append(parts, fmt.Sprintf("%s %d", k, byReason[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// orderedReasons are the reasons of the map with a count, in RemovalReasons' order, others
// after them by name.
func orderedReasons(byReason map[string]int) []string {
	var out []string
	for _, r := range RemovalReasons {
		if byReason[r] > 0 {
			out = append(out, r)
		}
	}
	for _, k := range sortedKeys(byReason) {
		if byReason[k] > 0 && !slices.Contains(RemovalReasons, k) {
			out = append(out, k)
		}
	}
	return out
}

func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// eventLog is the log with each instance's termination merged in at its time, in order, with
// the reason its node was removed (nodes are the node history, in the same order as instances).
func (r *recorder) eventLog(instances []sim.Instance, nodes []NodeRecord) []LogEntry {
	out := append([]LogEntry{}, r.events...)
	for i, in := range instances {
		if in.State != sim.InstanceStateTerminated {
			continue
		}
		out = append(out, LogEntry{AtSeconds: int64(in.TerminationTime.Sub(Start) / time.Second), Kind: LogTermination, Reason: nodes[i].RemovalReason,
			Message: fmt.Sprintf("instance %s (%s %s in %s) terminated: %s", in.ID, in.InstanceType, in.CapacityType, in.Zone, in.TerminationReason), Nodes: []string{in.Hostname}})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].AtSeconds < out[j].AtSeconds })
	return out
}
