package v1

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DoNotDisruptProtection is what a pod's karpenter.sh/do-not-disrupt annotation says at a
// moment, as Karpenter reads it.
// +kubebuilder:object:generate=false
type DoNotDisruptProtection struct {
	// Active: the pod may not be voluntarily disrupted now.
	Active bool
	// Until is when a duration's protection ends; zero for "true", which protects for good.
	Until time.Time
	// Invalid says why the value is neither "true" nor a positive duration; the annotation is
	// then ignored (Active is false), and Karpenter reports it in an Event on the pod.
	Invalid error
}

// PodDoNotDisrupt reads a pod's karpenter.sh/do-not-disrupt annotation at now. "true" protects
// the pod for good; a duration such as "2h" protects it for that long after it started (a pod
// that has not started yet is protected, with no end known yet); any other value is invalid and
// ignored. On a Node or NodeClaim the annotation is "true" only.
func PodDoNotDisrupt(pod *corev1.Pod, now time.Time) DoNotDisruptProtection {
	value, ok := pod.Annotations[DoNotDisruptAnnotationKey]
	if !ok {
		return DoNotDisruptProtection{}
	}
	if value == "true" {
		return DoNotDisruptProtection{Active: true}
	}
	// The errors are Karpenter's words, which its InvalidDoNotDisruptAnnotation Event quotes.
	d, err := time.ParseDuration(value)
	if err != nil {
		return DoNotDisruptProtection{Invalid: fmt.Errorf("failed to parse %q as a duration: %w", value, err)}
	}
	if d <= 0 {
		return DoNotDisruptProtection{Invalid: fmt.Errorf("duration %q must be positive", value)}
	}
	if pod.Status.StartTime == nil {
		return DoNotDisruptProtection{Active: true}
	}
	until := pod.Status.StartTime.Add(d)
	return DoNotDisruptProtection{Active: now.Before(until), Until: until}
}

// String describes an active protection for messages: `karpenter.sh/do-not-disrupt` and, for
// a duration, until when.
func (p DoNotDisruptProtection) String() string {
	if p.Until.IsZero() {
		return DoNotDisruptAnnotationKey
	}
	return fmt.Sprintf("%s until %s", DoNotDisruptAnnotationKey, p.Until.UTC().Format(time.RFC3339))
}
