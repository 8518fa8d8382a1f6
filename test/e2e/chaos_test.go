//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

// The faults TestChaos injects into the simulated cloud, through the controller's flags.
var chaosFaults = []string{
	"--sim-launch-error-rate", "0.2", // a fifth of launches fail
	"--sim-api-throttle-rate", "0.1", // a tenth of cloud calls are throttled
	"--sim-launch-jitter", "2s", // launches take 2 to 4 s
	"--sim-instance-loss-rate", "3", // about one instance in 20 vanishes each minute
}

// chaosOutage is how long TestChaos keeps kube-apiserver down: long enough that client-go's
// reflectors, left alone, would back off for tens of seconds.
const chaosOutage = 15 * time.Second

// TestChaos: the controller keeps the fleet right through crashes and faults. It is killed
// with SIGKILL at least ten times, at random (seeded) points of launches, of deletions
// (consolidation's, and NodeClaims deleted by hand) and of the termination of a Node deleted by
// hand, and restarted each time, as its Deployment would;
// kube-apiserver is killed and restarted once; the cloud fails a fifth of launches, throttles
// a tenth of calls, adds up to 2 s to launches and loses instances; one instance is terminated
// out of band and one Node is deleted by hand. Then: no instance leaked, none launched twice
// for a claim (the cloud's state is read every 200 ms, so a second instance is caught even if
// gone by the end), no node left behind, every pod bound; the time to settle is printed. After
// the API server's outage the controller sees a Node created during it within seconds.
//
// E2E_CHAOS_SEED changes the seed of the random choices (default 20).
func TestChaos(t *testing.T) {
	const namespace, workload = "karpenter-chaos", "e2e-chaos"
	seed := uint64(20)
	if s := os.Getenv("E2E_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("E2E_CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	rng := rand.New(rand.NewPCG(seed, 0xc4a05))
	createNamespace(t, namespace)
	kubectlApply(t, nodePoolManifests)
	ctl := &chaosController{t: t, namespace: namespace, seed: seed}
	t.Cleanup(ctl.stop) // after the workload's cleanup, which needs the controller
	ctl.start()
	workloadNamespace(t, workload)
	audit := auditCloud(t, namespace)
	second := startSecondAPIServer(t) // in the background, ready for the outage

	// Launches: 8 pods that each want a node of their own, and 16 small ones.
	kubectlApply(t, strings.Join([]string{
		pauseDeployment(workload, "solo", 8, "1", "1Gi", soloOnNode),
		pauseDeployment(workload, "fill", 16, "500m", "512Mi", ""),
	}, "---\n"))
	for range 5 {
		time.Sleep(randomDuration(rng, 500*time.Millisecond, 4*time.Second))
		ctl.killAndRestart("launches", claimPhase(t))
	}
	waitBound(t, workload, 3*time.Minute)

	// An instance terminated out of band, while the controller is down: the restarted
	// controller must find its claim's instance gone and replace it.
	ctl.kill("before an out-of-band termination")
	victim := terminateOutOfBand(t, namespace, rng)
	t.Logf("terminated instance %s out of band", victim)
	ctl.start()

	// A Node deleted by hand: its termination (drain, instance, claim) survives two crashes.
	nodeName := randomKarpenterNode(t, rng)
	kubectl(t, "delete", "node", nodeName, "--wait=false")
	time.Sleep(randomDuration(rng, 0, 1500*time.Millisecond))
	ctl.killAndRestart("hand-deleted node "+nodeName, claimPhase(t))
	time.Sleep(randomDuration(rng, 500*time.Millisecond, 3*time.Second))
	ctl.killAndRestart("hand-deleted node "+nodeName, claimPhase(t))
	waitBound(t, workload, 3*time.Minute)

	// kube-apiserver crashes; a Node registers meanwhile through a second API server on the
	// same etcd, as in a highly available control plane.
	seen := apiServerOutage(t, ctl.current, second)
	t.Logf("API server outage of %s: the controller saw the Node created during it %s after kube-apiserver was back",
		chaosOutage, seen.Round(time.Millisecond))
	if seen > 10*time.Second {
		t.Errorf("the controller saw the Node created during the outage %s after kube-apiserver was back, want under 10s", seen.Round(time.Millisecond))
	}

	// Deletions: scaled down, consolidation removes nodes, and the controller crashes while it
	// does; then two NodeClaims deleted by hand, a crash during each one's termination.
	kubectl(t, "-n", workload, "scale", "deployment", "solo", "--replicas=4")
	kubectl(t, "-n", workload, "scale", "deployment", "fill", "--replicas=6")
	harness.Eventually(t, 2*time.Minute, "consolidation to delete a NodeClaim", func() (bool, string) {
		phase := claimPhase(t)
		return phase.deleting > 0, phase.String()
	})
	time.Sleep(randomDuration(rng, 0, 500*time.Millisecond))
	ctl.killAndRestart("consolidation's deletions", claimPhase(t))
	for range 2 {
		claim := randomClaim(t, rng)
		kubectl(t, "delete", "nodeclaim", claim, "--wait=false")
		time.Sleep(randomDuration(rng, 0, time.Second))
		ctl.killAndRestart("hand-deleted nodeclaim "+claim, claimPhase(t))
	}
	lastFault := time.Now()

	// Settled: every pod bound, every claim with its instance and node, every node and instance
	// with its claim.
	var report fleetReport
	harness.Eventually(t, 3*time.Minute, "the fleet to settle", func() (bool, string) {
		report = inspectFleet(t, namespace, workload)
		return report.settled(), report.String()
	})
	settle := time.Since(lastFault)
	dups := audit.duplicates()
	t.Logf("chaos (seed %d): %d controller kills (%s); kube-apiserver killed and restarted once; faults %s",
		seed, ctl.killed, strings.Join(ctl.kills, "; "), strings.Join(chaosFaults, " "))
	t.Logf("chaos: settled %s after the last fault: %d pods bound of %d, %d nodes, %d claims, %d instances; %d leaked instances, %d nodes left behind, %d duplicate launches; %d instances launched in all, %d lost to the loss rate; %d state reads",
		settle.Round(time.Millisecond), report.bound, report.pods, report.nodes, report.claims, report.instances, len(report.leaked), len(report.nodesLeft),
		len(dups), audit.launched(), audit.lost(), audit.reads())
	if len(dups) > 0 {
		t.Errorf("duplicate launches, claim: instances: %v", dups)
	}

	// Teardown, faults still on: every node, claim and instance goes.
	kubectl(t, "-n", workload, "delete", "deployment", "solo", "fill")
	kubectl(t, "delete", "nodeclaims", "--all", "--wait=false")
	harness.Eventually(t, 3*time.Minute, "no nodes, NodeClaims or instances left", func() (bool, string) {
		n, c, st := len(nodes(t)), len(claims(t)), cloudState(t, namespace)
		return n == 0 && c == 0 && len(st.Instances) == 0, fmt.Sprintf("%d nodes, %d nodeclaims, %d instances", n, c, len(st.Instances))
	})
	if dups := audit.duplicates(); len(dups) > 0 {
		t.Errorf("duplicate launches, claim: instances: %v", dups)
	}
	t.Logf("chaos: after the workload's deletion 0 nodes, 0 claims, 0 instances; %d duplicate launches over the whole test", len(audit.duplicates()))
}

// chaosController is the controller TestChaos kills and restarts: one process at a time,
// without leader election (a restarted replica would otherwise wait out its predecessor's
// 15 s lease each time), with the chaos faults.
type chaosController struct {
	t         *testing.T
	namespace string
	seed      uint64
	current   *replica
	started   int
	killed    int
	kills     []string // where each kill happened
}

// start runs the next process and waits for it to be ready.
func (c *chaosController) start() {
	c.t.Helper()
	c.started++
	args := append([]string{"--leader-elect=false", "--sim-seed", strconv.FormatUint(c.seed, 10)}, chaosFaults...)
	c.current = launchKarpenter(c.t, c.namespace, fmt.Sprintf("chaos-%02d", c.started), args...)
	c.current.waitReady(c.t)
}

// killAndRestart kills the running process with SIGKILL and starts the next, recording where
// the kill happened.
func (c *chaosController) killAndRestart(during string, phase claimCounts) {
	c.t.Helper()
	c.kill(fmt.Sprintf("%s (%s)", during, phase))
	c.start()
}

// kill kills the running process with SIGKILL, recording where.
func (c *chaosController) kill(during string) {
	c.current.Kill()
	c.killed++
	c.kills = append(c.kills, during)
}

// stop stops the running process, logging its output if the test failed.
func (c *chaosController) stop() {
	if c.current == nil {
		return
	}
	c.current.Stop()
	logIfFailed(c.t, c.current.process)
}

// randomDuration is uniform in [lo, hi).
func randomDuration(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// claimCounts says what the NodeClaims are doing.
type claimCounts struct {
	// launching have no provider ID yet, registering no node yet; deleting are being deleted.
	total, launching, registering, running, deleting int
}

func (c claimCounts) String() string {
	return fmt.Sprintf("%d claims: %d launching, %d registering, %d running, %d deleting", c.total, c.launching, c.registering, c.running, c.deleting)
}

// claimPhase counts the NodeClaims by what they are doing.
func claimPhase(t *testing.T) claimCounts {
	t.Helper()
	var out claimCounts
	cs := claims(t)
	out.total = len(cs)
	for _, c := range cs {
		switch {
		case c.DeletionTimestamp != nil:
			out.deleting++
		case c.Status.ProviderID == "":
			out.launching++
		case c.Status.NodeName == "":
			out.registering++
		default:
			out.running++
		}
	}
	return out
}

// waitBound waits until every live pod of the namespace is bound to a node.
func waitBound(t *testing.T, namespace string, timeout time.Duration) {
	t.Helper()
	harness.Eventually(t, timeout, "every pod bound", func() (bool, string) {
		live, onNodes := bound(t, namespace)
		return live > 0 && live == onNodes, fmt.Sprintf("%d of %d pods bound; %s", onNodes, live, claimPhase(t).String())
	}, explainUnbound(t, namespace))
}

// randomKarpenterNode picks one of Karpenter's Nodes.
func randomKarpenterNode(t *testing.T, rng *rand.Rand) string {
	t.Helper()
	var names []string
	for _, n := range nodes(t) {
		if n.Labels[karpv1.NodePoolLabelKey] != "" && n.DeletionTimestamp == nil {
			names = append(names, n.Name)
		}
	}
	if len(names) == 0 {
		t.Fatal("no Karpenter node to delete")
	}
	sort.Strings(names)
	return names[rng.IntN(len(names))]
}

// randomClaim picks a NodeClaim not being deleted.
func randomClaim(t *testing.T, rng *rand.Rand) string {
	t.Helper()
	var names []string
	for _, c := range claims(t) {
		if c.DeletionTimestamp == nil {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		t.Fatal("no NodeClaim to delete")
	}
	sort.Strings(names)
	return names[rng.IntN(len(names))]
}

// terminateOutOfBand removes a random instance of a registered claim from the simulated
// cloud's stored state, as if it had been terminated from the console while the controller was
// down, and returns its ID.
func terminateOutOfBand(t *testing.T, namespace string, rng *rand.Rand) string {
	t.Helper()
	registered := map[string]bool{}
	for _, c := range claims(t) {
		if c.Status.NodeName != "" && c.DeletionTimestamp == nil {
			registered[c.Name] = true
		}
	}
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	if err := cp.env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: stateConfigMap}, cm); err != nil {
		t.Fatal(err)
	}
	st, err := sim.DecodeState(cm.BinaryData[sim.ConfigMapStateKey])
	if err != nil {
		t.Fatal(err)
	}
	var candidates []int
	for i, in := range st.Instances {
		if registered[in.NodeClaimName] {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 {
		t.Fatal("no instance of a registered claim to terminate")
	}
	i := candidates[rng.IntN(len(candidates))]
	victim := st.Instances[i]
	st.Instances = slices.Delete(st.Instances, i, i+1)
	data, err := sim.EncodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	cm.BinaryData[sim.ConfigMapStateKey] = data
	if err := cp.env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s (claim %s)", victim.ID, victim.NodeClaimName)
}

// secondAPIServer is a second kube-apiserver on the suite's etcd, as in a highly available
// control plane; ready is closed once it answers or has failed (err says which).
type secondAPIServer struct {
	port  int
	proc  *process
	err   error
	ready chan struct{}
}

// startSecondAPIServer starts a second kube-apiserver, with the suite's flags but its own port,
// audit log and no claim on the kubernetes Service's endpoints, in the background. It is
// stopped when the test ends.
func startSecondAPIServer(t *testing.T) *secondAPIServer {
	t.Helper()
	_, argv, err := cp.apiServerProcess()
	if err != nil {
		t.Fatal(err)
	}
	s := &secondAPIServer{port: harness.FreePort(t), ready: make(chan struct{})}
	go func() {
		defer close(s.ready)
		s.proc, _, s.err = cp.startAPIServer("kube-apiserver-second", argv, fmt.Sprintf("--secure-port=%d", s.port),
			"--endpoint-reconciler-type=none", "--audit-log-path="+cp.dir+"/audit-second.log")
	}()
	t.Cleanup(func() {
		<-s.ready
		if s.proc != nil {
			s.proc.Stop()
		}
	})
	return s
}

// apiServerOutage kills kube-apiserver for chaosOutage and restarts it. The second API server,
// on the same etcd, takes a Node's registration while the first is down. It returns how long
// after the restarted kube-apiserver was ready the controller r reported that Node in its
// metrics (0 if it already did).
func apiServerOutage(t *testing.T, r *replica, second *secondAPIServer) time.Duration {
	t.Helper()
	<-second.ready
	if second.err != nil {
		t.Fatal(second.err)
	}
	cfg := rest.CopyConfig(cp.env.Config)
	cfg.Host = fmt.Sprintf("https://127.0.0.1:%d", second.port)
	secondClient, err := client.New(cfg, client.Options{Scheme: cp.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	argv, err := cp.killAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	const probe = "chaos-registered-during-outage"
	time.Sleep(time.Second)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: probe, Labels: map[string]string{corev1.LabelHostname: probe}},
		// Not Karpenter's, and no pod lands on it.
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "e2e.karpenter.sh/probe", Effect: corev1.TaintEffectNoSchedule}}},
	}
	if err := secondClient.Create(context.Background(), node); err != nil {
		t.Fatalf("creating node %s through the second API server: %v", probe, err)
	}
	t.Cleanup(func() { _ = cp.env.Client.Delete(context.Background(), node) })
	time.Sleep(time.Until(down.Add(chaosOutage)))

	_, back, err := cp.startAPIServer("kube-apiserver-restarted", argv)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver SIGKILLed, restarted after %s, ready %s after the kill", chaosOutage, back.Sub(down).Round(time.Millisecond))
	var seen time.Duration
	harness.Eventually(t, 2*time.Minute, "the controller to see the node created during the outage", func() (bool, string) {
		if !reportsNode(r.scrape(t), probe) {
			return false, fmt.Sprintf("not in its metrics %s after kube-apiserver was back", time.Since(back).Round(time.Millisecond))
		}
		seen = max(time.Since(back), 0)
		return true, ""
	})
	if err := cp.env.Client.Delete(context.Background(), node); err != nil {
		t.Errorf("deleting node %s: %v", probe, err)
	}
	return seen
}

