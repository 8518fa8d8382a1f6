package provisioning_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

// nominatedNode reads a pod's status.nominatedNodeName from the API server.
func nominatedNode(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	got := &corev1.Pod{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	return got.Status.NominatedNodeName
}

// createNode creates a Ready node with room for 16 cpu, deleted when the test ends.
func createNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	node := builders.Node(name, map[string]string{karpv1.NodePoolLabelKey: "default"}, builders.Resources("cpu", "16", "memory", "64Gi", "pods", "110"))
	status := node.Status
	create(t, node)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	node.Status = status
	if err := env.Client.Status().Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	return node
}

// oneClaimFor creates n pending pods of 1 cpu named prefix-i and provisions them, which must
// take exactly one NodeClaim; it returns the pods and the claim.
func oneClaimFor(t *testing.T, f *fixture, prefix string, n int) ([]*corev1.Pod, *karpv1.NodeClaim) {
	t.Helper()
	pods := builders.Pods(n, builders.PodOptions{Name: prefix, CPU: "1", Memory: "1Gi"})
	pending(t, pods...)
	decision, err := f.provisioner.Provision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(decision.Created) != 1 {
		t.Fatalf("created %d claims for %d small pods, want 1", len(decision.Created), n)
	}
	return pods, decision.Created[0]
}

// TestNominationNamesTheRegisteredNode: the pods the provisioner placed on a NodeClaim get the
// claim's Node as their nominated node once it registers, not before; a pod the kube-scheduler
// nominated elsewhere keeps its node; the cluster view counts nominated pods on their node.
func TestNominationNamesTheRegisteredNode(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	ctx := context.Background()
	pods, claim := oneClaimFor(t, f, "nominee", 3)
	c := provisioning.NewNominationController(env.Client, f.cluster, f.clock)
	reconcileTarget := func() {
		t.Helper()
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: claim.Name}}); err != nil {
			t.Fatal(err)
		}
	}

	// Launching: no Node yet, nothing to name.
	reconcileTarget()
	for _, pod := range pods {
		if got := nominatedNode(t, pod); got != "" {
			t.Fatalf("pod %s nominated to %q before its claim had a node", pod.Name, got)
		}
	}

	// The kube-scheduler nominated one pod elsewhere (a preemption): that stays.
	elsewhere := pods[2].DeepCopy()
	elsewhere.Status.NominatedNodeName = "preempted-for"
	if err := env.Client.Status().Update(ctx, elsewhere); err != nil {
		t.Fatal(err)
	}

	// Registered: the claim names its Node.
	node := createNode(t, "nominee-node")
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
		t.Fatal(err)
	}
	claim.Status.NodeName = node.Name
	if err := env.Client.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	reconcileTarget()
	for _, pod := range pods[:2] {
		if got := nominatedNode(t, pod); got != node.Name {
			t.Errorf("pod %s nominated to %q, want %s", pod.Name, got, node.Name)
		}
	}
	if got := nominatedNode(t, pods[2]); got != "preempted-for" {
		t.Errorf("the kube-scheduler's nomination was replaced by %q", got)
	}

	// The kube-scheduler clears a name after a failed attempt; the controller sets it again.
	cleared := &corev1.Pod{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pods[0]), cleared); err != nil {
		t.Fatal(err)
	}
	cleared.Status.NominatedNodeName = ""
	if err := env.Client.Status().Update(ctx, cleared); err != nil {
		t.Fatal(err)
	}
	reconcileTarget()
	if got := nominatedNode(t, pods[0]); got != node.Name {
		t.Errorf("after the kube-scheduler cleared it, pod nominated to %q, want %s", got, node.Name)
	}

	// The cluster view: the pods are on the node (all three: the provisioner's nomination
	// lasts), none is pending.
	snap, err := f.cluster.SyncSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Pending) != 0 {
		t.Errorf("%d pods pending, want none", len(snap.Pending))
	}
	for _, sn := range snap.Nodes {
		if sn.Name() == node.Name && len(sn.Pods) != 3 {
			t.Errorf("node %s holds %d pods, want the 3 nominated to it", node.Name, len(sn.Pods))
		}
	}
}

