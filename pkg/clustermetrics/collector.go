package clustermetrics

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// DefaultTimeout bounds the reads of one scrape (the snapshot and the instance types).
const DefaultTimeout = 10 * time.Second

// Source is the cluster view the gauges are built from; *state.Cluster is one.
type Source interface {
	// SyncSnapshot reads the cluster (see state.Cluster.SyncSnapshot).
	SyncSnapshot(ctx context.Context) (*state.Snapshot, error)
}

// Collector builds Karpenter's state gauges (see package metrics) from a fresh snapshot on
// every Collect. It is safe for concurrent use; concurrent scrapes take turns.
type Collector struct {
	source  Source
	types   cloudprovider.InstanceTypeProvider
	timeout time.Duration
	// Clock gives node ages and the unsynced time; the real clock unless a test sets it.
	Clock clock.PassiveClock

	mu   sync.Mutex
	pods podResources
	// unsyncedSince is when the state was first seen unsynced since it last was synced.
	unsyncedSince time.Time
}

// NewCollector returns a collector reading the cluster from source and the NodePools' instance
// types (for prices) from types, which may be nil: the offering gauges and the costs are then
// left out.
func NewCollector(source Source, types cloudprovider.InstanceTypeProvider) *Collector {
	return &Collector{source: source, types: types, timeout: DefaultTimeout, Clock: clock.RealClock{}}
}

// Register adds the collector to mgr as a Runnable that serves its gauges while this replica
// is the leader.
func (c *Collector) Register(mgr manager.Manager) error {
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("registering metrics collector: %w", err)
	}
	return nil
}

// Start serves the collector's gauges on the registries package metrics is registered on
// (controller-runtime's Registry) until ctx is done.
func (c *Collector) Start(ctx context.Context) error {
	stop := metrics.ServeGauges(c)
	defer stop()
	<-ctx.Done()
	return nil
}

// NeedLeaderElection makes only the leader report the cluster: the gauges of two replicas
// would count every node twice.
func (c *Collector) NeedLeaderElection() bool { return true }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { metrics.DescribeGauges(ch) }

// Collect implements prometheus.Collector. When the cluster cannot be read it reports only
// karpenter_cluster_state_synced 0 (and logs why): a scrape never fails because of it.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	snap, err := c.source.SyncSnapshot(ctx)
	if err != nil {
		log.Log.WithName("metrics").Error(err, "cannot read the cluster for the state metrics")
		ch <- metrics.ClusterGauge(metrics.ClusterStateSynced, 0)
		ch <- metrics.ClusterGauge(metrics.ClusterStateUnsyncedTime, c.unsynced(false))
		return
	}
	ch <- metrics.ClusterGauge(metrics.ClusterStateSynced, boolValue(snap.Synced))
	ch <- metrics.ClusterGauge(metrics.ClusterStateUnsyncedTime, c.unsynced(snap.Synced))
	ch <- metrics.ClusterGauge(metrics.ClusterStateNodeCount, float64(len(snap.Nodes)))
	c.collectNodes(snap, ch)
	collectPods(snap, ch)
	collectNodePools(snap, ch)
	if c.types != nil {
		c.collectPrices(ctx, snap, ch)
	}
	c.pods.prune()
}

// unsynced is how long the state has been unsynced, as of now; 0 when synced.
func (c *Collector) unsynced(synced bool) float64 {
	now := c.Clock.Now()
	if synced {
		c.unsyncedSince = time.Time{}
		return 0
	}
	if c.unsyncedSince.IsZero() {
		c.unsyncedSince = now
	}
	return now.Sub(c.unsyncedSince).Seconds()
}

