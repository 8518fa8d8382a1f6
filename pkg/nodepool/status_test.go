package nodepool_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
)

// drainEvents returns the events recorded so far.
func drainEvents(recorder *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestStatusNodeClassLifecycle(t *testing.T) {
	const name = "status-lifecycle"
	clk := newClock()
	recorder := record.NewFakeRecorder(10)
	controller := nodepool.NewStatusController(env.Client, clk, recorder)
	createNodePool(t, name, name, nil)

	// The NodeClass does not exist yet.
	mustReconcile(t, controller, name)
	np := getNodePool(t, name)
	expectCondition(t, np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionFalse, nodepool.ReasonNodeClassNotFound, `EC2NodeClass "status-lifecycle" not found`)
	validated := expectCondition(t, np, karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, karpv1.ConditionTypeValidationSucceeded, "")
	ready := expectCondition(t, np, karpv1.ConditionTypeReady, metav1.ConditionFalse, nodepool.ReasonNodeClassNotFound, `EC2NodeClass "status-lifecycle" not found`)
	if !ready.LastTransitionTime.Time.Equal(epoch) || !validated.LastTransitionTime.Time.Equal(epoch) {
		t.Errorf("lastTransitionTime = %s and %s, want the clock's %s", ready.LastTransitionTime, validated.LastTransitionTime, epoch)
	}
	if nodepool.IsReady(np) {
		t.Error("IsReady = true without a NodeClass")
	}
	events := drainEvents(recorder)
	if len(events) != 1 || events[0] != `Warning NodeClassNotFound NodeClassReady is False: EC2NodeClass "status-lifecycle" not found` {
		t.Errorf("events = %q, want one NodeClassNotFound warning", events)
	}

	// Reconciling again changes nothing: no write, no event.
	rv := np.ResourceVersion
	clk.Step(time.Minute)
	mustReconcile(t, controller, name)
	if np = getNodePool(t, name); np.ResourceVersion != rv {
		t.Errorf("status written again without a change (resourceVersion %s → %s)", rv, np.ResourceVersion)
	}
	if events := drainEvents(recorder); len(events) != 0 {
		t.Errorf("events on a no-op reconcile: %q", events)
	}

	// The NodeClass appears, not ready yet.
	nc := createNodeClass(t, name, ptr.To(false))
	mustReconcile(t, controller, name)
	np = getNodePool(t, name)
	expectCondition(t, np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionFalse, nodepool.ReasonNodeClassNotReady, "SubnetsNotFound: no subnet matches")
	ready = expectCondition(t, np, karpv1.ConditionTypeReady, metav1.ConditionFalse, nodepool.ReasonNodeClassNotReady, "is not ready")
	if !ready.LastTransitionTime.Time.Equal(epoch) {
		t.Errorf("Ready lastTransitionTime moved to %s though its status stayed False", ready.LastTransitionTime)
	}
	// The condition's status did not change, so no new event.
	if events := drainEvents(recorder); len(events) != 0 {
		t.Errorf("events = %q, want none (NodeClassReady stayed False)", events)
	}

	// It becomes ready.
	clk.Step(time.Minute)
	setNodeClassReady(t, nc, true)
	mustReconcile(t, controller, name)
	np = getNodePool(t, name)
	expectCondition(t, np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionTrue, karpv1.ConditionTypeNodeClassReady, "")
	ready = expectCondition(t, np, karpv1.ConditionTypeReady, metav1.ConditionTrue, karpv1.ConditionTypeReady, "")
	validated = expectCondition(t, np, karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, karpv1.ConditionTypeValidationSucceeded, "")
	if want := epoch.Add(2 * time.Minute); !ready.LastTransitionTime.Time.Equal(want) {
		t.Errorf("Ready lastTransitionTime = %s, want %s", ready.LastTransitionTime, want)
	}
	if !validated.LastTransitionTime.Time.Equal(epoch) {
		t.Errorf("ValidationSucceeded lastTransitionTime moved to %s", validated.LastTransitionTime)
	}
	if !nodepool.IsReady(np) {
		t.Error("IsReady = false with a ready NodeClass")
	}

	// It stops being ready again.
	setNodeClassReady(t, nc, false)
	mustReconcile(t, controller, name)
	expectCondition(t, getNodePool(t, name), karpv1.ConditionTypeReady, metav1.ConditionFalse, nodepool.ReasonNodeClassNotReady, "is not ready")
	if events := drainEvents(recorder); len(events) != 1 || !strings.HasPrefix(events[0], "Warning NodeClassNotReady NodeClassReady is False") {
		t.Errorf("events = %q, want one NodeClassNotReady warning", events)
	}
}

func TestStatusNodeClassTerminating(t *testing.T) {
	const name = "status-terminating"
	controller := nodepool.NewStatusController(env.Client, newClock(), nil)
	nc := createNodeClass(t, name, ptr.To(true))
	createNodePool(t, name, name, nil)
	nc.Finalizers = []string{awsv1.TerminationFinalizer}
	if err := env.Client.Update(testContext(t), nc); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(testContext(t), nc); err != nil {
		t.Fatal(err)
	}
	mustReconcile(t, controller, name)
	expectCondition(t, getNodePool(t, name), karpv1.ConditionTypeReady, metav1.ConditionFalse, nodepool.ReasonNodeClassTerminating, "is being deleted")
}

func TestStatusUnsupportedNodeClass(t *testing.T) {
	const name = "status-unsupported"
	controller := nodepool.NewStatusController(env.Client, newClock(), nil)
	createNodePool(t, name, name, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "example.com", Kind: "GCENodeClass", Name: name}
	})
	mustReconcile(t, controller, name)
	np := getNodePool(t, name)
	expectCondition(t, np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionFalse, nodepool.ReasonUnsupportedNodeClass, `group "example.com" kind "GCENodeClass"`)
	expectCondition(t, np, karpv1.ConditionTypeReady, metav1.ConditionFalse, nodepool.ReasonUnsupportedNodeClass, "not supported")
}

