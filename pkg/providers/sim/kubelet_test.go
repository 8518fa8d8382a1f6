package sim

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// kubeletFixture is a cloud and its kubelet on a virtual clock against the test API server,
// with an EC2NodeClass created there.
type kubeletFixture struct {
	t       *testing.T
	ctx     context.Context
	kube    client.Client
	clock   *clocktesting.FakeClock
	cloud   *Cloud
	kubelet *Kubelet
	prefix  string
}

func newKubeletFixture(t *testing.T, prefix string, cloudOpts Options, kubeletOpts KubeletOptions) *kubeletFixture {
	t.Helper()
	f := &kubeletFixture{t: t, ctx: context.Background(), kube: env.Client, clock: clocktesting.NewFakeClock(epoch), prefix: prefix}
	f.create(testNodeClass(prefix))
	cloudOpts.Clock, cloudOpts.NodeClasses, cloudOpts.Catalog = f.clock, env.Client, smallCatalog(t)
	var err error
	if f.cloud, err = New(cloudOpts); err != nil {
		t.Fatal(err)
	}
	if f.kubelet, err = NewKubelet(f.cloud, env.Client, kubeletOpts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.cleanup)
	return f
}

// create creates obj in the API server, to be deleted at cleanup.
func (f *kubeletFixture) create(obj client.Object) {
	f.t.Helper()
	if err := f.kube.Create(f.ctx, obj); err != nil {
		f.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// cleanup deletes what the test made: nodes (finalizers removed), pods, claims, the NodeClass.
func (f *kubeletFixture) cleanup() {
	ctx := f.ctx
	var nodes corev1.NodeList
	_ = f.kube.List(ctx, &nodes)
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if len(node.Finalizers) > 0 {
			node.Finalizers = nil
			_ = f.kube.Update(ctx, node)
		}
		_ = f.kube.Delete(ctx, node)
	}
	var pods corev1.PodList
	_ = f.kube.List(ctx, &pods, client.InNamespace("default"))
	for i := range pods.Items {
		_ = f.kube.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0))
	}
	_ = f.kube.DeleteAllOf(ctx, &karpv1.NodeClaim{})
	_ = f.kube.Delete(ctx, testNodeClass(f.prefix))
}

func (f *kubeletFixture) step() {
	f.t.Helper()
	if err := f.kubelet.Step(f.ctx); err != nil {
		f.t.Fatalf("Step: %v", err)
	}
}

// node returns the Node with the name, or nil when there is none.
func (f *kubeletFixture) node(name string) *corev1.Node {
	f.t.Helper()
	return apiserver.Lookup[corev1.Node](f.t, f.kube, client.ObjectKey{Name: name})
}

// claim is a NodeClaim of the fixture's NodeClass for one on-demand m5.large.
func (f *kubeletFixture) claim(name string) *karpv1.NodeClaim {
	claim := testClaim(name,
		builders.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"),
		builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand))
	claim.Spec.NodeClassRef.Name = f.prefix
	return claim
}

func taintKeys(taints []corev1.Taint) []string {
	var out []string
	for _, t := range taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	slices.Sort(out)
	return out
}

func nodeReady(node *corev1.Node) corev1.ConditionStatus {
	if c := findNodeCondition(node.Status.Conditions, corev1.NodeReady); c != nil {
		return c.Status
	}
	return ""
}

