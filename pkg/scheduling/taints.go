package scheduling

import (
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// TaintExternalCloudProvider is the taint a kubelet started with --cloud-provider=external
// registers with, until the cloud controller manager initializes the node.
const TaintExternalCloudProvider = "node.cloudprovider.kubernetes.io/uninitialized"

// knownEphemeralTaints are the taints a node carries while it starts and loses once it is up,
// matched by key and effect, as Karpenter's list.
var knownEphemeralTaints = []corev1.Taint{
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
	{Key: TaintExternalCloudProvider, Effect: corev1.TaintEffectNoSchedule},
	{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute},
}

// knownEphemeralTaintKeyPrefixes are families of ephemeral taints whose keys a controller
// suffixes (the Node Readiness Controller's readiness.k8s.io/<rule>).
var knownEphemeralTaintKeyPrefixes = []string{"readiness.k8s.io/"}

// IsKnownEphemeralTaint reports whether a taint is one a starting node carries and then loses
// (not-ready, unreachable, the external cloud provider's, Karpenter's unregistered taint, or
// a readiness.k8s.io/ one), as Karpenter's IsKnownEphemeralTaint: while a node initializes, the
// scheduler looks past them.
func IsKnownEphemeralTaint(taint corev1.Taint) bool {
	for i := range knownEphemeralTaints {
		if knownEphemeralTaints[i].MatchTaint(&taint) {
			return true
		}
	}
	for _, prefix := range knownEphemeralTaintKeyPrefixes {
		if strings.HasPrefix(taint.Key, prefix) {
			return true
		}
	}
	return false
}

// Tolerates reports whether tolerations tolerate every taint that keeps pods off a node
// (NoSchedule and NoExecute; PreferNoSchedule is only a preference), and if not, which taint is
// untolerated.
func Tolerates(tolerations []corev1.Toleration, taints []corev1.Taint) error {
	for i := range taints {
		taint := &taints[i]
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !toleratesTaint(tolerations, taint) {
			return &UntoleratedTaintError{Taint: *taint}
		}
	}
	return nil
}

// ToleratesAll is Tolerates that also counts PreferNoSchedule taints, for a pod whose
// preference to avoid them has not been relaxed yet.
func ToleratesAll(tolerations []corev1.Toleration, taints []corev1.Taint) error {
	for i := range taints {
		if !toleratesTaint(tolerations, &taints[i]) {
			return &UntoleratedTaintError{Taint: taints[i]}
		}
	}
	return nil
}

func toleratesTaint(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(logr.Discard(), taint, false) {
			return true
		}
	}
	return false
}

// UntoleratedTaintError names the taint a pod does not tolerate.
type UntoleratedTaintError struct {
	// Taint is the first taint not tolerated.
	Taint corev1.Taint
}

// Error names the taint that is not tolerated.
func (e *UntoleratedTaintError) Error() string {
	return fmt.Sprintf("did not tolerate taint %s", e.Taint.ToString())
}
