package simulate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
)

// NodeRecord is one node the run launched, from its launch to its removal. Times are seconds
// from the start of the run.
type NodeRecord struct {
	// Name is the Node's name (the instance's hostname); NodeClaim and NodePool what it was
	// launched for; InstanceID the simulated cloud's instance.
	Name       string `json:"name"`
	NodeClaim  string `json:"nodeClaim"`
	NodePool   string `json:"nodePool"`
	InstanceID string `json:"instanceID"`
	// InstanceType, CapacityType and Zone are the offering launched. PricePerHour is its price
	// at the end (or its removal): the on-demand price for a node launched reserved into an
	// On-Demand Capacity Reservation that ended before, at OnDemandAt.
	InstanceType string  `json:"instanceType"`
	CapacityType string  `json:"capacityType"`
	Zone         string  `json:"zone"`
	PricePerHour float64 `json:"pricePerHour"`
	OnDemandAt   *int64  `json:"onDemandAt,omitempty"`
	// Labels are the node's labels (the instance's facts and the NodeClaim's labels); Taints
	// its taints as key=value:Effect, startup taints not included.
	Labels map[string]string `json:"labels"`
	Taints []string          `json:"taints,omitempty"`
	// LaunchedAt is when the instance was launched; ReadyAt when its Node first reported
	// Ready; RemovedAt when the instance terminated. Absent when it did not happen in the run.
	LaunchedAt int64  `json:"launchedAt"`
	ReadyAt    *int64 `json:"readyAt,omitempty"`
	RemovedAt  *int64 `json:"removedAt,omitempty"`
	// RemovalReason says why it was removed, in Karpenter's words (RemovalReasons).
	RemovalReason string `json:"removalReason,omitempty"`
	// Cost is what it cost over the run, in dollars.
	Cost float64 `json:"cost"`
}

// RemovalReasons are the reasons a node is removed, as Karpenter's disruption reasons name
// them, RemovalReservationExpiring for a node of an expiring capacity reservation, and
// RemovalDeleted for a node deleted outside disruption (its NodeClaim deleted by garbage
// collection or a failed registration).
var RemovalReasons = []string{
	string(karpv1.DisruptionReasonEmpty), string(karpv1.DisruptionReasonUnderutilized), string(karpv1.DisruptionReasonDrifted),
	string(karpv1.DisruptionReasonExpired), string(karpv1.DisruptionReasonInterrupted), string(karpv1.DisruptionReasonUnhealthy),
	RemovalReservationExpiring, RemovalDeleted,
}

// RemovalDeleted is the removal reason of a node deleted outside disruption.
const RemovalDeleted = "Deleted"

// RemovalReservationExpiring is the removal reason of a node whose capacity reservation was
// expiring (expiration.ReservationController), and of one EC2 reclaimed at a Capacity Block's
// end.
const RemovalReservationExpiring = "ReservationExpiring"

// PodRecord is one pod from its creation to its end. Times are seconds from the start of the
// run.
type PodRecord struct {
	// Name is the pod's name, with "#2", "#3", … for a later pod of the same name (a
	// StatefulSet's); Workload the deployment or jobs it belongs to.
	Name     string `json:"name"`
	Workload string `json:"workload"`
	// CreatedAt is when it was created; BoundAt when it was bound to Node.
	CreatedAt int64  `json:"createdAt"`
	Node      string `json:"node,omitempty"`
	BoundAt   *int64 `json:"boundAt,omitempty"`
	// PendingSeconds is how long it waited for a node: to its binding, or to its end (or the
	// end of the run) when it never had one.
	PendingSeconds int64 `json:"pendingSeconds"`
	// EndedAt is when it ended, and End how: Succeeded (its job finished), Evicted (its node
	// was drained or went away) or Deleted (scaled down or its workload deleted).
	EndedAt *int64 `json:"endedAt,omitempty"`
	End     string `json:"end,omitempty"`
}

// Ways a pod ends.
const (
	PodSucceeded = "Succeeded"
	PodEvicted   = "Evicted"
	PodDeleted   = "Deleted"
)