func TestKubeletNodeLifecycle(t *testing.T) {
	f := newKubeletFixture(t, "lifecycle", Options{LaunchLatency: 30 * time.Second}, KubeletOptions{ReadyDelay: 10 * time.Second, MarkPodsRunning: true})
	ctx := f.ctx

	claim := f.claim("lifecycle")
	claim.Labels["team"] = "payments"
	claim.Labels["node-role.kubernetes.io/worker"] = "" // a kubelet may not set this on itself
	claim.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	claim.Spec.StartupTaints = []corev1.Taint{{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoExecute}}
	f.create(claim)
	launched, err := f.cloud.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	inst := f.cloud.Instances()[0]

	// Pending: no Node yet.
	f.step()
	if f.node(inst.Hostname) != nil {
		t.Fatal("a Node registered before the instance was running")
	}

	// Running: the kubelet registers, not yet Ready.
	f.clock.Step(30 * time.Second)
	f.step()
	node := f.node(inst.Hostname)
	if node == nil {
		t.Fatalf("no Node %s after the launch latency", inst.Hostname)
	}
	if node.Spec.ProviderID != launched.Status.ProviderID {
		t.Errorf("provider id %q, want %q", node.Spec.ProviderID, launched.Status.ProviderID)
	}
	for k, v := range map[string]string{
		corev1.LabelHostname:           inst.Hostname,
		corev1.LabelInstanceTypeStable: "m5.large",
		corev1.LabelTopologyZone:       inst.Zone,
		corev1.LabelTopologyRegion:     "us-east-1",
		karpv1.CapacityTypeLabelKey:    karpv1.CapacityTypeOnDemand,
		corev1.LabelArchStable:         "amd64",
		karpv1.NodePoolLabelKey:        "default",
		awsv1.LabelNodeClass:           "lifecycle",
		"team":                         "payments",
	} {
		if node.Labels[k] != v {
			t.Errorf("node label %s = %q, want %q", k, node.Labels[k], v)
		}
	}
	if _, ok := node.Labels["node-role.kubernetes.io/worker"]; ok {
		t.Error("the kubelet set a label NodeRestriction forbids it")
	}
	wantTaints := []string{"dedicated:NoSchedule", "example.com/agent-not-ready:NoExecute", karpv1.UnregisteredTaintKey + ":NoExecute", corev1.TaintNodeNotReady + ":NoSchedule"}
	slices.Sort(wantTaints)
	if got := taintKeys(node.Spec.Taints); !slices.Equal(got, wantTaints) {
		t.Errorf("taints %v, want %v", got, wantTaints)
	}
	if nodeReady(node) != corev1.ConditionFalse {
		t.Errorf("Ready %q right after registration, want False", nodeReady(node))
	}
	if cpu := node.Status.Allocatable[corev1.ResourceCPU]; cpu.MilliValue() != 1930 {
		t.Errorf("allocatable cpu %dm, want 1930m", cpu.MilliValue())
	}
	if pods := node.Status.Capacity[corev1.ResourcePods]; pods.Value() != 29 {
		t.Errorf("capacity pods %d, want 29", pods.Value())
	}
	if node.Status.NodeInfo.KubeletVersion != DefaultKubeletVersion || node.Status.NodeInfo.Architecture != "amd64" {
		t.Errorf("node info %+v", node.Status.NodeInfo)
	}

	// A pod bound to the node stays Pending while the node is not Ready.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:       inst.Hostname,
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "app", Image: "nginx"}},
		},
	}
	f.create(pod)
	f.step()
	if err := f.kube.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase == corev1.PodRunning {
		t.Error("pod running on a node that is not Ready")
	}

	// Ready after the delay: Ready=True, the not-ready taint gone, the pod Running.
	f.clock.Step(10 * time.Second)
	f.step()
	node = f.node(inst.Hostname)
	if nodeReady(node) != corev1.ConditionTrue {
		t.Errorf("Ready %q after the ready delay, want True", nodeReady(node))
	}
	if hasTaint(node.Spec.Taints, corev1.TaintNodeNotReady) {
		t.Error("not-ready taint kept on a Ready node")
	}
	if !hasTaint(node.Spec.Taints, karpv1.UnregisteredTaintKey) {
		t.Error("the unregistered taint is Karpenter's to remove, not the kubelet's")
	}
	if err := f.kube.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Status.HostIP != inst.PrivateIP || len(pod.Status.ContainerStatuses) != 1 || !pod.Status.ContainerStatuses[0].Ready {
		t.Errorf("pod status %+v, want Running with its container ready", pod.Status)
	}
	ready := false
	for _, c := range pod.Status.Conditions {
		ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
	}
	if !ready {
		t.Errorf("pod conditions %+v lack Ready=True", pod.Status.Conditions)
	}

	// Steps are idempotent.
	before := node.ResourceVersion
	f.step()
	if after := f.node(inst.Hostname).ResourceVersion; after != before {
		t.Errorf("a step without changes wrote the node (%s → %s)", before, after)
	}

	// Termination: a Node with a finalizer is only marked for deletion.
	node.Finalizers = append(node.Finalizers, karpv1.TerminationFinalizer)
	if err := f.kube.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := f.cloud.Delete(ctx, launched); err != nil {
		t.Fatal(err)
	}
	f.step()
	node = f.node(inst.Hostname)
	if node == nil || node.DeletionTimestamp == nil {
		t.Fatalf("node with a finalizer after its instance terminated: %v, want marked for deletion", node)
	}
	f.step() // already being deleted: nothing to do
	node.Finalizers = nil
	if err := f.kube.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	if f.node(inst.Hostname) != nil {
		t.Error("node still there once its finalizer was removed")
	}
}

