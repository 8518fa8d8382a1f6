package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodRequests returns what a pod needs from a node, computed as the kube-scheduler does:
// containers summed, init containers (and restartable sidecars) taken at their peak, pod
// overhead added, pod-level resources honoured; plus one "pods" slot.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	requests[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return requests
}

// Fits reports whether requests fit in available, and if not, which resources are short. A
// resource absent from available counts as zero.
func Fits(requests, available corev1.ResourceList) error {
	var short []string
	for name, want := range requests {
		if want.IsZero() {
			continue
		}
		have := available[name]
		if want.Cmp(have) > 0 {
			short = append(short, fmt.Sprintf("%s (wants %s, has %s)", name, want.String(), have.String()))
		}
	}
	if len(short) == 0 {
		return nil
	}
	sort.Strings(short)
	return fmt.Errorf("insufficient %s", strings.Join(short, ", "))
}

// Merge adds resource lists together into a new list.
func Merge(lists ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, list := range lists {
		for name, q := range list {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}

// Subtract returns a − b per resource of a (never below what a quantity can hold; negative
// results are kept so callers can see overcommit).
func Subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a))
	for name, q := range a {
		diff := q.DeepCopy()
		if sub, ok := b[name]; ok {
			diff.Sub(sub)
		}
		out[name] = diff
	}
	return out
}