// FailedLaunch is a NodeClaim the cloud could not launch for want of capacity.
type FailedLaunch struct {
	// AtSeconds is when, from the start.
	AtSeconds int64  `json:"at"`
	NodeClaim string `json:"nodeClaim"`
	NodePool  string `json:"nodePool"`
	// Offerings are those tried, all out of capacity.
	Offerings []Offering `json:"offerings"`
}

// Offering is an instance type in a zone with a capacity type.
type Offering struct {
	InstanceType string `json:"instanceType"`
	Zone         string `json:"zone"`
	CapacityType string `json:"capacityType"`
}

// NodePoolReport is one NodePool: what it asked for and what it got.
type NodePoolReport struct {
	Name    string          `json:"name"`
	Inputs  NodePoolInputs  `json:"inputs"`
	Results NodePoolResults `json:"results"`
}

// NodePoolInputs are a NodePool's settings at the end of the run.
type NodePoolInputs struct {
	// Found is false for a NodePool whose nodes are in the run but which is gone at its end.
	Found        bool     `json:"found"`
	Weight       int32    `json:"weight"`
	NodeClass    string   `json:"nodeClass,omitempty"`
	Requirements []string `json:"requirements,omitempty"`
	Taints       []string `json:"taints,omitempty"`
	// Limits are its resource limits (cpu: "1000", …).
	Limits map[string]string `json:"limits,omitempty"`
	// ConsolidationPolicy, ConsolidateAfter and ExpireAfter are its disruption settings;
	// Budgets its disruption budgets as "nodes [reasons] [schedule for duration]".
	ConsolidationPolicy string   `json:"consolidationPolicy,omitempty"`
	ConsolidateAfter    string   `json:"consolidateAfter,omitempty"`
	ExpireAfter         string   `json:"expireAfter,omitempty"`
	Budgets             []string `json:"budgets,omitempty"`
}

// NodePoolResults are what a NodePool launched, held and spent.
type NodePoolResults struct {
	Launched int `json:"launched"`
	// LaunchedSpot, LaunchedOnDemand and LaunchedReserved split Launched by capacity type.
	LaunchedSpot     int     `json:"launchedSpot"`
	LaunchedOnDemand int     `json:"launchedOnDemand"`
	LaunchedReserved int     `json:"launchedReserved,omitempty"`
	Peak             int     `json:"peak"`
	Final            int     `json:"final"`
	FinalPerHour     float64 `json:"finalPerHour"`
	Cost             float64 `json:"cost"`
	// Removed counts its nodes removed, by reason.
	Removed map[string]int `json:"removed"`
	// FailedLaunches counts its NodeClaims the cloud had no capacity for.
	FailedLaunches int `json:"failedLaunches"`
}

// history is what the recorder learns from the store's changes: when nodes became Ready, and
// where and when pods were bound and ended. The store calls it on the writing goroutine; the
// disruption controller writes from several at once, hence the lock.
type history struct {
	mu      sync.Mutex
	now     func() time.Time
	readyAt map[string]time.Time
	// draining are the nodes being deleted or disrupted, and rebooting those node repair
	// fenced for a reboot (while fenced): a pod deleted from one is evicted.
	draining, rebooting map[string]bool
	pods                []PodRecord
	// podIndex gives a pod's current record in pods, by podKey.
	podIndex map[string]int
	// removal is the latest reason given to remove each node.
	removal  map[string]string
	launches []FailedLaunch
}

func newHistory(now func() time.Time) *history {
	return &history{now: now, readyAt: map[string]time.Time{}, draining: map[string]bool{}, rebooting: map[string]bool{}, podIndex: map[string]int{}, removal: map[string]string{}}
}

func (h *history) at() int64 { return int64(h.now().Sub(Start) / time.Second) }

// created starts a pod's record; key is its name, or name#n for a later pod of that name.
func (h *history) created(p *corev1.Pod, key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	workload := ownerKey(p)
	h.podIndex[podKey(p)] = len(h.pods)
	h.pods = append(h.pods, PodRecord{Name: key, Workload: workload, CreatedAt: int64(p.CreationTimestamp.Sub(Start) / time.Second)})
}

