package nodepool_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
)

// staticPool creates a ready NodeClass and a static NodePool of replicas using it, changed by
// mutate, and runs the status controller so the NodePool is Ready.
func staticPool(t *testing.T, name string, replicas int64, mutate func(*karpv1.NodePool)) *karpv1.NodePool {
	t.Helper()
	createNodeClass(t, name, ptr.To(true))
	createNodePool(t, name, name, func(np *karpv1.NodePool) {
		np.Spec.Replicas = ptr.To(replicas)
		if mutate != nil {
			mutate(np)
		}
	})
	mustReconcile(t, nodepool.NewStatusController(env.Client, newClock(), nil), name)
	np := getNodePool(t, name)
	if !nodepool.IsReady(np) {
		t.Fatalf("nodepool %s is not ready: %+v", name, np.Status.Conditions)
	}
	return np
}

// setReplicas changes the NodePool's spec.replicas.
func setReplicas(t *testing.T, name string, replicas int64) {
	t.Helper()
	np := getNodePool(t, name)
	np.Spec.Replicas = ptr.To(replicas)
	if err := env.Client.Update(testContext(t), np); err != nil {
		t.Fatalf("updating replicas: %v", err)
	}
}

func TestStaticCreatesReplicasAcrossZones(t *testing.T) {
	const name = "static-create"
	np := staticPool(t, name, 3, func(np *karpv1.NodePool) {
		// A template may set this label; a NodeClaim's requirements may not name it.
		np.Spec.Template.Labels["node-role.kubernetes.io/worker"] = ""
	})
	controller := nodepool.NewStaticController(env.Client, newCloud(t))

	mustReconcile(t, controller, name)
	claims := activeClaims(t, name)
	if len(claims) != 3 {
		t.Fatalf("%d nodeclaims, want 3", len(claims))
	}
	if got, want := zoneCounts(t, claims), map[string]int{"us-east-1a": 1, "us-east-1b": 1, "us-east-1c": 1}; !maps.Equal(got, want) {
		t.Errorf("zones = %v, want %v", got, want)
	}
	for _, c := range claims {
		reqs := map[string][]string{}
		for _, r := range c.Spec.Requirements {
			if r.Operator == corev1.NodeSelectorOpIn {
				reqs[r.Key] = r.Values
			}
		}
		for key, want := range map[string]string{karpv1.NodePoolLabelKey: name, "team": name, corev1.LabelArchStable: "amd64"} {
			if !slices.Equal(reqs[key], []string{want}) {
				t.Errorf("nodeclaim %s: requirement %s In %v, want [%s]", c.Name, key, reqs[key], want)
			}
		}
		if _, ok := reqs["node-role.kubernetes.io/worker"]; ok {
			t.Errorf("nodeclaim %s requires node-role.kubernetes.io/worker, which its schema refuses", c.Name)
		}
		if _, ok := c.Labels["node-role.kubernetes.io/worker"]; !ok || c.Labels[karpv1.NodePoolLabelKey] != name || c.Labels["team"] != name {
			t.Errorf("nodeclaim %s labels = %v", c.Name, c.Labels)
		}
		if len(c.OwnerReferences) != 1 || c.OwnerReferences[0].UID != np.UID {
			t.Errorf("nodeclaim %s owners = %v, want the nodepool", c.Name, c.OwnerReferences)
		}
	}

	// Nothing more to do.
	mustReconcile(t, controller, name)
	if got := activeClaims(t, name); len(got) != 3 {
		t.Errorf("%d nodeclaims after a second reconcile, want 3", len(got))
	}
}

func TestStaticReplacesDeletedClaim(t *testing.T) {
	const name = "static-replace"
	staticPool(t, name, 3, nil)
	controller := nodepool.NewStaticController(env.Client, newCloud(t))
	mustReconcile(t, controller, name)
	claims := activeClaims(t, name)
	var lost karpv1.NodeClaim
	for _, c := range claims {
		if zoneCounts(t, []karpv1.NodeClaim{c})["us-east-1b"] == 1 {
			lost = c
		}
	}
	if err := env.Client.Delete(testContext(t), &lost); err != nil {
		t.Fatal(err)
	}

	mustReconcile(t, controller, name)
	claims = activeClaims(t, name)
	if len(claims) != 3 {
		t.Fatalf("%d nodeclaims after losing one, want 3", len(claims))
	}
	if got, want := zoneCounts(t, claims), map[string]int{"us-east-1a": 1, "us-east-1b": 1, "us-east-1c": 1}; !maps.Equal(got, want) {
		t.Errorf("zones = %v, want the replacement in us-east-1b: %v", got, want)
	}
	if slices.Contains(claimNames(claims), lost.Name) {
		t.Errorf("deleted nodeclaim %s is still there", lost.Name)
	}
}

func TestStaticScaleDown(t *testing.T) {
	const name = "static-scale-down"
	ctx := testContext(t)
	staticPool(t, name, 2, nil)
	controller := nodepool.NewStaticController(env.Client, newCloud(t))
	mustReconcile(t, controller, name)
	older := activeClaims(t, name)
	// Creation timestamps have a resolution of one second.
	time.Sleep(1100 * time.Millisecond)
	setReplicas(t, name, 3)
	mustReconcile(t, controller, name)
	claims := activeClaims(t, name)
	if len(claims) != 3 {
		t.Fatalf("%d nodeclaims, want 3", len(claims))
	}
	var newest karpv1.NodeClaim
	for _, c := range claims {
		if !slices.Contains(claimNames(older), c.Name) {
			newest = c
		}
	}
	// The newest and the second older claim are initialized; the first older one is not.
	initialized, uninitialized := older[1], older[0]
	for _, c := range []karpv1.NodeClaim{newest, initialized} {
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"})
		if err := env.Client.Status().Update(ctx, &c); err != nil {
			t.Fatal(err)
		}
	}

	setReplicas(t, name, 1)
	mustReconcile(t, controller, name)
	// First the uninitialized claim, then the newest: the older initialized one stays.
	if got := claimNames(activeClaims(t, name)); !slices.Equal(got, []string{initialized.Name}) {
		t.Errorf("left %v, want [%s] (deleted %s, not initialized, and %s, newest)", got, initialized.Name, uninitialized.Name, newest.Name)
	}
}

