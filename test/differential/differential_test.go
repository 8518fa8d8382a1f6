package differential_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/test/controlplane"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

// The tolerances of the comparison (README.md gives their reasons).
const (
	// costTolerance: ours may cost at most this fraction more than upstream after a phase.
	costTolerance = 0.01
	// runningSlack: ours may have every pod Running at most this much later than upstream.
	runningSlack = 5 * time.Second
	// planNodesTolerance and planCostTolerance: after a burst, ours runs within these
	// fractions of what `karpenter simulate` plans for the same manifests.
	planNodesTolerance = 0.10
	planCostTolerance  = 0.03
)

// Each phase waits for the cluster to settle: every pod Running and no NodeClaim created or
// deleted for the quiet time (longer after a scale-down or a drift, where consolidation works
// in rounds), within the phase's limit.
const (
	burstQuiet      = 15 * time.Second
	disruptionQuiet = 60 * time.Second
	phaseLimit      = 6 * time.Minute
	namespace       = "workload"
)

// phase is what one controller did in one phase of a workload.
type phase struct {
	name string
	// running is how long after the phase began every pod was Running; created, how long
	// until the last of them existed (the ReplicaSets create them over time, slower when the
	// API server is busy).
	running, created time.Duration
	// settled is how long after the phase began the last NodeClaim was created or deleted, or
	// every pod was Running, whichever came later.
	settled time.Duration
	// fromEvent says running counts from the phase's event (the first expiry) and is compared
	// as after a burst, rather than per node removed.
	fromEvent bool
	// nodes and cost are the fleet once settled.
	nodes int
	cost  float64
	// launched and removed count the NodeClaims created and deleted during the phase.
	launched, removed int
	// decided is the first decision of the phase: the NodeClaims created within
	// decisionWindow of its first, and their $/hour once launched.
	decided struct {
		nodes int
		cost  float64
	}
	types map[string]int // instance types of the settled fleet
	// fleet describes each node of the settled fleet: its type, zone and how many pods of
	// each app run there.
	fleet []string
}

// perRemoved is the time the phase took to settle, per NodeClaim removed.
func (p phase) perRemoved() time.Duration {
	return p.settled / time.Duration(max(p.removed, 1))
}

func (p phase) String() string {
	var types []string
	for t, n := range p.types {
		types = append(types, fmt.Sprintf("%d×%s", n, t))
	}
	sort.Strings(types)
	return fmt.Sprintf("%d nodes $%.4f/h, Running after %s (created after %s), settled after %s, %d launched (%d in the first decision) %d removed [%s]",
		p.nodes, p.cost, p.running.Round(time.Second), p.created.Round(time.Second), p.settled.Round(time.Second), p.launched, p.decided.nodes, p.removed, strings.Join(types, " "))
}

// outcome is one controller's run of a workload.
type outcome struct {
	controller string
	phases     []phase
	timeline   []string
	// raced counts the pods our controller planned again because the kube-scheduler gave the
	// room of their nominated node to other pods (its log's "nominated node filled with other
	// pods"); upstream's log has no such line.
	raced int
}

// decisionWindow bounds one provisioning decision's NodeClaims: they are created together,
// and the next decision comes no sooner than a node ready (3 s), a refusal and the batch's idle
// second. CreationTimestamp has a resolution of a second.
const decisionWindow = 3 * time.Second

// raceRefusal is what our controller logs (at debug level, provisioning's judgeMisses) when
// a pod's nominated node was filled with other pods and it plans the pod again.
const raceRefusal = "nominated node filled with other pods"

func TestDifferential(t *testing.T) {
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) {
			if testing.Short() && !w.short {
				t.Skip("not in the short form")
			}
			if os.Getenv("DIFFERENTIAL_ONLY") == "ours" {
				// Ours alone, against the plan (while working on our controller).
				mine := runWorkload(t, ours, w)
				for _, p := range mine.phases {
					t.Logf("%-14s %-10s ours:     %s", w.name, p.name, p)
				}
				if !t.Failed() {
					comparePlan(t, w, mine)
				}
				return
			}
			theirs := runWorkload(t, upstream, w)
			if t.Failed() {
				return
			}
			mine := runWorkload(t, ours, w)
			if t.Failed() {
				return
			}
			compare(t, w, theirs, mine)
		})
	}
}

