package nodeclaim

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
)

// TestUnderManager runs the controllers as the operator does — a manager with a caching
// client, the field indexes, the watches — against the simulated cloud and kubelet on the real
// clock: a claim becomes Ready without anyone calling Reconcile, and deleting it and calling
// Finalize, as the termination controller does once drained, terminates the instance and
// releases the claim and its node.
func TestUnderManager(t *testing.T) {
	env.EnsureNodeClass(t, "default")
	t.Cleanup(func() { cleanup(t) })
	cloud, err := sim.New(sim.Options{NodeClasses: env.Client, Catalog: testCatalog(t), LaunchLatency: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := sim.NewKubelet(cloud, env.Client, sim.KubeletOptions{ReadyDelay: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// SkipNameValidation: with -count > 1 the same controllers register again in this process.
	mgr, err := manager.New(env.Config, manager.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := IndexFields(ctx, mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	unavailable := cloudprovider.NewUnavailableOfferings(clock.RealClock{}, 0)
	creates := &countingLauncher{InstanceLifecycle: cloud}
	lifecycle := NewLifecycleController(mgr.GetClient(), creates, unavailable, nil, nil, LifecycleOptions{})
	if err := lifecycle.Register(mgr); err != nil {
		t.Fatal(err)
	}
	if err := NewGarbageCollector(mgr.GetClient(), cloud, nil, nil, GarbageCollectorOptions{}).Register(mgr); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(kubelet); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()

	f := &fixture{t: t, ctx: context.Background(), cloud: cloud}
	f.createClaim("managed", claimOptions{})
	eventually(t, 30*time.Second, "the claim to become ready", func() bool {
		claim := f.claim("managed")
		return claim != nil && meta.IsStatusConditionTrue(claim.Status.Conditions, karpv1.ConditionTypeReady)
	})
	if n := creates.n.Load(); n != 1 {
		t.Errorf("%d Create calls through a caching client, want 1", n)
	}
	node := f.nodeOf(f.claim("managed"))
	if node.Labels[karpv1.NodeInitializedLabelKey] != "true" {
		t.Error("node not labelled initialized")
	}

	if err := env.Client.Delete(f.ctx, f.claim("managed")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the claim and its node to go", func() bool {
		if claim := f.claim("managed"); claim != nil {
			if _, err := lifecycle.Finalize(f.ctx, claim); err != nil {
				t.Logf("finalizing: %v", err)
			}
		}
		return f.claim("managed") == nil && f.node(node.Name) == nil
	})
	if f.liveInstances() != 0 {
		t.Errorf("%d instances, want 0", f.liveInstances())
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Errorf("manager: %v", err)
	}
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