// reportsNode says whether any metric has a node_name label of name.
func reportsNode(families map[string]*dto.MetricFamily, name string) bool {
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "node_name" && l.GetValue() == name {
					return true
				}
			}
		}
	}
	return false
}

// fleetReport is what inspectFleet finds.
type fleetReport struct {
	pods, bound, nodes, claims, instances int
	// leaked are instances without a NodeClaim; nodesLeft are Nodes without an instance or a
	// NodeClaim; unready are NodeClaims without an instance or a Node.
	leaked, nodesLeft, unready []string
}

func (r fleetReport) settled() bool {
	return r.pods > 0 && r.bound == r.pods && len(r.leaked) == 0 && len(r.nodesLeft) == 0 && len(r.unready) == 0
}

func (r fleetReport) String() string {
	return fmt.Sprintf("%d of %d pods bound; %d nodes, %d claims, %d instances; leaked %v, nodes left %v, claims without instance or node %v",
		r.bound, r.pods, r.nodes, r.claims, r.instances, r.leaked, r.nodesLeft, r.unready)
}

// inspectFleet compares the cloud's instances, the NodeClaims and the Nodes.
func inspectFleet(t *testing.T, namespace, workload string) fleetReport {
	t.Helper()
	var r fleetReport
	r.pods, r.bound = bound(t, workload)
	st := cloudState(t, namespace)
	cs, ns := claims(t), nodes(t)
	r.instances, r.claims, r.nodes = len(st.Instances), len(cs), len(ns)
	instanceOf := map[string]sim.Instance{} // by provider ID
	for _, in := range st.Instances {
		instanceOf[in.ProviderID] = in
	}
	claimOf := map[string]karpv1.NodeClaim{} // by name
	claimByProviderID := map[string]bool{}
	for _, c := range cs {
		claimOf[c.Name] = c
		if c.Status.ProviderID != "" {
			claimByProviderID[c.Status.ProviderID] = true
		}
	}
	nodeByProviderID := map[string]bool{}
	for _, n := range ns {
		nodeByProviderID[n.Spec.ProviderID] = true
		_, live := instanceOf[n.Spec.ProviderID]
		if !live || !claimByProviderID[n.Spec.ProviderID] {
			r.nodesLeft = append(r.nodesLeft, n.Name)
		}
	}
	for _, in := range st.Instances {
		if c, ok := claimOf[in.NodeClaimName]; !ok || (c.Status.ProviderID != "" && c.Status.ProviderID != in.ProviderID) {
			r.leaked = append(r.leaked, in.ID)
		}
	}
	for _, c := range cs {
		if _, live := instanceOf[c.Status.ProviderID]; !live || !nodeByProviderID[c.Status.ProviderID] {
			r.unready = append(r.unready, c.Name)
		}
	}
	return r
}

