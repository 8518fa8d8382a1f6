package state

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Defaults for how long in-memory facts outlive what the cache shows.
const (
	// DefaultNominationGrace is how long a pod stays nominated to a node that has initialized,
	// giving the kube-scheduler time to bind it before the provisioner considers it again
	// (Karpenter uses twice the batch max duration, at least 10s).
	DefaultNominationGrace = 20 * time.Second
	// CreatedClaimTTL bounds how long a created NodeClaim the cache has not shown yet is
	// assumed to exist.
	CreatedClaimTTL = time.Minute
)

// Cluster is the shared, concurrency-safe view of the cluster.
type Cluster struct {
	reader client.Reader
	clock  clock.PassiveClock

	// NominationGrace overrides DefaultNominationGrace when set.
	NominationGrace time.Duration
	// ReadNamespaces makes a snapshot read the Namespaces' labels when a pod's affinity term
	// selects namespaces by them (Snapshot.NamespaceLabels). The simulator sets it; the
	// controller does not (its ClusterRole grants no access to Namespaces), so there a
	// namespaceSelector counts as every namespace.
	ReadNamespaces bool
	// DefaultConstraints are the kube-scheduler's default topology spread constraints, as
	// --scheduler-config gives them (ParseSchedulerConfig): every snapshot's pods with no
	// constraint of their own carry them, under the selector the kube-scheduler deduces for each
	// (the namespace's Services and the pod's ReplicationController, ReplicaSet or
	// StatefulSet), as Karpenter's DefaultTopologySpreadInjector gives them to its scheduling
	// copies. Set it before the first snapshot.
	DefaultConstraints []corev1.TopologySpreadConstraint
	// ControllerSelector, when set, is the selector a pod's controller adds to its default
	// constraints' selector (DefaultConstraints) when the pod names no controller, as a
	// ReplicaSet's or StatefulSet's selector is added; nil for none. The simulator sets it: its
	// workloads make their pods themselves, without a ReplicaSet or StatefulSet object.
	ControllerSelector func(*corev1.Pod) *metav1.LabelSelector
	// LaunchBackoffBase and LaunchBackoffMax override the package's defaults when
	// LaunchBackoffBase is set (tests on a real clock).
	LaunchBackoffBase, LaunchBackoffMax time.Duration

	mu          sync.Mutex
	nominations map[types.UID]nomination
	// held are the pending pods whose status.nominatedNodeName holds room on a node, by UID:
	// since when (see SyncSnapshot), and whether the hold went stale.
	held map[types.UID]heldPod
	// reserved holds, by ReplicaSet UID, the room planned for pods it has yet to create
	// (Reserve).
	reserved map[types.UID]*replicaSetReservations
	// batches maps the NodeClaims a provisioning pass created together to their batch
	// (RecordBatch).
	batches map[string]*launchBatch
	// refusals remembers, per pod, the nodes that turned it away and the launches it missed.
	refusals map[types.UID]*refusal
	// missed are the refusals recorded since the last snapshot, which reports them.
	missed []Miss
	// nominees indexes nominations by target: target → pod UID → pod.
	nominees map[string]map[types.UID]types.NamespacedName
	created  map[string]createdClaim
	deleting map[string]bool
	// nominatedUntil says, by target (Node or NodeClaim name), until when a target that a
	// provisioning pass or a disruption command chose for pods stays nominated (see
	// StateNode.NominatedUntil).
	nominatedUntil map[string]time.Time
	// spreadPlaced are the pods, and the controllers of pods, that the last snapshot gave a
	// DoNotSchedule default constraint (DefaultConstraints), by UID: see PlacedByKubeScheduler.
	spreadPlaced map[types.UID]bool
	// spreadCopies are the last snapshot's pods with the default constraints, by the pod they
	// copy (see defaultSpread).
	spreadCopies map[*corev1.Pod]*corev1.Pod
	// requests caches pods' effective requests, pruned every snapshot.
	requests NodeRequests
	// podScheduling remembers when pods were acknowledged and decided on (for the pod metrics).
	podScheduling podSchedulingBook
}

type nomination struct {
	target string // NodeClaim or Node name
	since  time.Time
	// launched: the target is a NodeClaim created for the pod.
	launched bool
	// announced: the pod's status.nominatedNodeName was set to the target's node.
	announced bool
	// unannounced: the pod is never told its node (scheduling.PlacedByKubeScheduler).
	unannounced bool
}

// heldPod is a pending pod whose status.nominatedNodeName names a node: the kube-scheduler
// keeps room for it there. It clears the name when the pod fails and preemption finds no
// victim, but not for a pod that may not preempt (preemptionPolicy Never, or victims still
// terminating on the node), and the nomination controller may have set it again after a
// failure it took for the node's not being ready yet: so a hold is counted for a bounded time
// only (StaleNominationAfter), and only while the pods bound to the node leave it room
// (countWaiting).
type heldPod struct {
	node  string
	since time.Time
	stale bool
}

