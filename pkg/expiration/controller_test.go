package expiration

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// keep holds a deleted NodeClaim in place so that its deletion can be seen.
const keep = "test.karpenter.sh/keep"

// claim creates a NodeClaim of NodePool "default" with the expireAfter (raw, "" for unset)
// and returns it as the API server stored it (its creationTimestamp is the server's).
func claim(t *testing.T, name, expireAfter string, mutate ...func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
	t.Helper()
	c := builders.NodeClaim(builders.NodeClaimOptions{Name: name, NodePool: "default", Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeSpot}},
	}}, func(c *karpv1.NodeClaim) {
		c.Finalizers = []string{keep}
		c.Labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeSpot
		if expireAfter != "" {
			c.Spec.ExpireAfter = karpv1.MustParseNillableDuration(expireAfter)
		}
	})
	for _, m := range mutate {
		m(c)
	}
	if err := env.Client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stored := &karpv1.NodeClaim{}
		if env.Client.Get(context.Background(), client.ObjectKeyFromObject(c), stored) == nil {
			stored.Finalizers = nil
			_ = env.Client.Update(context.Background(), stored)
			_ = env.Client.Delete(context.Background(), stored)
		}
	})
	return c
}

func reconcileClaim(t *testing.T, c *Controller, name string) (reconcile.Result, *karpv1.NodeClaim) {
	t.Helper()
	res, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	if err != nil {
		t.Fatal(err)
	}
	stored := &karpv1.NodeClaim{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, stored); err != nil {
		t.Fatal(err)
	}
	return res, stored
}

// TestExpiredClaimIsDeletedAtOnce: a NodeClaim past its expireAfter is deleted on its first
// reconcile after that moment, whatever protects it from voluntary disruption (its own
// do-not-disrupt annotation; budgets and pods are not even read), and counted as Karpenter v1.15
// counts it (pkg/controllers/nodeclaim/expiration/controller.go Reconcile:
// karpenter_nodeclaims_disrupted_total{reason="expired"}, no Event). Before it is due the
// controller asks to be called at that moment.
func TestExpiredClaimIsDeletedAtOnce(t *testing.T) {
	c := claim(t, "expiring", "30m", func(c *karpv1.NodeClaim) {
		c.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	})
	clk := clocktesting.NewFakeClock(c.CreationTimestamp.Add(10 * time.Minute))
	ctrl := NewController(env.Client, clk)
	var seen []Expiry
	ctrl.Observe(func(e Expiry) { seen = append(seen, e) })
	disrupted := metrics.NodeClaimsDisruptedTotal.WithLabelValues("expired", "default", karpv1.CapacityTypeSpot, "", metrics.TerminationModeGraceful)
	before := testutil.ToFloat64(disrupted)

	res, stored := reconcileClaim(t, ctrl, c.Name)
	if stored.DeletionTimestamp != nil || res.RequeueAfter != 20*time.Minute {
		t.Fatalf("10m into 30m: deleted %v, requeue after %s; want kept, requeued after 20m", stored.DeletionTimestamp != nil, res.RequeueAfter)
	}
	clk.SetTime(c.CreationTimestamp.Add(30 * time.Minute))
	res, stored = reconcileClaim(t, ctrl, c.Name)
	if stored.DeletionTimestamp == nil || res.RequeueAfter != 0 {
		t.Fatalf("at 30m: deleted %v, requeue after %s; want deleted", stored.DeletionTimestamp != nil, res.RequeueAfter)
	}
	if got := testutil.ToFloat64(disrupted) - before; got != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=expired} rose by %v, want 1", got)
	}
	if len(seen) != 1 || seen[0].NodeClaim != c.Name || seen[0].ExpireAfter != 30*time.Minute {
		t.Errorf("observed %+v, want one expiry of %s after 30m", seen, c.Name)
	}
	// Deleting already: not again.
	reconcileClaim(t, ctrl, c.Name)
	if got := testutil.ToFloat64(disrupted) - before; got != 1 || len(seen) != 1 {
		t.Errorf("a second reconcile counted the expiry again (%v, %d observed)", got, len(seen))
	}
}

// TestExpireAfterNeverAndDefault: Never keeps a claim for good; an unset expireAfter (a claim
// the API server did not default) is the CRD's default, 720h.
func TestExpireAfterNeverAndDefault(t *testing.T) {
	never := claim(t, "never", "Never")
	clk := clocktesting.NewFakeClock(never.CreationTimestamp.Add(10000 * time.Hour))
	ctrl := NewController(env.Client, clk)
	if res, stored := reconcileClaim(t, ctrl, never.Name); stored.DeletionTimestamp != nil || res.RequeueAfter != 0 {
		t.Errorf("expireAfter Never: deleted %v, requeue after %s; want kept, no requeue", stored.DeletionTimestamp != nil, res.RequeueAfter)
	}
	defaulted := claim(t, "defaulted", "")
	if got := defaulted.Spec.ExpireAfter.String(); got != "720h0m0s" && got != "720h" {
		t.Logf("the API server stored expireAfter %q", got)
	}
	unset := defaulted.DeepCopy()
	unset.Spec.ExpireAfter = karpv1.NillableDuration{}
	if at, ok := ExpiresAt(unset); !ok || !at.Equal(unset.CreationTimestamp.Add(DefaultExpireAfter)) {
		t.Errorf("unset expireAfter expires at %v (%v), want creation + 720h", at, ok)
	}
	clk.SetTime(defaulted.CreationTimestamp.Add(719 * time.Hour))
	if res, stored := reconcileClaim(t, ctrl, defaulted.Name); stored.DeletionTimestamp != nil || res.RequeueAfter != time.Hour {
		t.Errorf("default expireAfter at 719h: deleted %v, requeue after %s; want kept, requeued after 1h", stored.DeletionTimestamp != nil, res.RequeueAfter)
	}
}

// TestExpiryCountsReschedulablePods: the pods of the expiring node that must move are counted in
// karpenter_pods_disruption_initiated_total, daemonset pods not.
func TestExpiryCountsReschedulablePods(t *testing.T) {
	ctx := context.Background()
	c := claim(t, "busy", "1h", func(c *karpv1.NodeClaim) {
		c.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
	})
	c.Status.NodeName = "busy-node"
	if err := env.Client.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	ns := "expiry-pods"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Purge(t, nil, ns) })
	for i, daemon := range []bool{false, false, true} {
		p := builders.Pod(builders.PodOptions{Namespace: ns, Name: "p" + string(rune('a'+i)), NodeName: "busy-node"})
		if daemon {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid"}}
		}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	initiated := metrics.PodsDisruptionInitiatedTotal.WithLabelValues("expired", "default", karpv1.CapacityTypeSpot, "", metrics.TerminationModeEventual)
	before := testutil.ToFloat64(initiated)
	ctrl := NewController(env.Client, clocktesting.NewFakeClock(c.CreationTimestamp.Add(2*time.Hour)))
	if _, stored := reconcileClaim(t, ctrl, c.Name); stored.DeletionTimestamp == nil {
		t.Fatal("expired claim not deleted")
	}
	if got := testutil.ToFloat64(initiated) - before; got != 2 {
		t.Errorf("karpenter_pods_disruption_initiated_total{reason=expired} rose by %v, want 2 (the daemonset pod stays)", got)
	}
}
