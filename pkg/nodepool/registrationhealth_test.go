package nodepool_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
)

// poolClaim is a NodeClaim of np (labelled and owned by it), launched or not: what the
// lifecycle controller hands to RegistrationHealth. It is not stored.
func poolClaim(np *karpv1.NodePool, launched bool) *karpv1.NodeClaim {
	cond := metav1.Condition{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched"}
	if !launched {
		cond = metav1.Condition{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionFalse, Reason: "LaunchTemplateFailed", Message: "rendering the launch template failed"}
	}
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:            np.Name + "-abcde",
			Labels:          map[string]string{karpv1.NodePoolLabelKey: np.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodePool", Name: np.Name, UID: np.UID}},
		},
		Status: karpv1.NodeClaimStatus{Conditions: []metav1.Condition{cond}},
	}
}

// registered tells health that claim registered, n times.
func registered(t *testing.T, health *nodepool.RegistrationHealth, claim *karpv1.NodeClaim, n int) {
	t.Helper()
	for range n {
		if err := health.Registered(testContext(t), claim); err != nil {
			t.Fatal(err)
		}
	}
}

// failed tells health that claim failed to register, n times.
func failed(t *testing.T, health *nodepool.RegistrationHealth, claim *karpv1.NodeClaim, n int) {
	t.Helper()
	for range n {
		if err := health.RegistrationFailed(testContext(t), claim); err != nil {
			t.Fatal(err)
		}
	}
}

// expectHealth checks the NodePool's NodeRegistrationHealthy condition.
func expectHealth(t *testing.T, name string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	np := getNodePool(t, name)
	cond := expectCondition(t, np, karpv1.ConditionTypeNodeRegistrationHealthy, status, reason, message)
	if cond.Message != message {
		t.Errorf("message %q, want %q", cond.Message, message)
	}
}

func TestRegistrationHealthResetsOnChange(t *testing.T) {
	const name = "health-reset"
	ctx := testContext(t)
	ready := true
	nc := createNodeClass(t, name, &ready)
	np := createNodePool(t, name, name, nil)
	health := nodepool.NewRegistrationHealth(env.Client, newClock())

	// A new NodePool: Unknown, as Karpenter's, and its NodeClass's generation recorded.
	mustReconcile(t, health, name)
	expectHealth(t, name, metav1.ConditionUnknown, nodepool.ReasonAwaitingReconciliation, "object is awaiting reconciliation")
	if got := getNodePool(t, name).Status.NodeClassObservedGeneration; got != nc.Generation {
		t.Errorf("nodeClassObservedGeneration %d, want %d", got, nc.Generation)
	}
	// Ready only depends on NodeClassReady and ValidationSucceeded.
	if meta.FindStatusCondition(getNodePool(t, name).Status.Conditions, karpv1.ConditionTypeReady) != nil {
		t.Error("registration health wrote Ready")
	}

	registered(t, health, poolClaim(np, true), 1)
	expectHealth(t, name, metav1.ConditionTrue, nodepool.ReasonNodeRegistrationHealthy, "")
	// Nothing changed: reconciling keeps it.
	mustReconcile(t, health, name)
	expectHealth(t, name, metav1.ConditionTrue, nodepool.ReasonNodeRegistrationHealthy, "")

	// The NodeClass changes: Unknown again, its new generation recorded.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatal(err)
	}
	nc.Spec.Tags = map[string]string{"team": "a"}
	if err := env.Client.Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	mustReconcile(t, health, name)
	expectHealth(t, name, metav1.ConditionUnknown, nodepool.ReasonAwaitingReconciliation, "object is awaiting reconciliation")
	if got := getNodePool(t, name).Status.NodeClassObservedGeneration; got != nc.Generation || got < 2 {
		t.Errorf("nodeClassObservedGeneration %d, want %d", got, nc.Generation)
	}

	// The NodePool changes (any spec field): Unknown again.
	registered(t, health, poolClaim(np, true), 1)
	expectHealth(t, name, metav1.ConditionTrue, nodepool.ReasonNodeRegistrationHealthy, "")
	np = getNodePool(t, name)
	np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("14")}
	if err := env.Client.Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	mustReconcile(t, health, name)
	expectHealth(t, name, metav1.ConditionUnknown, nodepool.ReasonAwaitingReconciliation, "object is awaiting reconciliation")

	// The outcomes were forgotten with the change: one failure is not enough for False.
	failed(t, health, poolClaim(np, true), 1)
	expectHealth(t, name, metav1.ConditionUnknown, nodepool.ReasonAwaitingReconciliation, "object is awaiting reconciliation")
}

