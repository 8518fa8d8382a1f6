package provisioning

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// Event reasons of a pod turned away by the node it was nominated to.
const (
	// EventReasonLaunchMismatch: the node launched for the pod cannot take it.
	EventReasonLaunchMismatch events.Reason = "LaunchedNodeMismatch"
	// EventReasonNominationRefused: an existing node the pod was planned on did not take it.
	EventReasonNominationRefused events.Reason = "NominationRefused"
)

// Refusal is a pod that the node it was nominated to turned away, what differed, and what the
// cluster state decided for it.
type Refusal struct {
	state.Miss
	state.Penalty
	// Kind of difference: a metrics.Refusal* constant.
	Kind string
	// Why names the label, taint or resource that differs.
	Why string
}

// Message is the refusal as an Event on the pod says it.
func (r Refusal) Message() string {
	what := "node " + r.Node
	if r.Launched {
		what += " launched for this pod"
	}
	next := "it is planned again now, avoiding that node"
	if !r.RetryAt.IsZero() {
		next = fmt.Sprintf("%d nodes launched for it did not take it: the next launch for it waits until %s", r.Launches, r.RetryAt.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("%s cannot take it: %s; %s", what, r.Why, next)
}

// judgeMisses decides, for each nomination that ended with its pod unbound
// (state.Cluster.TakeMisses), whether the node turned the pod away: the kube-scheduler refused
// it there, or the node differs from what the pod needs in a way that will not change (a label it selects, a taint it does not tolerate).
// Such a pod avoids the node, launches for it back off (state.Cluster.Penalize), and it is
// reported: an Event on the pod and on the NodePool naming what differs, the
// nominations_refused metric and a log line. A pod whose nomination merely ran out (the
// kube-scheduler, not told of it, placed the pod's peers elsewhere first), whose node is
// short of room only because the kube-scheduler gave it to other pods (roomTaken), or whose
// node now takes it in every way the kube-scheduler would check (judgedInFull), is planned
// again as it is. Pods that must now wait leave snap.Pending; the others' avoided nodes go in snap.Avoid.
func (p *Provisioner) judgeMisses(ctx context.Context, snap *state.Snapshot) []Refusal {
	missed := p.cluster.TakeMisses()
	if len(missed) == 0 {
		return nil
	}
	pods := make(map[types.UID]*corev1.Pod, len(missed))
	for _, m := range missed {
		pods[m.UID] = nil
	}
	for _, pod := range snap.Pods {
		if _, ok := pods[pod.UID]; ok {
			pods[pod.UID] = pod
		}
	}
	nodes := map[string]*state.StateNode{}
	for _, sn := range snap.Nodes {
		nodes[sn.Name()] = sn
		if sn.NodeClaim != nil {
			nodes[sn.NodeClaim.Name] = sn
		}
	}
	pools := map[string]*karpv1.NodePool{}
	for _, np := range snap.NodePools {
		pools[np.Name] = np
	}
	var out []Refusal
	waiting := map[types.UID]bool{}
	for _, m := range missed {
		pod := pods[m.UID]
		if pod == nil || pod.Spec.NodeName != "" {
			continue
		}
		kind, why := metrics.RefusalUnknown, "the kube-scheduler did not bind it there (see the pod's FailedScheduling events)"
		sn := nodes[m.Node]
		if sn != nil {
			volumes, err := VolumeRequirements(ctx, p.kubeClient, pod)
			if err != nil {
				volumes = scheduling.Requirements{}
			}
			if k, w := Mismatch(pod, sn, volumes); k != "" {
				kind, why = k, w
			}
		}
		static := kind == metrics.RefusalLabel || kind == metrics.RefusalTaint
		if !m.Refused && !static {
			log.FromContext(ctx).V(1).Info("nomination ran out, planning the pod again", "pod", m.Pod, "node", m.Node)
			continue
		}
		if kind == metrics.RefusalResource && roomTaken(pod, sn) {
			// The kube-scheduler gave the node's room to pods it placed first (pods not yet
			// told of their own nominations, or planned elsewhere): a race, not the node's
			// doing. The next plan sees the node full and launches for the pod again.
			log.FromContext(ctx).V(1).Info("nominated node filled with other pods, planning the pod again", "pod", m.Pod, "node", m.Node)
			continue
		}
		if kind == metrics.RefusalUnknown && sn != nil && judgedInFull(pod) {
			// The node takes the pod in everything the kube-scheduler checks for such a pod:
			// it refused the pod on a view of the node that has since changed (a not-ready
			// taint not yet lifted, room not yet freed). Karpenter plans it again as it is.
			log.FromContext(ctx).V(1).Info("nominated node refused the pod but fits it now, planning the pod again", "pod", m.Pod, "node", m.Node)
			continue
		}
		r := Refusal{Miss: m, Penalty: p.cluster.Penalize(m), Kind: kind, Why: why}
		out = append(out, r)
		if !r.RetryAt.IsZero() {
			waiting[m.UID] = true
		} else {
			if snap.Avoid == nil {
				snap.Avoid = map[types.UID][]string{}
			}
			snap.Avoid[m.UID] = r.Avoid
		}
		metrics.NominationRefused(m.NodePool, kind, m.Launched)
		reason := EventReasonNominationRefused
		if m.Launched {
			reason = EventReasonLaunchMismatch
		}
		p.events.Publish(refusalEvents(pod, pools[m.NodePool], reason, r.Message())...)
		log.FromContext(ctx).Info("nominated node did not take its pod", "pod", m.Pod, "node", m.Node, "nodepool", m.NodePool,
			"launched", m.Launched, "differs", kind, "why", why, "launches-missed", r.Launches, "retry-at", r.RetryAt)
	}
	if len(waiting) > 0 {
		kept := snap.Pending[:0:0]
		for _, pod := range snap.Pending {
			if !waiting[pod.UID] {
				kept = append(kept, pod)
			}
		}
		snap.Pending = kept
	}
	return out
}

// Mismatch says what keeps a node from taking a pod, as the kube-scheduler judges it: a label
// its node selection requires (volume zones included), a taint it does not tolerate, a
// resource short of its requests, or a host port in use. It returns the kind (a metrics.Refusal*
// constant) and a sentence naming what differs, or "" when the node fits the pod. The checks
// are the scheduler pipeline's (scheduler.CheckNode), on the node's lasting taints (those it
// does not shed on its own); the verdict is read in another order than the pipeline's (which
// checks room before taints because it is cheaper): the differences that last (labels, taints)
// come first, because judgeMisses penalizes a node for them even when the kube-scheduler did not
// report the refusal, and a node not ready yet is judged on its labels only.
func Mismatch(pod *corev1.Pod, sn *state.StateNode, volumes scheduling.Requirements) (kind, why string) {
	node := sn.SchedulerNode()
	var taints []corev1.Taint
	if sn.Node != nil {
		taints = sn.Node.Spec.Taints
	} else {
		taints = sn.NodeClaim.Spec.Taints
	}
	node.Taints = lastingTaints(sn, taints)
	node.Pods = slices.DeleteFunc(slices.Clone(node.Pods), func(other *corev1.Pod) bool { return other.UID == pod.UID })
	refused := map[scheduler.Stage]error{}
	for _, r := range scheduler.CheckNode(pod, node, volumes) {
		refused[r.Stage] = r.Err
	}
	if err, ok := refused[scheduler.StageRequirements]; ok {
		if volumes.Len() > 0 && !slices.ContainsFunc(scheduler.CheckNode(pod, node, scheduling.Requirements{}), func(r scheduler.StageRefusal) bool {
			return r.Stage == scheduler.StageRequirements
		}) {
			return metrics.RefusalLabel, "its volumes: " + err.Error()
		}
		return metrics.RefusalLabel, err.Error()
	}
	if sn.Node != nil && !state.NodeReady(sn.Node) {
		return "", "" // not ready: nothing more can be judged
	}
	for _, r := range []struct {
		stage scheduler.Stage
		kind  string
	}{{scheduler.StageTaints, metrics.RefusalTaint}, {scheduler.StageRoom, metrics.RefusalResource}, {scheduler.StageHostPorts, metrics.RefusalHostPort}} {
		if err, ok := refused[r.stage]; ok {
			if r.stage == scheduler.StageTaints {
				return r.kind, "the pod " + err.Error()
			}
			return r.kind, err.Error()
		}
	}
	return "", ""
}

// roomTaken reports whether the node is short of room for pod only because of the other pods
// bound to it: without those that would move elsewhere (state.IsReschedulable; its daemonset
// and static pods stay) the pod would fit.
func roomTaken(pod *corev1.Pod, sn *state.StateNode) bool {
	var others []corev1.ResourceList
	for _, other := range sn.Pods {
		if state.IsReschedulable(other) {
			others = append(others, scheduling.PodRequests(other))
		}
	}
	if len(others) == 0 {
		return false
	}
	return scheduling.Fits(scheduling.PodRequests(pod), scheduling.Merge(append(others, sn.Available())...)) == nil
}

// judgedInFull reports whether Mismatch checks everything the kube-scheduler checks for the
// pod: it has no pod affinity or anti-affinity, no topology spread and no persistent volume
// claims, whose verdicts depend on other pods and volumes Mismatch does not weigh.
func judgedInFull(pod *corev1.Pod) bool {
	if a := pod.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		return false
	}
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		return false
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return false
		}
	}
	return true
}

// lastingTaints leaves out the taints a node sheds on its own: Kubernetes' condition taints
// (not-ready, unreachable, …), Karpenter's unregistered taint and the claim's startup taints.
func lastingTaints(sn *state.StateNode, taints []corev1.Taint) []corev1.Taint {
	transient := map[string]bool{
		corev1.TaintNodeNotReady: true, corev1.TaintNodeUnreachable: true, corev1.TaintNodeNetworkUnavailable: true,
		corev1.TaintNodeMemoryPressure: true, corev1.TaintNodeDiskPressure: true, corev1.TaintNodePIDPressure: true,
		corev1.TaintNodeOutOfService: true, karpv1.UnregisteredTaintKey: true,
	}
	if sn.NodeClaim != nil {
		for _, t := range sn.NodeClaim.Spec.StartupTaints {
			transient[t.Key] = true
		}
	}
	var out []corev1.Taint
	for _, t := range taints {
		if !transient[t.Key] {
			out = append(out, t)
		}
	}
	return out
}
