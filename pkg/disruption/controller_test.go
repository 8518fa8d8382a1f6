package disruption_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/disruption"
	"github.com/openkarpenter/karpenter/pkg/expiration"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
	"github.com/openkarpenter/karpenter/pkg/test/metricstest"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

type fixture struct {
	t          *testing.T
	clock      *clocktesting.FakeClock
	controller *disruption.Controller
	cluster    *state.Cluster
	// zone is where node puts its nodes; empty means us-east-1a.
	zone     string
	recorder *record.FakeRecorder
	recorded []string // events drained from recorder
	cloud    *sim.Cloud
	commands []*disruption.Command
}

func newFixture(t *testing.T, np *karpv1.NodePool) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{t: t, clock: clocktesting.NewFakeClock(time.Now().Truncate(time.Second)), recorder: record.NewFakeRecorder(1000)}
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			Role: "KarpenterNodeRole", AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
		},
	}
	f.create(nc)
	f.create(np)
	np.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.cloud, err = sim.New(sim.Options{Clock: f.clock, NodeClasses: env.Client, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	f.cluster = state.NewCluster(env.Client, f.clock)
	f.controller = disruption.NewController(env.Client, f.cluster, f.cloud, nil, f.clock, f.recorder, disruption.Options{})
	f.controller.Observe(func(c *disruption.Command) { f.commands = append(f.commands, c) })
	t.Cleanup(func() { cleanup(t) })
	return f
}

func (f *fixture) create(obj client.Object) {
	f.t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		f.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func cleanup(t *testing.T) {
	env.Purge(t, []client.ObjectList{&karpv1.NodeClaimList{}, &corev1.NodeList{}, &karpv1.NodePoolList{}, &awsv1.EC2NodeClassList{}}, "default")
}

// node creates a Node and an Initialized NodeClaim of np of the given EC2 type, and binds
// pods to it.
func (f *fixture) node(np *karpv1.NodePool, name, instanceType string, initializedAgo time.Duration, pods ...*corev1.Pod) *karpv1.NodeClaim {
	f.t.Helper()
	ctx := context.Background()
	var it = f.instanceType(np, instanceType)
	zone := cmp.Or(f.zone, "us-east-1a")
	labels := map[string]string{
		karpv1.NodePoolLabelKey: np.Name, corev1.LabelInstanceTypeStable: instanceType, karpv1.CapacityTypeLabelKey: "on-demand",
		corev1.LabelTopologyZone: zone, corev1.LabelArchStable: "amd64", corev1.LabelHostname: name,
		awsv1.LabelInstanceFamily: "m5",
	}
	for k, v := range np.Spec.Template.Labels {
		labels[k] = v
	}
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{
			karpv1.NodePoolHashAnnotationKey: nodepool.Hash(np), karpv1.NodePoolHashVersionAnnotationKey: nodepool.HashVersion,
		}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}}},
			NodeClassRef: np.Spec.Template.Spec.NodeClassRef,
		},
	}
	f.create(claim)
	claim.Status = karpv1.NodeClaimStatus{NodeName: name, ProviderID: "sim:///" + zone + "/" + name, Capacity: it.Capacity, Allocatable: it.Allocatable(),
		Conditions: []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized",
			LastTransitionTime: metav1.NewTime(f.clock.Now().Add(-initializedAgo))}}}
	if err := env.Client.Status().Update(ctx, claim); err != nil {
		f.t.Fatal(err)
	}
	node := builders.Node(name, labels, it.Allocatable())
	node.Spec.ProviderID = claim.Status.ProviderID
	status := node.Status
	f.create(node)
	node.Status = status
	if err := env.Client.Status().Update(ctx, node); err != nil {
		f.t.Fatal(err)
	}
	for _, p := range pods {
		p.UID = ""
		p.Spec.NodeName = name
		p.Status = corev1.PodStatus{}
		f.create(p)
	}
	return claim
}

func (f *fixture) instanceType(np *karpv1.NodePool, name string) *cloudprovider.InstanceType {
	its, err := f.cloud.GetInstanceTypes(context.Background(), np)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, it := range its {
		if it.Name == name {
			return it
		}
	}
	f.t.Fatalf("no instance type %s", name)
	return nil
}

