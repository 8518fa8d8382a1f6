package scheduling

import (
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

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
