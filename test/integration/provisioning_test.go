package integration_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/operator"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

// mixedPods are 200 pods of several shapes: plain ones of four sizes, zonal spread, hostname
// anti-affinity, and a zone selector.
func mixedPods() []*corev1.Pod {
	var pods []*corev1.Pod
	sizes := []struct{ cpu, mem string }{{"250m", "512Mi"}, {"500m", "1Gi"}, {"1", "2Gi"}, {"2", "4Gi"}}
	for i, s := range sizes {
		pods = append(pods, builders.Pods(30, builders.PodOptions{Name: fmt.Sprintf("plain-%d", i), CPU: s.cpu, Memory: s.mem})...)
	}
	spread := map[string]string{"app": "spread"}
	pods = append(pods, builders.Pods(40, builders.PodOptions{Name: "spread", CPU: "500m", Memory: "1Gi", Labels: spread,
		Spread: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: spread}}}})...)
	alone := map[string]string{"app": "alone"}
	pods = append(pods, builders.Pods(10, builders.PodOptions{Name: "alone", CPU: "1", Memory: "1Gi", Labels: alone,
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: alone}}}}}})...)
	pods = append(pods, builders.Pods(30, builders.PodOptions{Name: "zonal", CPU: "250m", Memory: "256Mi", NodeSelector: map[string]string{corev1.LabelTopologyZone: "us-east-1b"}})...)
	for _, p := range pods {
		p.UID = ""
		p.Status = corev1.PodStatus{}
	}
	return pods
}

func createPods(t *testing.T, pods []*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		create(t, p)
	}
}

func TestProvisionEndToEnd(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	cloud := newCloud(t)
	r := startOperator(t, cloud)
	defer r.stop(t)
	harness.StartBinder(t, env.Client)
	create(t, nodeClass("default"), nodePool("default"))
	pods := mixedPods()
	createPods(t, pods)
	start := time.Now()
	harness.Eventually(t, 90*time.Second, "every pod bound", func() (bool, string) {
		n, detail := unbound(t)
		return n == 0, detail
	})
	t.Logf("bound after %s", time.Since(start))
	claims := listClaims(t)
	harness.Eventually(t, 30*time.Second, "every claim initialized", func() (bool, string) {
		claims = listClaims(t)
		for _, c := range claims {
			if !meta.IsStatusConditionTrue(c.Status.Conditions, karpv1.ConditionTypeInitialized) {
				return false, fmt.Sprintf("%s not initialized: %v", c.Name, c.Status.Conditions)
			}
		}
		return true, ""
	})
	t.Logf("initialized after %s", time.Since(start))
	// Every pod runs on a node of a claim.
	nodesOfClaims := map[string]bool{}
	for _, c := range claims {
		nodesOfClaims[c.Status.NodeName] = true
	}
	var list corev1.PodList
	if err := env.Client.List(context.Background(), &list, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	perNodeAlone := map[string]int{}
	for _, p := range list.Items {
		if !nodesOfClaims[p.Spec.NodeName] {
			t.Errorf("pod %s on %q, not a Karpenter node", p.Name, p.Spec.NodeName)
		}
		if p.Labels["app"] == "alone" {
			if perNodeAlone[p.Spec.NodeName]++; perNodeAlone[p.Spec.NodeName] > 1 {
				t.Errorf("two anti-affine pods on %s", p.Spec.NodeName)
			}
		}
	}
	// Nothing launched twice, nothing leaked: one instance per claim.
	if got := liveInstances(cloud); got != len(claims) {
		t.Errorf("%d instances for %d claims", got, len(claims))
	}
	// The fleet costs what the scheduler decided.
	if decided, running := r.claimedPrice(), cloud.Cost(); math.Abs(decided-running) > 1e-6 {
		t.Errorf("scheduler decided $%.4f/hour, the cloud runs $%.4f/hour", decided, running)
	}
	t.Logf("%d pods on %d nodes, $%.4f/hour", len(pods), len(claims), cloud.Cost())
}

func TestLimitsAndWeights(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	cloud := newCloud(t)
	r := startOperator(t, cloud)
	defer r.stop(t)
	harness.StartBinder(t, env.Client)
	limited := nodePool("limited", func(np *karpv1.NodePool) {
		np.Spec.Weight = ptr(int32(50))
		np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("10")}
	})
	create(t, nodeClass("default"), limited, nodePool("fallback"))
	createPods(t, mixedPods()[:120])
	harness.Eventually(t, 90*time.Second, "every pod bound", func() (bool, string) {
		n, detail := unbound(t)
		return n == 0, detail
	})
	cpu, perPool := resource.Quantity{}, map[string]int{}
	for _, c := range listClaims(t) {
		perPool[c.Labels[karpv1.NodePoolLabelKey]]++
		if c.Labels[karpv1.NodePoolLabelKey] == "limited" {
			cpu.Add(*c.Status.Capacity.Cpu())
		}
	}
	if cpu.Cmp(resource.MustParse("10")) > 0 {
		t.Errorf("nodepool limited holds %s cpu, limit 10", cpu.String())
	}
	if perPool["limited"] == 0 || perPool["fallback"] == 0 {
		t.Errorf("claims per nodepool %v: the heavier should fill to its limit and the other take the rest", perPool)
	}
}

