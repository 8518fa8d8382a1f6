//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/simulate"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

// nodePoolManifests is what a user applies first: on-demand c, m and r instances of recent
// generations, consolidated when empty or underused.
const nodePoolManifests = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      requirements:
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: ["c", "m", "r"]
        - key: karpenter.k8s.aws/instance-generation
          operator: Gt
          values: ["5"]
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 5s
    budgets:
      - nodes: "50%"
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: KarpenterNodeRole-e2e
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: e2e
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: e2e
`

// deployment is one Deployment of the workload.
type deployment struct {
	name        string
	replicas    int
	cpu, memory string
}

// mixed is the workload of 100 pods of four sizes.
var mixed = []deployment{
	{"small", 40, "250m", "512Mi"},
	{"medium", 30, "500m", "1Gi"},
	{"large", 20, "1", "2Gi"},
	{"xlarge", 10, "2", "4Gi"},
}

// createDeployments makes the Deployments with kubectl, as a user would, at zero replicas.
func createDeployments(t *testing.T, namespace string, ds []deployment) {
	t.Helper()
	for _, d := range ds {
		kubectl(t, "-n", namespace, "create", "deployment", d.name, "--image=registry.k8s.io/pause:3.10", "--replicas=0")
		kubectl(t, "-n", namespace, "set", "resources", "deployment", d.name, "--requests=cpu="+d.cpu+",memory="+d.memory)
	}
}

// scale sets each Deployment's replicas with kubectl scale.
func scale(t *testing.T, namespace string, ds []deployment) {
	t.Helper()
	for _, d := range ds {
		kubectl(t, "-n", namespace, "scale", "deployment", d.name, fmt.Sprintf("--replicas=%d", d.replicas))
	}
}

// predict runs `karpenter simulate` on the NodePool and the Deployments and returns its
// report: what the simulator says the workload costs.
func predict(t *testing.T, ds []deployment) simulate.Report {
	t.Helper()
	var b strings.Builder
	b.WriteString(nodePoolManifests)
	for _, d := range ds {
		fmt.Fprintf(&b, `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: %[2]d
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
        - name: pause
          image: registry.k8s.io/pause:3.10
          resources:
            requests: {cpu: "%[3]s", memory: "%[4]s"}