// StaleNominationAfter is how long a pod's nominated node, ready for pods, may hold it before
// the pod is planned again (at least two nomination grace periods: the nomination's own, then
// the kube-scheduler's time to try the pod there): long enough for the kube-scheduler, busy
// with a burst, to reach it, after which the node has turned it away.
const StaleNominationAfter = 90 * time.Second

// staleAfter is StaleNominationAfter, or two nomination grace periods when longer.
func (c *Cluster) staleAfter() time.Duration {
	return max(StaleNominationAfter, 2*c.nominationGrace())
}

// StaleNomination reports whether the pod's status.nominatedNodeName, node, went stale: the
// node, ready for pods, held it past StaleNominationAfter without taking it. The nomination
// controller may then name the pod's new node instead.
func (c *Cluster) StaleNomination(pod types.UID, node string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.held[pod]
	return ok && h.stale && h.node == node
}

type createdClaim struct {
	claim *karpv1.NodeClaim
	at    time.Time
}

// NewCluster returns a cluster view over reader (normally the manager's cache).
func NewCluster(reader client.Reader, c clock.PassiveClock) *Cluster {
	return &Cluster{
		reader:      reader,
		clock:       c,
		nominations: map[types.UID]nomination{},
		held:        map[types.UID]heldPod{},
		refusals:    map[types.UID]*refusal{},
		nominees:    map[string]map[types.UID]types.NamespacedName{},
		created:     map[string]createdClaim{},
		deleting:    map[string]bool{},

		nominatedUntil: map[string]time.Time{},
	}
}

// Nominate records that a pod is expected to land on target (a NodeClaim or Node name).
// launched says that target is a NodeClaim created for the pod: should its node turn the pod
// away, the pod has missed a launch (see Refused).
func (c *Cluster) Nominate(pod *corev1.Pod, target string, launched bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget(pod.UID)
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	c.nominations[pod.UID] = nomination{target: target, since: c.clock.Now(), launched: launched, unannounced: c.placedByKubeScheduler(pod)}
	if c.nominees[target] == nil {
		c.nominees[target] = map[types.UID]types.NamespacedName{}
	}
	c.nominees[target][pod.UID] = key
}

// NominateNodes records that a disruption command moves pods to the targets (Node or NodeClaim
// names): as Karpenter's, they are not disrupted for the nomination window (see
// StateNode.NominatedUntil).
func (c *Cluster) NominateNodes(targets ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for _, t := range targets {
		c.nominateTarget(t, now)
	}
}

// nominateTarget starts or extends a target's nomination window at now; c.mu is held.
func (c *Cluster) nominateTarget(target string, now time.Time) {
	if until := now.Add(c.nominationGrace()); until.After(c.nominatedUntil[target]) {
		c.nominatedUntil[target] = until
	}
}

// forget drops a pod's nomination; c.mu is held.
func (c *Cluster) forget(pod types.UID) {
	n, ok := c.nominations[pod]
	if !ok {
		return
	}
	delete(c.nominations, pod)
	if set := c.nominees[n.target]; set != nil {
		delete(set, pod)
		if len(set) == 0 {
			delete(c.nominees, n.target)
		}
	}
}

// NominationTargets returns the names pods are nominated to, sorted.
func (c *Cluster) NominationTargets() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.nominees))
	for target := range c.nominees {
		out = append(out, target)
	}
	sort.Strings(out)
	return out
}

// HasNominees reports whether any pod is nominated to target.
func (c *Cluster) HasNominees(target string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.nominees[target]) > 0
}

// Nominees returns the pods nominated to target (a NodeClaim or Node name), by UID.
func (c *Cluster) Nominees(target string) map[types.UID]types.NamespacedName {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[types.UID]types.NamespacedName, len(c.nominees[target]))
	for uid, key := range c.nominees[target] {
		out[uid] = key
	}
	return out
}

// NominatedTo returns the target a pod is nominated to, if any.
func (c *Cluster) NominatedTo(pod types.UID) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nominations[pod]
	return n.target, ok
}

// RecordCreated remembers a NodeClaim the provisioner just created, until the cache shows it.
func (c *Cluster) RecordCreated(claim *karpv1.NodeClaim) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.created[claim.Name] = createdClaim{claim: claim.DeepCopy(), at: c.clock.Now()}
}

// ClaimDeleted forgets a NodeClaim that is gone. A claim this process created and the reader
// has not shown yet is otherwise assumed to exist, with its pods nominated to it, until
// CreatedClaimTTL: a claim deleted before the reader ever showed it (a launch that failed at
// once) would hold its pods that long.
func (c *Cluster) ClaimDeleted(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.created, name)
	delete(c.batches, name)
}

