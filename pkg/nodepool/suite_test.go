package nodepool_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// env is the real API server every test of the package runs against. Tests share it, so each
// names its objects after itself.
var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// epoch is the start of every test's fake clock.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// zones are the simulated cloud's zones (its defaults).
var zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// testContext logs through t.
func testContext(t *testing.T) context.Context {
	t.Helper()
	logger := funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: 1})
	return log.IntoContext(t.Context(), logger)
}

// newClock is a fake clock at epoch.
func newClock() *clocktesting.FakeClock { return clocktesting.NewFakeClock(epoch) }

// newCloud is a simulated cloud selling a few real instance types in zones, reading
// EC2NodeClasses from the API server.
func newCloud(t *testing.T) *sim.Cloud {
	t.Helper()
	var entries []catalog.Entry
	for _, name := range []string{"c5.large", "m5.large", "m5.xlarge", "r5.large"} {
		e, ok := catalog.Lookup(name)
		if !ok {
			t.Fatalf("catalog has no %s", name)
		}
		entries = append(entries, e)
	}
	cloud, err := sim.New(sim.Options{Clock: newClock(), NodeClasses: env.Client, Catalog: entries, Zones: zones})
	if err != nil {
		t.Fatal(err)
	}
	return cloud
}

// createNodeClass creates a valid EC2NodeClass and, unless ready is nil, sets its Ready
// condition to *ready. It is deleted when the test ends.
func createNodeClass(t *testing.T, name string, ready *bool) *awsv1.EC2NodeClass {
	t.Helper()
	ctx := testContext(t)
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "KarpenterNodeRole",
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
		},
	}
	if err := env.Client.Create(ctx, nc); err != nil {
		t.Fatalf("creating ec2nodeclass: %v", err)
	}
	t.Cleanup(func() { deleteIgnoringFinalizers(t, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
	if ready != nil {
		setNodeClassReady(t, nc, *ready)
	}
	return nc
}

// setNodeClassReady writes the NodeClass's Ready condition.
func setNodeClassReady(t *testing.T, nc *awsv1.EC2NodeClass, ready bool) {
	t.Helper()
	ctx := testContext(t)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatal(err)
	}
	cond := metav1.Condition{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.NewTime(epoch)}
	if !ready {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "SubnetsNotFound", "no subnet matches subnetSelectorTerms"
	}
	meta.SetStatusCondition(&nc.Status.Conditions, cond)
	if err := env.Client.Status().Update(ctx, nc); err != nil {
		t.Fatalf("updating ec2nodeclass status: %v", err)
	}
}

// createNodePool creates a NodePool using the EC2NodeClass named nodeClass, with a label
// team=<name>, changed by mutate. It and its NodeClaims are deleted when the test ends.
func createNodePool(t *testing.T, name, nodeClass string, mutate func(*karpv1.NodePool)) *karpv1.NodePool {
	t.Helper()
	np := builders.NodePool(builders.NodePoolOptions{
		Name:         name,
		NodeClass:    nodeClass,
		Labels:       map[string]string{"team": name},
		Requirements: []karpv1.NodeSelectorRequirementWithMinValues{builders.Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")},
	}, mutate)
	if err := env.Client.Create(testContext(t), np); err != nil {
		t.Fatalf("creating nodepool: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		claims := &karpv1.NodeClaimList{}
		if err := env.Client.List(ctx, claims, client.MatchingLabels{karpv1.NodePoolLabelKey: name}); err != nil {
			t.Errorf("listing nodeclaims: %v", err)
		}
		for i := range claims.Items {
			deleteIgnoringFinalizers(t, &claims.Items[i])
		}
		deleteIgnoringFinalizers(t, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	return np
}

// deleteIgnoringFinalizers deletes obj, first removing any finalizers tests put on it.
func deleteIgnoringFinalizers(t *testing.T, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		if !apierrors.IsNotFound(err) {
			t.Errorf("getting %s: %v", obj.GetName(), err)
		}
		return
	}
	if len(obj.GetFinalizers()) > 0 {
		obj.SetFinalizers(nil)
		if err := env.Client.Update(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("removing finalizers of %s: %v", obj.GetName(), err)
		}
	}
	if err := env.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting %s: %v", obj.GetName(), err)
	}
}

// mustReconcile runs one reconcile of the named NodePool and fails the test on error.
func mustReconcile(t *testing.T, r reconcile.Reconciler, name string) reconcile.Result {
	t.Helper()
	res, err := r.Reconcile(testContext(t), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	if err != nil {
		t.Fatalf("reconciling %s: %v", name, err)
	}
	return res
}

// getNodePool reads the named NodePool from the API server.
func getNodePool(t *testing.T, name string) *karpv1.NodePool {
	t.Helper()
	np := &karpv1.NodePool{}
	if err := env.Client.Get(testContext(t), types.NamespacedName{Name: name}, np); err != nil {
		t.Fatalf("getting nodepool: %v", err)
	}
	return np
}

// activeClaims lists the NodePool's NodeClaims that are not being deleted, sorted by name.
func activeClaims(t *testing.T, pool string) []karpv1.NodeClaim {
	t.Helper()
	claims := &karpv1.NodeClaimList{}
	if err := env.Client.List(testContext(t), claims, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		t.Fatalf("listing nodeclaims: %v", err)
	}
	var out []karpv1.NodeClaim
	for _, c := range claims.Items {
		if c.DeletionTimestamp.IsZero() {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b karpv1.NodeClaim) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// claimNames are the claims' names.
func claimNames(claims []karpv1.NodeClaim) []string {
	out := make([]string, len(claims))
	for i, c := range claims {
		out[i] = c.Name
	}
	return out
}

// zoneCounts counts the claims by the zone their requirements pin them to.
func zoneCounts(t *testing.T, claims []karpv1.NodeClaim) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, c := range claims {
		var zone string
		for _, r := range c.Spec.Requirements {
			if r.Key == corev1.LabelTopologyZone {
				if r.Operator != corev1.NodeSelectorOpIn || len(r.Values) != 1 {
					t.Errorf("nodeclaim %s: zone requirement %v, want In one zone", c.Name, r)
				}
				zone = strings.Join(r.Values, ",")
			}
		}
		out[zone]++
	}
	return out
}

// expectCondition checks one condition of the NodePool.
func expectCondition(t *testing.T, np *karpv1.NodePool, condType string, status metav1.ConditionStatus, reason, messagePart string) *metav1.Condition {
	t.Helper()
	cond := meta.FindStatusCondition(np.Status.Conditions, condType)
	if cond == nil {
		t.Fatalf("nodepool %s has no %s condition: %+v", np.Name, condType, np.Status.Conditions)
	}
	if cond.Status != status || cond.Reason != reason || !strings.Contains(cond.Message, messagePart) {
		t.Errorf("%s = %s/%s %q, want %s/%s containing %q", condType, cond.Status, cond.Reason, cond.Message, status, reason, messagePart)
	}
	if cond.ObservedGeneration != np.Generation {
		t.Errorf("%s observedGeneration = %d, want %d", condType, cond.ObservedGeneration, np.Generation)
	}
	return cond
}

// eventually retries check until it succeeds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
