package nodepool

import (
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
)

// conditionFalseEvent is the Warning Event on np when its condition cond (of type
// condType) turns False: the condition's reason, and a message naming the condition. It sets
// no DedupeValues, so it is recorded at every transition, as the status controller always
// did: a transition happens once per change of the NodePool or its NodeClass.
func conditionFalseEvent(np *karpv1.NodePool, condType string, reason, message string) events.Event {
	return events.Event{
		InvolvedObject: np,
		Type:           corev1.EventTypeWarning,
		Reason:         events.Reason(reason),
		Message:        condType + " is False: " + message,
	}
}
