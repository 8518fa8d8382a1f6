package metrics_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/operator"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
	"github.com/openkarpenter/karpenter/pkg/test/metricstest"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// scrape is one read of /metrics, served as the manager serves it, by metric name.
type scrape map[string]*dto.MetricFamily

func scrapeMetrics(t *testing.T) scrape {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(crmetrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// series returns the samples of the metric whose labels include want.
func (s scrape) series(name string, want map[string]string) []*dto.Metric {
	return metricstest.Matching(s[name], want)
}

// value sums the samples of the metric whose labels include want: counter and gauge values,
// histogram and summary observation counts.
func (s scrape) value(name string, want map[string]string) float64 {
	return metricstest.Sum(s.series(name, want))
}

// delta is how much the metric grew since before.
func delta(before, after scrape, name string, want map[string]string) float64 {
	return after.value(name, want) - before.value(name, want)
}

// labels is a label set written as "k=v" pairs.
func labels(pairs ...string) map[string]string {
	out := map[string]string{}
	for _, p := range pairs {
		k, v, _ := strings.Cut(p, "=")
		out[k] = v
	}
	return out
}

// TestMetricsFollowTheNodeLifecycle runs the operator on the simulated cloud against a real
// API server: pending pods make Karpenter create nodes; deleting them makes it disrupt the
// empty nodes and terminate them. The counters and gauges served on /metrics must tell the
// same story as the cluster and the cloud.
func TestMetricsFollowTheNodeLifecycle(t *testing.T) {
	ctx := context.Background()
	cloud, err := sim.New(sim.Options{Clock: clock.RealClock{}, NodeClasses: env.Client, Seed: 7, LaunchLatency: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	before := scrapeMetrics(t)
	startOperator(t, cloud)
	harness.StartBinder(t, env.Client)
	t.Cleanup(func() {
		env.Purge(t, []client.ObjectList{&karpv1.NodeClaimList{}, &corev1.NodeList{}, &karpv1.NodePoolList{}, &awsv1.EC2NodeClassList{}}, "default")
	})
	create(t, nodeClass(), builders.NodePool(builders.NodePoolOptions{
		Requirements:        builders.GeneralPurposeRequirements(),
		ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmpty,
		ConsolidateAfter:    "2s",
		Budgets:             []karpv1.Budget{{Nodes: "100%"}},
		Limits:              corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")},
	}))
	const replicas = 12
	for i := range replicas {
		create(t, workloadPod(fmt.Sprintf("web-%d", i)))
	}

	// Up: every pod runs on a node Karpenter launched.
	harness.Eventually(t, 90*time.Second, "every pod running and ready", func() (bool, string) {
		var pods corev1.PodList
		mustList(t, &pods, client.InNamespace("default"))
		ready := 0
		for i := range pods.Items {
			if isReady(&pods.Items[i]) {
				ready++
			}
		}
		return ready == replicas, fmt.Sprintf("%d of %d ready", ready, replicas)
	})
	launched := len(cloud.Instances())
	var nodes corev1.NodeList
	mustList(t, &nodes)
	var pods corev1.PodList
	mustList(t, &pods, client.InNamespace("default"))
	var up scrape
	// The controllers' cache follows the API server closely, not at once.
	harness.Eventually(t, 30*time.Second, "every pod's startup observed and every node reported", func() (bool, string) {
		up = scrapeMetrics(t)
		n := delta(before, up, "karpenter_pods_startup_duration_seconds", nil)
		reported := up.value("karpenter_cluster_state_node_count", nil)
		return n == replicas && reported == float64(len(nodes.Items)), fmt.Sprintf("%v startups observed, %v nodes reported", n, reported)
	})
	t.Logf("%d instances launched for %d pods on %d nodes; the fleet costs $%.4f/h", launched, replicas, len(nodes.Items), cloud.Cost())

	check := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("nodeclaims created for pending pods", delta(before, up, "karpenter_nodeclaims_created_total", labels("reason=provisioned", "nodepool=default")), float64(launched))
	check("instances created through the lifecycle controller", delta(before, up, "karpenter_cloudprovider_duration_seconds",
		labels("controller=nodeclaim.lifecycle", "method=Create", "provider=sim")), float64(launched))
	if n := delta(before, up, "karpenter_scheduler_scheduling_duration_seconds", labels("controller=provisioner")); n < 1 {
		t.Errorf("%v scheduling runs observed, want at least one", n)
	}
	// Every pod waited for a node Karpenter placed it on: bound and started once each, from its
	// creation and from that placement; none waits any more.
	check("pods bound", delta(before, up, "karpenter_pods_bound_duration_seconds", labels("dynamic_resources=false")), replicas)
	check("pods bound after a placement", delta(before, up, "karpenter_pods_provisioning_bound_duration_seconds", labels("dynamic_resources=false")), replicas)
	check("pods started after a placement", delta(before, up, "karpenter_pods_provisioning_startup_duration_seconds", nil), replicas)
	if n := delta(before, up, "karpenter_pods_scheduling_decision_duration_seconds", nil); n < 1 || n > replicas {
		t.Errorf("%v first scheduling decisions observed for %d pods, want between 1 and %d (pods acknowledged before their pass)", n, replicas, replicas)
	}
	for _, name := range []string{"karpenter_pods_unbound_time_seconds", "karpenter_pods_unstarted_time_seconds", "karpenter_pods_provisioning_unbound_time_seconds",
		"karpenter_pods_provisioning_unstarted_time_seconds", "karpenter_pods_provisioning_scheduling_undecided_time_seconds"} {
		if s := up.series(name, labels("namespace=default")); len(s) > 0 {
			t.Errorf("%s: %d series for pods that are running and ready", name, len(s))
		}
	}
	check("unschedulable pods at the last pass", up.value("karpenter_scheduler_unschedulable_pods_count", labels("controller=provisioner")), 0)
	check("ignored pods at the last pass", up.value("karpenter_scheduler_ignored_pods_count", nil), 0)
	check("queue of the last run", up.value("karpenter_scheduler_queue_depth", labels("controller=provisioner")), 0)
	check("nodes in the cluster state", up.value("karpenter_cluster_state_node_count", nil), float64(len(nodes.Items)))
	check("nodes registered", delta(before, up, "karpenter_nodes_created_total", labels("nodepool=default")), float64(len(nodes.Items)))
	check("node ages reported", float64(len(up.series("karpenter_nodes_current_lifetime_seconds", labels("nodepool=default", "managed=true")))), float64(len(nodes.Items)))
	check("build info", up.value("karpenter_build_info", nil), 1)
	check("cluster state synced", up.value("karpenter_cluster_state_synced", nil), 1)
	check("cluster state unsynced for", up.value("karpenter_cluster_state_unsynced_time_seconds", nil), 0)
	check("cost of the fleet", up.value("karpenter_cluster_state_cost_dollars_per_hour", nil), cloud.Cost())
	check("cost of the default nodepool", up.value("karpenter_nodepools_cost_total", labels("nodepool=default")), cloud.Cost())
	check("nodes the nodepool counts", up.value("karpenter_nodepools_usage", labels("nodepool=default", "resource_type=nodes")), float64(len(nodes.Items)))
	check("the nodepool's cpu limit", up.value("karpenter_nodepools_limit", labels("nodepool=default", "resource_type=cpu")), 1000)
	requested := map[string]float64{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		requested[pod.Spec.NodeName] += pod.Spec.Containers[0].Resources.Requests.Cpu().AsApproximateFloat64()
		check("pod "+pod.Name, float64(len(up.series("karpenter_pods_state",
			labels("name="+pod.Name, "namespace=default", "node="+pod.Spec.NodeName, "nodepool=default", "phase=Running",
				"scheduled=true", "ready=true", "managed=true")))), 1)
	}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		at := func(resourceType string) map[string]string {
			return labels("node_name="+node.Name, "nodepool=default", "resource_type="+resourceType,
				"instance_type="+node.Labels[corev1.LabelInstanceTypeStable], "capacity_type="+node.Labels[karpv1.CapacityTypeLabelKey],
				"zone="+node.Labels[corev1.LabelTopologyZone], "managed=true")
		}
		check(node.Name+" allocatable cpu", up.value("karpenter_nodes_allocatable", at("cpu")), node.Status.Allocatable.Cpu().AsApproximateFloat64())
		check(node.Name+" allocatable memory", up.value("karpenter_nodes_allocatable", at("memory")), node.Status.Allocatable.Memory().AsApproximateFloat64())
		check(node.Name+" requested cpu", up.value("karpenter_nodes_total_pod_requests", at("cpu")), requested[node.Name])
	}

	// Down: without pods, the nodes are empty; disruption deletes them and termination lets them go.
	for i := range pods.Items {
		if err := env.Client.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	harness.Eventually(t, 90*time.Second, "every nodeclaim terminated", func() (bool, string) {
		var claims karpv1.NodeClaimList
		mustList(t, &claims)
		live := 0
		for _, in := range cloud.Instances() {
			if in.State != sim.InstanceStateTerminated {
				live++
			}
		}
		return len(claims.Items) == 0 && live == 0, fmt.Sprintf("%d nodeclaims, %d live instances", len(claims.Items), live)
	})
	var down scrape
	// A claim is counted terminated just after its finalizer goes, so just after it is gone.
	harness.Eventually(t, 30*time.Second, "no node reported, every claim counted terminated", func() (bool, string) {
		down = scrapeMetrics(t)
		reported := down.value("karpenter_cluster_state_node_count", nil)
		terminated := delta(before, down, "karpenter_nodeclaims_terminated_total", labels("nodepool=default"))
		return reported == 0 && terminated == float64(launched), fmt.Sprintf("%v nodes reported, %v of %d claims counted terminated", reported, terminated, launched)
	})
	check("nodeclaims disrupted as empty", delta(before, down, "karpenter_nodeclaims_disrupted_total", labels("reason=empty", "nodepool=default")), float64(launched))
	check("nodeclaims disrupted", delta(before, down, "karpenter_nodeclaims_disrupted_total", nil), float64(launched))
	check("nodeclaims terminated", delta(before, down, "karpenter_nodeclaims_terminated_total", labels("nodepool=default")), float64(launched))
	check("nodeclaims created in all", delta(before, down, "karpenter_nodeclaims_created_total", nil), float64(launched))
	check("nodeclaim terminations timed", delta(before, down, "karpenter_nodeclaims_termination_duration_seconds", labels("nodepool=default")), float64(launched))
	check("nodes terminated", delta(before, down, "karpenter_nodes_terminated_total", labels("nodepool=default")), float64(len(nodes.Items)))
	check("node terminations timed", delta(before, down, "karpenter_nodes_termination_duration_seconds", labels("nodepool=default")), float64(len(nodes.Items)))
	check("node lifetimes observed", delta(before, down, "karpenter_nodes_lifetime_duration_seconds", labels("nodepool=default")), float64(len(nodes.Items)))
	check("nodes drained", delta(before, down, "karpenter_nodes_drained_total", labels("nodepool=default")), float64(len(nodes.Items)))
	if n := delta(before, down, "karpenter_voluntary_disruption_decisions_total", labels("decision=delete", "reason=empty", "consolidation_type=empty")); n < 1 || n > float64(launched) {
		t.Errorf("%v emptiness decisions for %d nodes, want between 1 and %d", n, launched, launched)
	}
	if n := delta(before, down, "karpenter_cloudprovider_duration_seconds", labels("controller=nodeclaim.lifecycle", "method=Delete")); n < float64(launched) {
		t.Errorf("%v instance deletions observed for %d instances", n, launched)
	}
	check("nodes in the cluster state", down.value("karpenter_cluster_state_node_count", nil), 0)
	check("cost of the fleet", down.value("karpenter_cluster_state_cost_dollars_per_hour", nil), 0)
	for _, name := range []string{"karpenter_nodes_allocatable", "karpenter_nodes_total_pod_requests", "karpenter_nodepools_cost_total"} {
		if s := down.series(name, labels("nodepool=default")); len(s) > 0 {
			t.Errorf("%s: %d series left for nodes that are gone", name, len(s))
		}
	}
	if s := down.series("karpenter_pods_state", labels("namespace=default")); len(s) > 0 {
		t.Errorf("karpenter_pods_state: %d series left for pods that are gone", len(s))
	}
}

// startOperator runs the controllers against the test API server on cloud until the test ends.
func startOperator(t *testing.T, cloud *sim.Cloud) {
	t.Helper()
	opts := operator.DefaultOptions()
	opts.LeaderElection = false
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.BatchIdleDuration, opts.BatchMaxDuration = 200*time.Millisecond, 2*time.Second
	opts.DisruptionPollInterval, opts.ConsolidationValidationDelay = 200*time.Millisecond, 500*time.Millisecond
	opts.Sim.Cloud = cloud
	opts.Sim.ReadyDelay = 100 * time.Millisecond
	opts.SkipControllerNameValidation = true
	harness.StartOperator(t, env.Config, opts)
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

func mustList(t *testing.T, list client.ObjectList, opts ...client.ListOption) {
	t.Helper()
	if err := env.Client.List(context.Background(), list, opts...); err != nil {
		t.Fatal(err)
	}
}

func isReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeClass() *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			Role: "KarpenterNodeRole", AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "metrics"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "metrics"}}},
		},
	}
}

// workloadPod is a pod of 1.5 cpu and 2Gi, spread over zones with its fellows so that the
// fleet has several nodes.
func workloadPod(name string) *corev1.Pod {
	zero := int64(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
			}}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			}},
		},
	}
}
