package metrics

import (
	"slices"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// nodeLabelNames are the labels of the node gauges but resource_type, in the order
// NodeLabels.values gives: Karpenter's (the node's name, phase, whether Karpenter manages it,
// and its well-known labels).
var nodeLabelNames = []string{LabelNodeName, LabelNodePool, LabelInstanceType, LabelCapacityType, LabelZone,
	LabelRegion, LabelArch, LabelOS, LabelPhase, LabelManaged, LabelWindowsBuild}

// nodeResourceLabelNames are the labels of the node gauges of a resource type.
var nodeResourceLabelNames = append(slices.Clone(nodeLabelNames), LabelResourceType)

// podLabelNames are the labels of PodsState, in the order PodLabels.values gives.
var podLabelNames = []string{LabelName, LabelNamespace, LabelOwner, LabelNode, LabelScheduled, LabelNodePool,
	LabelZone, LabelArch, LabelCapacityType, LabelInstanceType, LabelPhase, LabelReady, LabelManaged}

// offeringLabelNames are the labels of the offering gauges.
var offeringLabelNames = []string{LabelInstanceType, LabelCapacityType, LabelZone}

func desc(subsystem, name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, subsystem, name), help, labels, nil)
}

// The state gauges, built on every scrape by the Collector passed to ServeGauges. CPU is in
// cores, memory and storage in bytes, other resources in their units.
var (
	// NodesAllocatable is a node's allocatable resources (node status), per resource type.
	NodesAllocatable = desc(subsystemNodes, "allocatable",
		"Resources of a node that pods may request (its status.allocatable), by resource type.", nodeResourceLabelNames...)
	// NodesTotalPodRequests sums the requests of the pods bound to a node, daemonset pods
	// included.
	NodesTotalPodRequests = desc(subsystemNodes, "total_pod_requests",
		"Sum of the resource requests of the pods bound to a node, DaemonSet pods included.", nodeResourceLabelNames...)
	// NodesTotalPodLimits sums the limits of the pods bound to a node, daemonset pods included.
	NodesTotalPodLimits = desc(subsystemNodes, "total_pod_limits",
		"Sum of the resource limits of the pods bound to a node, DaemonSet pods included.", nodeResourceLabelNames...)
	// NodesTotalDaemonRequests sums the requests of the daemonset pods bound to a node.
	NodesTotalDaemonRequests = desc(subsystemNodes, "total_daemon_requests",
		"Sum of the resource requests of the DaemonSet pods bound to a node.", nodeResourceLabelNames...)
	// NodesTotalDaemonLimits sums the limits of the daemonset pods bound to a node.
	NodesTotalDaemonLimits = desc(subsystemNodes, "total_daemon_limits",
		"Sum of the resource limits of the DaemonSet pods bound to a node.", nodeResourceLabelNames...)
	// NodesSystemOverhead is a node's capacity less its allocatable: what the kubelet, the
	// system and eviction thresholds reserve.
	NodesSystemOverhead = desc(subsystemNodes, "system_overhead",
		"Resources a node reserves for the system: its capacity less its allocatable.", nodeResourceLabelNames...)
	// NodesCurrentLifetime is a node's age.
	NodesCurrentLifetime = desc(subsystemNodes, "current_lifetime_seconds",
		"Age of a node in seconds.", nodeLabelNames...)
	// ClusterUtilization is the cluster's pod requests over its nodes' allocatable, per
	// resource type, in percent.
	ClusterUtilization = desc("cluster", "utilization_percent",
		"Utilization of the nodes' allocatable resources by pod requests, in percent, by resource type.", LabelResourceType)
	// ClusterStateUnsyncedTime is how long the cluster state has not been synced (0 when it is).
	ClusterStateUnsyncedTime = desc(subsystemClusterState, "unsynced_time_seconds",
		"Seconds for which Karpenter's cluster state has not been synced; 0 when it is.")
	// PodsState is 1 for every pod in the cluster, labelled with where it runs, its phase and
	// readiness.
	PodsState = desc(subsystemPods, "state",
		"One per pod, labelled by name, namespace, owner, node, whether it is scheduled (bound), the node's nodepool, zone, architecture, capacity type and instance type, phase, whether it is ready, and whether its node is Karpenter-managed (has a nodepool).", podLabelNames...)
	// NodePoolsUsage is what a NodePool's nodes hold (status.resources), per resource type; the
	// "nodes" resource counts them.
	NodePoolsUsage = desc(subsystemNodePools, "usage",
		"Resources provisioned by a nodepool (the capacity of its nodes, and their count as resource type nodes), by resource type.", LabelNodePool, LabelResourceType)
	// NodePoolsLimit is a NodePool's limit (spec.limits), per resource type.
	NodePoolsLimit = desc(subsystemNodePools, "limit",
		"Limits of a nodepool (spec.limits) on the resources it may provision, by resource type.", LabelNodePool, LabelResourceType)
	// NodePoolsCost is the hourly price of a NodePool's launched instances, as Karpenter's
	// karpenter_nodepools_cost_total.
	NodePoolsCost = desc(subsystemNodePools, "cost_total",
		"Estimated price per hour, in dollars, of a nodepool's launched instances (each at its offering's price). Not an authoritative source for billing.", LabelNodePool)
	// ClusterStateCost is the hourly price of every launched instance of every NodePool: the
	// sum of NodePoolsCost.
	ClusterStateCost = desc(subsystemClusterState, "cost_dollars_per_hour",
		"Estimated price per hour of every instance Karpenter launched and has not terminated: the sum of karpenter_nodepools_cost_total.")
	// ClusterStateNodeCount counts the nodes in Karpenter's cluster state: registered nodes and
	// NodeClaims that have none yet.
	ClusterStateNodeCount = desc(subsystemClusterState, "node_count",
		"Nodes in Karpenter's cluster state: registered nodes, and NodeClaims without a node yet.")
	// ClusterStateSynced is 1 when the cluster state could be read and shows every NodeClaim
	// this process created, else 0.
	ClusterStateSynced = desc(subsystemClusterState, "synced",
		"1 when Karpenter's cluster state is readable and includes every NodeClaim Karpenter created, else 0.")
	// OfferingPriceEstimate is the hourly price of an instance type's offering, for the
	// instance types of every NodePool.
	OfferingPriceEstimate = desc(subsystemCloudProvider, "instance_type_offering_price_estimate",
		"Estimated price per hour of an instance type bought as a capacity type in a zone, for the instance types the nodepools may launch.", offeringLabelNames...)
	// OfferingAvailable is 1 when an offering is believed to have capacity, else 0.
	OfferingAvailable = desc(subsystemCloudProvider, "instance_type_offering_available",
		"1 when an instance type's offering (capacity type in a zone) is believed to have capacity, 0 when it recently ran out.", offeringLabelNames...)
)

