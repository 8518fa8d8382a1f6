package chart_test

import (
	"context"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/operator"
)

// renderAdding renders the sim chart with args, and fails the test unless they add exactly
// want to the ClusterRole of the sim chart without them (what names the setting, for the
// message).
func renderAdding(t *testing.T, what string, want []string, args ...string) chartRBAC {
	t.Helper()
	plain := renderRBAC(t, "--set", "cloudProvider=sim")
	r := renderRBAC(t, append([]string{"--set", "cloudProvider=sim"}, args...)...)
	added := minus(names(r.grants), names(plain.grants))
	slices.Sort(added)
	if !slices.Equal(added, want) {
		t.Fatalf("%s adds %v, want %v", what, added, want)
	}
	return r
}

// startAsRendering applies the rendering's RBAC objects (removed when the test ends), and
// starts the controllers on the simulated cloud with opts as its ServiceAccount: a fresh
// leader election, the cloud's state in the rendering's ConfigMap (removed too), instances
// that start in 100ms, and informers that list, then watch (TestRBACMatchesCalls runs both
// ways). What the scenario makes is purged when the test ends.
func startAsRendering(t *testing.T, r chartRBAC, opts operator.Options) *runningOperator {
	t.Helper()
	ensureNamespace(t, namespace)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: operator.LeaderElectionID}}
	if err := env.Client.Delete(context.Background(), lease); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	r.apply(t)
	t.Cleanup(func() {
		for _, o := range r.objects {
			if err := env.Client.Delete(context.Background(), o.DeepCopy()); client.IgnoreNotFound(err) != nil {
				t.Errorf("deleting %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	})
	t.Cleanup(func() { purge(t) })
	opts.CloudProvider = operator.CloudProviderSim
	opts.Sim.StateConfigMap = r.env["SIM_STATE_CONFIGMAP"]
	t.Cleanup(func() {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: opts.Sim.StateConfigMap}}
		if err := env.Client.Delete(context.Background(), cm); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting the simulated cloud's state: %v", err)
		}
	})
	opts.Sim.LaunchLatency, opts.Sim.ReadyDelay = 100*time.Millisecond, 100*time.Millisecond
	setWatchListClient(t, false)
	return startOperator(t, r.account, opts)
}

// checkAddedGrantsUsed fails the test for each grant of added the run's calls did not need, and
// for each call the rendering does not allow.
func checkAddedGrantsUsed(t *testing.T, r chartRBAC, added []string, calls map[apiCall]int) {
	t.Helper()
	for _, g := range r.grants {
		if slices.Contains(added, g.String()) && !usedBy(g, calls) {
			t.Errorf("%s: the run did not need it", g)
		}
	}
	for c := range calls {
		if !slices.ContainsFunc(r.grants, func(g grant) bool { return g.allows(c) }) {
			t.Errorf("the chart does not allow %s", c)
		}
	}
}
