package deletioncost

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/disruption"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// ControllerName names the controller in logs: Karpenter's.
const ControllerName = "pod.deletioncost"

const (
	// Interval is the time between two passes.
	Interval = time.Minute
	// unsyncedInterval is the time before the next pass while the cluster state is not synced.
	unsyncedInterval = time.Second
	// MaxNodesPerPass bounds the nodes of the Ranked and Cleared groups whose pods one pass
	// writes (about 1,500 pod writes at 30 pods a node), as Karpenter's maxNodesPerCycle; the
	// Disrupting group is not bounded.
	MaxNodesPerPass = 50
)

// Controller ranks the nodes every Interval and queues the pods' annotation writes.
type Controller struct {
	kube    client.Client
	cluster *state.Cluster
	cloud   cloudprovider.CloudProvider
	clock   clock.Clock
	queue   *Queue
	changes *disruption.ConsolidationClock
	// ranked is when the cluster had last changed at the last pass that ranked it.
	ranked time.Time
}

// NewController returns the controller: it reads the cluster through cluster and kube, the
// instance types' prices from cloud, and writes through queue.
func NewController(kube client.Client, cluster *state.Cluster, cloud cloudprovider.CloudProvider, clk clock.Clock, queue *Queue) *Controller {
	return &Controller{kube: kube, cluster: cluster, cloud: cloud, clock: clk, queue: queue, changes: disruption.NewConsolidationClock()}
}

// Register runs the controller under mgr, on the leader.
func (c *Controller) Register(mgr manager.Manager) error {
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("registering %s: %w", ControllerName, err)
	}
	return nil
}

// NeedLeaderElection makes the controller run only on the leader.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start runs a pass, then another after the time it asks for, until ctx is done (a
// controller-runtime Runnable).
func (c *Controller) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName(ControllerName))
	for {
		next, err := c.Reconcile(ctx)
		if err != nil {
			log.FromContext(ctx).Error(err, "pod deletion cost pass failed")
			next = Interval
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(next):
		}
	}
}

// Reconcile runs one pass: it ranks the nodes and queues the writes of the pods that differ
// from the ranking, unless the cluster has not changed since the last pass that did, and
// returns when to run the next. The writes happen in the queue, after it returns.
func (c *Controller) Reconcile(ctx context.Context) (time.Duration, error) {
	snap, err := c.cluster.SyncSnapshot(ctx)
	if err != nil {
		return 0, fmt.Errorf("taking snapshot: %w", err)
	}
	if !snap.Synced {
		return unsyncedInterval, nil
	}
	now := c.clock.Now()
	changed := c.changes.Observe(snap, now)
	if changed.Equal(c.ranked) {
		log.FromContext(ctx).V(1).Info("no changes detected, skipping pod deletion cost update")
		return Interval, nil
	}
	if len(snap.Nodes) == 0 {
		// Not ranked: the first pass that sees nodes must not take them for no change.
		return Interval, nil
	}
	pdbs, err := state.ListPDBs(ctx, c.kube)
	if err != nil {
		return 0, err
	}
	types := map[string][]*cloudprovider.InstanceType{}
	for _, np := range snap.NodePools {
		its, err := c.cloud.GetInstanceTypes(ctx, np)
		if err != nil {
			// Its nodes have no price, and are cleared, as Karpenter leaves them.
			log.FromContext(ctx).Error(err, "cannot list instance types", "nodepool", np.Name)
			continue
		}
		if len(its) > 0 {
			types[np.Name] = its
		}
	}
	plan := Rank(Input{Now: now, Nodes: snap.Nodes, Pods: snap.Pods, NodePools: snap.NodePools, InstanceTypes: types, PDBs: pdbs})
	perNodePool := c.enqueue(plan)
	metrics.SetNodesWithPendingDeletionCostWrites(perNodePool)
	c.ranked = changed
	total := 0
	for _, n := range perNodePool {
		total += n
	}
	log.FromContext(ctx).V(1).Info("ranked nodes for pod deletion cost", "disrupting", len(plan.Disrupting), "ranked", len(plan.Ranked),
		"cleared", len(plan.Cleared), "nodesQueued", total)
	return Interval, nil
}

// enqueue queues the writes of the plan's nodes whose ReplicaSet pods differ from it: every
// Disrupting node, then Ranked and Cleared ones up to MaxNodesPerPass written. It returns the
// nodes queued per NodePool.
func (c *Controller) enqueue(plan Plan) map[string]int {
	perNodePool := map[string]int{}
	for _, sn := range plan.Disrupting {
		c.enqueueNode(sn, plan, DisruptingCost, false, perNodePool)
	}
	written := 0
	for i, sn := range plan.Ranked {
		if written == MaxNodesPerPass {
			break
		}
		if c.enqueueNode(sn, plan, RankAt(i, len(plan.Ranked)), false, perNodePool) {
			written++
		}
	}
	for _, sn := range plan.Cleared {
		if written >= MaxNodesPerPass {
			break
		}
		if c.enqueueNode(sn, plan, 0, true, perNodePool) {
			written++
		}
	}
	return perNodePool
}

// enqueueNode queues the writes of the node's ReplicaSet pods when one of them differs from
// the plan, and reports whether it did.
func (c *Controller) enqueueNode(sn *state.StateNode, plan Plan, cost int, clear bool, perNodePool map[string]int) bool {
	var pods []*corev1.Pod
	differs := false
	for _, pod := range plan.Pods[nodeName(sn)] {
		// The ReplicaSet controller is the one reader of the annotation.
		if !controlledBy(pod, "apps/v1", "ReplicaSet") {
			continue
		}
		pods = append(pods, pod)
		if !(write{cost: cost, clear: clear}).matches(pod) {
			differs = true
		}
	}
	if !differs {
		return false
	}
	for _, pod := range pods {
		c.queue.Add(pod, cost, clear)
	}
	pool := sn.NodeClaim.Labels[karpv1.NodePoolLabelKey]
	if sn.Node != nil {
		pool = sn.Node.Labels[karpv1.NodePoolLabelKey]
	}
	perNodePool[pool]++
	return true
}
