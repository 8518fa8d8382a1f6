package kops

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// parseTaint reads a kOps taint, "key=value:Effect" or "key:Effect".
func parseTaint(spec string) (corev1.Taint, error) {
	parts := strings.Split(spec, ":")
	if len(parts) != 2 {
		return corev1.Taint{}, fmt.Errorf("invalid taint spec: %v", spec)
	}
	keyValue, effect := parts[0], corev1.TaintEffect(parts[1])
	switch effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return corev1.Taint{}, fmt.Errorf("invalid taint effect: %v, unsupported taint effect", effect)
	}
	key, value, _ := strings.Cut(keyValue, "=")
	if key == "" || strings.Contains(value, "=") {
		return corev1.Taint{}, fmt.Errorf("invalid taint spec: %v", spec)
	}
	return corev1.Taint{Key: key, Value: value, Effect: effect}, nil
}
