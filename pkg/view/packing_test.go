package view

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// testInstanceTypes are testPrices' types, on demand in the zones asked: small (2 cores, 8Gi,
// $0.10) and large (8 cores, 32Gi, $0.40).
func testInstanceTypes(_ *karpv1.NodePool, zones []string) ([]*cloudprovider.InstanceType, error) {
	var out []*cloudprovider.InstanceType
	for _, t := range []struct {
		name string
		cpu  int64
	}{{"small", 2}, {"large", 8}} {
		price, _ := testPrices.Price(t.name, "", karpv1.CapacityTypeOnDemand)
		var offerings []cloudprovider.Offering
		for _, z := range zones {
			offerings = append(offerings, cloudprovider.Offering{Zone: z, CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true})
		}
		out = append(out, builders.InstanceType(builders.InstanceTypeOptions{Name: t.name, CPU: t.cpu, MemoryGiB: 4 * t.cpu, PricePerHour: price, Offerings: offerings}))
	}
	return out, nil
}

// TestViewPackingRatio: with the NodePools' instance types, the snapshot re-packs the pods of
// the Karpenter nodes from scratch, and the totals line shows the fleet's $/hour over the
// bound. Four small nodes each half full cost twice what the bound says their pods need;
// pods of other nodes, daemonset pods and nodes being deleted do not count.
func TestViewPackingRatio(t *testing.T) {
	objs := Objects{NodePools: []karpv1.NodePool{*builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true})}}
	for i := range 4 {
		name := fmt.Sprintf("n%d", i)
		objs.Nodes = append(objs.Nodes, testNode(name, nodeOptions{}))
		objs.Pods = append(objs.Pods, testPod("p"+name, name, "1", "1Gi", corev1.PodRunning))
	}
	daemon := testPod("daemon", "n0", "500m", "1Gi", corev1.PodRunning)
	daemon.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "agent"}}
	objs.Pods = append(objs.Pods, daemon)
	objs.Nodes = append(objs.Nodes, testNode("gone", nodeOptions{deleting: true}), testNode("system", nodeOptions{unmanaged: true}))
	objs.Pods = append(objs.Pods, testPod("moving", "gone", "1", "1Gi", corev1.PodRunning), testPod("system", "system", "2", "1Gi", corev1.PodRunning))

	if s := NewSnapshot(objs, Options{Now: t0, Prices: testPrices}); s.Summary.Packing != nil {
		t.Errorf("a packing without instance types: %+v", s.Summary.Packing)
	}
	s := NewSnapshot(objs, Options{Now: t0, Prices: testPrices, InstanceTypes: testInstanceTypes})
	p := s.Summary.Packing
	if p == nil {
		t.Fatal("no packing")
	}
	// Five pods of one core (the moving one too) need two and a half smalls at least ($0.25/hour);
	// whole nodes, three.
	if p.Nodes != 4 || math.Abs(p.Current-0.40) > 1e-9 || math.Abs(p.Bound-0.25) > 1e-6 || math.Abs(p.Repacked-0.30) > 1e-9 {
		t.Errorf("packing %+v, want 4 nodes at $0.40/hour, bound $0.25, re-packed $0.30 (three smalls)", *p)
	}
	out := render(t, s, RenderOptions{})
	line, _, _ := strings.Cut(out, "\n")
	if !strings.Contains(line, "packing 1.60× the bound ($0.250/hour)") {
		t.Errorf("totals line %q does not give the packing ratio", line)
	}

	// A DaemonSet taking a core on every node leaves each new small node one: the bound rises,
	// as the controller's measure counts it.
	agent := appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system"}}
	agent.Spec.Template.Spec.Containers = []corev1.Container{{Name: "agent", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}
	objs.DaemonSets = []appsv1.DaemonSet{agent}
	if withDaemon := NewSnapshot(objs, Options{Now: t0, Prices: testPrices, InstanceTypes: testInstanceTypes}).Summary.Packing; withDaemon == nil || withDaemon.Bound <= p.Bound+1e-6 {
		t.Errorf("packing with a DaemonSet of one core %+v, want a bound above $%.3f", withDaemon, p.Bound)
	}
	objs.DaemonSets = nil

	objs.NodePools = nil
	if out := render(t, NewSnapshot(objs, Options{Now: t0, Prices: testPrices, InstanceTypes: testInstanceTypes}), RenderOptions{}); strings.Contains(out, "packing") {
		t.Errorf("a packing ratio without NodePools:\n%s", out)
	}
}

