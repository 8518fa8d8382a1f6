package provisioning

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// NominationControllerName names the nomination controller in logs and metrics.
const NominationControllerName = "provisioning.nomination"

// NominationController tells the kube-scheduler where the provisioner planned each pod: it sets
// the pod's status.nominatedNodeName to the Node of the NodeClaim the pod was nominated to,
// before the claim registers the Node (BeforeRegister, called by the lifecycle controller while
// the karpenter.sh/unregistered taint still keeps pods off it), and again whenever the name is
// missing while the nomination lasts. The kube-scheduler tries a pod's nominated node before any other and holds the
// room of nominated pods on that node against pods of no higher priority (Kubernetes 1.35's
// NominatedNodeNameForExpectation, on by default), so the pods of a batch land on the nodes
// launched for them instead of filling the first node to become ready with whatever pods come
// first, which leaves others without room and launches a node for them.
//
// The kube-scheduler clears a nominated node name when a scheduling attempt fails (for example
// while the node is still not ready); the controller sets it again for as long as the
// provisioner's nomination lasts. It only ever sets an empty field, never replacing a node
// the kube-scheduler nominated (after a preemption).
//
// Requests name a nomination target: a NodeClaim, or a Node the provisioner placed pods on.
type NominationController struct {
	kube    client.Client
	cluster *state.Cluster
	clock   clock.PassiveClock
	// placed carries the targets of a provisioning pass's placements on nodes that exist
	// (Placed) to the controller's queue; nil until Register (simulate reconciles every target
	// on every step instead).
	placed chan event.GenericEvent
}

// nominationReconciles is how many targets the controller nominates pods to at once, and
// nominationPatches how many of a target's pods it patches at once: a burst's nodes become
// ready together, and each one's pods must name it before the kube-scheduler places others.
const (
	nominationReconciles = 4
	nominationPatches    = 16
)

// placedQueue bounds the targets Placed hands over at once; past it, a pass's further targets
// wait for the next pass, which nominates them again.
const placedQueue = 1024

// NewNominationController returns the controller over the provisioner's cluster state.
func NewNominationController(kube client.Client, cluster *state.Cluster, c clock.PassiveClock) *NominationController {
	return &NominationController{kube: kube, cluster: cluster, clock: c}
}

// Register watches NodeClaims (a claim's Node registering), Nodes, pods whose nominated
// node name the kube-scheduler cleared or that take a reservation (state.Cluster.Reserve),
// and the targets the provisioner placed pods on (Placed), under mgr. It must run before the
// provisioner's first pass.
func (c *NominationController) Register(mgr manager.Manager) error {
	c.placed = make(chan event.GenericEvent, placedQueue)
	return ctrl.NewControllerManagedBy(mgr).
		Named(NominationControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: nominationReconciles}).
		WatchesRawSource(source.Channel(c.placed, &handler.EnqueueRequestForObject{})).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return c.requests(o.GetName())
		})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			names := []string{o.GetName()}
			for _, ref := range o.GetOwnerReferences() {
				if ref.Kind == "NodeClaim" {
					names = append(names, ref.Name)
				}
			}
			return c.requests(names...)
		})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			pod, ok := o.(*corev1.Pod)
			if !ok || pod.Spec.NodeName != "" || pod.Status.NominatedNodeName != "" {
				return nil
			}
			if target, ok := c.cluster.NominatedTo(pod.UID); ok {
				return c.requests(target)
			}
			// A pod of a ReplicaSet the provisioner planned room for before the pod existed
			// is told that room now, before the kube-scheduler gives it other room.
			if target, ok := c.cluster.TakeReservation(pod); ok && !c.cluster.PlacedByKubeScheduler(pod) {
				return c.requests(target)
			}
			return nil
		})).
		Complete(c)
}

// Placed queues the targets of a provisioning pass's placements on existing nodes and
// launching claims (a provisioner observer): a node that is ready already sends no event that
// would bring its new nominees here, and unannounced they are left for the kube-scheduler to
// place anywhere, their room given to whichever pod comes first. Claims created by the pass
// are reached through their own events.
func (c *NominationController) Placed(d *Decision) {
	if c.placed == nil || d.Results == nil {
		return
	}
	seen := map[string]bool{}
	for _, pl := range d.Results.ExistingPlacements {
		if seen[pl.Node] {
			continue
		}
		seen[pl.Node] = true
		select {
		case c.placed <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: pl.Node}}}:
		default:
			return
		}
	}
}