// cloudAudit reads the simulated cloud's state every 200 ms while a test runs and remembers
// every instance it saw, by claim.
type cloudAudit struct {
	mu       sync.Mutex
	byClaim  map[string]map[string]bool // claim name → instance IDs
	seen     map[string]sim.Instance    // instance ID → the instance as first seen
	goneAt   map[string]time.Time       // instance ID → when it was first missing
	nReads   int
	lastSeen map[string]bool
}

// auditCloud starts reading the state in namespace every 200 ms until the test ends.
func auditCloud(t *testing.T, namespace string) *cloudAudit {
	t.Helper()
	a := &cloudAudit{byClaim: map[string]map[string]bool{}, seen: map[string]sim.Instance{}, goneAt: map[string]time.Time{}, lastSeen: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			a.read(ctx, namespace)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return a
}

// read takes one reading; failures (the API server down) are skipped.
func (a *cloudAudit) read(ctx context.Context, namespace string) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cm := &corev1.ConfigMap{}
	if err := cp.env.Client.Get(rctx, client.ObjectKey{Namespace: namespace, Name: stateConfigMap}, cm); err != nil {
		return
	}
	st, err := sim.DecodeState(cm.BinaryData[sim.ConfigMapStateKey])
	if err != nil {
		return
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nReads++
	current := map[string]bool{}
	for _, in := range st.Instances {
		current[in.ID] = true
		if a.byClaim[in.NodeClaimName] == nil {
			a.byClaim[in.NodeClaimName] = map[string]bool{}
		}
		a.byClaim[in.NodeClaimName][in.ID] = true
		if _, ok := a.seen[in.ID]; !ok {
			a.seen[in.ID] = in
		}
	}
	for id := range a.lastSeen {
		if !current[id] {
			if _, ok := a.goneAt[id]; !ok {
				a.goneAt[id] = now
			}
		}
	}
	a.lastSeen = current
}

// duplicates lists the claims that had more than one instance, with their instances.
func (a *cloudAudit) duplicates() map[string][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string][]string{}
	for claim, ids := range a.byClaim {
		if len(ids) > 1 {
			for id := range ids {
				out[claim] = append(out[claim], id)
			}
			sort.Strings(out[claim])
		}
	}
	return out
}

// launched is the number of instances seen.
func (a *cloudAudit) launched() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seen)
}

// lost is the number of instances that were gone after their loss time (the loss rate's).
func (a *cloudAudit) lost() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for id, at := range a.goneAt {
		if lt := a.seen[id].LossTime; !lt.IsZero() && !lt.After(at) {
			n++
		}
	}
	return n
}

// reads is the number of readings taken.
func (a *cloudAudit) reads() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nReads
}
