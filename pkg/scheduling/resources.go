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

// Resources is the compact numeric form of the resources every pod requests, for arithmetic
// on the scheduler's hot path without ResourceList maps. Extended resources (GPUs, …) are not
// included; use the ResourceList for those.
type Resources struct {
	// MilliCPU is cpu in millicores.
	MilliCPU int64
	// Memory is memory in bytes.
	Memory int64
	// Pods is the number of pods.
	Pods int64
	// EphemeralStorage is ephemeral storage in bytes.
	EphemeralStorage int64
}

// ResourcesOf reads cpu, memory, pods and ephemeral-storage from a ResourceList; absent
// resources are zero.
func ResourcesOf(rl corev1.ResourceList) Resources {
	var r Resources
	if q, ok := rl[corev1.ResourceCPU]; ok {
		r.MilliCPU = q.MilliValue()
	}
	if q, ok := rl[corev1.ResourceMemory]; ok {
		r.Memory = q.Value()
	}
	if q, ok := rl[corev1.ResourcePods]; ok {
		r.Pods = q.Value()
	}
	if q, ok := rl[corev1.ResourceEphemeralStorage]; ok {
		r.EphemeralStorage = q.Value()
	}
	return r
}

// Fits reports whether r is at most available in every dimension.
func (r Resources) Fits(available Resources) bool {
	return r.MilliCPU <= available.MilliCPU && r.Memory <= available.Memory &&
		r.Pods <= available.Pods && r.EphemeralStorage <= available.EphemeralStorage
}

// Add returns r + s.
func (r Resources) Add(s Resources) Resources {
	return Resources{
		MilliCPU:         r.MilliCPU + s.MilliCPU,
		Memory:           r.Memory + s.Memory,
		Pods:             r.Pods + s.Pods,
		EphemeralStorage: r.EphemeralStorage + s.EphemeralStorage,
	}
}

// Sub returns r − s (which may be negative).
func (r Resources) Sub(s Resources) Resources {
	return Resources{
		MilliCPU:         r.MilliCPU - s.MilliCPU,
		Memory:           r.Memory - s.Memory,
		Pods:             r.Pods - s.Pods,
		EphemeralStorage: r.EphemeralStorage - s.EphemeralStorage,
	}
}