// observe follows the store's changes to Nodes and Pods.
func (h *history) observe(ch memory.Change) {
	switch obj := ch.Object.(type) {
	case *corev1.Node:
		h.mu.Lock()
		defer h.mu.Unlock()
		if ch.Type == watch.Deleted || obj.DeletionTimestamp != nil || slices.ContainsFunc(obj.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey }) {
			h.draining[obj.Name] = true
		}
		if ch.Type != watch.Deleted && slices.ContainsFunc(obj.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.RebootingTaintKey }) {
			h.rebooting[obj.Name] = true
		} else {
			delete(h.rebooting, obj.Name)
		}
		if _, seen := h.readyAt[obj.Name]; !seen && ch.Type != watch.Deleted && nodeReady(obj) {
			h.readyAt[obj.Name] = h.now()
		}
	case *corev1.Pod:
		h.mu.Lock()
		defer h.mu.Unlock()
		i, ok := h.podIndex[podKey(obj)]
		if !ok {
			return
		}
		rec := &h.pods[i]
		if rec.BoundAt == nil && obj.Spec.NodeName != "" {
			at := h.at()
			rec.Node, rec.BoundAt = obj.Spec.NodeName, &at
		}
		if rec.EndedAt != nil {
			return
		}
		switch {
		case obj.Status.Phase == corev1.PodSucceeded:
			rec.End = PodSucceeded
		case ch.Type == watch.Deleted || obj.DeletionTimestamp != nil:
			rec.End = PodDeleted
			if obj.Spec.NodeName != "" && (h.draining[obj.Spec.NodeName] || h.rebooting[obj.Spec.NodeName]) {
				rec.End = PodEvicted
			}
		default:
			return
		}
		at := h.at()
		rec.EndedAt = &at
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// removing notes the reason given to remove a node; the latest wins.
func (h *history) removing(node, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removal[node] = reason
}

// launchFailed records a launch refused for want of capacity.
func (h *history) launchFailed(claim *karpv1.NodeClaim, err error) FailedLaunch {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := FailedLaunch{AtSeconds: h.at(), NodeClaim: claim.Name, NodePool: claim.Labels[karpv1.NodePoolLabelKey]}
	for _, o := range cloudprovider.InsufficientCapacityOfferings(err) {
		f.Offerings = append(f.Offerings, Offering{InstanceType: o.InstanceType, Zone: o.Zone, CapacityType: o.CapacityType})
	}
	h.launches = append(h.launches, f)
	return f
}

// recordingLauncher is the cloud as the NodeClaim lifecycle controller sees it: it notes the
// launches refused for want of capacity.
type recordingLauncher struct {
	cloudprovider.InstanceLifecycle
	rec *recorder
}

// Create launches through the cloud and records an insufficient-capacity refusal.
func (l recordingLauncher) Create(ctx context.Context, claim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	out, err := l.InstanceLifecycle.Create(ctx, claim)
	if err != nil && cloudprovider.IsInsufficientCapacityError(err) {
		f := l.rec.hist.launchFailed(claim, err)
		l.rec.log(LogEntry{Kind: LogLaunchFailed, Message: fmt.Sprintf("nodeclaim %s of nodepool %s not launched: %v", f.NodeClaim, f.NodePool, err)})
	}
	return out, err
}

// timelineEntry is the log entry of a timeline event.
func timelineEntry(ev *Event) LogEntry {
	kind := ""
	switch {
	case ev.Deploy != nil:
		kind = "deploy"
	case ev.Scale != nil:
		kind = "scale"
	case ev.Delete != nil:
		kind = "delete"
	case ev.Jobs != nil:
		kind = "jobs"
	case ev.Interrupt != nil:
		kind = "interrupt"
	case ev.CapacityShortage != nil:
		kind = "capacityShortage"
	case ev.Apply != "":
		kind = "apply"
	case ev.Annotate != nil:
		kind = "annotate"
	case ev.Unhealthy != nil:
		kind = "unhealthy"
	}
	return LogEntry{Kind: LogTimeline, Event: kind, Message: ev.String()}
}

