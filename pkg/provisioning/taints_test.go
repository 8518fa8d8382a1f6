package provisioning

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// TestStartupTaintsNeedNoToleration: as in Karpenter, pods must tolerate a NodePool's taints
// but not its startupTaints: the scheduler sees a claim still launching, or a node not yet
// initialized, without its startup taints (and without karpenter.sh/unregistered), and an
// initialized node with every taint it still carries.
func TestStartupTaintsNeedNoToleration(t *testing.T) {
	taint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	startup := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	unregistered := corev1.Taint{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec:       karpv1.NodeClaimSpec{Taints: []corev1.Taint{taint}, StartupTaints: []corev1.Taint{startup}},
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{taint, startup, unregistered}}}

	launching := schedulerNode(&state.StateNode{NodeClaim: claim})
	registered := schedulerNode(&state.StateNode{NodeClaim: claim, Node: node})
	initializedClaim := claim.DeepCopy()
	initializedClaim.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
	initialized := schedulerNode(&state.StateNode{NodeClaim: initializedClaim, Node: node})

	for name, tc := range map[string]struct {
		got, want []corev1.Taint
	}{
		"launching":   {launching.Taints, []corev1.Taint{taint}},
		"registered":  {registered.Taints, []corev1.Taint{taint}},
		"initialized": {initialized.Taints, []corev1.Taint{taint, startup}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: taints %v, want %v", name, tc.got, tc.want)
		}
	}
}
