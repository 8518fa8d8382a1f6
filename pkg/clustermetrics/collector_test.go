package clustermetrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openkarpenter/karpenter/pkg/apis"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/clustermetrics"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/state"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// instanceTypes is an InstanceTypeProvider offering the same instance types to every NodePool.
type instanceTypes []*cloudprovider.InstanceType

func (its instanceTypes) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	return its, nil
}

var catalog = instanceTypes{
	builders.InstanceType(builders.InstanceTypeOptions{Name: "small", CPU: 2, MemoryGiB: 4, Offerings: []cloudprovider.Offering{
		{Zone: "zone-1", CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.1, Available: true},
		{Zone: "zone-1", CapacityType: karpv1.CapacityTypeSpot, Price: 0.03},
	}}),
	builders.InstanceType(builders.InstanceTypeOptions{Name: "large", CPU: 4, MemoryGiB: 8, Offerings: []cloudprovider.Offering{
		{Zone: "zone-2", CapacityType: karpv1.CapacityTypeSpot, Price: 0.25, Available: true},
	}}),
}

// launched is a Karpenter node of the default NodePool and its NodeClaim.
func launched(name, instanceType, capacityType, zone string, allocatable, capacity corev1.ResourceList) (*corev1.Node, *karpv1.NodeClaim) {
	labels := map[string]string{
		karpv1.NodePoolLabelKey: "default", corev1.LabelInstanceTypeStable: instanceType, karpv1.CapacityTypeLabelKey: capacityType,
		corev1.LabelTopologyZone: zone, corev1.LabelTopologyRegion: "region-1", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
	}
	node := builders.Node(name, labels, allocatable)
	node.Status.Capacity = capacity
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim-" + name, Labels: labels},
		Status:     karpv1.NodeClaimStatus{ProviderID: "sim:///" + name, NodeName: name, Capacity: capacity, Allocatable: allocatable},
	}
	return node, claim
}

func bound(name, node, cpu, cpuLimit, ownerKind string) *corev1.Pod {
	pod := builders.Pod(builders.PodOptions{Name: name, CPU: cpu, NodeName: node, OwnerKind: ownerKind})
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning}
	if cpuLimit != "" {
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLimit)}
	}
	return pod
}

// fixture is a cluster of two launched nodes (an on-demand small in zone-1, a spot large in
// zone-2), a NodeClaim still launching, a node Karpenter does not manage, and five pods (one
// on each node, a daemonset's on node-a, one waiting; web is ready).
func fixture(t *testing.T) (client.Client, *clustermetrics.Collector) {
	t.Helper()
	nodeA, claimA := launched("node-a", "small", karpv1.CapacityTypeOnDemand, "zone-1",
		builders.Resources("cpu", "2", "pods", "10"), builders.Resources("cpu", "2500m", "pods", "10"))
	nodeB, claimB := launched("node-b", "large", karpv1.CapacityTypeSpot, "zone-2",
		builders.Resources("cpu", "4", "pods", "20"), builders.Resources("cpu", "4", "pods", "20"))
	pending := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-pending", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}}}
	other := builders.Node("other", map[string]string{corev1.LabelInstanceTypeStable: "byo"}, builders.Resources("cpu", "1", "pods", "5"))
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Limits = karpv1.Limits(builders.Resources("cpu", "100"))
	np.Status.Resources = builders.Resources("cpu", "6500m", "nodes", "2")
	waiting := builders.Pod(builders.PodOptions{Name: "waiting", CPU: "1"})
	web := bound("web", "node-a", "500m", "1", "ReplicaSet")
	web.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	objs := []client.Object{nodeA, claimA, nodeB, claimB, pending, other, np, waiting, web,
		bound("agent", "node-a", "100m", "", "DaemonSet"), bound("batch", "node-b", "1", "", ""), bound("byo-app", "other", "250m", "", "")}
	kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(objs...).WithStatusSubresource(&corev1.Pod{}).Build()
	return kube, clustermetrics.NewCollector(state.NewCluster(kube, clock.RealClock{}), catalog)
}