// nodeHistory is every instance launched as a node record, in launch order, with the reason
// each removed one went.
func (h *history) nodeHistory(instances []sim.Instance, interrupted map[string]bool, end time.Time) []NodeRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]NodeRecord, 0, len(instances))
	for _, in := range instances {
		labels := maps.Clone(in.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, in.Bootstrap.Labels)
		n := NodeRecord{
			Name: in.Hostname, NodeClaim: in.NodeClaimName, NodePool: in.NodePoolName, InstanceID: in.ID,
			InstanceType: in.InstanceType, CapacityType: in.CapacityType, Zone: in.Zone, PricePerHour: in.Price,
			Labels: labels, Taints: taintStrings(in.Bootstrap.Taints), LaunchedAt: seconds64(in.LaunchTime),
		}
		if !in.OnDemandSince.IsZero() {
			at := seconds64(in.OnDemandSince)
			n.CapacityType, n.OnDemandAt = karpv1.CapacityTypeReserved, &at
		}
		if t, ok := h.readyAt[in.Hostname]; ok {
			at := seconds64(t)
			n.ReadyAt = &at
		}
		stop := end
		if in.State == sim.InstanceStateTerminated {
			stop = in.TerminationTime
			at := seconds64(in.TerminationTime)
			n.RemovedAt = &at
			switch reason, ok := h.removal[in.Hostname]; {
			case ok:
				n.RemovalReason = reason
			case interrupted[in.ProviderID] || in.TerminationReason == sim.TerminationReasonInterrupted:
				n.RemovalReason = string(karpv1.DisruptionReasonInterrupted)
			case in.TerminationReason == sim.TerminationReasonCapacityBlockEnded:
				n.RemovalReason = RemovalReservationExpiring
			default:
				n.RemovalReason = RemovalDeleted
			}
		}
		n.Cost = round(in.Spend(stop))
		out = append(out, n)
	}
	return out
}

// podHistory is every pod's record, in creation order, with the pending time of those never
// bound counted to their end or the end of the run.
func (h *history) podHistory(end time.Time) []PodRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := append([]PodRecord{}, h.pods...)
	for i := range out {
		p := &out[i]
		switch {
		case p.BoundAt != nil:
			p.PendingSeconds = *p.BoundAt - p.CreatedAt
		case p.EndedAt != nil:
			p.PendingSeconds = *p.EndedAt - p.CreatedAt
		default:
			p.PendingSeconds = seconds64(end) - p.CreatedAt
		}
	}
	return out
}

func seconds64(t time.Time) int64 { return int64(t.Sub(Start) / time.Second) }

func taintStrings(taints []corev1.Taint) []string {
	var out []string
	for _, t := range taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		out = append(out, s+":"+string(t.Effect))
	}
	return out
}

// nodePools reports each NodePool's settings (at the end of the run) and results; a NodePool
// gone by then but with nodes in the run is reported with its results only.
func nodePools(ctx context.Context, kube client.Reader, nodes []NodeRecord, series []Sample, failed []FailedLaunch) ([]NodePoolReport, error) {
	var pools karpv1.NodePoolList
	if err := kube.List(ctx, &pools); err != nil {
		return nil, err
	}
	byName := map[string]*NodePoolReport{}
	get := func(name string) *NodePoolReport {
		if byName[name] == nil {
			byName[name] = &NodePoolReport{Name: name, Results: NodePoolResults{Removed: map[string]int{}}}
		}
		return byName[name]
	}
	for i := range pools.Items {
		np := &pools.Items[i]
		get(np.Name).Inputs = nodePoolInputs(np)
	}
	for _, n := range nodes {
		r := &get(n.NodePool).Results
		r.Launched++
		if n.CapacityType == karpv1.CapacityTypeSpot {
			r.LaunchedSpot++
		} else if n.CapacityType == karpv1.CapacityTypeOnDemand {
			r.LaunchedOnDemand++
		} else if n.CapacityType == karpv1.CapacityTypeReserved {
			r.LaunchedReserved++
		}
		r.Cost += n.Cost
		if n.RemovedAt == nil {
			r.Final++
			r.FinalPerHour += n.PricePerHour
		} else {
			r.Removed[n.RemovalReason]++
		}
	}
	for _, s := range series {
		for name, count := range s.NodePools {
			r := &get(name).Results
			r.Peak = max(r.Peak, count)
		}
	}
	for _, f := range failed {
		get(f.NodePool).Results.FailedLaunches++
	}
	out := make([]NodePoolReport, 0, len(byName))
	for _, name := range sortedKeys(byName) {
		r := byName[name]
		r.Results.Cost, r.Results.FinalPerHour = round(r.Results.Cost), round(r.Results.FinalPerHour)
		out = append(out, *r)
	}
	return out, nil
}