`, d.name, d.replicas, d.cpu, d.memory)
	}
	return simulateManifests(t, b.String())
}

// pods lists the pods of the namespace.
func pods(t *testing.T, namespace string) []corev1.Pod {
	t.Helper()
	var l corev1.PodList
	if err := cp.env.Client.List(context.Background(), &l, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// bound counts the live pods and those bound to a node; it fails the test when a pod is bound
// to a node Karpenter did not launch.
func bound(t *testing.T, namespace string) (live, onNodes int) {
	t.Helper()
	karpenterNodes := map[string]bool{}
	for _, n := range nodes(t) {
		karpenterNodes[n.Name] = n.Labels[karpv1.NodePoolLabelKey] != ""
	}
	for _, p := range pods(t, namespace) {
		if p.DeletionTimestamp != nil {
			continue
		}
		live++
		if p.Spec.NodeName != "" {
			onNodes++
			if ours, ok := karpenterNodes[p.Spec.NodeName]; ok && !ours {
				t.Errorf("pod %s is bound to node %s, which Karpenter did not launch", p.Name, p.Spec.NodeName)
			}
		}
	}
	return live, onNodes
}

// explainUnbound is an Eventually's onTimeout for a wait on pods to bind: it records
// (harness.Explain) the namespace's unbound pods, up to five of them with their nominated node,
// PodScheduled condition and events, and every node with its taints and readiness, while they
// still exist.
func explainUnbound(t *testing.T, namespace string) func() {
	return func() {
		var b strings.Builder
		var events corev1.EventList
		if err := cp.env.Client.List(context.Background(), &events, client.InNamespace(namespace)); err != nil {
			fmt.Fprintf(&b, "listing events: %v\n", err)
		}
		unbound := 0
		for _, p := range pods(t, namespace) {
			if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
				continue
			}
			if unbound++; unbound > 5 {
				continue
			}
			fmt.Fprintf(&b, "unbound pod %s: nominated node %q", p.Name, p.Status.NominatedNodeName)
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled {
					fmt.Fprintf(&b, "; PodScheduled=%s %s at %s: %s", c.Status, c.Reason, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Message)
				}
			}
			b.WriteString("\n")
			for _, e := range events.Items {
				if e.InvolvedObject.UID == p.UID {
					fmt.Fprintf(&b, "  %s %s %s (%s, x%d): %s\n", e.LastTimestamp.UTC().Format(time.RFC3339), e.Type, e.Reason, e.Source.Component+e.ReportingController, max(e.Count, 1), e.Message)
				}
			}
		}
		fmt.Fprintf(&b, "%d pods unbound\n", unbound)
		for _, n := range nodes(t) {
			var taints []string
			for _, tn := range n.Spec.Taints {
				taints = append(taints, tn.ToString())
			}
			fmt.Fprintf(&b, "node %s (%s): ready %v, taints %v\n", n.Name, n.Labels[corev1.LabelInstanceTypeStable], state.NodeReady(&n), taints)
		}
		harness.Explain(t, b.String())
	}
}

func nodes(t *testing.T) []corev1.Node {
	t.Helper()
	var l corev1.NodeList
	if err := cp.env.Client.List(context.Background(), &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func claims(t *testing.T) []karpv1.NodeClaim {
	t.Helper()
	var l karpv1.NodeClaimList
	if err := cp.env.Client.List(context.Background(), &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// claimWatch records every NodeClaim created and deleted while a test runs.
type claimWatch struct {
	mu               sync.Mutex
	created, deleted map[string]bool
}

func watchClaims(t *testing.T) *claimWatch {
	t.Helper()
	wc, err := client.NewWithWatch(cp.env.Config, client.Options{Scheme: cp.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &karpv1.NodeClaimList{})
	if err != nil {
		t.Fatal(err)
	}
	cw := &claimWatch{created: map[string]bool{}, deleted: map[string]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			claim, ok := ev.Object.(*karpv1.NodeClaim)
			if !ok {
				continue
			}
			cw.mu.Lock()
			switch ev.Type {
			case watch.Added:
				cw.created[claim.Name] = true
			case watch.Deleted:
				cw.deleted[claim.Name] = true
			}
			cw.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return cw
}

func (cw *claimWatch) counts() (created, deleted int) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return len(cw.created), len(cw.deleted)
}

// roomTakenRefusals counts the refusals the controller's log reports of pods whose nominated
// node the kube-scheduler filled with other pods (provisioning's judgeMisses, at debug level).
func roomTakenRefusals(t *testing.T, p *process) int {
	t.Helper()
	data, err := os.ReadFile(p.Log)
	if err != nil {
		t.Fatalf("reading the log of %s: %v", p.Name, err)
	}
	return bytes.Count(data, []byte("nominated node filled with other pods"))
}

// firstDecision finds the pods of the controller's first provisioning decision in its JSON log
// (provisioning's "computed new nodeclaim(s) to fit pod(s)").
var firstDecision = regexp.MustCompile(`"msg":"computed new nodeclaim\(s\) to fit pod\(s\)"[^\n]*?"pods":(\d+)`)

// firstDecisionPods returns how many pods the controller's first provisioning decision placed
// on new NodeClaims, or 0 when its log has none.
func firstDecisionPods(t *testing.T, p *process) int {
	t.Helper()
	data, err := os.ReadFile(p.Log)
	if err != nil {
		t.Fatalf("reading the log of %s: %v", p.Name, err)
	}
	m := firstDecision.FindSubmatch(data)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// workloadNamespace creates the namespace of a test's workload. When the test ends it is
// deleted, and the test waits for Karpenter (still running then) to remove the nodes, so that
// the next test starts from an empty cluster even when this one failed.
func workloadNamespace(t *testing.T, name string) {
	t.Helper()
	createNamespace(t, name)
	t.Cleanup(func() {
		_, _ = cp.kubectlOutput("delete", "namespace", name, "--wait=false")
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) && len(claims(t)) > 0 {
			time.Sleep(time.Second)
		}
		if n := len(claims(t)); n > 0 {
			t.Errorf("%d NodeClaims left 3 minutes after the workload's namespace was deleted", n)
		}
	})
}

// TestWorkloadEndToEnd: 100 pods of mixed sizes are bound by the real scheduler to nodes
// Karpenter launched within 60 seconds, at the cost `karpenter simulate` predicts; scaled to 10
// behind a PodDisruptionBudget, consolidation removes nodes without breaking the budget; scaled
// to 0, every node and instance goes; the metrics agree with what happened.
func TestWorkloadEndToEnd(t *testing.T) {
	const namespace, workload = "karpenter", "e2e-mixed"
	createNamespace(t, namespace)
	kubectlApply(t, nodePoolManifests)
	watched := watchClaims(t)
	// The test compares the decision for the whole burst with simulate's: the 100 pods must
	// make one provisioning batch. Four kubectl scale calls, and the ReplicaSets' slow-start
	// creation on a loaded machine, have left gaps over the default idle second (a CI run
	// planned 74 pods, then the rest in three more batches), so the batch waits longer here.
	r := startKarpenter(t, namespace, "karpenter", "--batch-idle-duration", "5s", "--batch-max-duration", "20s")
	workloadNamespace(t, workload)
	harness.Eventually(t, 30*time.Second, "the replica to lead", func() (bool, string) { return r.isLeader(t), "not leader" })

	createDeployments(t, workload, mixed)
	start := time.Now()
	scale(t, workload, mixed)
	launched := map[string]sim.Instance{} // every instance seen during the scale-up
	harness.Eventually(t, 60*time.Second, "100 pods bound to Karpenter's nodes", func() (bool, string) {
		for _, in := range cloudState(t, namespace).Instances {
			if _, ok := launched[in.ID]; !ok {
				launched[in.ID] = in
			}
		}
		live, onNodes := bound(t, workload)
		return live == 100 && onNodes == 100, fmt.Sprintf("%d of %d pods bound", onNodes, live)
	}, explainUnbound(t, workload))
	bindTime := time.Since(start)
	atBind := cloudState(t, namespace)
	predicted := predict(t, mixed)

	// What Karpenter decided for the burst is what simulate predicts: the same provisioning
	// code on the same NodePool and pods. The launches of one decision happen together: an
	// instance launched decisionWindow or more after the first came from a later decision
	// (the next could come no sooner than a node ready, a refusal and the 5s batch idle).
	const decisionWindow = 3 * time.Second
	var first time.Time
	for _, in := range launched {
		if first.IsZero() || in.LaunchTime.Before(first) {
			first = in.LaunchTime
		}
	}
	decided, later := 0.0, []string{}
	for _, in := range launched {
		if in.LaunchTime.Before(first.Add(decisionWindow)) {
			decided += in.Price
		} else {
			later = append(later, in.InstanceType)
		}
	}
	// The pods landed as planned: the kube-scheduler took the nominated nodes, so no pod was
	// left without room and no instance was launched after the decision. Kubernetes does not
	// promise it: the kube-scheduler clears a pod's nominated node name when it tries the pod
	// before the node is ready (preemption finds no victim: k8s v1.35.8 preemption.go), and
	// until the nomination controller sets it again the pod's room is not held; once the node
	// is ready, another pod may take it. Karpenter then plans the pod again at once (a
	// refusal, logged "nominated node filled with other pods"), and a launch after the decision
	// is that race's, not a plan that did not fit: it is reported, not failed. A later launch
	// without such a refusal fails.
	if len(later) > 0 {
		if raced := roomTakenRefusals(t, r.process); raced > 0 {
			t.Logf("instances %v were launched after the decision for the 100 pods: the kube-scheduler gave the room of %d nominated pods to others", later, raced)
		} else {
			t.Errorf("instances %v were launched after the decision for the 100 pods: pods did not land where Karpenter planned", later)
		}
	}
	var predictedLaunch float64
	for _, sample := range predicted.Series {
		if sample.Pending == 0 && sample.Running > 0 {
			predictedLaunch = sample.CostPerHour
			break
		}
	}
	if math.Abs(decided-predictedLaunch) > 0.05*predictedLaunch {
		// simulate plans the 100 pods at once; a first decision that planned fewer (the
		// ReplicaSets' pods came in two batches, on a loaded machine, in spite of the 5 s
		// idle) is another question, and the settled cost below still answers for the whole.
		if first := firstDecisionPods(t, r.process); first > 0 && first < 100 {
			t.Logf("Karpenter launched $%.4f/hour for the first %d pods of the 100, which came in more than one batch (simulate plans all 100: $%.4f/hour)", decided, first, predictedLaunch)
		} else {
			t.Errorf("Karpenter launched $%.4f/hour for the 100 pods; simulate predicts $%.4f/hour (more than 5%% apart)", decided, predictedLaunch)
		}
	}
	// Then the real kube-scheduler binds the pods, to the nodes Karpenter nominated them to
	// (status.nominatedNodeName), and consolidation settles: at simulate's final cost, within
	// 5%. Settled: no change for longer than a consolidation pass takes (a 10s poll, then 15s
	// of validation).
	const quiet = 40 * time.Second
	lastCost, lastChange := -1.0, time.Now()
	harness.Eventually(t, 5*time.Minute, "the cost to settle within 5% of simulate's prediction", func() (bool, string) {
		c := cost(cloudState(t, namespace))
		if c != lastCost {
			lastCost, lastChange = c, time.Now()
		}
		return time.Since(lastChange) >= quiet && c <= 1.05*predicted.Cost.FinalPerHour && c >= 0.95*predicted.Cost.FinalPerHour,
			fmt.Sprintf("$%.4f/hour for %s, simulate predicts $%.4f/hour", c, time.Since(lastChange).Round(time.Second), predicted.Cost.FinalPerHour)
	})
	settled := cloudState(t, namespace)
	t.Logf("100 pods bound in %s; Karpenter's decision $%.4f/hour (simulate: $%.4f/hour); %d instances ($%.4f/hour) once bound; settled at $%.4f/hour on %d instances (simulate: $%.4f/hour on %d nodes, %+.1f%%)",
		bindTime.Round(time.Millisecond), decided, predictedLaunch, len(atBind.Instances), cost(atBind), cost(settled), len(settled.Instances),
		predicted.Cost.FinalPerHour, predicted.Nodes.Final, 100*(cost(settled)/predicted.Cost.FinalPerHour-1))

	// karpenter view shows the same fleet and cost.
	view, err := exec.Command(cp.karpenter, "view", "--once", "--kubeconfig", cp.kubeconfig).Output()
	if err != nil {
		t.Fatalf("karpenter view --once: %v", err)
	}
	var viewed float64
	if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(string(view), "Cost")), "$%f/hour", &viewed); err != nil {
		t.Fatalf("reading the cost from karpenter view: %v\n%s", err, view)
	}
	if c := cost(cloudState(t, namespace)); math.Abs(viewed-c) > max(0.005*c, 0.001) { // the view rounds
		t.Errorf("karpenter view says $%.4f/hour, the cloud bills $%.4f/hour:\n%s", viewed, c, view)
	}
	t.Logf("karpenter view --once:\n%s", view)

	// Scale down to 10 pods behind a budget that allows two disruptions.
	const minAvailable = 8
	kubectl(t, "-n", workload, "create", "poddisruptionbudget", "small", "--selector=app=small", fmt.Sprintf("--min-available=%d", minAvailable))
	down := []deployment{{"small", 10, "250m", "512Mi"}, {"medium", 0, "", ""}, {"large", 0, "", ""}, {"xlarge", 0, "", ""}}
	scale(t, workload, down)
	harness.Eventually(t, time.Minute, "10 healthy pods", func() (bool, string) {
		n := 0
		for _, p := range pods(t, workload) {
			if harness.PodHealthy(&p) {
				n++
			}
		}
		return n == 10, fmt.Sprintf("%d healthy", n)
	})
	var lowest atomic.Int32
	lowest.Store(10)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var l corev1.PodList
			if err := cp.env.Client.List(context.Background(), &l, client.InNamespace(workload), client.MatchingLabels{"app": "small"}); err != nil {
				continue
			}
			n := int32(0)
			for i := range l.Items {
				if harness.PodHealthy(&l.Items[i]) {
					n++
				}
			}
			if n < lowest.Load() {
				lowest.Store(n)
			}
		}
	})
	small := predict(t, down[:1])
	peak := len(settled.Instances)
	// Consolidation settles: the 10 pods bound and no change for longer than a pass and its
	// validation take. It never replaces one node by several and, as Karpenter's, it is a local
	// search whose end depends on which pods the scale-down left where: simulate's fresh
	// provisioning is an m6a.large and an m7a.medium ($0.1444/hour), consolidation usually
	// ends on one c6a.xlarge ($0.1530/hour, +6%), and a strictly cheaper move need not exist
	// from every state on the way. The bound is 25% above the fresh cost.
	lastCost, lastChange = -1.0, time.Now()
	harness.Eventually(t, 4*time.Minute, "consolidation to settle within 25% of the cost of a fresh provisioning of 10 pods", func() (bool, string) {
		st := cloudState(t, namespace)
		live, onNodes := bound(t, workload)
		c := cost(st)
		if c != lastCost {
			lastCost, lastChange = c, time.Now()
		}
		return time.Since(lastChange) >= quiet && c <= 1.25*small.Cost.FinalPerHour && live == 10 && onNodes == 10,
			fmt.Sprintf("$%.4f/hour on %d instances for %s (simulate: $%.4f/hour), %d of %d pods bound", c, len(st.Instances), time.Since(lastChange).Round(time.Second), small.Cost.FinalPerHour, onNodes, live)
	})
	close(stop)
	wg.Wait()
	if low := lowest.Load(); low < minAvailable {
		t.Errorf("healthy pods behind the budget fell to %d, below minAvailable %d", low, minAvailable)
	}
	consolidated := cloudState(t, namespace)
	t.Logf("scaled to 10 pods: consolidated from %d to %d instances ($%.4f/hour; simulate: $%.4f/hour); healthy pods never below %d",
		peak, len(consolidated.Instances), cost(consolidated), small.Cost.FinalPerHour, lowest.Load())

	// Scale to zero: every node goes, and the cloud holds no instance.
	scale(t, workload, []deployment{{"small", 0, "", ""}})
	harness.Eventually(t, 2*time.Minute, "no nodes, NodeClaims or instances left", func() (bool, string) {
		n, c, st := len(nodes(t)), len(claims(t)), cloudState(t, namespace)
		return n == 0 && c == 0 && len(st.Instances) == 0, fmt.Sprintf("%d nodes, %d nodeclaims, %d instances", n, c, len(st.Instances))
	})

	// The metrics tell the same story.
	created, deleted := watched.counts()
	m := r.scrape(t)
	if got := sum(m, "karpenter_nodeclaims_created_total", nil); int(got) != created {
		t.Errorf("karpenter_nodeclaims_created_total = %v, but %d NodeClaims were created", got, created)
	}
	if got := sum(m, "karpenter_nodeclaims_terminated_total", nil); int(got) != deleted {
		t.Errorf("karpenter_nodeclaims_terminated_total = %v, but %d NodeClaims were deleted", got, deleted)
	}
	if got := sum(m, "karpenter_nodeclaims_disrupted_total", nil); got < 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total = %v, but consolidation removed nodes", got)
	}
	if got := sum(m, "karpenter_cluster_state_cost_dollars_per_hour", nil); got != 0 {
		t.Errorf("karpenter_cluster_state_cost_dollars_per_hour = %v with no nodes", got)
	}
	t.Logf("metrics: %d NodeClaims created, %d terminated, %v disrupted, %v voluntary disruption decisions",
		created, deleted, sum(m, "karpenter_nodeclaims_disrupted_total", nil), sum(m, "karpenter_voluntary_disruption_decisions_total", nil))
}

// TestLeaderFailover: two replicas, one leads; the leader is killed mid-scale-up and the
// standby finishes the job, with exactly one instance per NodeClaim: none launched twice, none
// leaked.
func TestLeaderFailover(t *testing.T) {
	const namespace, workload = "karpenter-failover", "e2e-burst"
	createNamespace(t, namespace)
	kubectlApply(t, nodePoolManifests)
	a, b := startKarpenter(t, namespace, "failover-a"), startKarpenter(t, namespace, "failover-b")
	workloadNamespace(t, workload)
	var leader, standby *replica
	harness.Eventually(t, 30*time.Second, "one leader", func() (bool, string) {
		la, lb := a.isLeader(t), b.isLeader(t)
		switch {
		case la && !lb:
			leader, standby = a, b
		case lb && !la:
			leader, standby = b, a
		default:
			return false, fmt.Sprintf("a leads: %v, b leads: %v", la, lb)
		}
		return true, ""
	})

	burst := []deployment{{"burst", 40, "1", "1Gi"}}
	createDeployments(t, workload, burst)
	scale(t, workload, burst)
	harness.Eventually(t, 30*time.Second, "the first NodeClaim", func() (bool, string) {
		n := len(claims(t))
		return n > 0, fmt.Sprintf("%d nodeclaims", n)
	})
	leader.Kill()
	killed := time.Now()
	// The Lease lasts 15 seconds (controller-runtime's default, as in Karpenter): the standby
	// takes it once it has expired.
	harness.Eventually(t, 30*time.Second, "the standby to take the lease", func() (bool, string) { return standby.isLeader(t), "not yet" })
	takeover := time.Since(killed)
	harness.Eventually(t, 2*time.Minute, "the standby to finish the scale-up", func() (bool, string) {
		live, onNodes := bound(t, workload)
		return live == 40 && onNodes == 40, fmt.Sprintf("%d of %d pods bound", onNodes, live)
	}, explainUnbound(t, workload))
	took := time.Since(killed)

	// One instance per NodeClaim, and one NodeClaim per instance.
	st := cloudState(t, namespace)
	byClaim := map[string]int{}
	for _, in := range st.Instances {
		byClaim[in.NodeClaimName]++
	}
	cs := claims(t)
	for _, c := range cs {
		if byClaim[c.Name] != 1 {
			t.Errorf("nodeclaim %s has %d instances", c.Name, byClaim[c.Name])
		}
		delete(byClaim, c.Name)
	}
	for name, n := range byClaim {
		t.Errorf("%d instances leaked: launched for nodeclaim %s, which does not exist", n, name)
	}
	t.Logf("leader %s killed mid-scale-up; %s led %s later and bound all 40 pods %s after the kill, on %d NodeClaims and %d instances",
		leader.Name, standby.Name, takeover.Round(time.Millisecond), took.Round(time.Millisecond), len(cs), len(st.Instances))

	kubectl(t, "-n", workload, "delete", "deployment", "burst")
	harness.Eventually(t, 2*time.Minute, "no nodes, NodeClaims or instances left", func() (bool, string) {
		n, c, st := len(nodes(t)), len(claims(t)), cloudState(t, namespace)
		return n == 0 && c == 0 && len(st.Instances) == 0, fmt.Sprintf("%d nodes, %d nodeclaims, %d instances", n, c, len(st.Instances))
	})
}

// TestHelmChartDryRun: what `helm template charts/karpenter` renders is accepted by the whole
// control plane, as `kubectl apply --dry-run=server` sees it.
func TestHelmChartDryRun(t *testing.T) {
	helm := filepath.Join("..", "..", "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("%s is missing: run make helm (make e2e does)", helm)
	}
	const namespace = "karpenter-chart"
	createNamespace(t, namespace)
	for name, args := range map[string][]string{
		"aws": {"--set", "settings.clusterName=e2e", "--set", "settings.interruptionQueue=e2e",
			"--set", "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::111122223333:role/KarpenterController"},
		"sim": {"--set", "cloudProvider=sim"},
	} {
		rendered, err := exec.Command(helm, append([]string{"template", "karpenter", filepath.Join("..", "..", "charts", "karpenter"), "--namespace", namespace, "--include-crds"}, args...)...).Output()
		if err != nil {
			t.Fatalf("helm template (%s): %v", name, err)
		}
		cmd := exec.Command(cp.env.KubectlPath, "--kubeconfig", cp.kubeconfig, "apply", "--dry-run=server", "-f", "-")
		cmd.Stdin = strings.NewReader(string(rendered))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl apply --dry-run=server (%s): %v\n%s", name, err, out)
		}
		t.Logf("%s: %d objects accepted", name, strings.Count(string(out), "(server dry run)"))
	}
}

// Pod-spec fragments for pauseDeployment; %[1]s is the Deployment's name, which is also its
// pods' app label.
const (
	// soloOnNode gives each pod a node of its own (required anti-affinity on the hostname).
	soloOnNode = `
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector:
                matchLabels: {app: %[1]s}`
	// spreadOverZones spreads the pods over zones (maxSkew 1, DoNotSchedule).
	spreadOverZones = `
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector:
            matchLabels: {app: %[1]s}`
)

// pauseDeployment is a Deployment of pause pods that stop at once, each requesting cpu and
// memory; constraint is a pod-spec fragment (soloOnNode, spreadOverZones) or "".
func pauseDeployment(namespace, name string, replicas int, cpu, memory, constraint string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  namespace: %[6]s
spec:
  replicas: %[2]d
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:%[5]s
      terminationGracePeriodSeconds: 0
      containers:
        - name: pause
          image: registry.k8s.io/pause:3.10
          resources:
            requests: {cpu: "%[3]s", memory: "%[4]s"}
`, name, replicas, cpu, memory, strings.ReplaceAll(constraint, "%[1]s", name), namespace)
}