func TestCollectorReportsNodes(t *testing.T) {
	_, c := fixture(t)
	const expected = `
# HELP karpenter_nodes_allocatable Resources of a node that pods may request (its status.allocatable), by resource type.
# TYPE karpenter_nodes_allocatable gauge
karpenter_nodes_allocatable{arch="amd64",capacity_type="on-demand",instance_type="small",managed="true",node_name="node-a",nodepool="default",os="linux",phase="",region="region-1",resource_type="cpu",windows_build="",zone="zone-1"} 2
karpenter_nodes_allocatable{arch="amd64",capacity_type="on-demand",instance_type="small",managed="true",node_name="node-a",nodepool="default",os="linux",phase="",region="region-1",resource_type="pods",windows_build="",zone="zone-1"} 10
karpenter_nodes_allocatable{arch="amd64",capacity_type="spot",instance_type="large",managed="true",node_name="node-b",nodepool="default",os="linux",phase="",region="region-1",resource_type="cpu",windows_build="",zone="zone-2"} 4
karpenter_nodes_allocatable{arch="amd64",capacity_type="spot",instance_type="large",managed="true",node_name="node-b",nodepool="default",os="linux",phase="",region="region-1",resource_type="pods",windows_build="",zone="zone-2"} 20
karpenter_nodes_allocatable{arch="",capacity_type="",instance_type="byo",managed="false",node_name="other",nodepool="",os="",phase="",region="",resource_type="cpu",windows_build="",zone=""} 1
karpenter_nodes_allocatable{arch="",capacity_type="",instance_type="byo",managed="false",node_name="other",nodepool="",os="",phase="",region="",resource_type="pods",windows_build="",zone=""} 5
# HELP karpenter_nodes_total_pod_requests Sum of the resource requests of the pods bound to a node, DaemonSet pods included.
# TYPE karpenter_nodes_total_pod_requests gauge
karpenter_nodes_total_pod_requests{arch="amd64",capacity_type="on-demand",instance_type="small",managed="true",node_name="node-a",nodepool="default",os="linux",phase="",region="region-1",resource_type="cpu",windows_build="",zone="zone-1"} 0.6
karpenter_nodes_total_pod_requests{arch="amd64",capacity_type="on-demand",instance_type="small",managed="true",node_name="node-a",nodepool="default",os="linux",phase="",region="region-1",resource_type="pods",windows_build="",zone="zone-1"} 2
karpenter_nodes_total_pod_requests{arch="amd64",capacity_type="spot",instance_type="large",managed="true",node_name="node-b",nodepool="default",os="linux",phase="",region="region-1",resource_type="cpu",windows_build="",zone="zone-2"} 1
karpenter_nodes_total_pod_requests{arch="amd64",capacity_type="spot",instance_type="large",managed="true",node_name="node-b",nodepool="default",os="linux",phase="",region="region-1",resource_type="pods",windows_build="",zone="zone-2"} 1
karpenter_nodes_total_pod_requests{arch="",capacity_type="",instance_type="byo",managed="false",node_name="other",nodepool="",os="",phase="",region="",resource_type="cpu",windows_build="",zone=""} 0.25
karpenter_nodes_total_pod_requests{arch="",capacity_type="",instance_type="byo",managed="false",node_name="other",nodepool="",os="",phase="",region="",resource_type="pods",windows_build="",zone=""} 1
# HELP karpenter_nodes_total_daemon_requests Sum of the resource requests of the DaemonSet pods bound to a node.
# TYPE karpenter_nodes_total_daemon_requests gauge
karpenter_nodes_total_daemon_requests{arch="amd64",capacity_type="on-demand",instance_type="small",managed="true",node_name="node-a",nodepool="default",os="linux",phase="",region="region-1",resource_type="cpu",windows_build="",zone="zone-1"} 0.1
karpenter_nodes_total_daemon_requests{arch="amd64",capacity_type="on-demand",instance_type="small",managed="true",node_name="node-a",nodepool="default",os="linux",phase="",region="region-1",resource_type="pods",windows_build="",zone="zone-1"} 1
# HELP karpenter_nodes_total_pod_limits Sum of the resource limits of the pods bound to a node, DaemonSet pods included.
# TYPE karpenter_nodes_total_pod_limits gauge
karpenter_nodes_total_pod_limits{arch="amd64",capacity_type="on-demand",instance_type="small",managed="true",node_name="node-a",nodepool="default",os="linux",phase="",region="region-1",resource_type="cpu",windows_build="",zone="zone-1"} 1
# HELP karpenter_nodes_system_overhead Resources a node reserves for the system: its capacity less its allocatable.
# TYPE karpenter_nodes_system_overhead gauge
karpenter_nodes_system_overhead{arch="amd64",capacity_type="on-demand",instance_type="small",managed="true",node_name="node-a",nodepool="default",os="linux",phase="",region="region-1",resource_type="cpu",windows_build="",zone="zone-1"} 0.5
karpenter_nodes_system_overhead{arch="amd64",capacity_type="on-demand",instance_type="small",managed="true",node_name="node-a",nodepool="default",os="linux",phase="",region="region-1",resource_type="pods",windows_build="",zone="zone-1"} 0
karpenter_nodes_system_overhead{arch="amd64",capacity_type="spot",instance_type="large",managed="true",node_name="node-b",nodepool="default",os="linux",phase="",region="region-1",resource_type="cpu",windows_build="",zone="zone-2"} 0
karpenter_nodes_system_overhead{arch="amd64",capacity_type="spot",instance_type="large",managed="true",node_name="node-b",nodepool="default",os="linux",phase="",region="region-1",resource_type="pods",windows_build="",zone="zone-2"} 0
karpenter_nodes_system_overhead{arch="",capacity_type="",instance_type="byo",managed="false",node_name="other",nodepool="",os="",phase="",region="",resource_type="cpu",windows_build="",zone=""} 0
karpenter_nodes_system_overhead{arch="",capacity_type="",instance_type="byo",managed="false",node_name="other",nodepool="",os="",phase="",region="",resource_type="pods",windows_build="",zone=""} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(expected), "karpenter_nodes_allocatable", "karpenter_nodes_total_pod_requests",
		"karpenter_nodes_total_daemon_requests", "karpenter_nodes_total_pod_limits", "karpenter_nodes_total_daemon_limits", "karpenter_nodes_system_overhead"); err != nil {
		t.Error(err)
	}
}

// The cluster's utilization is every bound pod's requests over every node's allocatable, the
// unmanaged node's too: cpu 1.85 (0.6 + 1 + 0.25) of 7, pods 4 of 35.
func TestCollectorReportsUtilization(t *testing.T) {
	_, c := fixture(t)
	const expected = `
# HELP karpenter_cluster_utilization_percent Utilization of the nodes' allocatable resources by pod requests, in percent, by resource type.
# TYPE karpenter_cluster_utilization_percent gauge
karpenter_cluster_utilization_percent{resource_type="cpu"} 26.428571428571427
karpenter_cluster_utilization_percent{resource_type="pods"} 11.428571428571429
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(expected), "karpenter_cluster_utilization_percent"); err != nil {
		t.Error(err)
	}
}