// step advances the clock and runs a pass.
func (f *fixture) step(d time.Duration) {
	f.t.Helper()
	f.clock.Step(d)
	if err := f.controller.Step(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

// updatePool changes the NodePool on the API server as mutate says.
func (f *fixture) updatePool(name string, mutate func(*karpv1.NodePool)) {
	f.t.Helper()
	var cur karpv1.NodePool
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &cur); err != nil {
		f.t.Fatal(err)
	}
	mutate(&cur)
	if err := env.Client.Update(context.Background(), &cur); err != nil {
		f.t.Fatal(err)
	}
}

func claimGone(t *testing.T, name string) bool {
	t.Helper()
	var claim karpv1.NodeClaim
	err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &claim)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return claim.DeletionTimestamp != nil
}

func TestEmptyNodeDeletedAfterConsolidateAfter(t *testing.T) {
	np := builders.NodePool(m5Pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("1m")
	})
	f := newFixture(t, np)
	f.node(np, "busy", "m5.xlarge", time.Hour, builders.Pod(builders.PodOptions{CPU: "3", Memory: "4Gi"}))
	f.node(np, "empty", "m5.xlarge", 0)
	f.step(30 * time.Second)
	f.step(10 * time.Second)
	if claimGone(t, "empty") || f.controller.Pending() != nil {
		t.Fatal("empty node acted on before consolidateAfter")
	}
	var claim karpv1.NodeClaim
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "empty"}, &claim); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeConsolidatable); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Consolidatable = %+v, want False", c)
	}
	f.step(30 * time.Second) // consolidateAfter passed: pending validation
	if f.controller.Pending() == nil || claimGone(t, "empty") {
		t.Fatal("no pending emptiness command")
	}
	f.step(10 * time.Second)
	if claimGone(t, "empty") {
		t.Fatal("deleted before the validation delay")
	}
	f.step(10 * time.Second)
	if !claimGone(t, "empty") || claimGone(t, "busy") {
		t.Fatal("empty node not deleted after validation")
	}
}

func TestNeverConsolidateKeepsEmptyNode(t *testing.T) {
	np := builders.NodePool(m5Pool, func(np *karpv1.NodePool) { np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration() })
	f := newFixture(t, np)
	f.node(np, "empty", "m5.xlarge", time.Hour)
	for i := 0; i < 10; i++ {
		f.step(time.Minute)
	}
	if claimGone(t, "empty") || len(f.commands) != 0 {
		t.Fatal("empty node deleted with consolidateAfter Never")
	}
}

