package simulate

import (
	"strings"
	"testing"
	"time"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider/sim"
)

// runExample runs examples/node-repair.yaml, with the NodeRepair gate as given.
func runExample(t *testing.T, nodeRepair bool) (*Report, *engine) {
	t.Helper()
	w, err := LoadWorkload("../../examples/node-repair.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w.FeatureGates = map[string]bool{"NodeRepair": nodeRepair}
	return runWorkload(t, w)
}

// TestNodeRepairExample: each node that falls ill is replaced once its condition has held for
// as long as EC2's repair policy tolerates it (30 minutes for Ready and KernelReady, 10 for
// AcceleratedHardwareReady), forcefully though a PodDisruptionBudget allows no eviction and
// the pods are do-not-disrupt, and its pods run again on new nodes; three unhealthy web nodes
// of seven at once are more than 20%, so none of them is repaired.
func TestNodeRepairExample(t *testing.T) {
	rep, e := runExample(t, true)
	type repair struct {
		at     time.Duration
		action string
		what   string
	}
	var got []repair
	sick := map[string]time.Duration{} // node -> when it fell ill
	for _, ev := range rep.Events {
		at := time.Duration(ev.AtSeconds) * time.Second
		switch {
		case ev.Kind == LogUnhealthy:
			sick[ev.Nodes[0]] = at
		case ev.Kind == LogDisruption && ev.Method == MethodRepair:
			if ev.Reason != "Unhealthy" || len(ev.Nodes) != 1 {
				t.Errorf("repair entry %+v", ev)
			}
			if _, ok := sick[ev.Nodes[0]]; !ok {
				t.Errorf("repaired %s, which did not fall ill", ev.Nodes[0])
			}
			condition, _, _ := strings.Cut(strings.SplitN(ev.Message, ": ", 2)[1], " since")
			if ev.Action == "blocked" {
				condition, _, _ = strings.Cut(strings.SplitN(ev.Message, "(", 2)[1], " since")
			}
			got = append(got, repair{at, ev.Action, condition})
		}
	}
	want := []repair{
		{90 * time.Minute, "delete", "Ready Unknown"},
		{130 * time.Minute, "delete", "AcceleratedHardwareReady False"},
		{210 * time.Minute, "delete", "KernelReady False"},
		{330 * time.Minute, "blocked", "NetworkingReady False"},
		{330 * time.Minute, "blocked", "NetworkingReady False"},
		{330 * time.Minute, "blocked", "NetworkingReady False"},
	}
	if len(got) != len(want) {
		t.Fatalf("repairs %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("repair %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if rep.DisruptionMethods[MethodRepair] != 3 {
		t.Errorf("disruptions %v, want 3 repairs", rep.DisruptionMethods)
	}
	// Each repaired node's instance is gone at the repair: its pods held nothing.
	repairedAt := map[string]time.Duration{}
	for _, ev := range rep.Events {
		if ev.Method == MethodRepair && ev.Action == "delete" {
			repairedAt[ev.Nodes[0]] = time.Duration(ev.AtSeconds) * time.Second
		}
	}
	for _, in := range e.cloud.Instances() {
		at, repaired := repairedAt[in.Hostname]
		_, ill := sick[in.Hostname]
		switch {
		case repaired && (in.State != sim.InstanceStateTerminated || in.TerminationTime.Sub(Start) != at):
			t.Errorf("repaired node %s: instance %s terminated at %s, want at the repair (%s)", in.Hostname, in.State, in.TerminationTime.Sub(Start), at)
		case ill && !repaired && in.State != sim.InstanceStateRunning:
			t.Errorf("node %s, whose repair was blocked, is %s", in.Hostname, in.State)
		}
	}
	if rep.Pods.NeverScheduled != 0 || rep.Pods.Scheduled != rep.Pods.Created {
		t.Errorf("pods %+v: the pods of repaired nodes should run again", rep.Pods)
	}
	if rep.Pods.Created != 23+3+2+2 {
		t.Errorf("%d pods created, want the 23 deployed and the 7 of the three repaired nodes", rep.Pods.Created)
	}
}

// TestNodeRepairGateOff: without the NodeRepair gate the nodes fall ill and stay.
func TestNodeRepairGateOff(t *testing.T) {
	rep, e := runExample(t, false)
	for _, ev := range rep.Events {
		if ev.Method == MethodRepair {
			t.Errorf("repair without the gate: %+v", ev)
		}
	}
	faults := 0
	for _, in := range e.cloud.Instances() {
		// The oldest nodes take several faults: each event picks the oldest without its own.
		faults += len(in.Conditions)
		if len(in.Conditions) > 0 && in.State != sim.InstanceStateRunning {
			t.Errorf("unhealthy instance %s is %s", in.ID, in.State)
		}
	}
	if faults != 6 {
		t.Errorf("%d faults reported, want the 6 injected", faults)
	}
}

func TestUnhealthyEventErrors(t *testing.T) {
	base := "name: x\nduration: 1h\nfeatureGates: {NodeRepair: true}\n" + nodePoolManifests + "timeline:\n  - at: 0s\n    deploy: {name: web, replicas: 1, pod: {cpu: 1}}\n  - at: 10m\n    unhealthy: "
	for _, tc := range []struct{ event, want string }{
		{"{count: 0, condition: Ready, status: Unknown}", "timeline[1].unhealthy.count: must be positive"},
		{"{count: 1, condition: Ready}", "timeline[1].unhealthy: condition and status are required, one of: Ready False (30m0s), Ready Unknown (30m0s), AcceleratedHardwareReady False (10m0s)"},
		{"{count: 1, condition: KernelReady, status: \"True\"}", "KernelReady True is not unhealthy to the simulated cloud's repair policies (EC2's)"},
		{"{count: 1, condition: KernalReady, status: \"False\"}", "KernalReady False is not unhealthy"},
		{"{count: 1, nodePool: gpu, condition: Ready, status: Unknown}", `timeline[1].unhealthy.nodePool: no NodePool "gpu" among the manifests`},
		{"{count: 1, condition: Ready, status: Unknown, since: 1h}", "field since not found"},
	} {
		_, err := ParseWorkload("small.yaml", []byte(base+tc.event+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.event, err, tc.want)
		}
	}
	if _, err := ParseWorkload("small.yaml", []byte(base+"{count: 2, nodePool: default, condition: StorageReady, status: \"False\", reason: EBSFailure}\n")); err != nil {
		t.Errorf("a valid unhealthy event: %v", err)
	}
}

// TestTerminateFirstRepairRefused: the simulator runs the legacy repair controller, which never
// terminates first, so a workload that turns TerminateFirstRepair on is refused, at its line.
func TestTerminateFirstRepairRefused(t *testing.T) {
	_, err := ParseWorkload("tf.yaml", []byte("name: x\nduration: 1h\nfeatureGates: {NodeRepair: true, TerminateFirstRepair: true}\n"+nodePoolManifests+"timeline: []\n"))
	if err == nil || !strings.Contains(err.Error(), "tf.yaml:3: featureGates.TerminateFirstRepair") || !strings.Contains(err.Error(), "not supported in simulate yet") {
		t.Fatalf("got %v, want TerminateFirstRepair refused at line 3", err)
	}
}