// collectNodes reports the node gauges of every registered node, and the cluster's
// utilization: its pods' requests over its nodes' allocatable.
func (c *Collector) collectNodes(snap *state.Snapshot, ch chan<- prometheus.Metric) {
	var allocatables, requests []corev1.ResourceList // every node's, for the utilization
	now := c.Clock.Now()
	for _, sn := range snap.Nodes {
		node := sn.Node
		if node == nil {
			continue
		}
		labels := nodeLabels(node, sn.NodePool(), sn.NodeClaim != nil)
		ch <- metrics.NodeLifetime(labels, now.Sub(node.CreationTimestamp.Time).Seconds())
		var podRequests, podLimits, daemonRequests, daemonLimits []corev1.ResourceList
		for _, pod := range sn.Pods {
			if pod.Spec.NodeName != node.Name {
				continue // nominated, not bound
			}
			requests, limits := c.pods.get(pod)
			podRequests, podLimits = append(podRequests, requests), append(podLimits, limits)
			if isDaemon(pod) {
				daemonRequests, daemonLimits = append(daemonRequests, requests), append(daemonLimits, limits)
			}
		}
		nodeRequests := scheduling.Merge(podRequests...)
		allocatables, requests = append(allocatables, node.Status.Allocatable), append(requests, nodeRequests)
		for _, g := range []struct {
			desc *prometheus.Desc
			list corev1.ResourceList
		}{
			{metrics.NodesAllocatable, node.Status.Allocatable},
			{metrics.NodesSystemOverhead, scheduling.Subtract(node.Status.Capacity, node.Status.Allocatable)},
			{metrics.NodesTotalPodRequests, nodeRequests},
			{metrics.NodesTotalPodLimits, scheduling.Merge(podLimits...)},
			{metrics.NodesTotalDaemonRequests, scheduling.Merge(daemonRequests...)},
			{metrics.NodesTotalDaemonLimits, scheduling.Merge(daemonLimits...)},
		} {
			for name, q := range g.list {
				ch <- metrics.NodeGauge(g.desc, labels, metrics.ResourceType(string(name)), q.AsApproximateFloat64())
			}
		}
	}
	requested := scheduling.Merge(requests...)
	for name, a := range scheduling.Merge(allocatables...) {
		if total := a.AsApproximateFloat64(); total > 0 {
			r := requested[name]
			ch <- metrics.Utilization(metrics.ResourceType(string(name)), 100*r.AsApproximateFloat64()/total)
		}
	}
}

func nodeLabels(node *corev1.Node, nodePool string, managed bool) metrics.NodeLabels {
	return metrics.NodeLabels{
		Phase: string(node.Status.Phase), Managed: managed, WindowsBuild: node.Labels[corev1.LabelWindowsBuild],
		NodeName:     node.Name,
		NodePool:     nodePool,
		InstanceType: node.Labels[corev1.LabelInstanceTypeStable],
		CapacityType: node.Labels[karpv1.CapacityTypeLabelKey],
		Zone:         node.Labels[corev1.LabelTopologyZone],
		Region:       node.Labels[corev1.LabelTopologyRegion],
		Arch:         node.Labels[corev1.LabelArchStable],
		OS:           node.Labels[corev1.LabelOSStable],
	}
}

// collectPods reports one PodsState sample per pod.
func collectPods(snap *state.Snapshot, ch chan<- prometheus.Metric) {
	nodes := make(map[string]*corev1.Node, len(snap.Nodes))
	for _, sn := range snap.Nodes {
		if sn.Node != nil {
			nodes[sn.Node.Name] = sn.Node
		}
	}
	for _, pod := range snap.Pods {
		l := metrics.PodLabels{
			Name: pod.Name, Namespace: pod.Namespace, Owner: owner(pod), Node: pod.Spec.NodeName,
			Phase: string(pod.Status.Phase), Ready: isReady(pod),
		}
		if node := nodes[pod.Spec.NodeName]; node != nil {
			l.NodePool = node.Labels[karpv1.NodePoolLabelKey]
			l.Zone = node.Labels[corev1.LabelTopologyZone]
			l.Arch = node.Labels[corev1.LabelArchStable]
			l.CapacityType = node.Labels[karpv1.CapacityTypeLabelKey]
			l.InstanceType = node.Labels[corev1.LabelInstanceTypeStable]
		}
		ch <- metrics.PodState(l)
	}
}

// owner is the API path of the pod's first owner, or "".
func owner(pod *corev1.Pod) string {
	if len(pod.OwnerReferences) == 0 {
		return ""
	}
	ref := pod.OwnerReferences[0]
	prefix := "/apis/"
	if !strings.Contains(ref.APIVersion, "/") {
		prefix = "/api/" // the core group
	}
	return prefix + ref.APIVersion + "/namespaces/" + pod.Namespace + "/" + strings.ToLower(ref.Kind) + "s/" + ref.Name
}