// TestViewPackingCache: a live view's cache re-packs only when the fleet changed: the same
// objects give the same result without computing it again; a pod more gives a new one.
func TestViewPackingCache(t *testing.T) {
	objs := threeNodes()
	cache := &PackingCache{}
	opts := Options{Now: t0, Prices: testPrices, InstanceTypes: testInstanceTypes, Packing: cache}
	first := NewSnapshot(objs, opts).Summary.Packing
	if first == nil {
		t.Fatal("no packing")
	}
	if again := NewSnapshot(objs, opts).Summary.Packing; again != first {
		t.Error("the same fleet was re-packed")
	}
	// Informers list in no particular order: the same fleet in another order is the same.
	reordered := objs
	reordered.Pods = slices.Clone(objs.Pods)
	slices.Reverse(reordered.Pods)
	if again := NewSnapshot(reordered, opts).Summary.Packing; again != first {
		t.Error("the same fleet listed in another order was re-packed")
	}
	// A DaemonSet's new spec (generation) re-packs; its status alone does not.
	agent := appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system", Generation: 1, ResourceVersion: "1"}}
	objs.DaemonSets = []appsv1.DaemonSet{agent}
	withAgent := NewSnapshot(objs, opts).Summary.Packing
	if withAgent == first {
		t.Error("a new DaemonSet did not re-pack")
	}
	objs.DaemonSets[0].ResourceVersion, objs.DaemonSets[0].Status.NumberReady = "2", 3
	if again := NewSnapshot(objs, opts).Summary.Packing; again != withAgent {
		t.Error("a DaemonSet's status write re-packed")
	}
	objs.DaemonSets[0].Generation = 2
	if again := NewSnapshot(objs, opts).Summary.Packing; again == withAgent {
		t.Error("a DaemonSet's new spec did not re-pack")
	}
	objs.DaemonSets = nil
	first = NewSnapshot(objs, opts).Summary.Packing
	more := testPod("extra", "n0", "1", "1Gi", corev1.PodRunning)
	more.UID = "uid-extra"
	objs.Pods = append(objs.Pods, more)
	changed := NewSnapshot(objs, opts).Summary.Packing
	if changed == first || changed.Bound <= first.Bound {
		t.Errorf("a pod more: bound $%.3f, was $%.3f; want a new, higher one", changed.Bound, first.Bound)
	}
}

// TestViewPackingHeldWhileUnsettled: while pods are pending, a live view shows the packing of
// the last settled fleet, saying when it was measured; one frame without a cache says the ratio
// is taken while pods wait; once settled again, the ratio is current.
func TestViewPackingHeldWhileUnsettled(t *testing.T) {
	objs := threeNodes()
	cache := &PackingCache{}
	opts := Options{Now: t0, Prices: testPrices, InstanceTypes: testInstanceTypes, Packing: cache}
	settled := NewSnapshot(objs, opts)
	if settled.Summary.Unsettled || !settled.Summary.PackingAsOf.IsZero() {
		t.Fatalf("settled fleet: %+v", settled.Summary)
	}
	busy := objs
	busy.Pods = append(append([]corev1.Pod{}, objs.Pods...), testPod("waiting", "", "1", "1Gi", corev1.PodPending))
	bound := testPod("more", "n0", "1", "1Gi", corev1.PodRunning)
	bound.UID = "uid-more"
	busy.Pods = append(busy.Pods, bound)
	opts.Now = t0.Add(time.Minute)
	held := NewSnapshot(busy, opts)
	if held.Summary.Packing != settled.Summary.Packing || !held.Summary.PackingAsOf.Equal(t0) {
		t.Errorf("while a pod is pending: packing %+v as of %v, want the settled one as of %v", held.Summary.Packing, held.Summary.PackingAsOf, t0)
	}
	if line, _, _ := strings.Cut(render(t, held, RenderOptions{}), "\n"); !strings.Contains(line, "as of "+t0.Format("15:04:05")+", before the pods pending and nodes launching") {
		t.Errorf("totals line %q does not say the ratio is held", line)
	}
	once := NewSnapshot(busy, Options{Now: t0, Prices: testPrices, InstanceTypes: testInstanceTypes})
	if line, _, _ := strings.Cut(render(t, once, RenderOptions{}), "\n"); !strings.Contains(line, "while pods are pending or nodes launching") {
		t.Errorf("one frame while a pod is pending: totals line %q does not say so", line)
	}
	busy.Pods = busy.Pods[:len(busy.Pods)-2]
	busy.Pods = append(busy.Pods, bound)
	if again := NewSnapshot(busy, opts); again.Summary.Unsettled || !again.Summary.PackingAsOf.IsZero() || again.Summary.Packing == settled.Summary.Packing {
		t.Errorf("settled again with a pod more: %+v, want a current packing", again.Summary)
	}
}

// threeNodes is a NodePool's three nodes, each running a pod of one core.
func threeNodes() Objects {
	objs := Objects{NodePools: []karpv1.NodePool{*builders.NodePool(builders.NodePoolOptions{Name: "default", Ready: true})}}
	for i := range 3 {
		name := fmt.Sprintf("n%d", i)
		objs.Nodes = append(objs.Nodes, testNode(name, nodeOptions{}))
		p := testPod("p"+name, name, "1", "1Gi", corev1.PodRunning)
		p.UID = types.UID("uid-" + name)
		objs.Pods = append(objs.Pods, p)
	}
	return objs
}