var gaugeDescs = []*prometheus.Desc{
	NodesAllocatable, NodesTotalPodRequests, NodesTotalPodLimits, NodesTotalDaemonRequests,
	NodesTotalDaemonLimits, NodesSystemOverhead, PodsState, NodePoolsUsage, NodePoolsLimit,
	NodePoolsCost, ClusterStateCost, ClusterStateNodeCount, ClusterStateSynced,
	OfferingPriceEstimate, OfferingAvailable, NodesCurrentLifetime, ClusterUtilization, ClusterStateUnsyncedTime,
}

// DescribeGauges sends the descriptions of every state gauge, for a Collector's Describe.
func DescribeGauges(ch chan<- *prometheus.Desc) {
	for _, d := range gaugeDescs {
		ch <- d
	}
}

// NodeLabels are the labels of a node's gauges, read from the node's labels.
type NodeLabels struct {
	NodeName, NodePool, InstanceType, CapacityType, Zone, Region, Arch, OS string
	// Phase is the node's status.phase (empty on most clusters: kubelets no longer set it).
	Phase string
	// Managed says Karpenter manages the node (it has a NodeClaim).
	Managed bool
	// WindowsBuild is the node's node.kubernetes.io/windows-build label.
	WindowsBuild string
}

// values are the label values in nodeLabelNames' order.
func (l NodeLabels) values() []string {
	return []string{l.NodeName, l.NodePool, l.InstanceType, l.CapacityType, l.Zone, l.Region, l.Arch, l.OS,
		l.Phase, strconv.FormatBool(l.Managed), l.WindowsBuild}
}

