package provisioning

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/apis"
	"github.com/openkarpenter/karpenter/pkg/simulate/memory"
)

// TestNominationPatchIsItsJSON: the simulator's store applies the nomination patch typed
// (ApplyTo); kube-apiserver gets its JSON. Both leave the same pod, and both conflict on a
// stale resourceVersion.
func TestNominationPatchIsItsJSON(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}},
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	stored := func() (client.Client, *corev1.Pod) {
		kube := memory.New(apis.NewScheme(), clk)
		p := pod.DeepCopy()
		if err := kube.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return kube, p
	}
	typed, typedPod := stored()
	viaJSON, jsonPod := stored()
	patch := nominationPatch{resourceVersion: typedPod.ResourceVersion, node: "ip-10-0-0-1"}
	data, err := patch.Data(typedPod)
	if err != nil {
		t.Fatal(err)
	}
	if err := typed.Status().Patch(ctx, typedPod, patch); err != nil {
		t.Fatal(err)
	}
	if err := viaJSON.Status().Patch(ctx, jsonPod, client.RawPatch(types.MergePatchType, data)); err != nil {
		t.Fatal(err)
	}
	if typedPod.Status.NominatedNodeName != "ip-10-0-0-1" {
		t.Errorf("nominated node %q, want ip-10-0-0-1", typedPod.Status.NominatedNodeName)
	}
	if !reflect.DeepEqual(typedPod, jsonPod) {
		t.Errorf("typed patch left\n%+v\nits JSON left\n%+v", typedPod, jsonPod)
	}
	// The resourceVersion read before the first patch is stale now.
	for name, kube := range map[string]client.Client{"typed": typed, "json": viaJSON} {
		var p client.Patch = patch
		if name == "json" {
			p = client.RawPatch(types.MergePatchType, data)
		}
		err := kube.Status().Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}, p)
		if !apierrors.IsConflict(err) {
			t.Errorf("%s: a stale nomination patch gave %v, want a conflict", name, err)
		}
	}
}