// TestStaticNodePoolGateOff: with the StaticCapacity feature gate off (Karpenter's default) a
// static NodePool gets no nodes, as in Karpenter, and a Warning event says why.
func TestStaticNodePoolGateOff(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	cloud := newCloud(t)
	r := startOperator(t, cloud)
	defer r.stop(t)
	create(t, nodeClass("default"), nodePool("static", func(np *karpv1.NodePool) { np.Spec.Replicas = ptr(int64(2)) }))
	harness.Eventually(t, 30*time.Second, "a StaticCapacityDisabled event on the NodePool", func() (bool, string) {
		var events corev1.EventList
		if err := env.Client.List(context.Background(), &events); err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "NodePool" && e.InvolvedObject.Name == "static" && e.Reason == string(operator.ReasonStaticCapacityDisabled) && e.Type == corev1.EventTypeWarning {
				return true, e.Message
			}
		}
		return false, fmt.Sprintf("%d events", len(events.Items))
	})
	time.Sleep(2 * time.Second)
	if claims := listClaims(t); len(claims) != 0 {
		t.Errorf("%d NodeClaims for a static NodePool with the StaticCapacity gate off, want none", len(claims))
	}
}

func TestStaticNodePool(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	cloud := newCloud(t)
	r := startOperator(t, cloud, func(o *operator.Options) { o.StaticCapacity = true })
	defer r.stop(t)
	create(t, nodeClass("default"), nodePool("static", func(np *karpv1.NodePool) { np.Spec.Replicas = ptr(int64(3)) }))
	activeClaims := func() []karpv1.NodeClaim {
		var out []karpv1.NodeClaim
		for _, c := range listClaims(t) {
			if c.DeletionTimestamp == nil {
				out = append(out, c)
			}
		}
		return out
	}
	harness.Eventually(t, 30*time.Second, "3 initialized nodes", func() (bool, string) {
		claims := activeClaims()
		ready := 0
		for _, c := range claims {
			if meta.IsStatusConditionTrue(c.Status.Conditions, karpv1.ConditionTypeInitialized) {
				ready++
			}
		}
		return len(claims) == 3 && ready == 3, fmt.Sprintf("%d claims, %d initialized", len(claims), ready)
	})
	victim := activeClaims()[0]
	if err := env.Client.Delete(context.Background(), &victim); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "the deleted claim replaced", func() (bool, string) {
		claims := activeClaims()
		for _, c := range claims {
			if c.Name == victim.Name {
				return false, "victim still active"
			}
		}
		return len(claims) == 3 && liveInstances(cloud) == 3, fmt.Sprintf("%d claims, %d instances", len(claims), liveInstances(cloud))
	})
	// limits.nodes caps replicas.
	// The operator writes the NodePool's status meanwhile, so the update retries on conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		np := &karpv1.NodePool{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "static"}, np); err != nil {
			return err
		}
		np.Spec.Replicas = ptr(int64(5))
		np.Spec.Limits = karpv1.Limits{"nodes": resource.MustParse("4")}
		return env.Client.Update(context.Background(), np)
	}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, "4 claims (replicas 5 capped by limits.nodes 4)", func() (bool, string) {
		n := len(activeClaims())
		return n == 4, fmt.Sprintf("%d claims", n)
	})
	time.Sleep(time.Second)
	if n := len(activeClaims()); n != 4 {
		t.Errorf("%d claims after settling, want 4", n)
	}
}

