// Package binder stands in for the kube-scheduler where there is none (the embedded cluster of
// `karpenter simulate`, and API-server tests without a control plane): it binds pending pods to
// Ready nodes that fit them (requests, node selection, taints, topology spread, pod
// (anti-)affinity, host ports), through the pods' binding subresource, and marks the pods that
// fit nowhere PodScheduled=False with reason Unschedulable, which is what Karpenter watches for.
// As the kube-scheduler, it tries a pod's nominated node (status.nominatedNodeName) first and
// keeps that node's room for it, and clears the name when the pod fits nowhere. The room of
// the daemonset pods a node will run is kept for them too, until they are there (the
// simulation's DaemonSet controller creates them once the node exists; API-server tests without
// a control plane have none).
//
// It binds volumes too, as the kube-scheduler's volume binding, the PersistentVolume controller
// and a CSI provisioner would: a claim of an Immediate StorageClass gets a volume at once, in a
// zone of the class's allowedTopologies (or of the cluster), and a pre-bound claim is bound to
// its volume; a claim of a WaitForFirstConsumer class gets a volume in the zone of the node its
// first pod goes to, just before the pod is bound. A pod goes only to a node its volumes allow
// (provisioning.VolumeRequirements, as Karpenter provisions by); a pod whose claim, volume or
// StorageClass does not exist is marked Unschedulable with the kube-scheduler's message
// (persistentvolumeclaim "data" not found).
//
// It reuses the project's scheduler (pkg/scheduler) restricted to existing nodes,
// so it judges fit with the same rules Karpenter provisions by. As the kube-scheduler keeps a
// pod that fit nowhere among its unschedulable pods until a cluster event could change that, a
// pod without volumes, pod (anti-)affinity or topology spread that fit no node is not tried
// again until a node, a daemonset or the set of bound pods changes (see Result.NotRetried):
// at a scale-up tens of thousands of pods wait while nothing changes for them.
package binder

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// Binder binds pending pods to nodes.
type Binder struct {
	kubeClient client.Client
	clock      clock.PassiveClock
	opts       Options
	requests   state.NodeRequests  // Step is not called concurrently
	daemonSets []*appsv1.DaemonSet // this Step's, read-only

	// As the kube-scheduler's queue of unschedulable pods: a pod that fit no node is not tried
	// again until something happens that could make it fit. unfit holds, by UID, the
	// resourceVersion of each pod that fit no node when the cluster was as placed describes;
	// it is kept only for pods whose fit depends on nothing but the nodes and the pods bound
	// to them (see retriesOnlyOnChange).
	unfit map[types.UID]string
	// placed is the signature of the nodes and bound pods at the end of the last Step.
	placed uint64
	seed   maphash.Seed
	// skipped says a placement of this Step was not carried out (its pod deleted meanwhile, or
	// its volumes not mountable there after all): the room the solve gave it is free, so the
	// pods that fit no node in that solve are tried again.
	skipped bool
}

// Options configure a Binder. The zero value is usable.
type Options struct {
	// ReadNamespaces makes the namespaceSelector of a pod affinity term select namespaces by
	// their labels, as the kube-scheduler does; off, it selects every namespace (for Namespaces
	// whose labels are not known).
	ReadNamespaces bool
	// Zones are where a volume of an Immediate StorageClass without allowedTopologies may be
	// provisioned (the cloud's zones); empty means the zones of the cluster's nodes, and the
	// claim waits while there are none.
	Zones []string
	// DefaultConstraints are the kube-scheduler's default topology spread constraints
	// (podTopologySpread.defaultConstraints of its configuration): a pending pod with none of
	// its own is placed under them (state.WithDefaultSpread), with ControllerSelector as
	// state.Cluster's.
	DefaultConstraints []corev1.TopologySpreadConstraint
	ControllerSelector func(*corev1.Pod) *metav1.LabelSelector
}

// New returns a binder over any client (an API server's or an in-memory one).
func New(kubeClient client.Client, c clock.PassiveClock, opts Options) *Binder {
	return &Binder{kubeClient: kubeClient, clock: c, opts: opts, unfit: map[types.UID]string{}, seed: maphash.MakeSeed()}
}

// Result says what one Step did.
type Result struct {
	// Bound pods, by name, with the node each went to.
	Bound map[string]string
	// Unschedulable pods newly marked so.
	Unschedulable []string
	// NotRetried counts the pending pods not tried again: they fit no node last time, and
	// nothing their fit depends on changed since (see retriesOnlyOnChange).
	NotRetried int
}