// requests returns a request for each name that pods are nominated to.
func (c *NominationController) requests(names ...string) []reconcile.Request {
	var out []reconcile.Request
	for _, name := range names {
		if c.cluster.HasNominees(name) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
		}
	}
	return out
}

// Reconcile sets the nominated node name of the pods nominated to the target once the target
// has a registered Node that is not being deleted. A pod whose name the kube-scheduler cleared
// after the node had been ready for pods for AnnounceWindow was refused by it: the cluster
// state learns so (state.Cluster.Refused), and the provisioner plans the pod elsewhere.
func (c *NominationController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nominees := c.cluster.Nominees(req.Name)
	if len(nominees) == 0 {
		return reconcile.Result{}, nil
	}
	node, readySince, err := c.nodeOf(ctx, req.Name)
	if err != nil || node == nil {
		return reconcile.Result{}, err
	}
	settled := !readySince.IsZero() && c.clock.Since(readySince) >= AnnounceWindow
	if err := c.nominateAll(ctx, req.Name, nominees, node, settled); err != nil {
		return reconcile.Result{}, err
	}
	if !settled {
		// Nominations the kube-scheduler clears before then are set again; after, they are
		// refusals, which a pod's update brings here.
		return reconcile.Result{RequeueAfter: AnnounceWindow}, nil
	}
	return reconcile.Result{}, nil
}

// AnnounceWindow is how long after a node became ready for pods the nomination controller
// still sets again a nominated node name the kube-scheduler cleared: the kube-scheduler clears
// it when it tries the pod before the node is ready, and may have tried just before.
const AnnounceWindow = 5 * time.Second

// nominateAll nominates each of the target's nominees to node, and says how many it could not.
// Once the node is settled (ready for pods for AnnounceWindow), a pod whose nominated node name
// was set and is now empty was refused by the kube-scheduler.
func (c *NominationController) nominateAll(ctx context.Context, target string, nominees map[types.UID]types.NamespacedName, node *corev1.Node, settled bool) error {
	type nominee struct {
		uid types.UID
		key types.NamespacedName
	}
	list := make([]nominee, 0, len(nominees))
	for uid, key := range nominees {
		list = append(list, nominee{uid, key})
	}
	var (
		mu   sync.Mutex
		errs []error
	)
	// In parallel: while a name the kube-scheduler cleared (it tried the pod before the node
	// was ready) is not set again, the pod's room on the node is not held, and other pods may
	// take it once the node is ready; one patch after another, the last of a large node's
	// pods waited for all the others. The simulator (which never registers the controller)
	// patches one after another, in a deterministic order.
	workers := nominationPatches
	if c.placed == nil {
		workers = 1
		slices.SortFunc(list, func(a, b nominee) int { return cmp.Compare(a.key.String(), b.key.String()) })
	}
	workqueue.ParallelizeUntil(ctx, workers, len(list), func(i int) {
		if err := c.nominate(ctx, target, list[i].key, list[i].uid, node, settled); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("nominating %d of %d pods to node %s: %w", len(errs), len(nominees), node.Name, errs[0])
	}
	return nil
}

// BeforeRegister nominates the pods planned for claim to node, before the claim registers
// it (nodeclaim.LifecycleOptions.BeforeRegister): the pods then name their node before it can
// take any pod. Failures are logged; the controller retries once the claim has registered.
func (c *NominationController) BeforeRegister(ctx context.Context, claim *karpv1.NodeClaim, node *corev1.Node) {
	if node.DeletionTimestamp != nil || node.Spec.Unschedulable {
		return
	}
	if err := c.nominateAll(ctx, claim.Name, c.cluster.Nominees(claim.Name), node, false); err != nil {
		log.FromContext(ctx).Error(err, "nominating pods before registration", "nodeclaim", claim.Name)
	}
}

// nodeOf returns the registered Node of a target: the Node of that name, or the Node of the
// NodeClaim of that name once it has registered, and since when it is ready for pods (the
// claim's Initialized condition, or the Node's Ready condition for a node Karpenter does not
// manage; zero while it is not). It returns a nil Node when there is none yet, or when it or
// its claim is being deleted.
func (c *NominationController) nodeOf(ctx context.Context, target string) (*corev1.Node, time.Time, error) {
	nodeName := target
	claim := &karpv1.NodeClaim{}
	var readySince time.Time
	switch err := c.kube.Get(ctx, types.NamespacedName{Name: target}, claim); {
	case err == nil:
		if claim.DeletionTimestamp != nil || claim.Status.NodeName == "" {
			return nil, time.Time{}, nil
		}
		nodeName = claim.Status.NodeName
		if cond := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeInitialized); cond != nil && cond.Status == metav1.ConditionTrue {
			readySince = cond.LastTransitionTime.Time
		}
	case !apierrors.IsNotFound(err):
		return nil, time.Time{}, fmt.Errorf("getting nodeclaim %s: %w", target, err)
	default:
		claim = nil
	}
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil {
		return nil, time.Time{}, client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp != nil || node.Spec.Unschedulable {
		return nil, time.Time{}, nil
	}
	if claim == nil {
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				readySince = cond.LastTransitionTime.Time
			}
		}
	}
	return node, readySince, nil
}

