//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

// stateConfigMap is where the replicas' simulated cloud keeps its instances.
const stateConfigMap = "karpenter-sim-state"

// replica is one karpenter controller process.
type replica struct {
	*process
	metricsURL, healthURL string
}

// startKarpenter runs a controller replica with the simulated cloud, electing its leader and
// keeping its cloud's state in namespace, as the Helm chart's Deployment does, with the extra
// flags after the suite's; it is stopped when the test ends.
func startKarpenter(t *testing.T, namespace, name string, extra ...string) *replica {
	t.Helper()
	r := launchKarpenter(t, namespace, name, extra...)
	t.Cleanup(func() {
		r.Stop()
		logIfFailed(t, r.process)
	})
	r.waitReady(t)
	return r
}

// logIfFailed logs the end of a stopped controller's output when the test failed, then
// repeats the timeout that failed it, with its explanation (harness.TimedOut), where the end
// of the test's output shows it.
func logIfFailed(t *testing.T, p *process) {
	if !t.Failed() {
		return
	}
	t.Log(p.Tail())
	if msg, ok := harness.TimedOut(t); ok {
		t.Logf("%s failed above the log of %s: %s", t.Name(), p.Name, msg)
	}
}

// launchKarpenter starts a controller replica as startKarpenter does, with the extra flags
// after the suite's (a later flag wins), and returns at once; stopping it is the caller's.
func launchKarpenter(t *testing.T, namespace, name string, extra ...string) *replica {
	t.Helper()
	metrics, health := harness.FreePort(t), harness.FreePort(t)
	args := append([]string{"controller",
		"--kubeconfig", cp.kubeconfig,
		"--cloud-provider", "sim", "--cluster-name", "e2e",
		"--leader-elect", "--leader-election-namespace", namespace,
		"--sim-state-configmap", stateConfigMap,
		"--sim-launch-latency", "2s", "--sim-ready-delay", "1s",
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metrics),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", health),
		"--log-level", "debug"}, extra...)
	p, err := cp.Run(name, cp.karpenter, args...)
	if err != nil {
		t.Fatal(err)
	}
	return &replica{process: p, metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics), healthURL: fmt.Sprintf("http://127.0.0.1:%d", health)}
}

// waitReady waits for the replica's /readyz, failing the test if it exits first.
func (r *replica) waitReady(t *testing.T) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, r.Name+" ready", func() (bool, string) {
		if r.Exited() {
			t.Fatalf("%s exited:\n%s", r.Name, r.Tail())
		}
		resp, err := http.Get(r.healthURL + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}

// scrape reads the replica's /metrics.
func (r *replica) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(r.metricsURL)
	if err != nil {
		t.Fatalf("scraping %s: %v", r.Name, err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the metrics of %s: %v", r.Name, err)
	}
	return families
}

// isLeader says whether the replica holds the lease, from controller-runtime's leader election
// metric.
func (r *replica) isLeader(t *testing.T) bool {
	if r.Exited() {
		return false
	}
	return sum(r.scrape(t), "leader_election_master_status", nil) == 1
}

// sum adds the samples of a counter or gauge whose labels include want.
func sum(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := families[name]
	if f == nil {
		return 0
	}
	total := 0.0
next:
	for _, m := range f.GetMetric() {
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		}
	}
	return total
}

// cloudState reads the simulated cloud's instances from the ConfigMap the replicas share.
func cloudState(t *testing.T, namespace string) sim.State {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := cp.env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: stateConfigMap}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return sim.State{}
		}
		t.Fatal(err)
	}
	st, err := sim.DecodeState(cm.BinaryData[sim.ConfigMapStateKey])
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// cost is the $/hour of the instances in the state.
func cost(st sim.State) float64 {
	total := 0.0
	for _, in := range st.Instances {
		total += in.Price
	}
	return total
}

// createNamespace makes a namespace for a test's lease and cloud state.
func createNamespace(t *testing.T, name string) {
	t.Helper()
	if err := cp.env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}