func TestRegistrationHealthIgnoresPoolsWithoutNodeClass(t *testing.T) {
	const name = "health-no-nodeclass"
	health := nodepool.NewRegistrationHealth(env.Client, newClock())
	createNodePool(t, name, name, nil)
	mustReconcile(t, health, name)
	createNodePool(t, name+"-unsupported", name, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.test.sh", Kind: "UnmanagedNodeClass", Name: "default"}
	})
	mustReconcile(t, health, name+"-unsupported")
	for _, n := range []string{name, name + "-unsupported"} {
		if cond := meta.FindStatusCondition(getNodePool(t, n).Status.Conditions, karpv1.ConditionTypeNodeRegistrationHealthy); cond != nil {
			t.Errorf("%s: %+v, want no condition", n, cond)
		}
	}
}

func TestRegistrationHealthThreshold(t *testing.T) {
	const name = "health-threshold"
	ready := true
	createNodeClass(t, name, &ready)
	np := createNodePool(t, name, name, nil)
	health := nodepool.NewRegistrationHealth(env.Client, newClock())
	mustReconcile(t, health, name)
	launched, notLaunched := poolClaim(np, true), poolClaim(np, false)

	// Half the window of four must fail.
	failed(t, health, launched, 1)
	expectHealth(t, name, metav1.ConditionUnknown, nodepool.ReasonAwaitingReconciliation, "object is awaiting reconciliation")
	failed(t, health, launched, 1)
	expectHealth(t, name, metav1.ConditionFalse, nodepool.ReasonRegistrationFailed, "Failed to register node")
	// While two of the last four failed, a registration does not make it True.
	registered(t, health, launched, 2)
	expectHealth(t, name, metav1.ConditionFalse, nodepool.ReasonRegistrationFailed, "Failed to register node")
	registered(t, health, launched, 1)
	expectHealth(t, name, metav1.ConditionTrue, nodepool.ReasonNodeRegistrationHealthy, "")

	// Claims that did not launch give their Launched condition's reason and message.
	failed(t, health, notLaunched, 2)
	expectHealth(t, name, metav1.ConditionFalse, "LaunchTemplateFailed", "rendering the launch template failed")

	// A claim of an earlier NodePool of the same name counts for nothing.
	other := poolClaim(np, true)
	other.OwnerReferences[0].UID = types.UID("another")
	registered(t, health, other, 4)
	expectHealth(t, name, metav1.ConditionFalse, "LaunchTemplateFailed", "rendering the launch template failed")
	// Neither does a claim of a NodePool that is gone.
	gone := poolClaim(&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "health-gone", UID: "gone"}}, true)
	failed(t, health, gone, 1)
}

func TestRegistrationHealthAfterRestart(t *testing.T) {
	const name = "health-restart"
	ready := true
	createNodeClass(t, name, &ready)
	np := createNodePool(t, name, name, nil)
	health := nodepool.NewRegistrationHealth(env.Client, newClock())
	mustReconcile(t, health, name)
	claim := poolClaim(np, true)
	failed(t, health, claim, 2)
	expectHealth(t, name, metav1.ConditionFalse, nodepool.ReasonRegistrationFailed, "Failed to register node")

	// A restarted controller starts from the condition: one registration is not enough.
	health = nodepool.NewRegistrationHealth(env.Client, newClock())
	mustReconcile(t, health, name)
	expectHealth(t, name, metav1.ConditionFalse, nodepool.ReasonRegistrationFailed, "Failed to register node")
	registered(t, health, claim, 1)
	expectHealth(t, name, metav1.ConditionFalse, nodepool.ReasonRegistrationFailed, "Failed to register node")

	// Restarted again while True: one failure is not enough for False, two are.
	registered(t, health, claim, 3)
	expectHealth(t, name, metav1.ConditionTrue, nodepool.ReasonNodeRegistrationHealthy, "")
	health = nodepool.NewRegistrationHealth(env.Client, newClock())
	mustReconcile(t, health, name)
	failed(t, health, claim, 1)
	expectHealth(t, name, metav1.ConditionTrue, nodepool.ReasonNodeRegistrationHealthy, "")
	failed(t, health, claim, 1)
	expectHealth(t, name, metav1.ConditionFalse, nodepool.ReasonRegistrationFailed, "Failed to register node")
}