// Step binds the claims that need no pod, then every pending pod that fits a schedulable,
// Ready node its volumes allow, and marks the others Unschedulable (once, with the reason).
// Calls must not overlap.
func (b *Binder) Step(ctx context.Context) (*Result, error) {
	if err := b.bindClaims(ctx); err != nil {
		return nil, err
	}
	// Nothing to do unless a pod waits for a node (a field selector kube-apiserver serves too).
	unbound, err := state.ListPods(ctx, b.kubeClient, client.MatchingFields{"spec.nodeName": ""})
	if err != nil {
		return nil, fmt.Errorf("listing unbound pods: %w", err)
	}
	if len(unbound) == 0 {
		return &Result{Bound: map[string]string{}}, nil
	}
	// Read-only lists (markUnschedulable copies the pod it changes).
	pods, err := state.ListPods(ctx, b.kubeClient)
	if err != nil {
		return nil, err
	}
	var nodes corev1.NodeList
	if err := b.kubeClient.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var daemonSets appsv1.DaemonSetList
	if err := b.kubeClient.List(ctx, &daemonSets, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing daemonsets: %w", err)
	}
	b.daemonSets = make([]*appsv1.DaemonSet, len(daemonSets.Items))
	for i := range daemonSets.Items {
		b.daemonSets[i] = &daemonSets.Items[i]
	}
	bound := map[string][]*corev1.Pod{}
	var pending []*corev1.Pod
	var podsSignature uint64
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if pod.Spec.NodeName != "" {
			bound[pod.Spec.NodeName] = append(bound[pod.Spec.NodeName], pod)
			podsSignature ^= b.boundSignature(pod, pod.Spec.NodeName)
			continue
		}
		if pod.DeletionTimestamp == nil && (pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == corev1.DefaultSchedulerName) {
			pending = append(pending, pod)
		}
	}
	pending = state.WithDefaultSpread(ctx, b.kubeClient, b.opts.DefaultConstraints, b.opts.ControllerSelector, pending)
	res := &Result{Bound: map[string]string{}}
	// The pods that fit no node last time are left out while nothing they depend on changed.
	signature := podsSignature ^ b.nodesSignature(nodes.Items, daemonSets.Items)
	if signature != b.placed {
		clear(b.unfit)
	}
	b.skipped = false
	defer func() {
		b.placed = signature
		if b.skipped {
			clear(b.unfit)
		}
	}()
	waiting := map[types.UID]bool{}
	kept := pending[:0]
	for _, pod := range pending {
		waiting[pod.UID] = true
		if rv, ok := b.unfit[pod.UID]; !ok || rv != pod.ResourceVersion {
			kept = append(kept, pod)
			continue
		}
		res.NotRetried++
	}
	pending = kept
	maps.DeleteFunc(b.unfit, func(uid types.UID, _ string) bool { return !waiting[uid] })
	// The node requirements of the pending pods' volumes, and the pods no node can take for them.
	volumes := map[types.UID]scheduling.Requirements{}
	kept = pending[:0]
	for _, pod := range pending {
		if len(claimNames(pod)) == 0 {
			kept = append(kept, pod)
			continue
		}
		reqs, reason, err := b.volumeReason(ctx, pod)
		if err != nil {
			return res, err
		}
		if reason != "" {
			if err := b.markUnschedulable(ctx, pod, reason); err != nil {
				return res, err
			}
			res.Unschedulable = append(res.Unschedulable, pod.Namespace+"/"+pod.Name)
			continue
		}
		if reqs.Len() > 0 {
			volumes[pod.UID] = reqs
		}
		kept = append(kept, pod)
	}
	pending = kept
	if len(pending) == 0 {
		return res, nil
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	byName := make(map[string]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		if nodes.Items[i].DeletionTimestamp == nil {
			byName[nodes.Items[i].Name] = &nodes.Items[i]
		}
	}

	// As the kube-scheduler, a pod with a nominated node tries that node first, and the room
	// of nominated pods is theirs. A pod whose nominated node is not Ready yet waits for it
	// (the kube-scheduler would try it, fail, clear the name and have Karpenter set it again).
	nominees := map[string][]*corev1.Pod{}
	var others []*corev1.Pod
	for _, pod := range pending {
		node := byName[pod.Status.NominatedNodeName]
		switch {
		case node == nil:
			others = append(others, pod)
		case schedulable(node):
			nominees[node.Name] = append(nominees[node.Name], pod)
		}
	}
	// As the kube-scheduler, an affinity term's namespaceSelector selects namespaces by their
	// labels.
	var namespaceLabels map[string]map[string]string
	if b.opts.ReadNamespaces {
		if namespaceLabels, err = state.NamespaceLabels(ctx, b.kubeClient, pods); err != nil {
			return res, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(nominees)) {
		in := scheduler.Input{Pods: nominees[name], Nodes: []*scheduler.Node{b.schedulerNode(byName[name], bound[name])},
			VolumeRequirements: volumes, NamespaceLabels: namespaceLabels, Options: scheduler.Options{IgnorePreferences: true}}
		results := scheduler.Solve(in)
		if err := b.bindPods(ctx, results.ExistingPlacements, byName, bound, res, &signature); err != nil {
			return res, err
		}
		for _, pe := range results.PodErrors {
			others = append(others, pe.Pod)
		}
	}
	if len(others) == 0 {
		return res, nil
	}

	in := scheduler.Input{Pods: others, VolumeRequirements: volumes, NamespaceLabels: namespaceLabels, Options: scheduler.Options{IgnorePreferences: true}}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if node.DeletionTimestamp == nil {
			in.Nodes = append(in.Nodes, b.schedulerNode(node, bound[node.Name]))
		}
	}
	b.requests.Prune()
	results := scheduler.Solve(in)
	if err := b.bindPods(ctx, results.ExistingPlacements, byName, bound, res, &signature); err != nil {
		return res, err
	}
	for _, pe := range results.PodErrors {
		if err := b.markUnschedulable(ctx, pe.Pod, fmt.Sprintf("0/%d%s", len(in.Nodes), noFitSuffix)); err != nil {
			return res, err
		}
		res.Unschedulable = append(res.Unschedulable, pe.Pod.Namespace+"/"+pe.Pod.Name)
		if retriesOnlyOnChange(pe.Pod) {
			b.unfit[pe.Pod.UID] = pe.Pod.ResourceVersion
		}
	}
	return res, nil
}

