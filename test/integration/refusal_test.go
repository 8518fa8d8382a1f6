package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/operator"
	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

// A NodePool offers label keys of its own through requirements, and pods select one value:
// the nodes launched for them carry that value (and an integer for Exists), so the pods bind,
// and nothing more is launched.
func TestCustomLabelRequirementsBind(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	cloud := newCloud(t)
	r := startOperator(t, cloud)
	defer r.stop(t)
	harness.StartBinder(t, env.Client)
	create(t, nodeClass("default"), nodePool("default", func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			karpv1.NodeSelectorRequirementWithMinValues{Key: "example.com/tier", Operator: corev1.NodeSelectorOpIn, Values: []string{"gold", "silver"}},
			karpv1.NodeSelectorRequirementWithMinValues{Key: "example.com/team", Operator: corev1.NodeSelectorOpExists})
	}))
	createPods(t, builders.Pods(2, builders.PodOptions{Name: "silver", CPU: "1", Memory: "1Gi",
		NodeSelector: map[string]string{"example.com/tier": "silver", "example.com/team": "platform"}}))
	createPods(t, builders.Pods(1, builders.PodOptions{Name: "any", CPU: "7", Memory: "1Gi"}))
	harness.Eventually(t, 60*time.Second, "every pod bound", func() (bool, string) {
		n, detail := unbound(t)
		return n == 0, detail
	})
	// Twice the nomination grace: a node that did not take its pods would have been replaced.
	time.Sleep(2 * r.op.Cluster.NominationGrace)
	claims := listClaims(t)
	if len(claims) > 2 {
		t.Errorf("%d claims for 3 pods that fit on 2 nodes", len(claims))
	}
	var nodes corev1.NodeList
	if err := env.Client.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	silver := 0
	for _, n := range nodes.Items {
		if n.Labels["example.com/tier"] == "silver" && n.Labels["example.com/team"] == "platform" {
			silver++
		}
		if _, ok := n.Labels["example.com/team"]; !ok {
			t.Errorf("node %s lacks example.com/team (Exists): %v", n.Name, n.Labels)
		}
	}
	if silver == 0 {
		t.Errorf("no node carries example.com/tier=silver, example.com/team=platform")
	}
}

// The safety valve: nodes register with a taint Karpenter does not know (custom user data's
// --register-with-taints), so a pod that does not tolerate it can never run on a node
// launched for it. Each node that turns it away is reported (an Event on the pod and the
// NodePool naming the taint, the nominations_refused metric), and launches for the pod back
// off instead of going on at one a minute.
func TestNodeThatCannotTakeItsPodBacksOff(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	cloud := newCloud(t)
	taint := corev1.Taint{Key: "example.com/image", Value: "hardened", Effect: corev1.TaintEffectNoSchedule}
	r := startOperator(t, cloud, func(o *operator.Options) { o.Sim.RegisterWithTaints = []corev1.Taint{taint} })
	defer r.stop(t)
	// Backoff in seconds instead of minutes, so that the test sees it.
	r.op.Cluster.LaunchBackoffBase, r.op.Cluster.LaunchBackoffMax = 15*time.Second, 30*time.Second
	harness.StartBinder(t, env.Client)
	create(t, nodeClass("default"), nodePool("default"))
	refusals := func() float64 {
		return testutil.ToFloat64(metrics.PodsNominationsRefusedTotal.WithLabelValues("default", metrics.RefusalTaint, "true"))
	}
	before := refusals()
	createPods(t, builders.Pods(1, builders.PodOptions{Name: "app", CPU: "1", Memory: "1Gi"}))

	// The first refusal is retried at once (other pods may have raced it to the node).
	harness.Eventually(t, 60*time.Second, "two nodes launched for the pod to turn it away", func() (bool, string) {
		got := refusals() - before
		return got >= 2, fmt.Sprintf("%.0f refusals counted", got)
	})
	refusedAt := time.Now()
	launched := len(r.createdClaims())
	if launched > 3 {
		t.Errorf("%d claims launched for two refusals", launched)
		r.logDecisions(t)
	}
	// The second waits 15s before the next launch: without the valve it follows at once. (A
	// node that was not ready when its nomination ran out is no refusal: its pod is planned
	// again at once, so a loaded machine may see one launch more before the second refusal.)
	time.Sleep(10 * time.Second)
	if got := len(r.createdClaims()); got != launched {
		t.Errorf("%d claims launched %s after the second refusal, %d before it: the next must wait 15s", got, time.Since(refusedAt), launched)
		r.logDecisions(t)
	}
	harness.Eventually(t, 30*time.Second, "the next launch after the backoff", func() (bool, string) {
		got := len(r.createdClaims())
		return got > launched, fmt.Sprintf("%d claims", got)
	})
	t.Logf("next launch %s after the second refusal", time.Since(refusedAt))

	events := eventsFor(t, "Pod", "app-0")
	if !strings.Contains(events, string(provisioning.EventReasonLaunchMismatch)) || !strings.Contains(events, "example.com/image=hardened:NoSchedule") || !strings.Contains(events, "next launch") {
		t.Errorf("the pod's events do not name the taint and the backoff:\n%s", events)
	}
	if pool := eventsFor(t, "NodePool", "default"); !strings.Contains(pool, "example.com/image=hardened:NoSchedule") {
		t.Errorf("the NodePool's events do not name the taint:\n%s", pool)
	}
}

// createdClaims are the claims the provisioner created, as its decisions report them.
func (r *running) createdClaims() []*karpv1.NodeClaim {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*karpv1.NodeClaim
	for _, d := range r.decisions {
		out = append(out, d.Created...)
	}
	return out
}

// eventsFor lists the reason and message of the events about an object, one per line.
func eventsFor(t *testing.T, kind, name string) string {
	t.Helper()
	var events corev1.EventList
	harness.Eventually(t, 10*time.Second, "events about "+kind+"/"+name, func() (bool, string) {
		if err := env.Client.List(context.Background(), &events, client.MatchingFields{"involvedObject.kind": kind, "involvedObject.name": name}); err != nil {
			return false, err.Error()
		}
		return len(events.Items) > 0, "none yet"
	})
	var b strings.Builder
	for _, e := range events.Items {
		fmt.Fprintf(&b, "%s: %s\n", e.Reason, e.Message)
	}
	return b.String()
}

// logDecisions logs the provisioner's decisions that created claims or reported refusals.
func (r *running) logDecisions(t *testing.T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, d := range r.decisions {
		for _, c := range d.Created {
			t.Logf("decision %d: created %s", i, c.Name)
		}
		for _, rf := range d.Refused {
			t.Logf("decision %d: %s refused %s: %s", i, rf.Node, rf.Pod, rf.Message())
		}
	}
}