// MarkForDeletion marks nodes (by Node or NodeClaim name) that disruption is about to remove:
// the provisioner places nothing on them.
func (c *Cluster) MarkForDeletion(names ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		c.deleting[n] = true
	}
}

// MarkedForDeletion reports whether disruption marked the node or NodeClaim of that name.
func (c *Cluster) MarkedForDeletion(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deleting[name]
}

// UnmarkForDeletion undoes MarkForDeletion.
func (c *Cluster) UnmarkForDeletion(names ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		delete(c.deleting, n)
	}
}

// StateNode is a node, or a NodeClaim still launching, with the pods on it.
type StateNode struct {
	// Node is the registered node; nil while the claim has none.
	Node *corev1.Node
	// NodeClaim that created the node; nil for nodes Karpenter does not manage.
	NodeClaim *karpv1.NodeClaim
	// Pods bound to it, and pods nominated to it that are not bound yet.
	Pods []*corev1.Pod
	// Allocatable is what pods may request on it.
	Allocatable corev1.ResourceList
	// Requested sums the requests of Pods and of daemonset pods expected on it.
	Requested corev1.ResourceList
	// MarkedForDeletion: disruption or a user is removing it.
	MarkedForDeletion bool
	// DaemonSets are the daemonsets whose pods will run on it (they tolerate its taints and
	// select its labels) but are not among Pods yet; Requested counts their requests.
	DaemonSets []*appsv1.DaemonSet
	// NominatedUntil is when the node stops being nominated for pods, as Karpenter's
	// StateNode.Nominated: disruption leaves a nominated node alone. A node is nominated for
	// the nomination window (Cluster.NominationGrace, Karpenter's max(2×batchMaxDuration, 10s))
	// from the last time a provisioning pass placed pods on it or a disruption command moved
	// pods to it; here also from when a pod nominated to it bound (Karpenter nominates it
	// again at each pass while the pod waits, the last one just before the bind), and for a
	// window from now while a pod nominated to it waits. Zero or past: not nominated.
	NominatedUntil time.Time
}

// Nominated reports whether the node is nominated for pods at now (see NominatedUntil).
func (n *StateNode) Nominated(now time.Time) bool {
	return n.NominatedUntil.After(now)
}

// Name is the Node's name, or the NodeClaim's while it has no node.
func (n *StateNode) Name() string {
	if n.Node != nil {
		return n.Node.Name
	}
	return n.NodeClaim.Name
}

// Available is Allocatable less Requested.
func (n *StateNode) Available() corev1.ResourceList {
	return scheduling.Subtract(n.Allocatable, n.Requested)
}

// Initialized reports whether the node is ready for pods (Karpenter's Initialized condition,
// or Ready for nodes Karpenter does not manage).
func (n *StateNode) Initialized() bool {
	if n.NodeClaim != nil {
		return n.NodeClaim.IsInitialized()
	}
	return NodeReady(n.Node)
}

// Rebooting reports whether node repair is rebooting the node (its NodeClaim's Rebooting
// condition is True), as Karpenter's StateNode.RebootInProgress: from the commitment, through
// the drain, to the end of the reboot.
func (n *StateNode) Rebooting() bool {
	return n.NodeClaim != nil && n.NodeClaim.IsRebooting()
}

// NodeReady reports whether a node's Ready condition is True.
func NodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NodePool the node belongs to, or "".
func (n *StateNode) NodePool() string {
	if n.NodeClaim != nil {
		return n.NodeClaim.Labels[karpv1.NodePoolLabelKey]
	}
	return n.Node.Labels[karpv1.NodePoolLabelKey]
}

// Snapshot is the cluster at one moment.
type Snapshot struct {
	// Nodes are registered nodes and in-flight NodeClaims, sorted by name.
	Nodes []*StateNode
	// Pending are pods waiting for capacity and not nominated to any, sorted by namespace/name.
	Pending []*corev1.Pod
	// DaemonSets in the cluster.
	DaemonSets []*appsv1.DaemonSet
	// NodePools in the cluster, sorted by name.
	NodePools []*karpv1.NodePool
	// Pods are every pod in the cluster.
	Pods []*corev1.Pod
	// Synced: the reader shows every NodeClaim this process created (none had to be joined in
	// from memory), so the snapshot is the API server's view up to the cache's delay.
	Synced bool
	// Avoid lists, per pending pod, the nodes (or NodeClaims) that recently turned it away: the
	// scheduler must not plan it there again (see Cluster.Refused).
	Avoid map[types.UID][]string
	// NamespaceLabels are the Namespaces' labels by name, read with ReadNamespaces when a pod's
	// affinity term has a namespaceSelector (see NamespaceLabels); nil otherwise.
	NamespaceLabels map[string]map[string]string
}