func TestUnderutilizedConsolidatedAndReplaced(t *testing.T) {
	np := builders.NodePool(m5Pool)
	f := newFixture(t, np)
	f.node(np, "big", "m5.4xlarge", time.Hour, builders.Pod(builders.PodOptions{CPU: "1", Memory: "1Gi"}))
	decisions := metrics.VoluntaryDisruptionDecisionsByNodePoolTotal.WithLabelValues(np.Name, metrics.DecisionReplace, "underutilized", metrics.ConsolidationTypeSingle)
	podsDisrupted := metrics.PodsDisruptionInitiatedTotal.WithLabelValues("underutilized", np.Name, "on-demand", "when_empty_or_underutilized", metrics.TerminationModeGraceful)
	decisionsBefore, podsBefore := testutil.ToFloat64(decisions), testutil.ToFloat64(podsDisrupted)
	evaluationsBefore := metricstest.Sum(metricstest.Collected(t, metrics.VoluntaryDisruptionEvaluationDurationSeconds, nil))
	f.step(10 * time.Second)
	f.step(20 * time.Second)
	if len(f.commands) != 1 || len(f.commands[0].Replacements) != 1 {
		t.Fatalf("commands = %d, want one replacement", len(f.commands))
	}
	msg := f.commands[0].Message()
	t.Log(msg)
	var claims karpv1.NodeClaimList
	if err := env.Client.List(context.Background(), &claims); err != nil {
		t.Fatal(err)
	}
	var replacement *karpv1.NodeClaim
	for i := range claims.Items {
		if claims.Items[i].Name != "big" {
			replacement = &claims.Items[i]
		}
	}
	if replacement == nil {
		t.Fatal("no replacement claim")
	}
	f.step(10 * time.Second)
	if claimGone(t, "big") {
		t.Fatal("candidate deleted before its replacement initialized")
	}
	replacement.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(context.Background(), replacement); err != nil {
		t.Fatal(err)
	}
	f.step(10 * time.Second)
	if !claimGone(t, "big") {
		t.Fatal("candidate not deleted after its replacement initialized")
	}
	// Karpenter's events: the replacement launching, the candidate's Node and NodeClaim disrupted.
	f.expectEvent("Normal DisruptionLaunching", "Launching NodeClaim: Underutilized")
	f.expectEvent("Normal DisruptionTerminating", "Disrupting Node: Underutilized")
	f.expectEvent("Normal DisruptionTerminating", "Disrupting NodeClaim: Underutilized")
	if got := testutil.ToFloat64(decisions) - decisionsBefore; got != 1 {
		t.Errorf("karpenter_voluntary_disruption_decisions_by_nodepool_total rose by %v, want 1", got)
	}
	if got := testutil.ToFloat64(podsDisrupted) - podsBefore; got != 1 {
		t.Errorf("karpenter_pods_disruption_initiated_total rose by %v, want the node's one pod", got)
	}
	if metricstest.Sum(metricstest.Collected(t, metrics.VoluntaryDisruptionEvaluationDurationSeconds, nil)) <= evaluationsBefore {
		t.Error("no disruption method evaluation observed")
	}
}

// TestConsolidationFailsValidation: a consolidation waiting out its validation delay that is not
// decided again (its pod became do-not-disrupt) is dropped and counted as a failed validation.
func TestConsolidationFailsValidation(t *testing.T) {
	np := builders.NodePool(m5Pool)
	f := newFixture(t, np)
	pod := builders.Pod(builders.PodOptions{CPU: "1", Memory: "1Gi"})
	f.node(np, "big", "m5.4xlarge", time.Hour, pod)
	failed := metrics.VoluntaryDisruptionFailedValidationsTotal.WithLabelValues(metrics.ConsolidationTypeSingle)
	before := testutil.ToFloat64(failed)
	f.step(10 * time.Second) // decided, waiting for validation
	stored := &corev1.Pod{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), stored); err != nil {
		t.Fatal(err)
	}
	stored.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	if err := env.Client.Update(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	f.step(20 * time.Second)
	if len(f.commands) != 0 {
		t.Fatalf("%d commands carried out, want none", len(f.commands))
	}
	if got := testutil.ToFloat64(failed) - before; got != 1 {
		t.Errorf("karpenter_voluntary_disruption_failed_validations_total rose by %v, want 1", got)
	}
}

func TestDriftReplacesOnlyOnTemplateChange(t *testing.T) {
	np := builders.NodePool(m5Pool)
	f := newFixture(t, np)
	f.node(np, "a", "m5.xlarge", time.Hour, builders.Pod(builders.PodOptions{CPU: "3", Memory: "8Gi"}))
	f.node(np, "b", "m5.xlarge", time.Hour, builders.Pod(builders.PodOptions{CPU: "3", Memory: "8Gi"}))
	ctx := context.Background()
	f.updatePool(np.Name, func(np *karpv1.NodePool) {
		w := int32(10)
		np.Spec.Weight = &w
		np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: builders.Resources("cpu", "1000")[corev1.ResourceCPU]}
	})
	for i := 0; i < 3; i++ {
		f.step(10 * time.Second)
	}
	if len(f.commands) != 0 {
		t.Fatalf("weight/limits change: %s", f.commands[0].Message())
	}
	if got := f.controller.PassInterval(); got != disruption.DefaultPollInterval {
		t.Errorf("nothing in flight: next pass in %s, want the poll interval %s", got, disruption.DefaultPollInterval)
	}
	f.updatePool(np.Name, func(np *karpv1.NodePool) {
		np.Spec.Template.Labels = map[string]string{"team": "b"}
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1"}}
	})
	f.step(10 * time.Second)
	if len(f.commands) != 1 || f.commands[0].Method != disruption.MethodDrift || len(f.commands[0].Candidates) != 1 {
		t.Fatalf("commands = %d, want one drift replacement", len(f.commands))
	}
	// Its candidate goes as soon as the replacement is initialized, not a poll later.
	if got := f.controller.PassInterval(); got != disruption.DefaultFollowInterval {
		t.Errorf("a command in flight: next pass in %s, want the follow interval %s", got, disruption.DefaultFollowInterval)
	}
	var claim karpv1.NodeClaim
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "b"}, &claim); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(claim.Status.Conditions, karpv1.ConditionTypeDrifted) {
		t.Errorf("node b has no Drifted condition: %+v", claim.Status.Conditions)
	}
}

