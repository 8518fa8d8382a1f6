package provisioning_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/provisioning"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// fixture is a NodeClass and a Ready NodePool on the API server, the sim cloud and a provisioner.
type fixture struct {
	clock       *clocktesting.FakeClock
	cloud       *sim.Cloud
	cluster     *state.Cluster
	provisioner *provisioning.Provisioner
	recorder    record.EventRecorder
}

func newFixture(t *testing.T, pools ...*karpv1.NodePool) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	nodeClass := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			Role: "KarpenterNodeRole", AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
		},
	}
	create(t, nodeClass)
	nodeClass.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	for _, np := range pools {
		create(t, np)
		np.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
		if err := env.Client.Status().Update(ctx, np); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	f.cloud, err = sim.New(sim.Options{Clock: f.clock, NodeClasses: env.Client, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: env.Kube.CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	f.recorder = broadcaster.NewRecorder(env.Scheme, corev1.EventSource{Component: "karpenter"})
	f.cluster = state.NewCluster(env.Client, f.clock)
	f.provisioner = provisioning.NewProvisioner(env.Client, f.cluster, f.cloud,
		cloudprovider.NewUnavailableOfferings(f.clock, 0), f.recorder, f.clock, provisioning.Options{})
	t.Cleanup(func() { cleanup(t) })
	return f
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// pending creates pods and marks them unschedulable, as the kube-scheduler would.
func pending(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	for _, pod := range pods {
		status := pod.Status
		pod.UID = ""
		create(t, pod)
		pod.Status = status
		if err := env.Client.Status().Update(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	}
}

func cleanup(t *testing.T) {
	env.Purge(t, []client.ObjectList{&karpv1.NodeClaimList{}, &karpv1.NodePoolList{}, &awsv1.EC2NodeClassList{}}, "default")
}

// nodePool is the suite's NodePool: Karpenter's general-purpose requirements and reqs, and a
// team=a template label.
func nodePool(name string, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodePool {
	return builders.NodePool(builders.NodePoolOptions{
		Name:         name,
		Labels:       map[string]string{"team": "a"},
		Requirements: append(builders.GeneralPurposeRequirements(), reqs...),
	})
}

func listClaims(t *testing.T) []karpv1.NodeClaim {
	t.Helper()
	var claims karpv1.NodeClaimList
	if err := env.Client.List(context.Background(), &claims); err != nil {
		t.Fatal(err)
	}
	return claims.Items
}

func TestProvisionCreatesClaimsOnce(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	pods := append(builders.Pods(10, builders.PodOptions{Name: "web", CPU: "500m", Memory: "1Gi"}),
		builders.Pods(4, builders.PodOptions{Name: "api", CPU: "2", Memory: "4Gi",
			Spread: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}}, Labels: map[string]string{"app": "api"}})...)
	pending(t, pods...)
	decision, err := f.provisioner.Provision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(decision.Results.PodErrors) > 0 {
		t.Fatalf("unplaced: %v", decision.Results.PodErrors[0].Err)
	}
	claims := listClaims(t)
	if len(claims) == 0 || len(claims) != len(decision.Created) {
		t.Fatalf("%d claims on the server, %d created", len(claims), len(decision.Created))
	}
	zones := map[string]bool{}
	for _, c := range claims {
		if c.Labels[karpv1.NodePoolLabelKey] != "default" || c.Labels["team"] != "a" || len(c.OwnerReferences) != 1 || c.OwnerReferences[0].Kind != "NodePool" {
			t.Errorf("claim %s labels %v owners %v", c.Name, c.Labels, c.OwnerReferences)
		}
		reqs, err := scheduling.FromNodePoolRequirements(c.Spec.Requirements...)
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := reqs.Get(karpv1.NodePoolLabelKey); !ok || !r.Has("default") {
			t.Errorf("claim %s lacks the nodepool requirement: %s", c.Name, reqs)
		}
		if r, ok := reqs.Get(corev1.LabelInstanceTypeStable); !ok || r.Len() == 0 {
			t.Errorf("claim %s has no instance types: %s", c.Name, reqs)
		}
		if z, ok := reqs.Get(corev1.LabelTopologyZone); ok && z.Len() == 1 {
			zones[z.Values()[0]] = true
		}
		if c.Spec.Resources.Requests.Cpu().IsZero() {
			t.Errorf("claim %s has no requests", c.Name)
		}
	}
	if len(zones) < 3 {
		t.Errorf("spread pods landed in zones %v, want three", zones)
	}
	for _, pod := range pods {
		if _, ok := f.cluster.NominatedTo(pod.UID); !ok {
			t.Errorf("pod %s not nominated", pod.Name)
		}
	}
	// A second pass sees the pods nominated to claims it made: nothing more is launched.
	again, err := f.provisioner.Provision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Created) != 0 || len(listClaims(t)) != len(claims) {
		t.Fatalf("second pass created %d more claims", len(again.Created))
	}
	// A fresh cluster view (a restarted controller) has no nominations, but sees the claims'
	// requests as taken room: the pods are placed on the in-flight claims, still nothing launched.
	restarted := provisioning.NewProvisioner(env.Client, state.NewCluster(env.Client, f.clock), f.cloud, nil, nil, f.clock, provisioning.Options{})
	third, err := restarted.Provision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(third.Created) != 0 {
		t.Errorf("after a restart %d claims were created again", len(third.Created))
	}
}

func TestNodePoolNotReadyLaunchesNothing(t *testing.T) {
	f := newFixture(t)
	np := nodePool("unready")
	create(t, np)
	pending(t, builders.Pod(builders.PodOptions{Name: "waiting", CPU: "1"}))
	decision, err := f.provisioner.Provision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(decision.Created) != 0 || len(decision.Results.PodErrors) != 1 {
		t.Fatalf("created %d claims, %d errors; a NodePool that is not Ready must launch nothing", len(decision.Created), len(decision.Results.PodErrors))
	}
}

func TestUnschedulablePodGetsEvent(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	pod := builders.Pod(builders.PodOptions{Name: "s390x", CPU: "1", NodeSelector: map[string]string{corev1.LabelArchStable: "s390x"}})
	pending(t, pod)
	if _, err := f.provisioner.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	expectPodEvent(t, "s390x", corev1.EventTypeWarning, "FailedScheduling",
		"Failed to schedule pod, incompatible with every nodepool: nodepool default: requirement kubernetes.io/arch In [s390x] not compatible with kubernetes.io/arch In [amd64]")
}

// TestFailedSchedulingSaysWhichNodesRefused: a pod no existing node takes says how many nodes
// refused it and why (here the first stage that refuses: room), before why each NodePool
// cannot take it.
func TestFailedSchedulingSaysWhichNodesRefused(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	createNode(t, "sixteen-cpus")
	pod := builders.Pod(builders.PodOptions{Name: "big-s390x", CPU: "32", NodeSelector: map[string]string{corev1.LabelArchStable: "s390x"}})
	pending(t, pod)
	if _, err := f.provisioner.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	expectPodEvent(t, "big-s390x", corev1.EventTypeWarning, "FailedScheduling",
		"Failed to schedule pod, 1 node refused: 1 too little cpu; "+
			"incompatible with every nodepool: nodepool default: requirement kubernetes.io/arch In [s390x] not compatible with kubernetes.io/arch In [amd64]")
}

// TestNodePoolWithoutInstanceTypesGetsEvent: a NodePool whose requirements leave no instance
// type, or too few for their minValues, launches nothing and says so with Karpenter's
// NoCompatibleInstanceTypes Event; the pod says why in Karpenter's words.
func TestNodePoolWithoutInstanceTypesGetsEvent(t *testing.T) {
	f := newFixture(t,
		nodePool("nothing", karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"x9.huge"}}),
		// amd64 instance types of categories c, m and r come from two CPU makers only.
		nodePool("too-few", karpv1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceCPUManufacturer, Operator: corev1.NodeSelectorOpExists, MinValues: ptrTo(3)}))
	pending(t, builders.Pod(builders.PodOptions{Name: "stranded", CPU: "1"}))
	decision, err := f.provisioner.Provision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(decision.Created) != 0 {
		t.Fatalf("created %d claims, want none", len(decision.Created))
	}
	expectEvent(t, "NodePool", "nothing", corev1.EventTypeWarning, "NoCompatibleInstanceTypes", "NodePool requirements filtered out all compatible available instance types")
	expectEvent(t, "NodePool", "too-few", corev1.EventTypeWarning, "NoCompatibleInstanceTypes",
		"NodePool requirements filtered out all compatible available instance types due to minValues incompatibility")
	// The NodePools in the order they are tried: equal weights by name, descending.
	expectPodEvent(t, "stranded", corev1.EventTypeWarning, "FailedScheduling",
		"Failed to schedule pod, incompatible with every nodepool: nodepool too-few: minValues requirement is not met for label(s)")
}