// TestNominatedNodeNameHoldsRoom: a pod the kube-scheduler nominated to a node (after a
// preemption, or because Karpenter said so before a restart) is neither pending nor free room
// on that node: the provisioner launches nothing for it and places no other pod in its room.
func TestNominatedNodeNameHoldsRoom(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	ctx := context.Background()
	node := createNode(t, "held-node")
	big := builders.Pod(builders.PodOptions{Name: "held", CPU: "12", Memory: "8Gi"})
	pending(t, big)
	big.Status.NominatedNodeName = node.Name
	if err := env.Client.Status().Update(ctx, big); err != nil {
		t.Fatal(err)
	}
	// 6 cpu more do not fit beside the held 12 of 16: a new node is needed.
	other := builders.Pod(builders.PodOptions{Name: "other", CPU: "6", Memory: "1Gi"})
	pending(t, other)
	decision, err := f.provisioner.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(decision.Results.ExistingPlacements) != 0 {
		t.Errorf("placed %s on %s, in the room held for %s", decision.Results.ExistingPlacements[0].Pod.Name, decision.Results.ExistingPlacements[0].Node, big.Name)
	}
	if len(decision.Created) != 1 || len(decision.Results.NewClaims) != 1 || len(decision.Results.NewClaims[0].Pods) != 1 ||
		decision.Results.NewClaims[0].Pods[0].Name != other.Name {
		t.Errorf("want one claim for %s only; got %d claims", other.Name, len(decision.Created))
	}
}

// TestBeforeRegisterNominatesFirst: called by the lifecycle controller when a claim's Node is
// found and before it registers, BeforeRegister points the claim's pods at the Node already.
func TestBeforeRegisterNominatesFirst(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	ctx := context.Background()
	pods, claim := oneClaimFor(t, f, "early", 2)
	node := createNode(t, "early-node")
	provisioning.NewNominationController(env.Client, f.cluster, f.clock).BeforeRegister(ctx, claim, node)
	for _, pod := range pods {
		if got := nominatedNode(t, pod); got != node.Name {
			t.Errorf("pod %s nominated to %q before registration, want %s", pod.Name, got, node.Name)
		}
	}
}

// TestPlacedOnAReadyNodeIsAnnounced: pods a pass places on a node that is ready already get the
// node as their nominated node through Placed. Nothing else brings such a target to the
// controller (the node sends no event), and unannounced, the pods' room went to whichever pod
// the kube-scheduler placed first: the 3,000-pod differential burst planned the same pods three
// times over.
func TestPlacedOnAReadyNodeIsAnnounced(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	node := createNode(t, "ready-node")
	pods := builders.Pods(2, builders.PodOptions{Name: "placed", CPU: "1", Memory: "1Gi"})
	pending(t, pods...)
	c := provisioning.NewNominationController(env.Client, f.cluster, f.clock)
	mgr, err := manager.New(env.Config, manager.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Register(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("caches did not sync")
	}
	// The pods' creation events pass first, while they are nominated nowhere: from then on no
	// event of theirs comes, as for pods the kube-scheduler last wrote before the pass.
	time.Sleep(time.Second)
	results := &scheduler.Results{}
	for _, pod := range pods {
		f.cluster.Nominate(pod, node.Name, false)
		results.ExistingPlacements = append(results.ExistingPlacements, scheduler.Placement{Pod: pod, Node: node.Name})
	}
	c.Placed(&provisioning.Decision{Results: results})
	harness.Eventually(t, 10*time.Second, "the placed pods to name their node", func() (bool, string) {
		for _, pod := range pods {
			if got := nominatedNode(t, pod); got != node.Name {
				return false, fmt.Sprintf("pod %s nominated to %q", pod.Name, got)
			}
		}
		return true, ""
	})
}
