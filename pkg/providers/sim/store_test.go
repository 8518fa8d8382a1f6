package sim

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// TestConfigMapStoreCarriesInstancesToTheNextCloud: a second cloud on the same ConfigMap (a
// restarted controller, or the standby that took over) sees the first one's live instances
// and none of its terminated ones, finds a claim's instance instead of launching it again, and
// never reuses an instance ID or a Node name.
func TestConfigMapStoreCarriesInstancesToTheNextCloud(t *testing.T) {
	ctx := context.Background()
	store := NewConfigMapStore(env.Client, "default", "sim-state-test")
	t.Cleanup(func() {
		cm := &corev1.ConfigMap{}
		cm.Namespace, cm.Name = "default", "sim-state-test"
		_ = env.Client.Delete(ctx, cm)
	})
	first, _ := newTestCloud(t, Options{Store: store})
	a := mustCreate(t, first, testClaim("a"))
	b := mustCreate(t, first, testClaim("b"))
	mustCreate(t, first, testClaim("c"))
	if err := first.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}

	second, _ := newTestCloud(t, Options{Store: store})
	live, err := second.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 2 {
		t.Fatalf("the second cloud lists %d instances, want a and c", len(live))
	}
	if _, err := second.Get(ctx, a.Status.ProviderID); err != nil {
		t.Errorf("Get(a): %v", err)
	}
	again := mustCreate(t, second, testClaim("a"))
	if again.Status.ProviderID != a.Status.ProviderID {
		t.Errorf("creating claim a again launched %s, want its instance %s", again.Status.ProviderID, a.Status.ProviderID)
	}
	d := mustCreate(t, second, testClaim("d"))
	seen := map[string]bool{}
	for _, in := range first.Instances() {
		seen[in.ID], seen[in.Hostname] = true, true
	}
	for _, in := range second.Instances() {
		if in.NodeClaimName == "d" && (seen[in.ID] || seen[in.Hostname]) {
			t.Errorf("the new instance %s (%s) repeats an ID or Node name of the first cloud", in.ID, in.Hostname)
		}
	}
	if reason, err := second.IsDrifted(ctx, a); err != nil || reason != "" {
		t.Errorf("a restored instance is drifted (%q, %v); its launch settings should be restored too", reason, err)
	}
	if err := second.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	st, err := store.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Instances) != 2 || st.Launches != 4 {
		t.Errorf("stored %d instances after %d launches, want 2 after 4", len(st.Instances), st.Launches)
	}
}

// failingStore cannot be read or written.
type failingStore struct{}

func (failingStore) Load(context.Context) (State, error) { return State{}, errors.New("store down") }
func (failingStore) Save(context.Context, State) error   { return errors.New("store down") }

// TestUnreadableStoreIsNotAnEmptyCloud: when the state cannot be loaded the cloud fails its
// calls instead of reporting no instances, which would have every NodeClaim garbage collected.
func TestUnreadableStoreIsNotAnEmptyCloud(t *testing.T) {
	c, _ := newTestCloud(t, Options{Store: failingStore{}})
	if _, err := c.List(context.Background()); err == nil {
		t.Error("List succeeded with an unreadable store")
	}
	_, err := c.Create(context.Background(), testClaim("a", builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)))
	if err == nil || cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Create with an unreadable store: %v", err)
	}
}