// retriesOnlyOnChange reports whether a pod that fits no node can fit one only once a node
// changes or a bound pod leaves: it has no volumes, pod (anti-)affinity or topology spread,
// whose fit other pods' placements can change for the better. The room a node has for it
// only shrinks as pods are bound, so, as the kube-scheduler leaves such a pod among the
// unschedulable until a cluster event could make it fit, the binder does not try it again
// until the nodes or the bound pods differ from what it last failed against.
func retriesOnlyOnChange(pod *corev1.Pod) bool {
	if len(claimNames(pod)) > 0 || len(pod.Spec.TopologySpreadConstraints) > 0 {
		return false
	}
	a := pod.Spec.Affinity
	return a == nil || (a.PodAffinity == nil && a.PodAntiAffinity == nil)
}

// nodesSignature hashes what of the nodes and daemonsets a pod's fit depends on: each one's
// name and resourceVersion (the binder's lists come from the API server, whose versions change
// with every write).
func (b *Binder) nodesSignature(nodes []corev1.Node, daemonSets []appsv1.DaemonSet) uint64 {
	var h maphash.Hash
	h.SetSeed(b.seed)
	for i := range nodes {
		h.WriteString(nodes[i].Name)
		h.WriteByte(0)
		h.WriteString(nodes[i].ResourceVersion)
		h.WriteByte(0)
	}
	h.WriteByte(1)
	for i := range daemonSets {
		h.WriteString(string(daemonSets[i].UID))
		h.WriteByte(0)
		h.WriteString(daemonSets[i].ResourceVersion)
		h.WriteByte(0)
	}
	return h.Sum64()
}

// boundSignature is one bound pod's part of the signature: the signatures of the pods bound
// are combined by XOR, so that binding one adds it without hashing the others again.
func (b *Binder) boundSignature(pod *corev1.Pod, node string) uint64 {
	var h maphash.Hash // written piece by piece: no string built per bound pod per Step
	h.SetSeed(b.seed)
	h.WriteString(string(pod.UID))
	h.WriteByte(0)
	h.WriteString(node)
	return h.Sum64()
}