func TestCollectorReportsPodsNodePoolsAndCost(t *testing.T) {
	_, c := fixture(t)
	const expected = `
# HELP karpenter_pods_state One per pod, labelled by name, namespace, owner, node, whether it is scheduled (bound), the node's nodepool, zone, architecture, capacity type and instance type, phase, whether it is ready, and whether its node is Karpenter-managed (has a nodepool).
# TYPE karpenter_pods_state gauge
karpenter_pods_state{arch="amd64",capacity_type="on-demand",instance_type="small",managed="true",name="agent",namespace="default",node="node-a",nodepool="default",owner="/apis/apps/v1/namespaces/default/daemonsets/owner",phase="Running",ready="false",scheduled="true",zone="zone-1"} 1
karpenter_pods_state{arch="amd64",capacity_type="on-demand",instance_type="small",managed="true",name="web",namespace="default",node="node-a",nodepool="default",owner="/apis/apps/v1/namespaces/default/replicasets/owner",phase="Running",ready="true",scheduled="true",zone="zone-1"} 1
karpenter_pods_state{arch="amd64",capacity_type="spot",instance_type="large",managed="true",name="batch",namespace="default",node="node-b",nodepool="default",owner="",phase="Running",ready="false",scheduled="true",zone="zone-2"} 1
karpenter_pods_state{arch="",capacity_type="",instance_type="byo",managed="false",name="byo-app",namespace="default",node="other",nodepool="",owner="",phase="Running",ready="false",scheduled="true",zone=""} 1
karpenter_pods_state{arch="",capacity_type="",instance_type="",managed="false",name="waiting",namespace="default",node="",nodepool="",owner="",phase="Pending",ready="false",scheduled="false",zone=""} 1
# HELP karpenter_nodepools_usage Resources provisioned by a nodepool (the capacity of its nodes, and their count as resource type nodes), by resource type.
# TYPE karpenter_nodepools_usage gauge
karpenter_nodepools_usage{nodepool="default",resource_type="cpu"} 6.5
karpenter_nodepools_usage{nodepool="default",resource_type="nodes"} 2
# HELP karpenter_nodepools_limit Limits of a nodepool (spec.limits) on the resources it may provision, by resource type.
# TYPE karpenter_nodepools_limit gauge
karpenter_nodepools_limit{nodepool="default",resource_type="cpu"} 100
# HELP karpenter_nodepools_cost_total Estimated price per hour, in dollars, of a nodepool's launched instances (each at its offering's price). Not an authoritative source for billing.
# TYPE karpenter_nodepools_cost_total gauge
karpenter_nodepools_cost_total{nodepool="default"} 0.35
# HELP karpenter_cluster_state_cost_dollars_per_hour Estimated price per hour of every instance Karpenter launched and has not terminated: the sum of karpenter_nodepools_cost_total.
# TYPE karpenter_cluster_state_cost_dollars_per_hour gauge
karpenter_cluster_state_cost_dollars_per_hour 0.35
# HELP karpenter_cluster_state_node_count Nodes in Karpenter's cluster state: registered nodes, and NodeClaims without a node yet.
# TYPE karpenter_cluster_state_node_count gauge
karpenter_cluster_state_node_count 4
# HELP karpenter_cluster_state_synced 1 when Karpenter's cluster state is readable and includes every NodeClaim Karpenter created, else 0.
# TYPE karpenter_cluster_state_synced gauge
karpenter_cluster_state_synced 1
# HELP karpenter_cloudprovider_instance_type_offering_price_estimate Estimated price per hour of an instance type bought as a capacity type in a zone, for the instance types the nodepools may launch.
# TYPE karpenter_cloudprovider_instance_type_offering_price_estimate gauge
karpenter_cloudprovider_instance_type_offering_price_estimate{capacity_type="on-demand",instance_type="small",zone="zone-1"} 0.1
karpenter_cloudprovider_instance_type_offering_price_estimate{capacity_type="spot",instance_type="large",zone="zone-2"} 0.25
karpenter_cloudprovider_instance_type_offering_price_estimate{capacity_type="spot",instance_type="small",zone="zone-1"} 0.03
# HELP karpenter_cloudprovider_instance_type_offering_available 1 when an instance type's offering (capacity type in a zone) is believed to have capacity, 0 when it recently ran out.
# TYPE karpenter_cloudprovider_instance_type_offering_available gauge
karpenter_cloudprovider_instance_type_offering_available{capacity_type="on-demand",instance_type="small",zone="zone-1"} 1
karpenter_cloudprovider_instance_type_offering_available{capacity_type="spot",instance_type="large",zone="zone-2"} 1
karpenter_cloudprovider_instance_type_offering_available{capacity_type="spot",instance_type="small",zone="zone-1"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(expected), "karpenter_pods_state", "karpenter_nodepools_usage",
		"karpenter_nodepools_limit", "karpenter_nodepools_cost_total", "karpenter_cluster_state_cost_dollars_per_hour",
		"karpenter_cluster_state_node_count", "karpenter_cluster_state_synced",
		"karpenter_cloudprovider_instance_type_offering_price_estimate", "karpenter_cloudprovider_instance_type_offering_available"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil {
		t.Error(err)
	} else {
		for _, p := range problems {
			if p.Metric != "karpenter_cluster_state_node_count" && p.Metric != "karpenter_nodepools_cost_total" { // Karpenter's names
				t.Errorf("%s: %s", p.Metric, p.Text)
			}
		}
	}
}

func TestCollectorForgetsWhatIsGone(t *testing.T) {
	kube, c := fixture(t)
	ctx := context.Background()
	for _, obj := range []client.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}},
		&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-node-b"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: "default"}},
	} {
		if err := kube.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]int{
		"karpenter_nodes_allocatable":                   4, // node-a and other, cpu and pods
		"karpenter_pods_state":                          4,
		"karpenter_nodepools_cost_total":                1,
		"karpenter_cluster_state_cost_dollars_per_hour": 1,
	} {
		if got := testutil.CollectAndCount(c, name); got != want {
			t.Errorf("%s: %d series after node-b, its claim and its pod are gone, want %d", name, got, want)
		}
	}
	if strings.Contains(collectText(t, c), `node_name="node-b"`) {
		t.Error("node-b is still reported")
	}
}

// failing is a Source that cannot read the cluster.
type failing struct{}

func (failing) SyncSnapshot(context.Context) (*state.Snapshot, error) {
	return nil, errors.New("cache not started")
}

func TestCollectorReportsUnsyncedWhenTheClusterCannotBeRead(t *testing.T) {
	c := clustermetrics.NewCollector(failing{}, catalog)
	const expected = `
# HELP karpenter_cluster_state_synced 1 when Karpenter's cluster state is readable and includes every NodeClaim Karpenter created, else 0.
# TYPE karpenter_cluster_state_synced gauge
karpenter_cluster_state_synced 0
# HELP karpenter_cluster_state_unsynced_time_seconds Seconds for which Karpenter's cluster state has not been synced; 0 when it is.
# TYPE karpenter_cluster_state_unsynced_time_seconds gauge
karpenter_cluster_state_unsynced_time_seconds 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(expected)); err != nil {
		t.Error(err)
	}
}