func TestKubeletWithoutClaimAndStaleNodes(t *testing.T) {
	// The startup taint's agent takes an hour here, so the node is seen with it.
	f := newKubeletFixture(t, "orphans", Options{}, KubeletOptions{StartupTaintDelay: time.Hour})
	ctx := f.ctx

	// An instance whose NodeClaim is not in the cluster registers with its user data.
	claim := f.claim("orphan")
	claim.Spec.StartupTaints = []corev1.Taint{{Key: "example.com/boot", Effect: corev1.TaintEffectNoSchedule}}
	if _, err := f.cloud.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	// A Node of this cloud's provider ID scheme that no instance backs, and one of another cloud.
	stale := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "stale"}, Spec: corev1.NodeSpec{ProviderID: "sim:///us-east-1a/i-00000000000000000"}}
	foreign := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-00000000000000000"}}
	f.create(stale)
	f.create(foreign)

	f.step()
	inst := f.cloud.Instances()[0]
	node := f.node(inst.Hostname)
	if node == nil {
		t.Fatal("no Node for a running instance")
	}
	if nodeReady(node) != corev1.ConditionTrue || hasTaint(node.Spec.Taints, corev1.TaintNodeNotReady) {
		t.Errorf("with no ready delay the node registers Ready: Ready %q, taints %v", nodeReady(node), taintKeys(node.Spec.Taints))
	}
	if !hasTaint(node.Spec.Taints, "example.com/boot") {
		t.Errorf("taints %v lack the user data's startup taint", taintKeys(node.Spec.Taints))
	}
	if f.node("stale") != nil {
		t.Error("a Node no instance backs was kept")
	}
	if f.node("foreign") == nil {
		t.Error("a Node of another cloud was deleted")
	}
}