// events drains the recorder: every Event recorded so far, as "Type Reason Message".
func (f *fixture) events() []string {
	for len(f.recorder.Events) > 0 {
		f.recorded = append(f.recorded, <-f.recorder.Events)
	}
	return f.recorded
}

// expectEvent fails unless an Event recorded so far has the prefix (type and reason) and
// contains the text.
func (f *fixture) expectEvent(prefix, text string) {
	f.t.Helper()
	for _, e := range f.events() {
		if strings.HasPrefix(e, prefix) && strings.Contains(e, text) {
			return
		}
	}
	f.t.Errorf("no event %q containing %q among %q", prefix, text, f.recorded)
}

// TestReplacementFollowsTheBoundVolume checks the controller reads a moved pod's volumes: the
// pod's claim is bound to a volume in us-east-1b, so the replacement must launch there.
func TestReplacementFollowsTheBoundVolume(t *testing.T) {
	np := builders.NodePool(m5Pool)
	f := newFixture(t, np)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-1"}},
			ClaimRef:               &corev1.ObjectReference{Namespace: "default", Name: "data"},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1b"}},
			}}}}},
		},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "data",
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
	f.create(pv)
	f.create(pvc)
	t.Cleanup(func() {
		env.Purge(t, []client.ObjectList{&corev1.PersistentVolumeClaimList{}, &corev1.PersistentVolumeList{}})
	})
	p := builders.Pod(builders.PodOptions{CPU: "1", Memory: "1Gi"})
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	f.node(np, "big", "m5.4xlarge", time.Hour, p)
	f.step(10 * time.Second)
	f.step(20 * time.Second)
	if len(f.commands) != 1 || len(f.commands[0].Replacements) != 1 {
		t.Fatalf("commands = %d, want one replacement", len(f.commands))
	}
	zones, ok := f.commands[0].Replacements[0].Claim.Requirements.Get(corev1.LabelTopologyZone)
	if !ok || !zones.Has("us-east-1b") || zones.Has("us-east-1a") || zones.Has("us-east-1c") {
		t.Errorf("replacement zones %v: the pod's volume is in us-east-1b only", zones)
	}
}

// nextMonday returns 10:00 UTC on the first Monday at least a week from now, so claims the API
// server stamps with the real time are older than the fake clock.
func nextMonday() time.Time {
	t := time.Now().UTC().AddDate(0, 0, 7)
	for t.Weekday() != time.Monday {
		t = t.AddDate(0, 0, 1)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 10, 0, 0, 0, time.UTC)
}