// TestNominatedEventNamesTheClaim: a pod a new NodeClaim is launched for gets Karpenter's
// Nominated Event naming it.
func TestNominatedEventNamesTheClaim(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	pending(t, builders.Pod(builders.PodOptions{Name: "nominee", CPU: "1"}))
	decision, err := f.provisioner.Provision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(decision.Created) != 1 {
		t.Fatalf("created %d claims, want 1", len(decision.Created))
	}
	expectPodEvent(t, "nominee", corev1.EventTypeNormal, "Nominated", "Pod should schedule on: nodeclaim/"+decision.Created[0].Name)
}

// expectPodEvent waits for an Event on the pod of the default namespace with the type and reason
// whose message starts with want.
func expectPodEvent(t *testing.T, pod, eventType, reason, want string) {
	t.Helper()
	expectEvent(t, "Pod", pod, eventType, reason, want)
}

// expectEvent waits for an Event on the object of the kind and name (a pod of the default
// namespace, or a cluster-scoped object) with the type and reason whose message starts with
// want.
func expectEvent(t *testing.T, kind, name, eventType, reason, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, err := env.Kube.CoreV1().Events("").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			if e.Type == eventType && e.Reason == reason && strings.HasPrefix(e.Message, want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s %s event saying %q; events: %v", eventType, reason, want, fmt.Sprint(events.Items))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDeletedClaimReleasesItsPods: a NodeClaim deleted before the cache ever showed it (a
// launch that failed at once) no longer holds the pods nominated to it once the provisioner
// hears of the deletion; they are pending again and the next pass launches for them.
func TestDeletedClaimReleasesItsPods(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	ctx := context.Background()
	pods, claim := oneClaimFor(t, f, "ghost", 2)
	if err := env.Client.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	snap, err := f.cluster.SyncSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Pending) != 0 {
		t.Fatalf("%d pods pending while the created claim is assumed in flight, want 0", len(snap.Pending))
	}
	f.provisioner.ClaimDeleted(claim.Name)
	if snap, err = f.cluster.SyncSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if len(snap.Pending) != len(pods) {
		t.Errorf("%d pods pending after the claim's deletion, want %d", len(snap.Pending), len(pods))
	}
	again, err := f.provisioner.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Created) != 1 {
		t.Errorf("the next pass created %d claims for the released pods, want 1", len(again.Created))
	}
}