func nodePoolInputs(np *karpv1.NodePool) NodePoolInputs {
	in := NodePoolInputs{Found: true, Taints: taintStrings(np.Spec.Template.Spec.Taints), ConsolidationPolicy: string(np.Spec.Disruption.ConsolidationPolicy)}
	if np.Spec.Weight != nil {
		in.Weight = *np.Spec.Weight
	}
	if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
		in.NodeClass = ref.Name
	}
	for _, r := range np.Spec.Template.Spec.Requirements {
		s := r.Key + " " + string(r.Operator)
		if len(r.Values) > 0 {
			s += " " + strings.Join(r.Values, ",")
		}
		if r.MinValues != nil {
			s += fmt.Sprintf(" (minValues %d)", *r.MinValues)
		}
		in.Requirements = append(in.Requirements, s)
	}
	if len(np.Spec.Limits) > 0 {
		in.Limits = map[string]string{}
		for name, q := range np.Spec.Limits {
			in.Limits[string(name)] = q.String()
		}
	}
	if !np.Spec.Disruption.ConsolidateAfter.IsZero() {
		in.ConsolidateAfter = np.Spec.Disruption.ConsolidateAfter.String()
	}
	if !np.Spec.Template.Spec.ExpireAfter.IsZero() {
		in.ExpireAfter = np.Spec.Template.Spec.ExpireAfter.String()
	}
	for _, b := range np.Spec.Disruption.Budgets {
		s := b.Nodes
		if len(b.Reasons) > 0 {
			reasons := make([]string, len(b.Reasons))
			for i, r := range b.Reasons {
				reasons[i] = string(r)
			}
			s += " for " + strings.Join(reasons, ",")
		}
		if b.Schedule != nil {
			s += " at " + *b.Schedule
			if b.Duration != nil {
				s += " for " + b.Duration.Duration.String()
			}
		}
		in.Budgets = append(in.Budgets, s)
	}
	return in
}

// removalCounts counts the removed nodes by reason.
func removalCounts(nodes []NodeRecord) map[string]int {
	out := map[string]int{}
	for _, n := range nodes {
		if n.RemovedAt != nil {
			out[n.RemovalReason]++
		}
	}
	return out
}

// PendingBucket is one bar of the pending-time distribution: the pods bound after waiting
// up to UpToSeconds (and more than the previous bucket's); the last bucket, UpToSeconds 0, holds
// the longer waits.
type PendingBucket struct {
	UpToSeconds int64 `json:"upToSeconds"`
	Pods        int   `json:"pods"`
}

// pendingBuckets are the upper bounds of the pending-time distribution's buckets.
var pendingBuckets = []int64{5, 15, 30, 45, 60, 90, 120, 180, 300, 600, 1800}

// pendingHistogram buckets the waits (seconds) of the pods that were bound.
func pendingHistogram(waits []float64) []PendingBucket {
	out := make([]PendingBucket, len(pendingBuckets)+1)
	for i, b := range pendingBuckets {
		out[i].UpToSeconds = b
	}
	for _, w := range waits {
		i := sort.Search(len(pendingBuckets), func(i int) bool { return float64(pendingBuckets[i]) >= w })
		out[i].Pods++
	}
	return out
}