// TestKubeletLiftsStartupTaints: StartupTaintDelay after the Node is Ready, the agents lift
// the NodeClaim's startup taints (and lift one again when it comes back), but not its regular
// taints, even one that is also a startup taint, nor one the user data adds, nor Karpenter's.
func TestKubeletLiftsStartupTaints(t *testing.T) {
	custom := corev1.Taint{Key: "example.com/custom", Effect: corev1.TaintEffectNoSchedule}
	f := newKubeletFixture(t, "startup", Options{LaunchLatency: 30 * time.Second},
		KubeletOptions{ReadyDelay: 10 * time.Second, StartupTaintDelay: 5 * time.Second, RegisterWithTaints: []corev1.Taint{custom}})
	claim := f.claim("startup")
	claim.Spec.Taints = []corev1.Taint{
		{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule},
		{Key: "example.com/both", Effect: corev1.TaintEffectNoSchedule},
	}
	claim.Spec.StartupTaints = []corev1.Taint{
		{Key: "node.cilium.io/agent-not-ready", Value: "true", Effect: corev1.TaintEffectNoExecute},
		{Key: "example.com/both", Effect: corev1.TaintEffectNoSchedule},
		custom,
	}
	f.create(claim)
	if _, err := f.cloud.Create(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	hostname := f.cloud.Instances()[0].Hostname
	taints := func() []string {
		t.Helper()
		node := f.node(hostname)
		if node == nil {
			t.Fatalf("no node %s", hostname)
		}
		return taintKeys(node.Spec.Taints)
	}
	regular := []string{"dedicated:NoSchedule", "example.com/both:NoSchedule", "example.com/custom:NoSchedule", karpv1.UnregisteredTaintKey + ":NoExecute"}
	withStartup := append([]string{"node.cilium.io/agent-not-ready:NoExecute"}, regular...)
	slices.Sort(withStartup)

	f.clock.Step(30 * time.Second) // running: registered, not Ready
	f.step()
	f.clock.Step(10 * time.Second) // Ready
	f.step()
	if got := taints(); !slices.Equal(got, withStartup) {
		t.Fatalf("taints %v once Ready, want the startup taints kept: %v", got, withStartup)
	}
	f.clock.Step(4 * time.Second)
	f.step()
	if got := taints(); !slices.Equal(got, withStartup) {
		t.Fatalf("taints %v 4s after Ready, want the startup taints kept until 5s: %v", got, withStartup)
	}
	f.clock.Step(time.Second)
	f.step()
	if got := taints(); !slices.Equal(got, regular) {
		t.Fatalf("taints %v 5s after Ready, want only the regular ones: %v", got, regular)
	}

	// Karpenter's registration puts a missing startup taint back: the agent lifts it again.
	node := f.node(hostname)
	node.Spec.Taints = append(node.Spec.Taints, claim.Spec.StartupTaints[0])
	if err := f.kube.Update(f.ctx, node); err != nil {
		t.Fatal(err)
	}
	f.step()
	if got := taints(); !slices.Equal(got, regular) {
		t.Fatalf("taints %v, want the startup taint put back lifted again: %v", got, regular)
	}
	before := f.node(hostname).ResourceVersion
	f.step()
	if after := f.node(hostname).ResourceVersion; after != before {
		t.Errorf("a step with nothing to lift wrote the node (%s → %s)", before, after)
	}
}

func TestKubeletRun(t *testing.T) {
	f := newKubeletFixture(t, "run", Options{}, KubeletOptions{Interval: time.Second})
	if _, err := f.cloud.Create(f.ctx, f.claim("run")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error)
	go func() { done <- f.kubelet.Run(ctx) }()
	hostname := f.cloud.Instances()[0].Hostname
	deadline := time.Now().Add(30 * time.Second)
	for f.node(hostname) == nil {
		if time.Now().After(deadline) {
			t.Fatal("Run never registered the node")
		}
		f.clock.Step(time.Second) // let the virtual ticker fire
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v after cancellation", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancellation")
	}
}

// TestKubeletStartsPodsInTheBackground: with PodWorkers, Step hands the pods bound to a Ready
// node over to background writes and returns; they turn Running soon after, each once.
func TestKubeletStartsPodsInTheBackground(t *testing.T) {
	f := newKubeletFixture(t, "workers", Options{}, KubeletOptions{MarkPodsRunning: true, PodWorkers: 4})
	if _, err := f.cloud.Create(f.ctx, f.claim("workers")); err != nil {
		t.Fatal(err)
	}
	f.step()
	hostname := f.cloud.Instances()[0].Hostname
	if node := f.node(hostname); node == nil || nodeReady(node) != corev1.ConditionTrue {
		t.Fatalf("node %s not registered Ready", hostname)
	}
	for i := range 20 {
		f.create(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "bg-" + strconv.Itoa(i), Namespace: "default"},
			Spec:       corev1.PodSpec{NodeName: hostname, Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
		})
	}
	// The cache behind the client may show the pods a moment late: step until it has, and
	// until every write has landed.
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.step()
		var pods corev1.PodList
		if err := f.kube.List(f.ctx, &pods, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, pod := range pods.Items {
			if pod.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if running == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 20 pods Running 30 s after they were bound", running)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
