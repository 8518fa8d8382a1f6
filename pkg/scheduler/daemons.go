package scheduler

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// daemonLoad is what the daemonsets that would run on a new node take there: their requests
// and host ports. Instance types on which the same daemonsets run share one load.
type daemonLoad struct {
	requests corev1.ResourceList
	res      scheduling.Resources
	extended corev1.ResourceList
	ports    []scheduling.HostPort
}

// daemonLoads finds, for each of a NodePool's instance types, the daemon pods that would run on
// a node of that type, and what they take there. A daemon pod runs there when it tolerates the
// NodePool's taints (PreferNoSchedule is no bar to a daemonset) and one of its node selection
// terms, with its nodeSelector, is compatible with the NodePool's requirements (well-known keys
// the NodePool leaves open are taken as possible) and with the instance type's labels. This is
// Karpenter's daemon overhead grouping: a daemonset that selects arm64 nodes weighs on the
// NodePool's Graviton types and not on the others.
func daemonLoads(np *NodePool, daemonPods []*corev1.Pod) map[*cloudprovider.InstanceType]*daemonLoad {
	// The selection terms of each daemon pod that could run on some node of the NodePool.
	type daemon struct {
		pod   *corev1.Pod
		terms []scheduling.Requirements
	}
	var daemons []daemon
	for _, pod := range daemonPods {
		var terms []scheduling.Requirements
		for _, t := range scheduling.DaemonTerms(&pod.Spec, np.Taints) {
			if t.Compatible(np.Requirements, scheduling.IsWellKnownLabel) == nil {
				terms = append(terms, t)
			}
		}
		if len(terms) > 0 {
			daemons = append(daemons, daemon{pod: pod, terms: terms})
		}
	}
	out := make(map[*cloudprovider.InstanceType]*daemonLoad, len(np.InstanceTypes))
	byKey := map[string]*daemonLoad{}
	key := make([]byte, len(daemons))
	for _, it := range np.InstanceTypes {
		var pods []*corev1.Pod
		for i, d := range daemons {
			key[i] = 0
			for _, t := range d.terms {
				if labelsCompatible(it, t) {
					key[i] = 1
					pods = append(pods, d.pod)
					break
				}
			}
		}
		load, ok := byKey[string(key)]
		if !ok {
			load = newDaemonLoad(pods)
			byKey[string(key)] = load
		}
		out[it] = load
	}
	return out
}

func newDaemonLoad(pods []*corev1.Pod) *daemonLoad {
	load := &daemonLoad{}
	var lists []corev1.ResourceList
	for _, pod := range pods {
		lists = append(lists, scheduling.PodRequests(pod))
		load.ports = append(load.ports, scheduling.PodHostPorts(pod)...)
	}
	load.requests = scheduling.Merge(lists...)
	load.res = scheduling.ResourcesOf(load.requests)
	load.extended = extendedOf(load.requests)
	return load
}

// minRequests is, per resource, the least any of the loads requests: what a claim that may
// launch as any of their instance types is sure to carry.
func minRequests(loads []*daemonLoad) corev1.ResourceList {
	if len(loads) == 0 {
		return nil
	}
	out := loads[0].requests.DeepCopy()
	for _, l := range loads[1:] {
		for name, q := range out {
			other, ok := l.requests[name]
			if !ok {
				delete(out, name)
				continue
			}
			if other.Cmp(q) < 0 {
				out[name] = other.DeepCopy()
			}
		}
	}
	return out
}