// nominate sets the pod's nominated node name when it is still unbound, the same pod (UID),
// and has none, and the kube-scheduler does not place it on its own
// (state.Cluster.PlacedByKubeScheduler: such a pod lands where the kube-scheduler puts it
// among the capacity the plan made room for, as under Karpenter). Once the node is settled, a pod whose name
// was set and is now empty was refused: the kube-scheduler tried it on the node and cleared it.
func (c *NominationController) nominate(ctx context.Context, target string, key types.NamespacedName, uid types.UID, node *corev1.Node, settled bool) error {
	// Read-only (a cache's own copy where the client has one): most nominees are nominated
	// already, and the one patched is written through a patch of its own.
	pod := &corev1.Pod{}
	if err := c.kube.Get(ctx, key, pod, client.UnsafeDisableDeepCopy); err != nil {
		return client.IgnoreNotFound(err)
	}
	if pod.UID != uid {
		return nil
	}
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || pod.Status.NominatedNodeName == node.Name {
		// Nothing left to tell it (state.Cluster.HoldsRegistration waits for that).
		c.cluster.Announced(uid, target)
		return nil
	}
	if pod.Status.NominatedNodeName != "" && !c.cluster.StaleNomination(uid, pod.Status.NominatedNodeName) || c.cluster.PlacedByKubeScheduler(pod) {
		return nil
	}
	if settled && c.cluster.Refused(pod, target, node.Name, node.Labels[karpv1.NodePoolLabelKey]) {
		return nil
	}
	// Optimistic: should the kube-scheduler have written the pod meanwhile, the patch fails
	// and the pod's update event brings it back here.
	patched := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	if err := c.kube.Status().Patch(ctx, patched, nominationPatch{resourceVersion: pod.ResourceVersion, node: node.Name}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return fmt.Errorf("setting the nominated node of pod %s: %w", key, err)
	}
	c.cluster.Announced(uid, target)
	return nil
}

// nominationPatch sets a pod's status.nominatedNodeName under optimistic locking: the merge
// patch client.MergeFromWithOptimisticLock makes of the change (the resourceVersion read and
// the name), written directly, since computing it encodes the whole pod twice. Besides its
// JSON (Data) it can make the same change to the typed pod (ApplyTo), as the simulator's store
// applies it (memory.TypedMergePatch).
type nominationPatch struct {
	resourceVersion, node string
}

// Type is a JSON merge patch.
func (p nominationPatch) Type() types.PatchType { return types.MergePatchType }

// Data is the merge patch's JSON.
func (p nominationPatch) Data(client.Object) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": p.resourceVersion},
		"status":   map[string]any{"nominatedNodeName": p.node},
	})
}

// ApplyTo changes obj, a Pod whose fields but its ObjectMeta it may share with a stored one,
// as applying Data would: the resourceVersion (which the store then checks) and the name.
func (p nominationPatch) ApplyTo(obj client.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("the nomination patch applies to a Pod, not a %T", obj)
	}
	pod.ResourceVersion = p.resourceVersion
	pod.Status.NominatedNodeName = p.node
	return nil
}