func TestBudgetScheduleBlocksConsolidationDuringItsWindow(t *testing.T) {
	schedule := "0 9 * * mon-fri"
	np := builders.NodePool(m5Pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}, {Nodes: "0", Schedule: &schedule, Duration: &metav1.Duration{Duration: 8 * time.Hour}}}
	})
	f := newFixture(t, np)
	f.clock.SetTime(nextMonday()) // inside the 09:00-17:00 window
	f.node(np, "busy", "m5.xlarge", time.Hour, builders.Pod(builders.PodOptions{CPU: "3", Memory: "4Gi"}))
	f.node(np, "empty", "m5.xlarge", time.Hour)
	for i := 0; i < 6; i++ {
		f.step(10 * time.Minute)
	}
	if len(f.commands) != 0 || claimGone(t, "empty") {
		t.Fatalf("consolidated at %s, inside the budget's window", f.clock.Now().Format(time.Kitchen))
	}
	f.expectEvent("Normal DisruptionBlocked", "No allowed disruptions for disruption reason Empty due to blocking budget")
	// The controller knows when the window ends, so a driver of virtual time can wake it then.
	if end := f.clock.Now().Truncate(24 * time.Hour).Add(17 * time.Hour); !f.controller.NextWakeup().Equal(end) {
		t.Errorf("NextWakeup %s, want the window's end %s", f.controller.NextWakeup(), end)
	}
	f.clock.SetTime(f.clock.Now().Truncate(24 * time.Hour).Add(17 * time.Hour)) // the window ends
	f.step(10 * time.Second)
	f.step(20 * time.Second)
	if len(f.commands) != 1 || !claimGone(t, "empty") || claimGone(t, "busy") {
		t.Fatalf("commands = %d at %s: the empty node should go once the window closes", len(f.commands), f.clock.Now().Format(time.Kitchen))
	}
}

// TestExpiredClaimLeftToExpiration: disruption takes no command for an expired node, not even
// one that ignores budgets: package expiration deletes it, as Karpenter v1.15's
// nodeclaim.expiration controller does.
func TestExpiredClaimLeftToExpiration(t *testing.T) {
	np := builders.NodePool(m5Pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
		np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration()
	})
	f := newFixture(t, np)
	f.clock.SetTime(nextMonday())
	f.node(np, "old", "m5.xlarge", time.Hour, builders.Pod(builders.PodOptions{CPU: "3", Memory: "4Gi"}))
	f.clock.Step(expiration.DefaultExpireAfter) // the claim's expireAfter defaults to 720h
	f.step(10 * time.Second)
	if len(f.commands) != 0 || claimGone(t, "old") {
		t.Fatalf("commands = %d: expiry is not disruption's", len(f.commands))
	}
}

// A node consolidation can neither delete nor replace says why (Unconsolidatable on the Node and
// NodeClaim), and a node a do-not-disrupt pod protects says so (DisruptionBlocked on both).
func TestNodesSayWhyTheyStay(t *testing.T) {
	np := builders.NodePool(m5Pool)
	f := newFixture(t, np)
	f.node(np, "cheapest", "m5.large", time.Hour, builders.Pod(builders.PodOptions{CPU: "1", Memory: "1Gi"}))
	protected := builders.Pod(builders.PodOptions{CPU: "1", Memory: "1Gi"})
	protected.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	f.node(np, "protected", "m5.4xlarge", time.Hour, protected)
	f.step(10 * time.Second)
	f.step(20 * time.Second)
	if len(f.commands) != 0 {
		t.Fatalf("commands %v", f.commands[0].Message())
	}
	f.expectEvent("Normal Unconsolidatable", "Can't replace with a cheaper node")
	f.expectEvent("Normal DisruptionBlocked", `Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=default/`)
	var unconsolidatable, blocked int
	for _, e := range f.events() {
		switch {
		case strings.HasPrefix(e, "Normal Unconsolidatable"):
			unconsolidatable++
		case strings.HasPrefix(e, "Normal DisruptionBlocked"):
			blocked++
		}
	}
	if unconsolidatable != 2 || blocked != 2 {
		t.Errorf("%d Unconsolidatable and %d DisruptionBlocked events, want 2 of each (Node and NodeClaim), said once: %q", unconsolidatable, blocked, f.recorded)
	}
}