func TestStaticLimitsNodes(t *testing.T) {
	const name = "static-limits"
	staticPool(t, name, 3, func(np *karpv1.NodePool) {
		np.Spec.Limits = karpv1.Limits{nodepool.ResourceNodes: resource.MustParse("2")}
	})
	controller := nodepool.NewStaticController(env.Client, newCloud(t))
	mustReconcile(t, controller, name)
	if got := activeClaims(t, name); len(got) != 2 {
		t.Errorf("%d nodeclaims, want 2 (limits.nodes)", len(got))
	}
}

func TestStaticNotReadyCreatesNothing(t *testing.T) {
	const name = "static-not-ready"
	createNodePool(t, name, name, func(np *karpv1.NodePool) { np.Spec.Replicas = ptr.To[int64](2) })
	mustReconcile(t, nodepool.NewStatusController(env.Client, newClock(), nil), name)
	if nodepool.IsReady(getNodePool(t, name)) {
		t.Fatal("nodepool without a NodeClass is ready")
	}
	mustReconcile(t, nodepool.NewStaticController(env.Client, newCloud(t)), name)
	if got := activeClaims(t, name); len(got) != 0 {
		t.Errorf("%d nodeclaims for a nodepool that is not ready, want 0", len(got))
	}
}

func TestStaticIgnoresDynamicNodePools(t *testing.T) {
	const name = "static-dynamic"
	createNodeClass(t, name, ptr.To(true))
	createNodePool(t, name, name, nil)
	mustReconcile(t, nodepool.NewStatusController(env.Client, newClock(), nil), name)
	mustReconcile(t, nodepool.NewStaticController(env.Client, newCloud(t)), name)
	if got := activeClaims(t, name); len(got) != 0 {
		t.Errorf("%d nodeclaims for a dynamic nodepool, want 0", len(got))
	}
}

func TestStaticZones(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int64
		zones    []string // allowed by the requirements; nil for any
		minZones *int     // minValues of the zone requirement
		outage   string   // zone without capacity
		want     map[string]int
	}{
		{name: "static-zones-required", replicas: 3, zones: []string{"us-east-1a", "us-east-1c"}, want: map[string]int{"us-east-1a": 2, "us-east-1c": 1}},
		{name: "static-zones-outage", replicas: 4, outage: "us-east-1b", want: map[string]int{"us-east-1a": 2, "us-east-1c": 2}},
		{name: "static-zones-one", replicas: 2, zones: []string{"us-east-1b"}, want: map[string]int{"us-east-1b": 2}},
		{name: "static-zones-minvalues", replicas: 3, zones: zones, minZones: ptr.To(2), want: map[string]int{"us-east-1a": 1, "us-east-1b": 1, "us-east-1c": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			staticPool(t, tc.name, tc.replicas, func(np *karpv1.NodePool) {
				if tc.zones != nil {
					np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
						karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: tc.zones, MinValues: tc.minZones})
				}
			})
			cloud := newCloud(t)
			if tc.outage != "" {
				cloud.SetOfferingAvailable("", tc.outage, "", false)
			}
			mustReconcile(t, nodepool.NewStaticController(env.Client, cloud), tc.name)
			if got := zoneCounts(t, activeClaims(t, tc.name)); !maps.Equal(got, tc.want) {
				t.Errorf("zones = %v, want %v", got, tc.want)
			}
		})
	}
}

// staleClient is a client whose NodeClaim lists always return the same snapshot, as a cache
// that has fallen behind would.
type staleClient struct {
	client.Client
	claims karpv1.NodeClaimList
}

func (c *staleClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if claims, ok := list.(*karpv1.NodeClaimList); ok {
		c.claims.DeepCopyInto(claims)
		return nil
	}
	return c.Client.List(ctx, list, opts...)
}

func TestStaticStaleCacheDoesNotOvershoot(t *testing.T) {
	const name = "static-stale"
	staticPool(t, name, 3, nil)
	// The cache shows no claims, ever.
	stale := &staleClient{Client: env.Client}
	controller := nodepool.NewStaticController(stale, newCloud(t), nodepool.WithAPIReader(env.Client))

	// A burst of reconciles over the stale cache still creates only three.
	for range 3 {
		mustReconcile(t, controller, name)
	}
	claims := activeClaims(t, name)
	if len(claims) != 3 {
		t.Fatalf("%d nodeclaims after a burst over a stale cache, want 3", len(claims))
	}
	if got, want := zoneCounts(t, claims), map[string]int{"us-east-1a": 1, "us-east-1b": 1, "us-east-1c": 1}; !maps.Equal(got, want) {
		t.Errorf("zones = %v, want %v", got, want)
	}

	// The cache catches up once, then freezes: scaling down deletes two, and only two.
	if err := env.Client.List(testContext(t), &stale.claims, client.MatchingLabels{karpv1.NodePoolLabelKey: name}); err != nil {
		t.Fatal(err)
	}
	setReplicas(t, name, 1)
	for range 3 {
		mustReconcile(t, controller, name)
	}
	if got := activeClaims(t, name); len(got) != 1 {
		t.Errorf("%d nodeclaims after scaling down over a stale cache, want 1", len(got))
	}
}
