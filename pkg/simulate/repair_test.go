package simulate

import (
	"strings"
	"testing"
	"time"

	"github.com/openkarpenter/karpenter/pkg/providers/sim"
)

// runExample runs examples/node-repair.yaml, with the NodeRepair gate as given (without it, or
// with legacyNodeRepair, without the RebootForRepair gate, which needs both) and
// legacyNodeRepair as given.
func runExample(t *testing.T, nodeRepair, legacy bool) (*Report, *engine) {
	t.Helper()
	w, err := LoadWorkload("../../examples/node-repair.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w.FeatureGates["NodeRepair"] = nodeRepair
	if !nodeRepair || legacy {
		delete(w.FeatureGates, "RebootForRepair")
	}
	w.LegacyNodeRepair = legacy
	return runWorkload(t, w)
}

// repairStep is one node repair entry of a report's log, as the tests compare them.
type repairStep struct {
	at     time.Duration
	action string
	node   string
}

// repairSteps are the node repair entries of the report's log (repairs, reboots and holds).
func repairSteps(t *testing.T, rep *Report) []repairStep {
	t.Helper()
	var out []repairStep
	for _, ev := range rep.Events {
		if ev.Method != MethodRepair {
			continue
		}
		if ev.Reason != "Unhealthy" || len(ev.Nodes) != 1 {
			t.Errorf("repair entry %+v", ev)
		}
		out = append(out, repairStep{time.Duration(ev.AtSeconds) * time.Second, ev.Kind + "/" + ev.Action, ev.Nodes[0]})
	}
	return out
}

// TestNodeRepairExample: examples/node-repair.yaml as Karpenter v1.15 repairs it. Each node
// that falls ill is repaired once its condition has held for as long as EC2's policy tolerates
// it (30 minutes for Ready and KernelReady, 10 for a GPU XID), its replacement launched first
// though a PodDisruptionBudget allows no eviction and the pods are do-not-disrupt. With
// RebootForRepair the reboot-clearable GPU fault (XID 48) reboots its node in place, which
// clears it; it recurs, a second reboot; it recurs again, and the node, rebooted twice within
// 24 hours, is replaced. Three unhealthy web nodes of seven at once are more than 20%: none is
// repaired.
func TestNodeRepairExample(t *testing.T) {
	rep, e := runExample(t, true, false)
	var sick []string // nodes, in the order they fell ill
	for _, ev := range rep.Events {
		if ev.Kind == LogUnhealthy {
			sick = append(sick, ev.Nodes[0])
		}
	}
	if len(sick) != 9 {
		t.Fatalf("%d nodes fell ill (%v), want the 9 of the timeline", len(sick), sick)
	}
	web1, gpuFatal, gpuReboot, web2, held := sick[0], sick[1], sick[2], sick[5], sick[6:]
	if sick[3] != gpuReboot || sick[4] != gpuReboot {
		t.Errorf("the XID 48 faults fell on %v, want the node a reboot cleared (%s) each time", sick[2:5], gpuReboot)
	}
	m := time.Minute
	want := []repairStep{
		{90 * m, "disruption/replace", web1},
		{130 * m, "disruption/replace", gpuFatal},
		{190 * m, "disruption/reboot", gpuReboot},
		{195 * m, "reboot/issued", gpuReboot}, // its drain waited the 5 minutes of its bound for the PDB
		{196*m + time.Second, "reboot/succeeded", gpuReboot},
		{220 * m, "disruption/reboot", gpuReboot},
		{225 * m, "reboot/issued", gpuReboot},
		{226*m + time.Second, "reboot/succeeded", gpuReboot},
		{250 * m, "disruption/replace", gpuReboot},
		{330 * m, "disruption/replace", web2},
		{420 * m, "disruption/blocked", held[0]},
		{420 * m, "disruption/blocked", held[1]},
		{420 * m, "disruption/blocked", held[2]},
	}
	got := repairSteps(t, rep)
	if len(got) != len(want) {
		t.Fatalf("repairs\n%+v\nwant\n%+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("repair %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, ev := range rep.Events {
		switch {
		case ev.Method != MethodRepair:
		case ev.Action == "blocked" && !strings.Contains(ev.Message, `more than 20% of nodes in nodepool "web" are unhealthy`):
			t.Errorf("hold %q, want the unhealthy-fraction stop", ev.Message)
		case ev.AtSeconds == int64(250*60) && !strings.Contains(ev.Message, "rebooted 2 times within 24h0m0s already, so replaced instead"):
			t.Errorf("escalated repair %q does not say so", ev.Message)
		}
	}
	wantCounts := RepairCounts{Removed: 4, Escalated: 1, Reboots: 2, RebootsSucceeded: 2, Blocked: 3}
	if rep.Repairs == nil || *rep.Repairs != wantCounts {
		t.Errorf("repairs %+v, want %+v", rep.Repairs, wantCounts)
	}
	if rep.DisruptionMethods[MethodRepair] != 4 || rep.Disruptions["Unhealthy"] != 4 {
		t.Errorf("disruptions %v by method %v, want 4 repairs (a reboot removes no node)", rep.Disruptions, rep.DisruptionMethods)
	}
	// Replacement first: every replaced node went only once its replacement was Ready, so its
	// pods waited for no launch.
	for _, in := range e.cloud.Instances() {
		switch in.Hostname {
		case web1, gpuFatal, gpuReboot, web2:
			if in.State != sim.InstanceStateTerminated {
				t.Errorf("repaired node %s is %s", in.Hostname, in.State)
			}
		case held[0], held[1], held[2]:
			if in.State != sim.InstanceStateRunning {
				t.Errorf("node %s, whose repair was held, is %s", in.Hostname, in.State)
			}
		}
		if in.Hostname == gpuReboot && in.Reboots != 2 {
			t.Errorf("node %s was rebooted %d times, want 2", in.Hostname, in.Reboots)
		}
	}
	if rep.Pods.NeverScheduled != 0 || rep.Pods.Scheduled != rep.Pods.Created {
		t.Errorf("pods %+v: the pods of repaired nodes should run again", rep.Pods)
	}
	// The 23 deployed, and those of the four replaced nodes: the reboots' pods rode them.
	if rep.Pods.Created != 23+3+1+1+3 {
		t.Errorf("%d pods created, want the 23 deployed and the 8 of the four replaced nodes", rep.Pods.Created)
	}
	for _, p := range rep.PodHistory {
		if p.CreatedAt > 60*60 && p.PendingSeconds > 5 {
			t.Errorf("pod %s of a repaired node waited %ds for a node: its replacement should have been ready", p.Name, p.PendingSeconds)
		}
	}
}

// TestNodeRepairExampleLegacy: with legacyNodeRepair the legacy controller repairs the same
// faults, as Karpenter's --legacy-node-repair: each node deleted at once once its condition
// held as long as v1.14's policies tolerate (10 minutes for any AcceleratedHardwareReady
// fault, no reboot), no replacement first; the unhealthy-fraction stop holds the last three.
func TestNodeRepairExampleLegacy(t *testing.T) {
	rep, _ := runExample(t, true, true)
	var actions []string
	for _, s := range repairSteps(t, rep) {
		actions = append(actions, s.action)
		if s.action == "disruption/reboot" || strings.HasPrefix(s.action, "reboot/") {
			t.Errorf("the legacy controller rebooted: %+v", s)
		}
	}
	if rep.Repairs == nil || rep.Repairs.Reboots != 0 || rep.Repairs.Removed < 4 || rep.Repairs.Blocked == 0 {
		t.Errorf("repairs %+v (%v): want nodes deleted and held, no reboot", rep.Repairs, actions)
	}
	for _, ev := range rep.Events {
		if ev.Method == MethodRepair && ev.Action == "delete" && !strings.Contains(ev.Message, "its pods are deleted at once") {
			t.Errorf("legacy repair %q", ev.Message)
		}
		if ev.Method == MethodRepair && ev.Action == "replace" {
			t.Errorf("the legacy controller replaced first: %+v", ev)
		}
	}
}

// TestNodeRepairGateOff: without the NodeRepair gate the nodes fall ill and stay.
func TestNodeRepairGateOff(t *testing.T) {
	rep, e := runExample(t, false, false)
	for _, ev := range rep.Events {
		if ev.Method == MethodRepair {
			t.Errorf("repair without the gate: %+v", ev)
		}
	}
	if rep.Repairs != nil {
		t.Errorf("repairs %+v without the gate", rep.Repairs)
	}
	faults := 0
	for _, in := range e.cloud.Instances() {
		// The oldest nodes take several faults: each event picks the oldest without its own.
		faults += len(in.Conditions)
		if len(in.Conditions) > 0 && in.State != sim.InstanceStateRunning {
			t.Errorf("unhealthy instance %s is %s", in.ID, in.State)
		}
	}
	// Both GPU nodes report their GPU fault by 3h: the later GPU events find none without it.
	if faults != 7 {
		t.Errorf("%d faults reported, want 7", faults)
	}
}

// threePools is a workload of three NodePools of one node each: guarded, whose node gets
// karpenter.sh/do-not-repair (it is the oldest), plain, and frozen, whose budget allows no
// disruption for reason Unhealthy. All three nodes report KernelReady False at 15m.
const threePools = `name: three
duration: 2h
featureGates: {NodeRepair: true}
manifests: |
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: guarded}
  spec:
    template:
      spec:
        requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}, {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  ---
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: plain}
  spec:
    template:
      spec:
        requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}, {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  ---
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: frozen}
  spec:
    disruption:
      budgets:
        - {nodes: "0", reasons: [Unhealthy]}
    template:
      spec:
        requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}, {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
` + nodeClassManifest + `timeline:
  - at: 0s
    deploy: {name: guarded, replicas: 1, pod: {cpu: "1", nodeSelector: {karpenter.sh/nodepool: guarded}}}
  - at: 2m
    deploy: {name: plain, replicas: 1, pod: {cpu: "1", nodeSelector: {karpenter.sh/nodepool: plain}}}
  - at: 4m
    deploy: {name: frozen, replicas: 1, pod: {cpu: "1", nodeSelector: {karpenter.sh/nodepool: frozen}}}
  - at: 10m
    annotate: {nodes: 1, annotations: {karpenter.sh/do-not-repair: "true"}}
  - at: 15m
    unhealthy: {count: 1, nodePool: guarded, condition: KernelReady, status: "False"}
  - at: 15m
    unhealthy: {count: 1, nodePool: plain, condition: KernelReady, status: "False"}
  - at: 15m
    unhealthy: {count: 1, nodePool: frozen, condition: KernelReady, status: "False"}
`

// TestRepairHonoursDoNotRepairAndBudgets: of three unhealthy nodes only the plain one is
// repaired, 30 minutes after its fault, its replacement launched and Ready before it goes, so
// its pod waits for no launch; karpenter.sh/do-not-repair holds the guarded one, and its
// NodePool's budget for reason Unhealthy (0) the frozen one, each logged once with why.
func TestRepairHonoursDoNotRepairAndBudgets(t *testing.T) {
	rep := run(t, threePools)
	nodeOf := map[string]string{} // pool -> its first node
	for _, n := range rep.NodeHistory {
		if nodeOf[n.NodePool] == "" {
			nodeOf[n.NodePool] = n.Name
		}
	}
	var repairs, holds []LogEntry
	for _, ev := range rep.Events {
		switch {
		case ev.Method == MethodRepair && ev.Action == "blocked":
			holds = append(holds, ev)
		case ev.Method == MethodRepair:
			repairs = append(repairs, ev)
		}
	}
	if len(repairs) != 1 || repairs[0].Nodes[0] != nodeOf["plain"] || repairs[0].Action != "replace" || repairs[0].AtSeconds != 45*60 {
		t.Fatalf("repairs %+v, want the plain node's (%s) replaced at 45m", repairs, nodeOf["plain"])
	}
	wantHolds := map[string]string{
		nodeOf["guarded"]: `repair is blocked through the "karpenter.sh/do-not-repair" annotation`,
		nodeOf["frozen"]:  "nodepool frozen's budgets allow no more disruptions for reason Unhealthy now",
	}
	if len(holds) != len(wantHolds) {
		t.Errorf("holds %+v, want one for each of %v", holds, wantHolds)
	}
	for _, h := range holds {
		if want, ok := wantHolds[h.Nodes[0]]; !ok || !strings.Contains(h.Message, want) || h.AtSeconds != 45*60 {
			t.Errorf("hold %+v, want %q at 45m", h, want)
		}
	}
	if rep.Repairs == nil || *rep.Repairs != (RepairCounts{Removed: 1, Blocked: 2}) {
		t.Errorf("repairs %+v, want 1 removed and 2 held", rep.Repairs)
	}
	var replacement *NodeRecord
	for i, n := range rep.NodeHistory {
		switch {
		case n.Name == nodeOf["plain"]:
			if n.RemovedAt == nil || n.RemovalReason != "Unhealthy" {
				t.Errorf("plain node %+v: want removed for Unhealthy", n)
			}
		case n.NodePool == "plain":
			replacement = &rep.NodeHistory[i]
		case n.RemovedAt != nil:
			t.Errorf("node %s of nodepool %s removed (%s)", n.Name, n.NodePool, n.RemovalReason)
		}
	}
	if replacement == nil || replacement.ReadyAt == nil {
		t.Fatalf("no replacement Ready for the plain node: %+v", rep.NodeHistory)
	}
	plain := rep.NodeHistory[0]
	for _, n := range rep.NodeHistory {
		if n.Name == nodeOf["plain"] {
			plain = n
		}
	}
	if replacement.LaunchedAt != 45*60 || *replacement.ReadyAt > *plain.RemovedAt {
		t.Errorf("replacement launched at %ds, Ready at %ds, the plain node removed at %ds: want it launched at the repair and Ready before", replacement.LaunchedAt, *replacement.ReadyAt, *plain.RemovedAt)
	}
	// The plain pod's successor binds to the Ready replacement at once: no pod waits longer
	// than a bind (the first pods wait for their nodes' launch, before any fault).
	for _, p := range rep.PodHistory {
		if p.CreatedAt >= 45*60 && p.PendingSeconds > 2 {
			t.Errorf("pod %s created at %ds waited %ds: a replacement-first repair leaves none waiting for a launch", p.Name, p.CreatedAt, p.PendingSeconds)
		}
	}
	if rep.Pods.NeverScheduled != 0 || rep.Pods.Created != 4 {
		t.Errorf("pods %+v, want the 3 deployed and the plain pod's successor, all scheduled", rep.Pods)
	}
}

func TestUnhealthyEventErrors(t *testing.T) {
	base := "name: x\nduration: 1h\nfeatureGates: {NodeRepair: true}\n" + nodePoolManifests + "timeline:\n  - at: 0s\n    deploy: {name: web, replicas: 1, pod: {cpu: 1}}\n  - at: 10m\n    unhealthy: "
	for _, tc := range []struct{ event, want string }{
		{"{count: 0, condition: Ready, status: Unknown}", "timeline[1].unhealthy.count: must be positive"},
		{"{count: 1, condition: Ready}", "timeline[1].unhealthy: condition and status are required, one of: Ready False (30m0s); Ready Unknown (30m0s); AcceleratedHardwareReady False (10m0s for a reason matching .*XID(46|48|54|62|63|95|109|110|136|140|143|155|156|158).*; 10m0s for a reason matching .*XID(64|74|79|119|120).*; else 30m0s); StorageReady False (30m0s)"},
		{"{count: 1, condition: KernelReady, status: \"True\"}", "KernelReady True is not unhealthy to the simulated cloud's repair policies (EC2's)"},
		{"{count: 1, condition: KernalReady, status: \"False\"}", "KernalReady False is not unhealthy"},
		{"{count: 1, nodePool: gpu, condition: Ready, status: Unknown}", `timeline[1].unhealthy.nodePool: no NodePool "gpu" among the manifests`},
		{"{count: 1, condition: Ready, status: Unknown, since: 1h}", "small.yaml:29: since: unknown field"},
	} {
		_, err := ParseWorkload("small.yaml", []byte(base+tc.event+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.event, err, tc.want)
		}
	}
	for _, valid := range []string{
		"{count: 2, nodePool: default, condition: StorageReady, status: \"False\", reason: EBSFailure}",
		"{count: 1, condition: AcceleratedHardwareReady, status: \"False\", reason: NvidiaXID48Error}",
	} {
		if _, err := ParseWorkload("small.yaml", []byte(base+valid+"\n")); err != nil {
			t.Errorf("a valid unhealthy event %s: %v", valid, err)
		}
	}
	// With RebootForRepair the XID 48 policy reboots, and says so.
	withReboot := strings.Replace(base, "featureGates: {NodeRepair: true}\n", "featureGates: {NodeRepair: true, RebootForRepair: true}\n", 1)
	_, err := ParseWorkload("small.yaml", []byte(withReboot+"{count: 1, condition: AcceleratedHardwareReady}\n"))
	if err == nil || !strings.Contains(err.Error(), "AcceleratedHardwareReady False (10m0s, then a reboot, for a reason matching .*XID(46|") {
		t.Errorf("with RebootForRepair: got %v, want the reboot policy described", err)
	}
}

// TestRepairSettingsRefused: the repair settings that would change nothing, or that the repair
// they select cannot honour, are refused at their line, with what to do; TerminateFirstRepair
// works with repair as a disruption method.
func TestRepairSettingsRefused(t *testing.T) {
	for _, tc := range []struct{ settings, want string }{
		{"featureGates: {NodeRepair: true, TerminateFirstRepair: true}\nlegacyNodeRepair: true\n", "tf.yaml:3: featureGates.TerminateFirstRepair: the legacy node repair controller (legacyNodeRepair: true) deletes an unhealthy node at once"},
		{"legacyNodeRepair: true\n", "tf.yaml:3: legacyNodeRepair: selects the legacy node repair controller, which runs only with the NodeRepair feature gate"},
		{"featureGates: {NodeRepair: false, RebootForRepair: true}\n", "tf.yaml:3: featureGates.RebootForRepair: reboots are node repair's: add featureGates: {NodeRepair: true}"},
		{"featureGates: {RebootForRepair: true}\n", "tf.yaml:3: featureGates.RebootForRepair: reboots are node repair's"},
		{"featureGates: {NodeRepair: true, RebootForRepair: true}\nlegacyNodeRepair: true\n", "tf.yaml:3: featureGates.RebootForRepair: the legacy node repair controller (legacyNodeRepair: true) never reboots"},
		{"featureGates:\n  NodeRepair: true\n  RebootForRepiar: true\n", `tf.yaml:4: featureGates.RebootForRepiar: unknown feature gate "RebootForRepiar"`},
	} {
		_, err := ParseWorkload("tf.yaml", []byte("name: x\nduration: 1h\n"+tc.settings+nodePoolManifests+"timeline: []\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.settings, err, tc.want)
		}
	}
	for _, ok := range []string{
		"featureGates: {NodeRepair: true, TerminateFirstRepair: true}\n",
		"featureGates: {NodeRepair: true, RebootForRepair: true, DRAEFA: false}\n",
		"featureGates: {NodeRepair: true}\nlegacyNodeRepair: true\n",
	} {
		w, err := ParseWorkload("tf.yaml", []byte("name: x\nduration: 1h\n"+ok+nodePoolManifests+"timeline: []\n"))
		if err != nil {
			t.Errorf("%q: %v", ok, err)
			continue
		}
		e, err := newEngine(t.Context(), w, Options{})
		if err != nil {
			t.Errorf("%q: %v", ok, err)
			continue
		}
		if legacy := w.LegacyNodeRepair; (e.repair != nil) != legacy || (e.repairPolicies != nil) == legacy {
			t.Errorf("%q: legacy controller %v, repair method %v", ok, e.repair != nil, e.repairPolicies != nil)
		}
	}
}

// TestNodeRepairReportShowsRepairs: the text and HTML reports of examples/node-repair.yaml say
// what repair did, in a summary line and a section listing each repair, reboot and hold.
func TestNodeRepairReportShowsRepairs(t *testing.T) {
	rep := sharedReport(t, "../../examples/node-repair.yaml")
	var text, page strings.Builder
	if err := WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Repairs   4 nodes removed (1 after 2 reboots), 2 reboots (2 succeeded, 0 failed), 3 holds\n",
		"\nNode repair\n",
		"issued: fenced and drained, its instance rebooting",
		"succeeded: node rebooted and rejoined the cluster",
		"so replaced instead",
		`blocked: more than 20% of nodes in nodepool "web" are unhealthy`,
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{
		"<h2>Node repair</h2>",
		"4 unhealthy nodes removed (1 rebooted too often, replaced instead), 2 reboots (2 succeeded, 0 failed), 3 holds.",
		"<td>reboot succeeded</td>",
		"<td>blocked</td>",
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
}

// rebootOnce is a GPU node whose pod no budget protects, and a GPU fault a reboot clears.
const rebootOnce = `name: reboot
duration: 1h
featureGates: {NodeRepair: true, RebootForRepair: true}
manifests: |
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: gpu}
  spec:
    disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 5m}
    template:
      spec:
        requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [g5.xlarge]}, {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
` + nodeClassManifest + `timeline:
  - at: 0s
    deploy: {name: training, replicas: 1, pod: {gpu: 1, cpu: "2"}}
  - at: 10m
    unhealthy: {count: 1, condition: AcceleratedHardwareReady, status: "False", reason: NvidiaXID48Error}
`

// TestRebootClearsFault: a GPU fault a reboot clears reboots its node 10 minutes after it
// appears; the reboot's drain evicts the node's pod (no budget holds it), which the provisioner
// places on a new node meanwhile; the node comes back with a new boot and without the fault,
// empty, and is consolidated. No node is repaired away.
func TestRebootClearsFault(t *testing.T) {
	w, err := ParseWorkload("reboot.yaml", []byte(rebootOnce))
	if err != nil {
		t.Fatal(err)
	}
	rep, e := runWorkload(t, w)
	steps := repairSteps(t, rep)
	if len(steps) != 3 || steps[0].action != "disruption/reboot" || steps[0].at != 20*time.Minute ||
		steps[1].action != "reboot/issued" || steps[2].action != "reboot/succeeded" || steps[2].node != steps[0].node || steps[2].at > steps[0].at+5*time.Minute {
		t.Fatalf("repair steps %+v, want a reboot at 20m, issued, and succeeded within minutes", steps)
	}
	if rep.Repairs == nil || *rep.Repairs != (RepairCounts{Reboots: 1, RebootsSucceeded: 1}) {
		t.Errorf("repairs %+v, want one reboot, succeeded", rep.Repairs)
	}
	for _, in := range e.cloud.Instances() {
		if in.Hostname == steps[0].node && (in.Reboots != 1 || len(in.Conditions) != 0) {
			t.Errorf("rebooted instance: %d reboots, conditions %v: want 1 and the fault cleared", in.Reboots, in.Conditions)
		}
	}
	if rep.Disruptions["Unhealthy"] != 0 || rep.Disruptions["Empty"] != 1 {
		t.Errorf("removals %v, want the rebooted node, emptied by its drain, consolidated", rep.Disruptions)
	}
	evicted := false
	for _, p := range rep.PodHistory {
		if p.Node == steps[0].node && p.End == PodEvicted && p.EndedAt != nil && *p.EndedAt >= 20*60 {
			evicted = true
		}
	}
	if !evicted || rep.Pods.NeverScheduled != 0 {
		t.Errorf("pods %+v (%+v): want the node's pod evicted by the reboot's drain, and run again", rep.Pods, rep.PodHistory)
	}
}
