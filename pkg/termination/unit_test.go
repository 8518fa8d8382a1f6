package termination

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openkarpenter/karpenter/pkg/apis"
	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/nodeclaim"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
)

func TestClassify(t *testing.T) {
	prio := func(p int32) *int32 { return &p }
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want group
	}{
		{"plain", corev1.Pod{}, groupNonCritical},
		{"succeeded", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, groupIgnored},
		{"failed", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, groupIgnored},
		{"daemonset", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet"}}}}, groupIgnored},
		{"replicaset", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet"}}}}, groupNonCritical},
		{"static", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "Node"}}}}, groupIgnored},
		{"mirror", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{mirrorPodAnnotationKey: "x"}}}, groupIgnored},
		{"tolerates exists", corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}, groupIgnored},
		{"tolerates key", corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}}, groupIgnored},
		{"tolerates other effect", corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}}}, groupNonCritical},
		{"cluster critical", corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "system-cluster-critical"}}, groupCritical},
		{"node critical", corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "system-node-critical"}}, groupCritical},
		{"critical priority", corev1.Pod{Spec: corev1.PodSpec{Priority: prio(criticalPriority)}}, groupCritical},
		{"high priority", corev1.Pod{Spec: corev1.PodSpec{Priority: prio(criticalPriority - 1)}}, groupNonCritical},
		{"critical daemonset", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet"}}}, Spec: corev1.PodSpec{PriorityClassName: "system-node-critical"}}, groupIgnored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(&tc.pod); got != tc.want {
				t.Errorf("classify = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestIsStuckTerminating(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *corev1.Pod {
		ts := metav1.NewTime(now.Add(d))
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &ts}}
	}
	if isStuckTerminating(&corev1.Pod{}, now, time.Minute) {
		t.Error("a pod not being deleted is stuck")
	}
	if isStuckTerminating(at(-30*time.Second), now, time.Minute) {
		t.Error("a pod 30s past its deletion timestamp is stuck")
	}
	if !isStuckTerminating(at(-2*time.Minute), now, time.Minute) {
		t.Error("a pod 2m past its deletion timestamp is not stuck")
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("zero options: %v", err)
	}
	for _, o := range []Options{{EvictionRetry: -1}, {DrainPoll: -1}, {StuckTerminatingTimeout: -1}, {MaxConcurrentReconciles: -1}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v validated", o)
		}
	}
}

// TestInMemoryClient drives termination as `karpenter simulate` does: Reconcile called directly
// on the in-memory cluster (whose eviction subresource computes budgets itself), on a virtual
// clock, without a manager or indexes.
func TestInMemoryClient(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	kube := memory.New(apis.NewScheme(), clk)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(kube.Create(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: awsv1.EC2NodeClassSpec{
		Role:                       "KarpenterNodeRole",
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@v20250101"}},
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "sim"}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "sim"}}},
	}}))
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "mem", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}},
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	must(kube.Create(ctx, claim))
	cloud, err := sim.New(sim.Options{Clock: clk, NodeClasses: kube, Catalog: testCatalog(t)})
	must(err)
	kubelet, err := sim.NewKubelet(cloud, kube, sim.KubeletOptions{MarkPodsRunning: true})
	must(err)
	lifecycle := nodeclaim.NewLifecycleController(kube, cloud, nil, clk, nil, nodeclaim.LifecycleOptions{})
	events := record.NewFakeRecorder(100)
	ctrl := NewController(kube, lifecycle, clk, events, Options{})
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(claim)}
	for range 3 {
		_, err := lifecycle.Reconcile(ctx, req)
		must(err)
		must(kubelet.Step(ctx))
	}
	must(kube.Get(ctx, req.NamespacedName, claim))
	node := claim.Status.NodeName
	if node == "" {
		t.Fatal("nodeclaim did not register")
	}

	zero := int64(0)
	for _, name := range []string{"web-0", "web-1"} {
		must(kube.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: &zero, Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		}))
	}
	must(kubelet.Step(ctx))
	minAvailable := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	must(kube.Create(ctx, pdb))
	must(kube.Delete(ctx, claim))

	run := func() reconcile.Result {
		t.Helper()
		res, err := ctrl.Reconcile(ctx, req)
		must(err)
		clk.Step(res.RequeueAfter)
		return res
	}
	// The budget lets one of the two go, then holds the other.
	run()
	run()
	pods := &corev1.PodList{}
	must(kube.List(ctx, pods, client.InNamespace("default")))
	if len(pods.Items) != 1 {
		t.Fatalf("%d pods left, want 1 held by the budget", len(pods.Items))
	}
	var blocked bool
	for len(events.Events) > 0 {
		if e := <-events.Events; strings.Contains(e, "Failed to drain node, evicting pod violates a PDB (Pod=default/web-1, PodDisruptionBudget=default/web)") {
			blocked = true
		}
	}
	if !blocked {
		t.Error("no FailedDraining event naming the budget")
	}

	// Without the budget the drain completes and the instance is terminated.
	must(kube.Delete(ctx, pdb))
	for range 10 {
		if err := kube.Get(ctx, req.NamespacedName, &karpv1.NodeClaim{}); err != nil {
			break
		}
		run()
		must(kubelet.Step(ctx))
	}
	if err := kube.Get(ctx, req.NamespacedName, &karpv1.NodeClaim{}); err == nil {
		t.Fatal("nodeclaim still exists")
	}
	for _, in := range cloud.Instances() {
		if in.State != sim.InstanceStateTerminated {
			t.Errorf("instance %s is %s", in.ProviderID, in.State)
		}
	}
}

func TestClaimsForNode(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	kube := memory.New(apis.NewScheme(), clk)
	ctx := context.Background()
	for _, c := range []*karpv1.NodeClaim{
		{ObjectMeta: metav1.ObjectMeta{Name: "by-name"}, Status: karpv1.NodeClaimStatus{NodeName: "n1"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "by-id"}, Status: karpv1.NodeClaimStatus{ProviderID: "sim:///z/i-1"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Status: karpv1.NodeClaimStatus{NodeName: "n2", ProviderID: "sim:///z/i-2"}},
	} {
		status := c.Status
		c.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
		c.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}}
		if err := kube.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		c.Status = status
		if err := kube.Status().Update(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	ctrl := NewController(kube, nil, clk, nil, Options{})
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", OwnerReferences: []metav1.OwnerReference{{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodeClaim", Name: "owner"}}},
		Spec:       corev1.NodeSpec{ProviderID: "sim:///z/i-1"},
	}
	var got []string
	for _, r := range ctrl.claimsForNode(ctx, node) {
		got = append(got, r.Name)
	}
	if want := "by-id,by-name,owner"; strings.Join(got, ",") != want {
		t.Errorf("claims %v, want %s", got, want)
	}
}
