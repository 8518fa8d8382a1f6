package conformance

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// epoch is the fixed time both runs see.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *Case) instanceType(name string) *InstanceType {
	for _, it := range c.InstanceTypes {
		if it.Name == name {
			return it
		}
	}
	return nil
}

func (c *Case) pod(key string) *corev1.Pod {
	for _, p := range c.Pods {
		if PodKey(p) == key {
			return p
		}
	}
	return nil
}

func (c *Case) nodePool(name string) *karpv1.NodePool {
	for _, np := range c.NodePools {
		if np.Name == name {
			return np
		}
	}
	return nil
}

// nodeLabels are the labels of an existing node: its instance type's, its offering's, its
// NodePool's template labels, its own extra labels and its hostname.
func nodeLabels(n *Node, it *InstanceType) map[string]string {
	labels := map[string]string{}
	for k, v := range it.Labels {
		labels[k] = v
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	labels[corev1.LabelTopologyZone] = n.Zone
	labels[karpv1.CapacityTypeLabelKey] = n.CapacityType
	labels[corev1.LabelHostname] = n.Name
	if n.NodePool != "" {
		labels[karpv1.NodePoolLabelKey] = n.NodePool
	}
	return labels
}

// nodeObject is an existing node as the API server holds it: Ready, with its labels, taints,
// capacity and allocatable.
func nodeObject(n *Node, it *InstanceType) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: types.UID("node-" + n.Name), Labels: nodeLabels(n, it), CreationTimestamp: metav1.NewTime(epoch.Add(-time.Hour))},
		Spec:       corev1.NodeSpec{Taints: n.Taints},
		Status: corev1.NodeStatus{
			Capacity:    it.Capacity.DeepCopy(),
			Allocatable: it.Allocatable(),
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(epoch.Add(-time.Hour))}},
		},
	}
}

// createCommon creates the objects both APIs share: daemonsets, storage, bound and pending pods.
func createCommon(ctx context.Context, kube client.Client, c *Case) error {
	var objs []client.Object
	for _, ds := range c.DaemonSets {
		objs = append(objs, ds.DeepCopy())
	}
	for _, sc := range c.StorageClasses {
		objs = append(objs, sc.DeepCopy())
	}
	for _, pv := range c.PersistentVolumes {
		objs = append(objs, pv.DeepCopy())
	}
	for _, pvc := range c.PersistentVolumeClaims {
		objs = append(objs, pvc.DeepCopy())
	}
	for _, n := range c.Nodes {
		for _, p := range n.Pods {
			objs = append(objs, p.DeepCopy())
		}
		if it := c.instanceType(n.InstanceType); it != nil {
			objs = append(objs, daemonPodsOn(c, n, it)...)
		}
	}
	for _, p := range c.Pods {
		objs = append(objs, p.DeepCopy())
	}
	for _, o := range objs {
		if err := kube.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// daemonPodsOn are the pods the daemonsets run on an existing node, bound to it and running, as
// the daemonset controller and the kube-scheduler would have placed them long before: both
// schedulers then see them as they see any bound pod. (Karpenter counts a daemonset on an
// initialized node only through its bound pod.)
func daemonPodsOn(c *Case, n *Node, it *InstanceType) []client.Object {
	labels := nodeLabels(n, it)
	var out []client.Object
	for _, ds := range c.DaemonSets {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: ds.Name + "-" + n.Name, Namespace: ds.Namespace, Labels: ds.Spec.Template.Labels,
				UID:             types.UID(string(ds.UID) + "-" + n.Name),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: new(true)}},
			},
			Spec:   *ds.Spec.Template.Spec.DeepCopy(),
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		if _, ok := untolerated(pod.Spec.Tolerations, n.Taints); !ok || nodeSelectionError(pod, labels) != nil {
			continue
		}
		pod.Spec.NodeName = n.Name
		out = append(out, pod)
	}
	return out
}