// compare checks our outcome against upstream's and the plan, logging the table, and both
// timelines when it fails.
func compare(t *testing.T, w workload, theirs, mine outcome) {
	t.Helper()
	for i := range theirs.phases {
		t.Logf("%-14s %-10s upstream: %s", w.name, theirs.phases[i].name, theirs.phases[i])
		t.Logf("%-14s %-10s ours:     %s", w.name, mine.phases[i].name, mine.phases[i])
	}
	for i, their := range theirs.phases {
		my := mine.phases[i]
		if my.cost > their.cost*(1+costTolerance) {
			t.Errorf("%s: ours costs $%.4f/h, upstream $%.4f/h", my.name, my.cost, their.cost)
		}
		if i == 0 || my.fromEvent {
			if my.running > their.running+runningSlack {
				t.Errorf("%s: ours ran every pod after %s, upstream after %s", my.name, my.running.Round(time.Second), their.running.Round(time.Second))
			}
			continue
		}
		// After a burst the fleets differ, and a budget lets one node go at a time: what is
		// compared is the time each removed node took.
		if mine, theirs := my.perRemoved(), their.perRemoved(); mine > theirs+runningSlack {
			t.Errorf("%s: ours took %s per node removed, upstream %s", my.name, mine.Round(time.Second), theirs.Round(time.Second))
		}
	}
	comparePlan(t, w, mine)
	if t.Failed() {
		t.Logf("upstream's NodeClaims:\n%s", strings.Join(theirs.timeline, "\n"))
	}
}

// comparePlan checks our burst against what `karpenter simulate` plans for the same
// manifests, logging our NodeClaims when it misses. The kube-scheduler may give a nominated
// pod's room to another pod (README.md, Tolerances); when our controller logged that and
// planned such pods again, the burst's first decision is held to the plan instead, and the
// launches after it are reported as the race's.
func comparePlan(t *testing.T, w workload, mine outcome) {
	t.Helper()
	plan := simulatePlan(t, w)
	burst := mine.phases[0]
	t.Logf("%-14s simulate plans %d nodes at $%.4f/h", w.name, plan.Nodes.Peak, plan.Cost.PeakPerHour)
	misses := planMisses(plan, burst.nodes, burst.cost)
	if misses == "" {
		return
	}
	if decided := burst.decided; mine.raced > 0 && planMisses(plan, decided.nodes, decided.cost) == "" {
		t.Logf("burst: %s, after the kube-scheduler gave the room of %d nominated pods to other pods; our decision, %d nodes at $%.4f/h, is the plan's",
			misses, mine.raced, decided.nodes, decided.cost)
	} else {
		t.Errorf("burst: %s", misses)
	}
	t.Logf("our NodeClaims:\n%s", strings.Join(mine.timeline, "\n"))
	t.Logf("our fleet after the burst:\n%s", strings.Join(burst.fleet, "\n"))
}

// planMisses says how a fleet of nodes costing cost an hour misses the plan by more than the
// tolerances, or returns "" when it does not.
func planMisses(p plan, nodes int, cost float64) string {
	var misses []string
	if limit := math.Ceil((1 + planNodesTolerance) * float64(p.Nodes.Peak)); float64(nodes) > limit {
		misses = append(misses, fmt.Sprintf("ours runs %d nodes, simulate plans %d", nodes, p.Nodes.Peak))
	}
	if math.Abs(cost-p.Cost.PeakPerHour) > planCostTolerance*p.Cost.PeakPerHour {
		misses = append(misses, fmt.Sprintf("ours costs $%.4f/h, simulate plans $%.4f/h", cost, p.Cost.PeakPerHour))
	}
	return strings.Join(misses, "; ")
}

// plan is the part of `karpenter simulate -o json`'s report (package simulate's Report) the
// suite reads; the suite does not import package simulate, whose Kubernetes validation would
// pin this module's Kubernetes libraries to the product's, below Karpenter v1.15.0's.
type plan struct {
	Nodes struct{ Peak int }
	Cost  struct{ PeakPerHour float64 }
}

// simulatePlan runs `karpenter simulate` on the workload's burst, our NodePool and node class.
func simulatePlan(t *testing.T, w workload) plan {
	t.Helper()
	manifests := ours.nodeClass + "---\n" + w.nodePoolManifest(ours, nil) + "---\n" +
		"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + namespace + "\n---\n" + w.deploymentsManifest(namespace)
	var report plan
	harness.SimulateJSON(t, shared.ours, manifests, &report)
	return report
}