func TestLaunchFaults(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	cloud := newCloud(t, func(o *sim.Options) { o.Faults.CreateErrorRate = 0.3 })
	r := startOperator(t, cloud)
	defer r.stop(t)
	harness.StartBinder(t, env.Client)
	create(t, nodeClass("default"), nodePool("default"))
	// Take the cheapest offering the pods would use out of capacity.
	cloud.SetOfferingAvailable("c6a.large", "us-east-1a", karpv1.CapacityTypeSpot, false)
	createPods(t, mixedPods()[:120])
	harness.Eventually(t, 120*time.Second, "every pod bound despite faults", func() (bool, string) {
		n, detail := unbound(t)
		return n == 0, detail
	})
	harness.Eventually(t, 30*time.Second, "no leaked instance", func() (bool, string) {
		claims, instances := listClaims(t), liveInstances(cloud)
		return len(claims) == instances, fmt.Sprintf("%d claims, %d instances", len(claims), instances)
	})
}

func TestRestartMidLaunch(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	cloud := newCloud(t, func(o *sim.Options) { o.LaunchLatency = 2 * time.Second })
	r := startOperator(t, cloud)
	harness.StartBinder(t, env.Client)
	create(t, nodeClass("default"), nodePool("default"))
	createPods(t, mixedPods()[:80])
	// Stop once every pod is planned, every claim decided so far exists and some instance is
	// launched: a stop in the middle of creating a decision's claims, or before a batch took
	// the last pods (on a loaded machine their creation can outlast the batch window), would
	// rightly leave the next operator some to make.
	harness.Eventually(t, 30*time.Second, "claims launched", func() (bool, string) {
		r.mu.Lock()
		decided := 0
		planned := map[string]bool{}
		for _, d := range r.decisions {
			decided += len(d.Results.NewClaims)
			for _, c := range d.Results.NewClaims {
				for _, p := range c.Pods {
					planned[p.Name] = true
				}
			}
			for _, pl := range d.Results.ExistingPlacements {
				planned[pl.Pod.Name] = true
			}
		}
		r.mu.Unlock()
		claims := len(listClaims(t))
		return decided > 0 && len(planned) == 80 && claims == decided && liveInstances(cloud) > 0,
			fmt.Sprintf("%d claims of %d decided, %d of 80 pods planned, %d instances", claims, decided, len(planned), liveInstances(cloud))
	})
	r.stop(t) // mid-launch: instances are still booting
	claimsBefore := len(listClaims(t))
	r2 := startOperator(t, cloud)
	defer r2.stop(t)
	harness.Eventually(t, 90*time.Second, "every pod bound after the restart", func() (bool, string) {
		n, detail := unbound(t)
		return n == 0, detail
	})
	claims := listClaims(t)
	if len(claims) != claimsBefore {
		t.Errorf("%d claims before the restart, %d after: the new controllers launched again", claimsBefore, len(claims))
	}
	if liveInstances(cloud) != len(claims) {
		t.Errorf("%d instances for %d claims", liveInstances(cloud), len(claims))
	}
}

func ptr[T any](v T) *T { return &v }
