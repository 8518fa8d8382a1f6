package conformance

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// Case is one generated scheduling problem, in terms neither scheduler owns: Kubernetes
// objects (NodePools in the karpenter.sh/v1 schema both implement) and a neutral description
// of the instance types. Each runner converts it into its scheduler's own world.
type Case struct {
	// Seed generated the case (0 for a hand-written or shrunk case).
	Seed int64 `json:"seed"`
	// NodePools new capacity may come from.
	NodePools []*karpv1.NodePool `json:"nodePools"`
	// InstanceTypes every NodePool may launch (each NodePool's requirements filter them).
	InstanceTypes []*InstanceType `json:"instanceTypes"`
	// DaemonSets whose pods run on every node they tolerate and select.
	DaemonSets []*appsv1.DaemonSet `json:"daemonSets,omitempty"`
	// Nodes are existing, initialized nodes, each with the pods bound to it.
	Nodes []*Node `json:"nodes,omitempty"`
	// Pods are the pending pods to schedule.
	Pods []*corev1.Pod `json:"pods"`
	// PersistentVolumeClaims, PersistentVolumes and StorageClasses the pods' volumes name.
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim `json:"persistentVolumeClaims,omitempty"`
	PersistentVolumes      []*corev1.PersistentVolume      `json:"persistentVolumes,omitempty"`
	StorageClasses         []*storagev1.StorageClass       `json:"storageClasses,omitempty"`
}

// InstanceType is a machine the cloud sells: its single-valued labels (instance-type, arch,
// os, family, …), its capacity, what the kubelet holds back, and its offerings.
type InstanceType struct {
	Name      string              `json:"name"`
	Labels    map[string]string   `json:"labels"`
	Capacity  corev1.ResourceList `json:"capacity"`
	Overhead  corev1.ResourceList `json:"overhead,omitempty"`
	Offerings []Offering          `json:"offerings"`
}

// Allocatable is capacity less overhead.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range it.Capacity {
		q = q.DeepCopy()
		if o, ok := it.Overhead[name]; ok {
			q.Sub(o)
		}
		if q.Sign() < 0 {
			q = resource.Quantity{}
		}
		out[name] = q
	}
	return out
}

// Offering is one zone and capacity type an instance type is sold in, at a price.
type Offering struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	Available    bool    `json:"available"`
}

// Node is an existing, initialized node launched by a NodePool (NodePool empty: a node no
// NodePool manages), of an instance type and offering, with pods bound to it.
type Node struct {
	Name         string            `json:"name"`
	NodePool     string            `json:"nodePool,omitempty"`
	InstanceType string            `json:"instanceType"`
	Zone         string            `json:"zone"`
	CapacityType string            `json:"capacityType"`
	Labels       map[string]string `json:"labels,omitempty"`
	Taints       []corev1.Taint    `json:"taints,omitempty"`
	Pods         []*corev1.Pod     `json:"pods,omitempty"`
}

// Outcome is what one scheduler decided, in neutral terms.
type Outcome struct {
	// Scheduler names who decided ("karpenter" or "ours").
	Scheduler string
	// Existing maps a pod (namespace/name) to the existing node it was placed on.
	Existing map[string]string
	// Claims are the new NodeClaims.
	Claims []*Claim
	// Errors maps each pod that was not placed to why.
	Errors map[string]string
	// UnmetPreferences is, as Check finds the final cluster, the summed weight of the
	// preferred node affinity and pod (anti-)affinity terms of the placed pods it does not
	// meet (set by Check).
	UnmetPreferences int
}

// Claim is a new NodeClaim: its NodePool, pods, the instance types it names (cheapest first,
// as the scheduler ordered them), its requirements and the labels it puts on the node.
type Claim struct {
	Name          string
	NodePool      string
	Pods          []string
	InstanceTypes []string
	Requirements  []corev1.NodeSelectorRequirement
	Labels        map[string]string
}

// PodKey names a pod as namespace/name.
func PodKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
