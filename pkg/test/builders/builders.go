// Package builders makes test objects with sensible defaults and explicit overrides: pods,
// nodes, NodePools and instance types, so tests read like specs ("a pod of 1 cpu that tolerates
// gpu") rather than like YAML.
package builders

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// PodOptions describe a test pod; zero fields take defaults.
type PodOptions struct {
	Name, Namespace string
	Labels          map[string]string
	// CPU and Memory are the requests of the single container, such as "500m" and "1Gi".
	CPU, Memory string
	// Extended are more container requests, such as nvidia.com/gpu: "1".
	Extended     map[corev1.ResourceName]string
	NodeSelector map[string]string
	Affinity     *corev1.Affinity
	Tolerations  []corev1.Toleration
	Spread       []corev1.TopologySpreadConstraint
	HostPorts    []int32
	Priority     *int32
	NodeName     string
	// InitCPU and InitMemory add an init container with these requests.
	InitCPU, InitMemory string
	// Overhead is the pod overhead (from its RuntimeClass).
	Overhead corev1.ResourceList
	// OwnerKind, when set, adds a controller owner reference of that kind (e.g. DaemonSet).
	OwnerKind string
}

var podCount int

// Pod builds a pending pod.
func Pod(o PodOptions) *corev1.Pod {
	podCount++
	if o.Name == "" {
		o.Name = fmt.Sprintf("pod-%d", podCount)
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	requests := corev1.ResourceList{}
	if o.CPU != "" {
		requests[corev1.ResourceCPU] = resource.MustParse(o.CPU)
	}
	if o.Memory != "" {
		requests[corev1.ResourceMemory] = resource.MustParse(o.Memory)
	}
	for name, q := range o.Extended {
		requests[name] = resource.MustParse(q)
	}
	container := corev1.Container{Name: "main", Image: "registry.k8s.io/pause", Resources: corev1.ResourceRequirements{Requests: requests}}
	for _, port := range o.HostPorts {
		container.Ports = append(container.Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP})
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: o.Labels, UID: types.UID("uid-" + o.Namespace + "-" + o.Name)},
		Spec: corev1.PodSpec{
			Containers:                []corev1.Container{container},
			NodeSelector:              o.NodeSelector,
			Affinity:                  o.Affinity,
			Tolerations:               o.Tolerations,
			TopologySpreadConstraints: o.Spread,
			Priority:                  o.Priority,
			NodeName:                  o.NodeName,
			Overhead:                  o.Overhead,
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		}}},
	}
	if o.InitCPU != "" || o.InitMemory != "" {
		init := corev1.ResourceList{}
		if o.InitCPU != "" {
			init[corev1.ResourceCPU] = resource.MustParse(o.InitCPU)
		}
		if o.InitMemory != "" {
			init[corev1.ResourceMemory] = resource.MustParse(o.InitMemory)
		}
		pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.k8s.io/pause", Resources: corev1.ResourceRequirements{Requests: init}}}
	}
	if o.OwnerKind != "" {
		controller := true
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: o.OwnerKind, Name: "owner", UID: "owner-uid", Controller: &controller}}
	}
	return pod
}

// Pods builds n pods with the same options (names get a suffix).
func Pods(n int, o PodOptions) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	base := o.Name
	for i := range out {
		if base != "" {
			o.Name = base + "-" + strconv.Itoa(i)
		}
		out[i] = Pod(o)
	}
	return out
}

// InstanceTypeOptions describe a synthetic instance type.
type InstanceTypeOptions struct {
	Name string
	// CPU is in cores, Memory in GiB, Pods the pod slots.
	CPU, MemoryGiB, Pods int64
	Arch                 string // default amd64
	// Extended capacity such as nvidia.com/gpu.
	Extended map[corev1.ResourceName]int64
	// Offerings default to on-demand and spot in test-zone-1..3 at PricePerHour (spot 30% less).
	Offerings    []cloudprovider.Offering
	PricePerHour float64
	// Labels are extra instance-type labels.
	Labels map[string]string
}

// InstanceType builds a synthetic instance type without system overhead.
func InstanceType(o InstanceTypeOptions) *cloudprovider.InstanceType {
	if o.Arch == "" {
		o.Arch = "amd64"
	}
	if o.Pods == 0 {
		o.Pods = 110
	}
	if o.Offerings == nil {
		for _, zone := range []string{"test-zone-1", "test-zone-2", "test-zone-3"} {
			o.Offerings = append(o.Offerings,
				cloudprovider.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: o.PricePerHour, Available: true},
				cloudprovider.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeSpot, Price: o.PricePerHour * 0.7, Available: true})
		}
	}
	labels := map[string]string{
		corev1.LabelInstanceTypeStable: o.Name,
		corev1.LabelArchStable:         o.Arch,
		corev1.LabelOSStable:           "linux",
		awsv1.LabelInstanceCPU:         strconv.FormatInt(o.CPU, 10),
		awsv1.LabelInstanceMemory:      strconv.FormatInt(o.MemoryGiB*1024, 10),
	}
	for k, v := range o.Labels {
		labels[k] = v
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(o.CPU, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(o.MemoryGiB<<30, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(o.Pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	for name, n := range o.Extended {
		capacity[name] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return &cloudprovider.InstanceType{Name: o.Name, Labels: labels, Capacity: capacity, Offerings: o.Offerings}
}

// Node builds an existing, ready node.
func Node(name string, labels map[string]string, allocatable corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{
			Allocatable: allocatable, Capacity: allocatable,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// Resources builds a ResourceList from name/quantity pairs: Resources("cpu", "4", "memory", "8Gi").
func Resources(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}