func isDaemon(pod *corev1.Pod) bool {
	for _, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// collectNodePools reports each NodePool's usage (status.resources) and limits.
func collectNodePools(snap *state.Snapshot, ch chan<- prometheus.Metric) {
	for _, np := range snap.NodePools {
		for name, q := range np.Status.Resources {
			ch <- metrics.NodePoolGauge(metrics.NodePoolsUsage, np.Name, metrics.ResourceType(string(name)), q.AsApproximateFloat64())
		}
		for name, q := range np.Spec.Limits {
			ch <- metrics.NodePoolGauge(metrics.NodePoolsLimit, np.Name, metrics.ResourceType(string(name)), q.AsApproximateFloat64())
		}
	}
}

// collectPrices reports the offerings of every NodePool's instance types and the cost of the
// launched instances, each priced as disruption prices its candidates (cloudprovider.NodePrice:
// its offering, its own reservation's when reserved, else the cheapest of its capacity type,
// else of its instance type). An instance whose price is unknown counts nothing. When that is
// because its NodePool is gone or the NodePool's instance types could not be listed, its
// NodeClaim counts in karpenter_nodepools_cost_tracker_errors_total, as Karpenter's cost
// tracker counts its failures to add a NodeClaim; like Karpenter's, a NodeClaim without the
// instance type, capacity type, zone and NodePool labels is left out, and an instance type its
// NodePool no longer lists is no error.
func (c *Collector) collectPrices(ctx context.Context, snap *state.Snapshot, ch chan<- prometheus.Metric) {
	type offering struct{ instanceType, zone, capacityType string }
	seen := map[offering]bool{}
	byPool := make(map[string][]*cloudprovider.InstanceType, len(snap.NodePools))
	for _, np := range snap.NodePools {
		its, err := c.types.GetInstanceTypes(ctx, np)
		if err != nil {
			log.Log.WithName("metrics").V(1).Info("cannot price the nodepool's instance types", "nodepool", np.Name, "error", err.Error())
			continue
		}
		for _, it := range its {
			for _, o := range it.Offerings {
				key := offering{it.Name, o.Zone, o.CapacityType}
				if seen[key] {
					continue
				}
				seen[key] = true
				ch <- metrics.OfferingGauge(metrics.OfferingPriceEstimate, it.Name, o.CapacityType, o.Zone, o.Price)
				ch <- metrics.OfferingGauge(metrics.OfferingAvailable, it.Name, o.CapacityType, o.Zone, boolValue(o.Available))
			}
		}
		byPool[np.Name] = its
	}

	costs := map[string]float64{}
	total := 0.0
	for _, sn := range snap.Nodes {
		claim := sn.NodeClaim
		if claim == nil || claim.Status.ProviderID == "" {
			continue // not Karpenter's, or not launched
		}
		pool := sn.NodePool()
		if pool == "" || claimLabel(sn, corev1.LabelInstanceTypeStable) == "" || claimLabel(sn, corev1.LabelTopologyZone) == "" || claimLabel(sn, karpv1.CapacityTypeLabelKey) == "" {
			continue // as Karpenter's cost tracker: left out
		}
		types, ok := byPool[pool]
		if !ok {
			metrics.CostTrackerError(pool)
			continue
		}
		price, ok := cloudprovider.NodePrice(func(key string) string { return claimLabel(sn, key) }, types)
		if !ok {
			continue
		}
		costs[pool] += price
		total += price
	}
	for pool, v := range costs {
		ch <- metrics.NodePoolCost(pool, v)
	}
	ch <- metrics.ClusterGauge(metrics.ClusterStateCost, total)
}

// claimLabel reads a launched fact from the claim's labels, else from its node's.
func claimLabel(sn *state.StateNode, key string) string {
	if v, ok := sn.NodeClaim.Labels[key]; ok {
		return v
	}
	if sn.Node != nil {
		return sn.Node.Labels[key]
	}
	return ""
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// podResources caches pods' requests and limits by UID while their resourceVersion holds;
// prune forgets the pods not asked for since the previous prune. It is not safe for concurrent
// use.
type podResources struct {
	entries map[types.UID]*podResourcesEntry
	round   uint64
}

type podResourcesEntry struct {
	resourceVersion  string
	requests, limits corev1.ResourceList
	round            uint64
}

func (c *podResources) get(pod *corev1.Pod) (requests, limits corev1.ResourceList) {
	if e, ok := c.entries[pod.UID]; ok && e.resourceVersion == pod.ResourceVersion && pod.ResourceVersion != "" {
		e.round = c.round
		return e.requests, e.limits
	}
	requests = scheduling.PodRequests(pod)
	limits = resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	if pod.UID != "" {
		if c.entries == nil {
			c.entries = map[types.UID]*podResourcesEntry{}
		}
		c.entries[pod.UID] = &podResourcesEntry{resourceVersion: pod.ResourceVersion, requests: requests, limits: limits, round: c.round}
	}
	return requests, limits
}

func (c *podResources) prune() {
	for uid, e := range c.entries {
		if e.round != c.round {
			delete(c.entries, uid)
		}
	}
	c.round++
}