// runWorkload runs the workload's phases under the controller on a fresh control plane.
func runWorkload(t *testing.T, c controller, w workload) outcome {
	t.Helper()
	opts := controlplane.Options{DisabledControllers: c.disabledControllers}
	if c.crdFiles != nil {
		opts.CRDFiles = c.crdFiles()
	}
	plane, err := controlplane.Start(opts)
	if plane != nil {
		defer func() {
			if t.Failed() {
				for _, name := range []string{"karpenter"} {
					data, _ := os.ReadFile(filepath.Join(plane.Dir, name+".log"))
					if len(data) > 8000 {
						data = data[len(data)-8000:]
					}
					t.Logf("--- %s's %s log:\n%s", c.name, name, data)
				}
			}
			plane.Stop(os.Getenv("DIFFERENTIAL_KEEP") != "")
		}()
	}
	if err != nil {
		t.Fatal(err)
	}
	apply(t, plane, c.nodeClass+"---\n"+w.nodePoolManifest(c, nil)+"---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+namespace+"\n")
	c.start(t, plane)
	o := &observer{t: t, plane: plane, seen: map[string]claimRecord{}, start: time.Now()}
	out := outcome{controller: c.name}

	began := time.Now()
	apply(t, plane, w.deploymentsManifest(namespace))
	out.phases = append(out.phases, o.settle("burst", began, w.pods(), burstQuiet))

	if w.scaleTo != nil {
		began = time.Now()
		var docs []string
		for _, d := range w.deployments {
			docs = append(docs, d.manifest(namespace, w.scaled(d)))
		}
		apply(t, plane, strings.Join(docs, "---\n"))
		out.phases = append(out.phases, o.settle("scale-down", began, w.scaledPods(), disruptionQuiet))
	}
	if w.drift {
		began = time.Now()
		apply(t, plane, w.nodePoolManifest(c, map[string]string{"differential/rollout": "2"}))
		out.phases = append(out.phases, o.settleWhen("drift", began, w.scaledPods(), disruptionQuiet, func(nodes []corev1.Node) bool {
			for _, n := range nodes {
				if n.Labels["differential/rollout"] != "2" {
					return false
				}
			}
			return true
		}))
	}
	if w.expireAfter != "" {
		began = time.Now()
		claims, _, _ := o.poll()
		before := map[string]bool{}
		for _, c := range claims {
			before[c.Name] = true
		}
		expired := o.settleWhen("expiry", began, w.scaledPods(), disruptionQuiet, func([]corev1.Node) bool {
			for name := range before {
				if o.seen[name].deleted.IsZero() {
					return false
				}
			}
			return true
		})
		// Measured from the first expiry, which comes expireAfter after each node's launch
		// rather than at the phase's start.
		first := time.Time{}
		for name := range before {
			if at := o.seen[name].deleted; first.IsZero() || at.Before(first) {
				first = at
			}
		}
		expired.running = max(0, expired.running-first.Sub(began))
		expired.fromEvent = true
		out.phases = append(out.phases, expired)
	}
	out.timeline = o.timeline()
	if data, err := os.ReadFile(filepath.Join(plane.Dir, "karpenter.log")); err == nil {
		out.raced = bytes.Count(data, []byte(raceRefusal))
	}
	return out
}

func apply(t *testing.T, plane *controlplane.ControlPlane, manifests string) {
	t.Helper()
	if err := plane.Apply(manifests); err != nil {
		t.Fatal(err)
	}
}

// claimRecord is when the observer first saw a NodeClaim and saw it gone.
type claimRecord struct {
	created, deleted time.Time
	describe         string
	// price is its $/hour once it has launched (its offering's labels are set).
	price float64
}

// observer polls the cluster, recording every NodeClaim's life.
type observer struct {
	t     *testing.T
	plane *controlplane.ControlPlane
	start time.Time
	seen  map[string]claimRecord
}

// poll lists NodeClaims, Nodes and the workload's pods, recording claims that appeared or went.
func (o *observer) poll() ([]karpv1.NodeClaim, []corev1.Node, []corev1.Pod) {
	ctx := context.Background()
	var claims karpv1.NodeClaimList
	var nodes corev1.NodeList
	var pods corev1.PodList
	for _, l := range []struct {
		list client.ObjectList
		opts []client.ListOption
	}{{&claims, nil}, {&nodes, nil}, {&pods, []client.ListOption{client.InNamespace(namespace)}}} {
		if err := o.plane.Env.Client.List(ctx, l.list, l.opts...); err != nil {
			o.t.Fatal(err)
		}
	}
	now := time.Now()
	live := map[string]bool{}
	for _, c := range claims.Items {
		live[c.Name] = true
		r, ok := o.seen[c.Name]
		if !ok {
			r = claimRecord{created: c.CreationTimestamp.Time}
		}
		if it := c.Labels[corev1.LabelInstanceTypeStable]; it != "" {
			r.describe = fmt.Sprintf("%s %s %s", it, c.Labels[corev1.LabelTopologyZone], c.Labels[karpv1.CapacityTypeLabelKey])
		}
		if price, ok := shared.catalog.price(c.Labels); ok {
			r.price = price
		}
		if c.DeletionTimestamp != nil && r.deleted.IsZero() {
			r.deleted = c.DeletionTimestamp.Time
		}
		o.seen[c.Name] = r
	}
	for name, r := range o.seen {
		if !live[name] && r.deleted.IsZero() {
			r.deleted = now
			o.seen[name] = r
		}
	}
	return claims.Items, nodes.Items, pods.Items
}

// settle waits for the phase to end (see settleWhen) with no further condition.
func (o *observer) settle(name string, began time.Time, pods int, quiet time.Duration) phase {
	return o.settleWhen(name, began, pods, quiet, func([]corev1.Node) bool { return true })
}

// settleWhen waits until the phase's pods are all Running, done holds for the nodes, and no
// NodeClaim was created or deleted for quiet, then measures the fleet. It fails the test when
// that takes longer than phaseLimit.
func (o *observer) settleWhen(name string, began time.Time, pods int, quiet time.Duration, done func([]corev1.Node) bool) phase {
	o.t.Helper()
	p := phase{name: name, types: map[string]int{}}
	for {
		_, nodes, podList := o.poll()
		running := 0
		for _, pod := range podList {
			if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
				running++
			}
		}
		if len(podList) >= pods && p.created == 0 {
			p.created = time.Since(began)
		}
		allRunning := running == pods && len(podList) == pods
		if allRunning && p.running == 0 {
			p.running = time.Since(began)
		}
		if !allRunning {
			p.running = 0
		}
		last := began
		for _, r := range o.seen {
			for _, at := range []time.Time{r.created, r.deleted} {
				if at.After(last) {
					last = at
				}
			}
		}
		if allRunning && done(nodes) && time.Since(last) >= quiet {
			p.settled = max(p.running, last.Sub(began))
			var first time.Time
			for _, r := range o.seen {
				if !r.created.Before(began.Add(-time.Second)) && (first.IsZero() || r.created.Before(first)) {
					first = r.created
				}
			}
			for _, r := range o.seen {
				if !r.created.Before(began.Add(-time.Second)) {
					p.launched++
					if r.created.Before(first.Add(decisionWindow)) {
						p.decided.nodes++
						p.decided.cost += r.price
					}
				}
				if !r.deleted.IsZero() && r.deleted.After(began) {
					p.removed++
				}
			}
			apps := map[string]map[string]int{}
			for _, pod := range podList {
				if apps[pod.Spec.NodeName] == nil {
					apps[pod.Spec.NodeName] = map[string]int{}
				}
				apps[pod.Spec.NodeName][pod.Labels["app"]]++
			}
			for _, n := range nodes {
				var counts []string
				for app, k := range apps[n.Name] {
					counts = append(counts, fmt.Sprintf("%s=%d", app, k))
				}
				sort.Strings(counts)
				p.fleet = append(p.fleet, fmt.Sprintf("%s %s %s (created +%s): %s", n.Name, n.Labels[corev1.LabelInstanceTypeStable],
					n.Labels[corev1.LabelTopologyZone], n.CreationTimestamp.Sub(o.start).Round(time.Second), strings.Join(counts, " ")))
				price, ok := shared.catalog.price(n.Labels)
				if !ok {
					o.t.Errorf("node %s: no price for %s in %s as %s", n.Name, n.Labels[corev1.LabelInstanceTypeStable],
						n.Labels[corev1.LabelTopologyZone], n.Labels[karpv1.CapacityTypeLabelKey])
				}
				p.nodes++
				p.cost += price
				p.types[n.Labels[corev1.LabelInstanceTypeStable]]++
			}
			return p
		}
		if time.Since(began) > phaseLimit {
			o.t.Fatalf("%s: not settled after %s: %d of %d pods Running, %d nodes, last NodeClaim change %s ago",
				name, phaseLimit, running, pods, len(nodes), time.Since(last).Round(time.Second))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// timeline lists every NodeClaim seen: when it was created and deleted, relative to the start
// of the run, and what it launched.
func (o *observer) timeline() []string {
	type line struct {
		at   time.Time
		text string
	}
	var lines []line
	for name, r := range o.seen {
		text := fmt.Sprintf("+%6s %s %s", r.created.Sub(o.start).Round(time.Second), name, r.describe)
		if !r.deleted.IsZero() {
			text += fmt.Sprintf(" deleted +%s", r.deleted.Sub(o.start).Round(time.Second))
		}
		lines = append(lines, line{r.created, text})
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].at.Before(lines[j].at) })
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}