// A DaemonSet that runs on a NodePool's nodes takes its host ports there: a pod asking for the
// same port goes to a node of another NodePool, and never to a claim in flight that the
// daemonset will run on.
func TestDaemonSetHostPortsOnNewNodes(t *testing.T) {
	monitored := nodePool("monitored")
	monitored.Spec.Weight = ptrTo[int32](10)
	monitored.Spec.Template.Labels = map[string]string{"monitoring": "on"}
	f := newFixture(t, monitored, nodePool("plain"))
	ctx := context.Background()
	exporter := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "node-exporter", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "exporter"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "exporter"}},
				Spec: *builders.Pod(builders.PodOptions{Name: "exporter", CPU: "100m", Memory: "64Mi", HostPorts: []int32{9100},
					NodeSelector: map[string]string{"monitoring": "on"}}).Spec.DeepCopy(),
			},
		},
	}
	create(t, exporter)
	t.Cleanup(func() { _ = env.Client.Delete(ctx, exporter) })
	// The port-free pod launches a node of the heavier pool, where the exporter will run.
	pending(t, builders.Pod(builders.PodOptions{Name: "web", CPU: "1", Memory: "1Gi"}))
	first, err := f.provisioner.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Created) != 1 || first.Created[0].Labels[karpv1.NodePoolLabelKey] != "monitored" {
		t.Fatalf("the plain pod should get one monitored claim, got %d claims %v", len(first.Created), first.Results.PodErrors)
	}
	// A pod on the exporter's port fits neither that claim nor a new monitored node.
	pending(t, builders.Pod(builders.PodOptions{Name: "scraper", CPU: "100m", Memory: "64Mi", HostPorts: []int32{9100}}))
	second, err := f.provisioner.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Results.ExistingPlacements) != 0 || len(second.Created) != 1 || second.Created[0].Labels[karpv1.NodePoolLabelKey] != "plain" {
		t.Fatalf("the pod on port 9100 should get a plain claim: placements %v, created %d, errors %v",
			second.Results.ExistingPlacements, len(second.Created), second.Results.PodErrors)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestMinValuesRelaxedIsAnnotated: every NodeClaim the provisioner makes says whether its
// minValues were relaxed (karpenter.sh/nodeclaim-min-values-relaxed, as Karpenter's scheduler
// sets it); under BestEffort a NodePool asking for 3 instance families, for a pod that selects
// one, launches with minValues 1 and "true".
func TestMinValuesRelaxedIsAnnotated(t *testing.T) {
	three := 3
	families := builders.Requirement("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, "m6a", "c6a", "r6a")
	families.MinValues = &three
	f := newFixture(t, nodePool("relax", families))
	relaxing := provisioning.NewProvisioner(env.Client, f.cluster, f.cloud, nil, f.recorder, f.clock, provisioning.Options{MinValuesBestEffort: true})
	pending(t, builders.Pod(builders.PodOptions{Name: "relaxed", CPU: "500m", NodeSelector: map[string]string{"karpenter.k8s.aws/instance-family": "m6a"}}))
	decision, err := relaxing.Provision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(decision.Created) != 1 {
		t.Fatalf("%d claims created, want 1 (errors %v)", len(decision.Created), decision.Results.PodErrors)
	}
	claim := listClaims(t)[0]
	if got := claim.Annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey]; got != "true" {
		t.Errorf("annotation %s=%q, want true", karpv1.NodeClaimMinValuesRelaxedAnnotationKey, got)
	}
	for _, r := range claim.Spec.Requirements {
		if r.Key == "karpenter.k8s.aws/instance-family" && (r.MinValues == nil || *r.MinValues != 1) {
			t.Errorf("instance-family requirement %+v, want minValues 1", r)
		}
	}
}

// TestDeletingNodesPodsAreProvisionedFor: the pods of a node whose NodeClaim is deleting are
// placed beside the pending ones, so that their room launches while the node drains, as
// Karpenter's provisioner schedules the deleting nodes' CurrentlyReschedulablePods
// (pkg/controllers/provisioning/provisioner.go Schedule, v1.15.0); not those that will not move
// soon (a do-not-disrupt pod, one behind a PodDisruptionBudget that can never allow its
// eviction, a daemonset's). They are neither nominated nor reported.
func TestDeletingNodesPodsAreProvisionedFor(t *testing.T) {
	f := newFixture(t, nodePool("default"))
	ctx := context.Background()
	claim := builders.NodeClaim(builders.NodeClaimOptions{Name: "old", NodePool: "default",
		Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}}}},
		func(c *karpv1.NodeClaim) { c.Finalizers = []string{"test.karpenter.sh/keep"} })
	create(t, claim)
	claim.Status.NodeName = "old-node"
	if err := env.Client.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	node := builders.Node("old-node", map[string]string{karpv1.NodePoolLabelKey: "default"}, corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")})
	create(t, node)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	bound := func(name string, mutate func(*corev1.Pod)) {
		p := builders.Pod(builders.PodOptions{Name: name, CPU: "1", Memory: "1Gi", NodeName: "old-node"})
		mutate(p)
		create(t, p)
	}
	bound("movable", func(*corev1.Pod) {})
	bound("held", func(p *corev1.Pod) { p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"} })
	bound("blocked", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "blocked"} })
	bound("daemon", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "agent-uid"}}
	})
	zero := intstr.FromInt32(0)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "blocked", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "blocked"}}}}
	create(t, pdb)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pdb) })

	if d, err := f.provisioner.Provision(ctx); err != nil || len(d.Created) != 0 {
		t.Fatalf("before the deletion: created %d claims (%v), want none", len(d.Created), err)
	}
	if err := env.Client.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	d, err := f.provisioner.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Created) != 1 {
		t.Fatalf("created %d claims for the deleting node's movable pod, want 1", len(d.Created))
	}
	if cpu := d.Created[0].Spec.Resources.Requests[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("the claim requests %s CPU, want 1: only the movable pod moves soon", cpu.String())
	}
	if n := len(d.Results.PodErrors) + len(d.Results.ExistingPlacements) + len(d.Results.NewClaims[0].Pods); n != 0 {
		t.Errorf("%d deleting pods reported or nominated, want none", n)
	}
}