// TestGoneReplacementAbandonsTheCommand: when a consolidation's replacement NodeClaim goes before
// it initializes, the command is abandoned (the candidate stays) and the failed replacement is
// counted in karpenter_voluntary_disruption_queue_failures_total.
func TestGoneReplacementAbandonsTheCommand(t *testing.T) {
	np := builders.NodePool(m5Pool)
	f := newFixture(t, np)
	f.node(np, "big", "m5.4xlarge", time.Hour, builders.Pod(builders.PodOptions{CPU: "1", Memory: "1Gi"}))
	failures := metrics.VoluntaryDisruptionQueueFailuresTotal.WithLabelValues(metrics.ConsolidationTypeSingle, metrics.DecisionReplace, "underutilized")
	before := testutil.ToFloat64(failures)
	f.step(10 * time.Second)
	f.step(20 * time.Second)
	if len(f.commands) != 1 || len(f.commands[0].Replacements) != 1 {
		t.Fatalf("commands = %d, want one replacement", len(f.commands))
	}
	var claims karpv1.NodeClaimList
	if err := env.Client.List(context.Background(), &claims); err != nil {
		t.Fatal(err)
	}
	for i := range claims.Items {
		if claims.Items[i].Name != "big" {
			if err := env.Client.Delete(context.Background(), &claims.Items[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.controller.Step(context.Background()); err == nil {
		t.Error("following a command whose replacement is gone reported no error")
	}
	if claimGone(t, "big") {
		t.Fatal("the candidate was deleted although its replacement is gone")
	}
	if got := testutil.ToFloat64(failures) - before; got != 1 {
		t.Errorf("karpenter_voluntary_disruption_queue_failures_total rose by %v, want 1", got)
	}
}

// concurrentDrift is a cloud whose drift checks each wait until want of them run at once (or
// a time limit passes), and which records the most that ever ran at once.
type concurrentDrift struct {
	cloudprovider.CloudProvider
	want int

	mu                sync.Mutex
	running, mostSeen int
	all               chan struct{}
}

func (c *concurrentDrift) IsDrifted(context.Context, *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	c.mu.Lock()
	c.running++
	c.mostSeen = max(c.mostSeen, c.running)
	if c.running == c.want {
		close(c.all)
	}
	c.mu.Unlock()
	select {
	case <-c.all:
	case <-time.After(5 * time.Second):
	}
	c.mu.Lock()
	c.running--
	c.mu.Unlock()
	return "", nil
}

// TestDriftChecksRunConcurrently: a pass asks the cloud about every node's drift at once, not
// one node after another (a cloud that batches its calls answers each after a window).
func TestDriftChecksRunConcurrently(t *testing.T) {
	np := builders.NodePool(m5Pool)
	f := newFixture(t, np)
	for _, name := range []string{"a", "b", "c"} {
		f.node(np, name, "m5.xlarge", time.Hour, builders.Pod(builders.PodOptions{CPU: "3", Memory: "8Gi"}))
	}
	cloud := &concurrentDrift{CloudProvider: f.cloud, want: 3, all: make(chan struct{})}
	f.controller = disruption.NewController(env.Client, state.NewCluster(env.Client, f.clock), cloud, nil, f.clock, f.recorder, disruption.Options{})
	f.step(10 * time.Second)
	if cloud.mostSeen != 3 {
		t.Fatalf("at most %d drift checks ran at once, want all 3", cloud.mostSeen)
	}
}

// m5Pool is the NodePool of the controller tests: on-demand m5 on amd64, every node
// disruptable at once.
var m5Pool = builders.NodePoolOptions{
	Budgets: []karpv1.Budget{{Nodes: "100%"}},
	Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
		builders.Requirement(awsv1.LabelInstanceFamily, corev1.NodeSelectorOpIn, "m5"),
		builders.Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
		builders.Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand"),
	},
}

// TestPackingMeasuredAndServed: a pass measures the fleet's packing (a m5.4xlarge for one
// one-core pod is far from the bound) and serves it as the packing gauges, the fleet's under
// nodepool "" and the NodePool's under its name; it is measured again only a packing interval
// later.
func TestPackingMeasuredAndServed(t *testing.T) {
	np := builders.NodePool(m5Pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration() // the fleet stays as it is
	})
	f := newFixture(t, np)
	f.node(np, "big", "m5.4xlarge", time.Hour, builders.Pod(builders.PodOptions{CPU: "1", Memory: "1Gi"}))
	if f.controller.Packing() != nil {
		t.Fatal("a packing before any pass")
	}
	f.step(10 * time.Second)
	p := f.controller.Packing()
	if p == nil || p.Nodes != 1 || p.Bound <= 0 || p.Ratio() < 4 {
		t.Fatalf("packing %+v, want one node several times its pod's bound", p)
	}
	gauge := func(g prometheus.Collector, pool string) float64 {
		t.Helper()
		s := metricstest.Collected(t, g, map[string]string{"nodepool": pool})
		if len(s) != 1 {
			t.Fatalf("%d series for nodepool %q", len(s), pool)
		}
		return s[0].GetGauge().GetValue()
	}
	if got := gauge(metrics.ClusterPackingRatio, ""); got != p.Ratio() {
		t.Errorf("karpenter_cluster_packing_ratio = %v, want %v", got, p.Ratio())
	}
	if got := gauge(metrics.ClusterPackingRatio, np.Name); got != p.Ratio() {
		t.Errorf("karpenter_cluster_packing_ratio{nodepool=%q} = %v, want %v", np.Name, got, p.Ratio())
	}
	if got := gauge(metrics.ClusterPackingBound, ""); got != p.Bound {
		t.Errorf("karpenter_cluster_packing_bound_dollars_per_hour = %v, want %v", got, p.Bound)
	}
	if got := gauge(metrics.ClusterRepackedCost, ""); got != p.Repacked || got <= 0 {
		t.Errorf("karpenter_cluster_repacked_cost_dollars_per_hour = %v, want %v", got, p.Repacked)
	}
	f.step(10 * time.Second)
	if f.controller.Packing() != p {
		t.Error("measured again within the packing interval")
	}
	f.step(disruption.DefaultPackingInterval)
	if f.controller.Packing() == p {
		t.Error("not measured again after the packing interval")
	}
}

// TestConsolidationEvents: a replacing consolidation announces itself on the node and its claim
// (ConsolidationCandidate, with the command and its savings) when first decided; one that fails
// validation says why (ConsolidationRejected, Karpenter's category: here churn, the node having
// become do-not-disrupt meanwhile), as Karpenter v1.15.0's consolidation.go and
// singlenodeconsolidation.go record them (disruption/events ConsolidationCandidate,
// ConsolidationRejected).
func TestConsolidationEvents(t *testing.T) {
	np := builders.NodePool(m5Pool)
	f := newFixture(t, np)
	claim := f.node(np, "big", "m5.4xlarge", time.Hour, builders.Pod(builders.PodOptions{CPU: "1", Memory: "1Gi"}))
	f.step(10 * time.Second)
	f.expectEvent("Normal ConsolidationCandidate", "Consolidation candidate: Underutilized: replace: nodepools=["+np.Name+"]: [big] -> [1 replacement] (savings: $")
	stored := &karpv1.NodeClaim{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(claim), stored); err != nil {
		t.Fatal(err)
	}
	stored.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	if err := env.Client.Update(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	f.step(20 * time.Second)
	if len(f.commands) != 0 {
		t.Fatalf("%s carried out on a do-not-disrupt node", f.commands[0].Message())
	}
	f.expectEvent("Normal ConsolidationRejected", "Consolidation rejected: Underutilized: replace: nodepools=["+np.Name+"]: [big] -> [1 replacement] (savings: $")
	f.expectEvent("Normal ConsolidationRejected", "reason: churn")
}

// TestBalancedApprovalEvent: a consolidation the Balanced policy approves says its score on the
// node (ConsolidationApproved), as Karpenter v1.15.0's balanced evaluator records it.
func TestBalancedApprovalEvent(t *testing.T) {
	np := builders.NodePool(m5Pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyBalanced
	})
	f := newFixture(t, np)
	f.node(np, "big", "m5.4xlarge", time.Hour, builders.Pod(builders.PodOptions{CPU: "1", Memory: "1Gi"}))
	f.step(10 * time.Second)
	f.expectEvent("Normal ConsolidationApproved", ">= threshold 0.50 (k: 2, savings ")
}

// TestCommandsRunConcurrently: a second NodePool's drift starts while the first's replacement is
// still launching, as Karpenter's orchestration queue holds many commands at once, each
// NodePool's budget bounding its own (disruption/queue.go); within one NodePool the budget of
// one node still holds the second back. Before, one command at a time.
func TestCommandsRunConcurrently(t *testing.T) {
	pool := func(name string) *karpv1.NodePool {
		return builders.NodePool(m5Pool, func(np *karpv1.NodePool) {
			np.Name = name
			np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1"}}
		})
	}
	a, b := pool("pool-a"), pool("pool-b")
	f := newFixture(t, a)
	f.create(b)
	b.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	for _, n := range []struct {
		np   *karpv1.NodePool
		name string
	}{{a, "a1"}, {a, "a2"}, {b, "b1"}} {
		f.node(n.np, n.name, "m5.xlarge", time.Hour, builders.Pod(builders.PodOptions{CPU: "3", Memory: "8Gi"}))
	}
	// A template label every node lacks: they all drift.
	for _, np := range []*karpv1.NodePool{a, b} {
		var cur karpv1.NodePool
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: np.Name}, &cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.Template.Labels = map[string]string{"team": "b"}
		if err := env.Client.Update(context.Background(), &cur); err != nil {
			t.Fatal(err)
		}
	}
	f.step(10 * time.Second)
	f.step(10 * time.Second)
	f.step(10 * time.Second)
	pools := map[string]int{}
	for _, c := range f.commands {
		if c.Method != disruption.MethodDrift {
			t.Errorf("command %s, want drift", c.Message())
		}
		pools[c.Candidates[0].NodePool.Name]++
	}
	if pools["pool-a"] != 1 || pools["pool-b"] != 1 {
		t.Errorf("drift commands per NodePool %v while the first replacements launch, want one each (budget of one node each)", pools)
	}
}

// TestSchedulerConfigKeepsDefaultSpread: two m5.xlarge nodes in two zones hold one small pod
// each of a ReplicaSet. Consolidation replaces both with one m5.large, unless the
// kube-scheduler's default zonal constraint (--scheduler-config) holds the ReplicaSet's pods
// one per zone: then one node at a time is replaced by an m5.large in its zone.
func TestSchedulerConfigKeepsDefaultSpread(t *testing.T) {
	for _, defaults := range []bool{false, true} {
		t.Run(fmt.Sprintf("defaults=%v", defaults), func(t *testing.T) {
			np := builders.NodePool(m5Pool)
			f := newFixture(t, np)
			if defaults {
				var err error
				if f.cluster.DefaultConstraints, err = state.ParseSchedulerConfig("podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]}"); err != nil {
					t.Fatal(err)
				}
			}
			yes := true
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: appsv1.ReplicaSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause"}}}}}}
			f.create(rs)
			t.Cleanup(func() {
				env.Purge(t, []client.ObjectList{&appsv1.ReplicaSetList{}}, "default")
			})
			zones := map[string]string{}
			for i, zone := range []string{"us-east-1a", "us-east-1b"} {
				pod := builders.Pod(builders.PodOptions{Name: fmt.Sprintf("web-%d", i), CPU: "500m", Memory: "1Gi", Labels: map[string]string{"app": "web"}})
				pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}
				f.zone = zone
				name := fmt.Sprintf("node-%d", i)
				zones[name] = zone
				f.node(np, name, "m5.xlarge", time.Hour, pod)
			}
			f.step(10 * time.Second)
			f.step(20 * time.Second)
			if len(f.commands) != 1 || len(f.commands[0].Replacements) != 1 {
				t.Fatalf("commands %d, want one with a replacement", len(f.commands))
			}
			cmd := f.commands[0]
			t.Log(cmd.Message())
			switch {
			case !defaults && len(cmd.Candidates) != 2:
				t.Errorf("without defaults, %s; want both nodes replaced by one", cmd.Message())
			case defaults && len(cmd.Candidates) != 1:
				t.Errorf("under the default zonal spread, %s; want one node replaced", cmd.Message())
			case defaults:
				zone, ok := cmd.Replacements[0].Claim.Requirements.Get(corev1.LabelTopologyZone)
				if want := zones[cmd.Candidates[0].Name()]; !ok || zone.Len() != 1 || !zone.Has(want) {
					t.Errorf("the replacement of %s may go to zones %v, want %s", cmd.Candidates[0].Name(), zone, want)
				}
			}
		})
	}
}