// NamespaceLabels reads the labels of the Namespaces, by name, when one of pods has a pod
// (anti-)affinity term with a namespaceSelector, which selects namespaces by them; nil, without
// reading anything, otherwise. Each namespace has the label kubernetes.io/metadata.name with
// its name, as kube-apiserver sets it.
func NamespaceLabels(ctx context.Context, reader client.Reader, pods []*corev1.Pod) (map[string]map[string]string, error) {
	if !slices.ContainsFunc(pods, hasNamespaceSelector) {
		return nil, nil
	}
	var namespaces corev1.NamespaceList
	if err := reader.List(ctx, &namespaces, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	out := make(map[string]map[string]string, len(namespaces.Items))
	for i := range namespaces.Items {
		ns := &namespaces.Items[i]
		labels := maps.Clone(ns.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[corev1.LabelMetadataName] = ns.Name
		out[ns.Name] = labels
	}
	return out, nil
}

// hasNamespaceSelector reports whether a pod has a pod (anti-)affinity term, required or
// preferred, with a namespaceSelector.
func hasNamespaceSelector(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	selects := func(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) bool {
		return slices.ContainsFunc(required, func(t corev1.PodAffinityTerm) bool { return t.NamespaceSelector != nil }) ||
			slices.ContainsFunc(preferred, func(t corev1.WeightedPodAffinityTerm) bool { return t.PodAffinityTerm.NamespaceSelector != nil })
	}
	return a.PodAffinity != nil && selects(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) ||
		a.PodAntiAffinity != nil && selects(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
}

// objectRanger is a reader that visits its own objects without copying them, as List with
// client.UnsafeDisableDeepCopy shares them (the simulator's in-memory cluster,
// memory.Client.Range).
type objectRanger interface {
	Range(list client.ObjectList, fn func(client.Object) bool, opts ...client.ListOption) error
}

// listPods returns every pod, read-only, in the reader's List order (see ListPods).
func (c *Cluster) listPods(ctx context.Context) ([]*corev1.Pod, error) {
	return ListPods(ctx, c.reader)
}

// ListPods returns the pods opts select, read-only, in the reader's List order: through Range
// when the reader has it, which spares copying each pod into a list (a pod is over a kilobyte,
// and a large simulated cluster has a hundred thousand), else through List with
// client.UnsafeDisableDeepCopy.
func ListPods(ctx context.Context, reader client.Reader, opts ...client.ListOption) ([]*corev1.Pod, error) {
	if r, ok := reader.(objectRanger); ok {
		var out []*corev1.Pod
		err := r.Range(&corev1.PodList{}, func(o client.Object) bool {
			out = append(out, o.(*corev1.Pod))
			return true
		}, opts...)
		if err != nil {
			return nil, fmt.Errorf("listing pods: %w", err)
		}
		return out, nil
	}
	var pods corev1.PodList
	if err := reader.List(ctx, &pods, append(slices.Clip(opts), client.UnsafeDisableDeepCopy)...); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	out := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		out[i] = &pods.Items[i]
	}
	return out, nil
}

// SyncSnapshot reads the cluster and joins in what only this process knows. It is not a pure
// read: it also brings that knowledge up to date with what it reads, and so changes the
// Cluster:
//   - a created NodeClaim the reader now shows, or older than CreatedClaimTTL, is forgotten;
//   - the nomination of a pod that is bound, being deleted or gone is forgotten, and so is
//     its record of refusals once it is bound;
//   - a nomination whose node was ready for the pod for the whole grace period without taking
//     it is recorded as a miss (for the provisioner to judge, see TakeMisses) and forgotten;
//   - refusals of pods that are gone and lapsed node avoidances, and the scheduling records
//     of pods that are gone or done, are pruned, and so is the cache of pods' requests.
//
// Call it once per pass (the provisioner, disruption, the metrics collector each do), not to
// peek.
func (c *Cluster) SyncSnapshot(ctx context.Context) (*Snapshot, error) {
	var (
		nodes      corev1.NodeList
		claims     karpv1.NodeClaimList
		daemonSets appsv1.DaemonSetList
		pools      karpv1.NodePoolList
	)
	for _, l := range []struct {
		what string
		list client.ObjectList
	}{{"nodes", &nodes}, {"nodeclaims", &claims}, {"daemonsets", &daemonSets}, {"nodepools", &pools}} {
		// Read-only: the snapshot shares the objects with the reader's cache, and everything
		// that changes one copies it first.
		if err := c.reader.List(ctx, l.list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	allPods, err := c.listPods(ctx)
	if err != nil {
		return nil, err
	}
	var spreadPlaced map[types.UID]bool
	var spreadCopies map[*corev1.Pod]*corev1.Pod
	if len(c.DefaultConstraints) > 0 {
		c.mu.Lock()
		prev := c.spreadCopies
		c.mu.Unlock()
		allPods, spreadCopies, spreadPlaced = defaultSpread(ctx, c.reader, c.DefaultConstraints, c.ControllerSelector, allPods, prev)
	}
	var namespaceLabels map[string]map[string]string
	if c.ReadNamespaces {
		if namespaceLabels, err = NamespaceLabels(ctx, c.reader, allPods); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spreadPlaced, c.spreadCopies = spreadPlaced, spreadCopies
	now := c.clock.Now()

	// Claims: the cache's, plus created ones it does not show yet.
	byName := map[string]*karpv1.NodeClaim{}
	unseen := 0
	for i := range claims.Items {
		byName[claims.Items[i].Name] = &claims.Items[i]
	}
	for name, cc := range c.created {
		if _, seen := byName[name]; seen || now.Sub(cc.at) > CreatedClaimTTL {
			delete(c.created, name)
			continue
		}
		byName[name] = cc.claim
		unseen++
	}
	snap := &Snapshot{Synced: unseen == 0, NamespaceLabels: namespaceLabels}
	for i := range daemonSets.Items {
		snap.DaemonSets = append(snap.DaemonSets, &daemonSets.Items[i])
	}
	for i := range pools.Items {
		snap.NodePools = append(snap.NodePools, &pools.Items[i])
	}
	sort.Slice(snap.NodePools, func(i, j int) bool { return snap.NodePools[i].Name < snap.NodePools[j].Name })

	// One StateNode per registered node (joined with its claim) and per claim without a node.
	targets := map[string]*StateNode{}
	claimOfNode := map[string]*karpv1.NodeClaim{}
	for _, claim := range byName {
		if claim.Status.NodeName != "" {
			claimOfNode[claim.Status.NodeName] = claim
		}
	}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		sn := &StateNode{Node: node, NodeClaim: claimOfNode[node.Name], Allocatable: node.Status.Allocatable}
		sn.MarkedForDeletion = node.DeletionTimestamp != nil || c.deleting[node.Name] ||
			sn.NodeClaim != nil && (sn.NodeClaim.DeletionTimestamp != nil || c.deleting[sn.NodeClaim.Name])
		targets[node.Name] = sn
		if sn.NodeClaim != nil {
			targets[sn.NodeClaim.Name] = sn
		}
	}
	for _, claim := range byName {
		if claim.Status.NodeName != "" && targets[claim.Status.NodeName] != nil {
			continue
		}
		sn := &StateNode{NodeClaim: claim, MarkedForDeletion: claim.DeletionTimestamp != nil || c.deleting[claim.Name]}
		if len(claim.Status.Allocatable) > 0 {
			sn.Allocatable = claim.Status.Allocatable
		} else {
			// Not launched yet: only the room it was sized for is known.
			sn.Allocatable = claim.Spec.Resources.Requests
		}
		targets[claim.Name] = sn
	}

	// Pods: bound ones to their node; nominated ones to their target while it is there. The
	// pods seen forget the nominations and refusals of pods gone; with none, they are not
	// noted (a refusal is only ever made for a nominated pod).
	var seen map[types.UID]bool
	if len(c.nominations) > 0 || len(c.refusals) > 0 || len(c.reserved) > 0 {
		seen = make(map[types.UID]bool, len(allPods))
	}
	// The pods of ReplicaSets holding reservations (settleReservations).
	reservedPods := replicaSetPods{live: map[types.UID]int{}, newest: map[types.UID]time.Time{}, boundOn: map[types.UID]map[string]int{}}
	snap.Pods = make([]*corev1.Pod, 0, len(allPods))
	heldSeen := map[types.UID]bool{}
	// Pending pods that hold room on a node: counted there once the pods bound to it are all
	// known (countWaiting).
	var waiting []waitingPod
	// pend adds a pod that holds no room to the snapshot's pending pods, if it waits for
	// capacity and not before a next launch.
	pend := func(pod *corev1.Pod) {
		if ok, _ := IsProvisionableAt(withoutStaleName(pod, c.held), now); !ok {
			return
		}
		if r := c.refusals[pod.UID]; r != nil {
			if now.Before(r.retryAt) {
				return // it waits before its next launch (LaunchBackoff)
			}
			if avoid := r.avoiding(now); len(avoid) > 0 {
				if snap.Avoid == nil {
					snap.Avoid = map[types.UID][]string{}
				}
				snap.Avoid[pod.UID] = avoid
			}
		}
		snap.Pending = append(snap.Pending, pod)
	}
	for _, pod := range allPods {
		if seen != nil {
			seen[pod.UID] = true
		}
		snap.Pods = append(snap.Pods, pod)
		if isTerminal(pod) {
			continue
		}
		var owner types.UID
		if len(c.reserved) > 0 && pod.DeletionTimestamp == nil {
			if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && c.reserved[ref.UID] != nil {
				owner = ref.UID
			}
		}
		if pod.Spec.NodeName != "" {
			if sn, ok := targets[pod.Spec.NodeName]; ok {
				sn.Pods = append(sn.Pods, pod)
			}
			if n, ok := c.nominations[pod.UID]; ok {
				c.nominateTarget(n.target, now)
				c.forget(pod.UID)
				reservedPods.count(owner, pod, "")
			} else {
				reservedPods.count(owner, pod, pod.Spec.NodeName)
			}
			delete(c.refusals, pod.UID)
			continue
		}
		if pod.DeletionTimestamp != nil {
			c.forget(pod.UID)
			continue
		}
		if owner != "" {
			reservedPods.count(owner, pod, "")
			c.takeReservation(pod)
		}
		if n, ok := c.nominations[pod.UID]; ok {
			sn, exists := targets[n.target]
			live := exists && !sn.MarkedForDeletion && !nominationExpired(sn, n, now, c.nominationGrace())
			switch {
			case live && c.placedByKubeScheduler(pod):
				// It holds no room where it was planned: the kube-scheduler, not told of the
				// plan, may give that room to another pod of its kind, and counted there it
				// would skew the plan's view of its spread from the kube-scheduler's (which
				// counts bound pods only), planning it again and again where the
				// kube-scheduler will not put it. Pending, it is planned again on every pass
				// among the room left, as Karpenter plans every pending pod; its nomination
				// keeps its target from disruption meanwhile.
			case live:
				waiting = append(waiting, waitingPod{pod: pod, sn: sn, n: n})
				continue
			default:
				switch {
				case exists && !sn.MarkedForDeletion && n.announced && sn.Node != nil && pod.Status.NominatedNodeName == sn.Node.Name:
					// The kube-scheduler holds the pod's room on the node and may not have tried
					// it there yet: the hold below times from the nomination.
					if h, ok := c.held[pod.UID]; !ok || h.node != sn.Node.Name {
						c.held[pod.UID] = heldPod{node: sn.Node.Name, since: n.since}
					}
				case exists && !sn.MarkedForDeletion:
					// The node was ready for the pod for the whole grace period and did not take
					// it; a name that was set and is gone was cleared by the kube-scheduler.
					c.miss(pod, sn.Name(), sn.NodePool(), n, n.announced)
				}
				c.forget(pod.UID)
			}
		}
		if nnn := pod.Status.NominatedNodeName; nnn != "" {
			// The kube-scheduler holds room for the pod on the node named (it nominated the
			// pod after a preemption, or Karpenter did, in this process or before a restart):
			// count it there, not as pending, for StaleNominationAfter of the node ready for
			// pods and while its bound pods leave the pod room (countWaiting). The
			// kube-scheduler tries the pod there first on every attempt, but the name may stay
			// after a failure (see heldPod): past that, the node turned it away (a refusal), and
			// the pod is planned again, avoiding the node.
			sn, ok := targets[nnn]
			if !ok || sn.Node == nil || sn.Node.Name != nnn || sn.MarkedForDeletion {
				continue
			}
			heldSeen[pod.UID] = true
			h, known := c.held[pod.UID]
			if !known || h.node != nnn {
				h = heldPod{node: nnn, since: now}
				c.held[pod.UID] = h
			}
			if !h.stale && !nominationExpired(sn, nomination{since: h.since}, now, c.staleAfter()) {
				waiting = append(waiting, waitingPod{pod: pod, sn: sn, n: nomination{target: nnn, since: h.since, announced: true}, held: true})
				continue
			}
			if !h.stale {
				h.stale = true
				c.held[pod.UID] = h
				c.miss(pod, sn.Name(), sn.NodePool(), nomination{target: nnn, since: h.since, announced: true}, true)
			}
		}
		pend(pod)
	}
	for _, pod := range c.countWaiting(waiting, heldSeen) {
		pend(pod)
	}
	for uid := range c.nominations {
		if !seen[uid] {
			c.forget(uid) // the pod is gone
		}
	}
	for uid := range c.held {
		if !heldSeen[uid] {
			delete(c.held, uid) // bound, gone, or its name cleared or moved
		}
	}
	c.settleReservations(targets, reservedPods, now)
	c.pruneRefusals(seen, now)
	c.prunePodScheduling(snap.Pods, now)
	// A target pods are nominated to and wait for is nominated, as Karpenter's passes nominate
	// it again while they wait (this is where a provisioning pass's nominations start too).
	for target := range c.nominees {
		c.nominateTarget(target, now)
	}
	for target, until := range c.nominatedUntil {
		if !until.After(now) {
			delete(c.nominatedUntil, target)
		}
	}
	counted := map[*StateNode]bool{}
	for _, sn := range targets {
		if counted[sn] {
			continue
		}
		counted[sn] = true
		if sn.Node != nil {
			sn.NominatedUntil = c.nominatedUntil[sn.Node.Name]
		}
		if sn.NodeClaim != nil {
			if until := c.nominatedUntil[sn.NodeClaim.Name]; until.After(sn.NominatedUntil) {
				sn.NominatedUntil = until
			}
		}
		sn.DaemonSets = expectedDaemonSets(sn, snap.DaemonSets)
		sn.Requested = c.requested(sn)
		snap.Nodes = append(snap.Nodes, sn)
	}
	c.requests.Prune()
	sort.Slice(snap.Nodes, func(i, j int) bool { return snap.Nodes[i].Name() < snap.Nodes[j].Name() })
	sort.Slice(snap.Pending, func(i, j int) bool {
		a, b := snap.Pending[i], snap.Pending[j]
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	return snap, nil
}

// waitingPod is a pending pod counted on a node: nominated there (n), or holding the node's
// name in its status.nominatedNodeName (held, n says since when).
type waitingPod struct {
	pod  *corev1.Pod
	sn   *StateNode
	n    nomination
	held bool
}

// countWaiting counts the waiting pods on their nodes, and returns those a node ready for pods
// can no longer take: the pods bound to it (which the kube-scheduler gave room the plan had
// kept for others, a race the nominated node names narrow but cannot close) leave too little
// of a resource it reports for the pod, the earliest nominations keeping their room first. Such
// a pod is refused at once (a miss, its name, if it names the node, stale) rather than when its
// nomination or hold runs out: the kube-scheduler cannot place it there while those pods run,
// and after failing it there retries it only on a change in the cluster. The provisioner then
// plans it again (without penalty: the room was taken) on the room left or a new node. c.mu is
// held; every pod bound to a node must be among its Pods already.
func (c *Cluster) countWaiting(waiting []waitingPod, heldSeen map[types.UID]bool) (refused []*corev1.Pod) {
	sort.SliceStable(waiting, func(i, j int) bool {
		a, b := waiting[i], waiting[j]
		if !a.n.since.Equal(b.n.since) {
			return a.n.since.Before(b.n.since)
		}
		return a.pod.Namespace < b.pod.Namespace || a.pod.Namespace == b.pod.Namespace && a.pod.Name < b.pod.Name
	})
	room := map[*StateNode]corev1.ResourceList{}
	for _, w := range waiting {
		sn := w.sn
		if sn.Node == nil || !NodeReady(sn.Node) {
			sn.Pods = append(sn.Pods, w.pod) // its room is still coming
			continue
		}
		left, ok := room[sn]
		if !ok {
			bound := make([]corev1.ResourceList, 0, len(sn.Pods))
			for _, p := range sn.Pods {
				bound = append(bound, c.requests.Requests.Get(p))
			}
			left = scheduling.Subtract(sn.Node.Status.Allocatable, scheduling.Merge(bound...))
		}
		requests := c.requests.Requests.Get(w.pod)
		if scheduling.Fits(reportedBy(requests, left), left) == nil {
			room[sn] = scheduling.Subtract(left, requests)
			sn.Pods = append(sn.Pods, w.pod)
			continue
		}
		room[sn] = left
		uid, node := w.pod.UID, sn.Node.Name
		if !w.held {
			c.forget(uid)
		}
		c.miss(w.pod, node, sn.NodePool(), w.n, true)
		if w.pod.Status.NominatedNodeName == node {
			c.held[uid] = heldPod{node: node, since: w.n.since, stale: true}
			heldSeen[uid] = true
		}
		refused = append(refused, w.pod)
	}
	return refused
}

// reportedBy is the part of requests for the resources the node reports (in left): one it does
// not report yet (an extended resource whose device plugin has not registered) is not judged.
func reportedBy(requests, left corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(requests))
	for name, q := range requests {
		if _, ok := left[name]; ok {
			out[name] = q
		}
	}
	return out
}

// nominationExpired: a nomination lasts while its target launches and for a grace period after
// the node initializes (for the kube-scheduler to bind the pod).
func nominationExpired(sn *StateNode, n nomination, now time.Time, grace time.Duration) bool {
	if sn.NodeClaim == nil {
		return now.Sub(n.since) > grace
	}
	cond := meta.FindStatusCondition(sn.NodeClaim.Status.Conditions, karpv1.ConditionTypeInitialized)
	if cond == nil || cond.Status != "True" {
		return false
	}
	since := cond.LastTransitionTime.Time
	if n.since.After(since) {
		since = n.since
	}
	return now.Sub(since) > grace
}

func (c *Cluster) nominationGrace() time.Duration {
	if c.NominationGrace > 0 {
		return c.NominationGrace
	}
	return DefaultNominationGrace
}

// requested sums the pods on a node and the daemonset pods expected there but not bound yet.
// A claim not launched yet has its requests as allocatable (it was sized for its pods and
// daemonsets); its pods are the nominated ones, so after a restart, when nominations are lost,
// the room its pods need shows as free and they are placed on it again.
func (c *Cluster) requested(sn *StateNode) corev1.ResourceList {
	return c.requests.Of(sn.Name(), sn.Pods, sn.DaemonSets)
}

// expectedDaemonSets are the daemonsets whose pods will run on the node but are not there yet.
func expectedDaemonSets(sn *StateNode, daemonSets []*appsv1.DaemonSet) []*appsv1.DaemonSet {
	labels, taints := nodeLabelsAndTaints(sn)
	return ExpectedDaemonSets(sn.Pods, labels, taints, daemonSets)
}

func nodeLabelsAndTaints(sn *StateNode) (map[string]string, []corev1.Taint) {
	if sn.Node != nil {
		return sn.Node.Labels, sn.Node.Spec.Taints
	}
	reqs, err := scheduling.FromNodePoolRequirements(sn.NodeClaim.Spec.Requirements...)
	labels := map[string]string{}
	if err == nil {
		labels = reqs.Labels()
	}
	for k, v := range sn.NodeClaim.Labels {
		labels[k] = v
	}
	return labels, sn.NodeClaim.Spec.Taints
}

// DaemonSetSchedules reports whether a daemonset's pods would run on a node with these labels
// and taints: they tolerate its taints and match its labels by node selector and required node
// affinity.
func DaemonSetSchedules(ds *appsv1.DaemonSet, labels map[string]string, taints []corev1.Taint) bool {
	return slices.ContainsFunc(scheduling.DaemonTerms(&ds.Spec.Template.Spec, taints), func(term scheduling.Requirements) bool {
		return term.Matches(labels) == nil
	})
}

// SchedulerBacklog is how long after its creation a pod of the default scheduler that the
// kube-scheduler has not tried yet (no PodScheduled condition) counts as waiting for capacity.
// The kube-scheduler tries a pod within milliseconds unless its queue is long: in a burst of
// thousands of pods it marks them Unschedulable at its own pace (tens to hundreds a second),
// and a provisioner that waited for the mark, as Karpenter does, would see the burst a slice
// per batch and size every batch's nodes for its slice alone. A pod that fits existing room is
// planned there, not launched for.
const SchedulerBacklog = 2 * time.Second

// withoutStaleName is the pod, or when its status.nominatedNodeName went stale (see heldPod) a
// shallow copy without it: a stale name waits on no preemption.
func withoutStaleName(pod *corev1.Pod, held map[types.UID]heldPod) *corev1.Pod {
	h, ok := held[pod.UID]
	if !ok || !h.stale || h.node != pod.Status.NominatedNodeName {
		return pod
	}
	cp := *pod
	cp.Status.NominatedNodeName = ""
	return &cp
}

// IsProvisionable reports whether a pod waits for capacity Karpenter may create: the
// kube-scheduler marked it Unschedulable, it is not bound, terminal or being deleted, it is not
// a daemonset or static pod, and it is not waiting on a preemption.
func IsProvisionable(pod *corev1.Pod) bool {
	provisionable, _ := IsProvisionableAt(pod, time.Time{})
	return provisionable
}

// IsProvisionableAt is IsProvisionable at now, which also counts a pod waiting in the
// kube-scheduler's queue for SchedulerBacklog (see there); a zero now does not. When it is
// false for a pod that could become so by waiting, wait says for how long.
func IsProvisionableAt(pod *corev1.Pod, now time.Time) (provisionable bool, wait time.Duration) {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || isTerminal(pod) || pod.Status.NominatedNodeName != "" {
		return false, 0
	}
	for _, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" || o.Kind == "Node" {
			return false, 0
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable, 0
		}
	}
	if now.IsZero() || len(pod.Spec.SchedulingGates) > 0 ||
		pod.Spec.SchedulerName != "" && pod.Spec.SchedulerName != corev1.DefaultSchedulerName {
		return false, 0
	}
	if age := now.Sub(pod.CreationTimestamp.Time); age < SchedulerBacklog {
		return false, SchedulerBacklog - age
	}
	return true, 0
}

// IsReschedulable reports whether a pod must move when its node goes: it is not terminal or
// being deleted, and not a daemonset or static pod.
func IsReschedulable(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || isTerminal(pod) {
		return false
	}
	for _, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" || o.Kind == "Node" {
			return false
		}
	}
	return true
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