// schedulerNode is a node as the scheduler sees it, with the pods bound to it. Nodes that are
// not Ready take no pods, but still count as topology domains, as for the kube-scheduler
// (whose default node taints policy is Ignore).
func (b *Binder) schedulerNode(node *corev1.Node, pods []*corev1.Pod) *scheduler.Node {
	// The room of the daemonset pods the node will run, while they are not there yet, as
	// Karpenter reserves it when it provisions; once there, they count as its other pods.
	expected := state.ExpectedDaemonSets(pods, node.Labels, node.Spec.Taints, b.daemonSets)
	taints := node.Spec.Taints
	if node.Spec.Unschedulable {
		taints = append(append([]corev1.Taint(nil), taints...), corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	labels := node.Labels
	if _, ok := labels[corev1.LabelHostname]; !ok {
		labels = map[string]string{corev1.LabelHostname: node.Name}
		for k, v := range node.Labels {
			labels[k] = v
		}
	}
	available := scheduling.Subtract(node.Status.Allocatable, b.requests.Of(node.Name, pods, expected))
	if !state.NodeReady(node) {
		available = corev1.ResourceList{}
	}
	return &scheduler.Node{Name: node.Name, Labels: labels, Taints: taints, Pods: pods, Available: available}
}

// bindPods binds the placed pods through their binding subresource, adding each to bound and
// res; their claims first (bindPodClaims), and a pod whose volumes the node cannot mount after
// all stays pending.
func (b *Binder) bindPods(ctx context.Context, placements []scheduler.Placement, nodes map[string]*corev1.Node, bound map[string][]*corev1.Pod, res *Result, signature *uint64) error {
	for _, pl := range placements {
		if len(claimNames(pl.Pod)) > 0 {
			if ok, err := b.bindPodClaims(ctx, pl.Pod, nodes[pl.Node]); err != nil || !ok {
				if err != nil {
					return fmt.Errorf("binding the volumes of pod %s/%s on %s: %w", pl.Pod.Namespace, pl.Pod.Name, pl.Node, err)
				}
				b.skipped = true
				continue
			}
		}
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pl.Pod.Name, Namespace: pl.Pod.Namespace, UID: pl.Pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: pl.Node},
		}
		if err := b.kubeClient.SubResource("binding").Create(ctx, pl.Pod, binding); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				b.skipped = true
				continue // deleted or bound meanwhile
			}
			return fmt.Errorf("binding pod %s/%s to %s: %w", pl.Pod.Namespace, pl.Pod.Name, pl.Node, err)
		}
		bound[pl.Node] = append(bound[pl.Node], pl.Pod)
		*signature ^= b.boundSignature(pl.Pod, pl.Node)
		res.Bound[pl.Pod.Namespace+"/"+pl.Pod.Name] = pl.Node
	}
	return nil
}

// noFitSuffix ends the message of a pod that fits no node ("0/3 nodes are available to fit the
// pod"), whatever the count.
const noFitSuffix = " nodes are available to fit the pod"

// schedulable: Ready and not cordoned (taints are checked against each pod by the scheduler).
func schedulable(node *corev1.Node) bool {
	return state.NodeReady(node) && !node.Spec.Unschedulable
}

// markUnschedulable sets PodScheduled=False, reason Unschedulable, with the message, and clears
// the nominated node, unless the pod is already so (with this message, or both say no node fits).
func (b *Binder) markUnschedulable(ctx context.Context, pod *corev1.Pod, message string) error {
	noFit := func(m string) bool { return strings.HasSuffix(m, noFitSuffix) }
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
			pod.Status.NominatedNodeName == "" && (c.Message == message || noFit(c.Message) && noFit(message)) {
			return nil
		}
	}
	updated := pod.DeepCopy()
	// A failed attempt clears the nominated node, as the kube-scheduler's does.
	updated.Status.NominatedNodeName = ""
	cond := corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: message, LastTransitionTime: metav1.NewTime(b.clock.Now()),
	}
	replaced := false
	for i, c := range updated.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			updated.Status.Conditions[i], replaced = cond, true
		}
	}
	if !replaced {
		updated.Status.Conditions = append(updated.Status.Conditions, cond)
	}
	updated.Status.Phase = corev1.PodPending
	if err := b.kubeClient.Status().Update(ctx, updated); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("marking pod %s/%s unschedulable: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