func TestCollectorReportsUnsyncedWhileACreatedClaimIsNotSeen(t *testing.T) {
	kube := fake.NewClientBuilder().WithScheme(apis.NewScheme()).Build()
	st := state.NewCluster(kube, clock.RealClock{})
	st.RecordCreated(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "just-created"}})
	c := clustermetrics.NewCollector(st, nil)
	const expected = `
# HELP karpenter_cluster_state_synced 1 when Karpenter's cluster state is readable and includes every NodeClaim Karpenter created, else 0.
# TYPE karpenter_cluster_state_synced gauge
karpenter_cluster_state_synced 0
# HELP karpenter_cluster_state_node_count Nodes in Karpenter's cluster state: registered nodes, and NodeClaims without a node yet.
# TYPE karpenter_cluster_state_node_count gauge
karpenter_cluster_state_node_count 1
# HELP karpenter_cluster_state_unsynced_time_seconds Seconds for which Karpenter's cluster state has not been synced; 0 when it is.
# TYPE karpenter_cluster_state_unsynced_time_seconds gauge
karpenter_cluster_state_unsynced_time_seconds 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(expected)); err != nil {
		t.Error(err)
	}
}

// collectText is what the collector reports, in the text exposition format.
func collectText(t *testing.T, c *clustermetrics.Collector) string {
	t.Helper()
	text, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain)
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// unlisted is an InstanceTypeProvider that cannot list instance types.
type unlisted struct{}

func (unlisted) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	return nil, errors.New("nodeclass not ready")
}

// TestCostTrackerErrors: as Karpenter's cost tracker, a launched NodeClaim whose NodePool is
// gone or whose NodePool's instance types cannot be listed counts an error for its NodePool
// (here at each scrape); one without the labels cost tracking needs, or whose offering is not
// among its instance types, counts none.
func TestCostTrackerErrors(t *testing.T) {
	errorsOf := func(nodePool string) float64 {
		return testutil.ToFloat64(metrics.NodePoolsCostTrackerErrorsTotal.WithLabelValues(nodePool))
	}
	scrape := func(c *clustermetrics.Collector) { testutil.CollectAndCount(c) }
	ctx := context.Background()

	kube, c := fixture(t)
	before := errorsOf("default")
	scrape(c)
	if got := errorsOf("default") - before; got != 0 {
		t.Errorf("%v errors with every claim priced, want 0", got)
	}

	// An instance type the NodePool does not offer is priced at nothing, without an error.
	node, claim := launched("node-c", "unknown", karpv1.CapacityTypeOnDemand, "zone-1", builders.Resources("cpu", "1"), builders.Resources("cpu", "1"))
	// A launched claim without a zone label is not tracked yet.
	nodeD, claimD := launched("node-d", "small", karpv1.CapacityTypeOnDemand, "zone-1", builders.Resources("cpu", "1"), builders.Resources("cpu", "1"))
	delete(claimD.Labels, corev1.LabelTopologyZone)
	delete(nodeD.Labels, corev1.LabelTopologyZone)
	for _, obj := range []client.Object{node, claim, nodeD, claimD} {
		if err := kube.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	before = errorsOf("default")
	scrape(c)
	if got := errorsOf("default") - before; got != 0 {
		t.Errorf("%v errors for an unknown offering and a claim without a zone, want 0", got)
	}

	// The NodePool's instance types cannot be listed: its three labelled launched claims
	// count, at every scrape.
	failing := clustermetrics.NewCollector(state.NewCluster(kube, clock.RealClock{}), unlisted{})
	before = errorsOf("default")
	scrape(failing)
	scrape(failing)
	if got := errorsOf("default") - before; got != 6 {
		t.Errorf("%v errors in two scrapes without instance types, want 6", got)
	}

	// The NodePool is gone.
	if err := kube.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	before = errorsOf("default")
	scrape(c)
	if got := errorsOf("default") - before; got != 3 {
		t.Errorf("%v errors once the nodepool is gone, want 3", got)
	}
}