func TestStatusInvalidTemplate(t *testing.T) {
	for _, tc := range []struct {
		name          string
		mutate        func(*karpv1.NodePool)
		reason, field string
	}{{
		name: "status-invalid-label",
		mutate: func(np *karpv1.NodePool) {
			np.Spec.Template.Labels[corev1.LabelTopologyZone] = "us-east-1a"
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1b"}})
		},
		reason: nodepool.ReasonLabelsConflict, field: "spec.template.metadata.labels[topology.kubernetes.io/zone]",
	}, {
		name: "status-invalid-range",
		mutate: func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				karpv1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceCPU, Operator: corev1.NodeSelectorOpGt, Values: []string{"16"}},
				karpv1.NodeSelectorRequirementWithMinValues{Key: awsv1.LabelInstanceCPU, Operator: corev1.NodeSelectorOpLt, Values: []string{"8"}})
		},
		reason: nodepool.ReasonRequirementsUnsatisfiable, field: "spec.template.spec.requirements: no value of karpenter.k8s.aws/instance-cpu",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			recorder := record.NewFakeRecorder(10)
			controller := nodepool.NewStatusController(env.Client, newClock(), recorder)
			createNodeClass(t, tc.name, ptr.To(true))
			createNodePool(t, tc.name, tc.name, tc.mutate)
			mustReconcile(t, controller, tc.name)
			np := getNodePool(t, tc.name)
			expectCondition(t, np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionTrue, karpv1.ConditionTypeNodeClassReady, "")
			expectCondition(t, np, karpv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, tc.reason, tc.field)
			expectCondition(t, np, karpv1.ConditionTypeReady, metav1.ConditionFalse, tc.reason, tc.field)
			if events := drainEvents(recorder); len(events) != 1 || !strings.HasPrefix(events[0], "Warning "+tc.reason+" ValidationSucceeded is False: "+tc.field) {
				t.Errorf("events = %q, want one %s warning", events, tc.reason)
			}
		})
	}
}

func TestStatusResources(t *testing.T) {
	const name = "status-resources"
	ctx := testContext(t)
	controller := nodepool.NewStatusController(env.Client, newClock(), nil)
	createNodeClass(t, name, ptr.To(true))
	np := createNodePool(t, name, name, nil)
	other := createNodePool(t, name+"-other", name, nil)

	// newClaim creates a claim of pool with the given capacity.
	newClaim := func(pool *karpv1.NodePool, capacity corev1.ResourceList) *karpv1.NodeClaim {
		t.Helper()
		claim := nodepool.NewNodeClaim(pool, []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pool.Name}},
		}, nil)
		if err := env.Client.Create(ctx, claim); err != nil {
			t.Fatal(err)
		}
		claim.Status.Capacity = capacity
		if err := env.Client.Status().Update(ctx, claim); err != nil {
			t.Fatal(err)
		}
		return claim
	}
	caps := func(cpu, memory, pods string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory), corev1.ResourcePods: resource.MustParse(pods)}
	}

	// No claims: explicit zeros.
	mustReconcile(t, controller, name)
	expectResources(t, getNodePool(t, name), map[corev1.ResourceName]string{"cpu": "0", "memory": "0", "pods": "0", "ephemeral-storage": "0", "nodes": "0"})

	newClaim(np, caps("2", "8Gi", "29"))
	gpu := caps("4", "16Gi", "58")
	gpu["nvidia.com/gpu"] = resource.MustParse("1")
	newClaim(np, gpu)
	newClaim(np, nil) // not launched yet: counted, no capacity
	deleting := newClaim(np, caps("96", "384Gi", "737"))
	deleting.Finalizers = []string{karpv1.TerminationFinalizer}
	if err := env.Client.Update(ctx, deleting); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, deleting); err != nil {
		t.Fatal(err)
	}
	newClaim(other, caps("8", "32Gi", "58"))

	mustReconcile(t, controller, name)
	got := getNodePool(t, name)
	expectResources(t, got, map[corev1.ResourceName]string{
		"cpu": "6", "memory": "24Gi", "pods": "87", "ephemeral-storage": "0", "nvidia.com/gpu": "1", "nodes": "3",
	})
	if got.Status.Nodes == nil || *got.Status.Nodes != 3 {
		t.Errorf("status.nodes = %v, want 3", got.Status.Nodes)
	}
}

// expectResources checks status.resources is exactly want.
func expectResources(t *testing.T, np *karpv1.NodePool, want map[corev1.ResourceName]string) {
	t.Helper()
	if len(np.Status.Resources) != len(want) {
		t.Errorf("status.resources = %v, want %v", np.Status.Resources, want)
	}
	for name, q := range want {
		if got, ok := np.Status.Resources[name]; !ok || got.Cmp(resource.MustParse(q)) != 0 {
			t.Errorf("status.resources[%s] = %v, want %s", name, np.Status.Resources[name], q)
		}
	}
}