// NodeGauge is a sample of a node gauge (NodesAllocatable, NodesTotalPodRequests, …) for one
// resource type.
func NodeGauge(d *prometheus.Desc, l NodeLabels, resourceType string, v float64) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(l.values(), resourceType)...)
}

// NodeLifetime is a node's NodesCurrentLifetime sample.
func NodeLifetime(l NodeLabels, seconds float64) prometheus.Metric {
	return prometheus.MustNewConstMetric(NodesCurrentLifetime, prometheus.GaugeValue, seconds, l.values()...)
}

// Utilization is a ClusterUtilization sample.
func Utilization(resourceType string, percent float64) prometheus.Metric {
	return prometheus.MustNewConstMetric(ClusterUtilization, prometheus.GaugeValue, percent, resourceType)
}

// PodLabels are the labels of a pod's PodsState sample. Scheduled (bound to a node) and
// Managed (its node belongs to a NodePool) follow from Node and NodePool.
type PodLabels struct {
	Name, Namespace, Owner, Node, NodePool, Zone, Arch, CapacityType, InstanceType, Phase string
	// Ready: the pod's Ready condition is True.
	Ready bool
}

// PodState is a pod's PodsState sample.
func PodState(l PodLabels) prometheus.Metric {
	return prometheus.MustNewConstMetric(PodsState, prometheus.GaugeValue, 1,
		l.Name, l.Namespace, l.Owner, l.Node, strconv.FormatBool(l.Node != ""), l.NodePool, l.Zone, l.Arch, l.CapacityType,
		l.InstanceType, l.Phase, strconv.FormatBool(l.Ready), strconv.FormatBool(l.NodePool != ""))
}

// NodePoolGauge is a sample of NodePoolsUsage or NodePoolsLimit.
func NodePoolGauge(d *prometheus.Desc, nodePool, resourceType string, v float64) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, nodePool, resourceType)
}

// NodePoolCost is a sample of NodePoolsCost.
func NodePoolCost(nodePool string, dollarsPerHour float64) prometheus.Metric {
	return prometheus.MustNewConstMetric(NodePoolsCost, prometheus.GaugeValue, dollarsPerHour, nodePool)
}

// ClusterGauge is a sample of an unlabelled cluster gauge (ClusterStateCost,
// ClusterStateNodeCount, ClusterStateSynced).
func ClusterGauge(d *prometheus.Desc, v float64) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
}

// OfferingGauge is a sample of OfferingPriceEstimate or OfferingAvailable.
func OfferingGauge(d *prometheus.Desc, instanceType, capacityType, zone string, v float64) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, instanceType, capacityType, zone)
}

// gaugeSlot is the collector registered for the state gauges: it forwards to the Collector
// ServeGauges installed last, or collects nothing.
type gaugeSlot struct {
	mu     sync.Mutex
	serial uint64
	c      prometheus.Collector
}

var gauges = &gaugeSlot{}

// Describe implements prometheus.Collector.
func (s *gaugeSlot) Describe(ch chan<- *prometheus.Desc) { DescribeGauges(ch) }

// Collect implements prometheus.Collector.
func (s *gaugeSlot) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	c := s.c
	s.mu.Unlock()
	if c != nil {
		c.Collect(ch)
	}
}

// ServeGauges makes c the source of the state gauges on the registries the package is
// registered on, until the returned stop is called; c must describe only the *Desc variables
// of this package. A process serves one source at a time (the elected leader's): a later
// ServeGauges replaces an earlier one, whose stop then does nothing.
func ServeGauges(c prometheus.Collector) (stop func()) {
	gauges.mu.Lock()
	defer gauges.mu.Unlock()
	gauges.serial++
	serial := gauges.serial
	gauges.c = c
	return func() {
		gauges.mu.Lock()
		defer gauges.mu.Unlock()
		if gauges.serial == serial {
			gauges.c = nil
		}
	}
}
