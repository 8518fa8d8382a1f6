package nodeoverlay

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// env is the real API server every test here runs against; the tests share its NodePools and
// NodeOverlays, so they do not run in parallel.
var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// fixture is one test's world: a simulated cloud selling c7i.xlarge and m7i.xlarge, the
// "default" NodePool, and the controller under test with its store.
type fixture struct {
	t          *testing.T
	ctx        context.Context
	cloud      *sim.Cloud
	store      *Store
	controller *Controller
	decorated  cloudprovider.CloudProvider
	pool       *karpv1.NodePool
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	env.EnsureNodeClass(t, "default")
	t.Cleanup(func() {
		env.Purge(t, []client.ObjectList{&v1alpha1.NodeOverlayList{}, &karpv1.NodeClaimList{}, &karpv1.NodePoolList{}})
	})
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	var entries []catalog.Entry
	for _, name := range []string{"c7i.xlarge", "m7i.xlarge"} {
		e, ok := catalog.Lookup(name)
		if !ok {
			t.Fatalf("catalog has no %s", name)
		}
		entries = append(entries, e)
	}
	cloud, err := sim.New(sim.Options{Clock: clk, NodeClasses: env.Client, Catalog: entries})
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore()
	f := &fixture{t: t, ctx: ctx, cloud: cloud, store: store, controller: NewController(env.Client, cloud, store, clk), decorated: Decorate(cloud, store)}
	cloud.SetOverlay(store)
	f.pool = builders.NodePool(builders.NodePoolOptions{Labels: map[string]string{"team": "web"}})
	f.create(f.pool)
	return f
}

func (f *fixture) create(obj client.Object) {
	f.t.Helper()
	if err := env.Client.Create(f.ctx, obj); err != nil {
		f.t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
}

// overlay builds a NodeOverlay of the requirements (key, operator, values...; one per slice).
func overlay(name string, weight int32, reqs ...[]string) *v1alpha1.NodeOverlay {
	o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeOverlaySpec{Requirements: []v1alpha1.NodeSelectorRequirement{}}}
	if weight != 0 {
		o.Spec.Weight = ptr.To(weight)
	}
	for _, r := range reqs {
		o.Spec.Requirements = append(o.Spec.Requirements, v1alpha1.NodeSelectorRequirement{Key: r[0], Operator: corev1.NodeSelectorOperator(r[1]), Values: r[2:]})
	}
	return o
}

func withPriceAdjustment(o *v1alpha1.NodeOverlay, a string) *v1alpha1.NodeOverlay {
	o.Spec.PriceAdjustment = ptr.To(a)
	return o
}

func withPrice(o *v1alpha1.NodeOverlay, p string) *v1alpha1.NodeOverlay {
	o.Spec.Price = ptr.To(p)
	return o
}

func withCapacity(o *v1alpha1.NodeOverlay, pairs ...string) *v1alpha1.NodeOverlay {
	o.Spec.Capacity = corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		o.Spec.Capacity[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return o
}

// reconcile runs the controller once; it must succeed.
func (f *fixture) reconcile() {
	f.t.Helper()
	if _, err := f.controller.Reconcile(f.ctx, reconcile.Request{}); err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
}

// types are the NodePool's instance types as the decorated cloud answers, by name.
func (f *fixture) types() map[string]*cloudprovider.InstanceType {
	f.t.Helper()
	its, err := f.decorated.GetInstanceTypes(f.ctx, f.pool)
	if err != nil {
		f.t.Fatalf("GetInstanceTypes: %v", err)
	}
	out := map[string]*cloudprovider.InstanceType{}
	for _, it := range its {
		out[it.Name] = it
	}
	return out
}

// rawTypes are the cloud's own instance types, by name.
func (f *fixture) rawTypes() map[string]*cloudprovider.InstanceType {
	f.t.Helper()
	its, err := f.cloud.GetInstanceTypes(f.ctx, f.pool)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]*cloudprovider.InstanceType{}
	for _, it := range its {
		out[it.Name] = it
	}
	return out
}

// condition returns the overlay's condition of that type as stored.
func (f *fixture) condition(name, condType string) *metav1.Condition {
	f.t.Helper()
	o := &v1alpha1.NodeOverlay{}
	if err := env.Client.Get(f.ctx, client.ObjectKey{Name: name}, o); err != nil {
		f.t.Fatal(err)
	}
	return meta.FindStatusCondition(o.Status.Conditions, condType)
}

// expectValid checks that the overlay is ValidationSucceeded and Ready True.
func (f *fixture) expectValid(name string) {
	f.t.Helper()
	for _, ct := range []string{v1alpha1.ConditionTypeValidationSucceeded, v1alpha1.ConditionTypeReady} {
		if c := f.condition(name, ct); c == nil || c.Status != metav1.ConditionTrue {
			f.t.Errorf("nodeoverlay %s: %s = %+v, want True", name, ct, c)
		}
	}
}

// expectInvalid checks ValidationSucceeded False with the reason and a message containing
// each of want, and Ready False.
func (f *fixture) expectInvalid(name, reason string, want ...string) {
	f.t.Helper()
	c := f.condition(name, v1alpha1.ConditionTypeValidationSucceeded)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason {
		f.t.Fatalf("nodeoverlay %s: ValidationSucceeded = %+v, want False %s", name, c, reason)
	}
	for _, w := range want {
		if !strings.Contains(c.Message, w) {
			f.t.Errorf("nodeoverlay %s: message %q does not say %q", name, c.Message, w)
		}
	}
	if r := f.condition(name, v1alpha1.ConditionTypeReady); r == nil || r.Status != metav1.ConditionFalse || r.Reason != "UnhealthyDependents" {
		f.t.Errorf("nodeoverlay %s: Ready = %+v, want False UnhealthyDependents", name, r)
	}
}

// price is the price of the instance type's offering in the zone and capacity type.
func price(t *testing.T, it *cloudprovider.InstanceType, zone, capacityType string) float64 {
	t.Helper()
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == capacityType {
			return o.Price
		}
	}
	t.Fatalf("%s has no %s offering in %s", it.Name, capacityType, zone)
	return 0
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestNotEvaluated: until the controller has run, the NodePool's instance types are an error
// callers skip the NodePool on, so nothing is scheduled by prices about to change.
func TestNotEvaluated(t *testing.T) {
	f := newFixture(t)
	_, err := f.decorated.GetInstanceTypes(f.ctx, f.pool)
	var ne *NotEvaluatedError
	if !errors.As(err, &ne) || ne.NodePool != "default" {
		t.Fatalf("before the controller ran: %v, want NotEvaluatedError for default", err)
	}
	f.reconcile()
	if got := f.types(); len(got) != 2 {
		t.Fatalf("after: %d types, want 2", len(got))
	}
}
