package metrics_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/test/metricstest"
)

// fixedGauges is a state-gauge source reporting one node count.
type fixedGauges float64

func (f fixedGauges) Describe(ch chan<- *prometheus.Desc) { metrics.DescribeGauges(ch) }
func (f fixedGauges) Collect(ch chan<- prometheus.Metric) {
	ch <- metrics.ClusterGauge(metrics.ClusterStateNodeCount, float64(f))
}

func TestRegisteredOnControllerRuntimeRegistry(t *testing.T) {
	if err := metrics.Register(crmetrics.Registry); err != nil {
		t.Fatalf("registering again: %v", err)
	}
	metrics.NodeClaimCreated(metrics.ReasonProvisioned, "registered-test", false)
	if len(metricstest.Gathered(t, crmetrics.Registry, "karpenter_nodeclaims_created_total", nil)) == 0 {
		t.Error("karpenter_nodeclaims_created_total is not served by controller-runtime's Registry")
	}
}

// TestConsolidationTimeoutsStartAtZero: as Karpenter's, the timeouts of the two searches that
// can time out are served from the start, at 0, before any search ran out of time.
func TestConsolidationTimeoutsStartAtZero(t *testing.T) {
	want := `
# HELP karpenter_voluntary_disruption_consolidation_timeouts_total Consolidation searches that reached their time limit (multi-node: one minute, single-node: three minutes), by consolidation type.
# TYPE karpenter_voluntary_disruption_consolidation_timeouts_total counter
karpenter_voluntary_disruption_consolidation_timeouts_total{consolidation_type="multi"} 0
karpenter_voluntary_disruption_consolidation_timeouts_total{consolidation_type="single"} 0
`
	if err := testutil.CollectAndCompare(metrics.VoluntaryDisruptionConsolidationTimeoutsTotal, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestMetricNamesFollowPrometheusConventions(t *testing.T) {
	r := prometheus.NewPedanticRegistry()
	if err := metrics.Register(r); err != nil {
		t.Fatal(err)
	}
	stop := metrics.ServeGauges(fixedGauges(3))
	defer stop()
	// Give every vector a series, so the linter sees them.
	metrics.NodeClaimCreated(metrics.ReasonProvisioned, "lint", false)
	metrics.NodeClaimTerminated("lint", karpv1.CapacityTypeSpot, "zone-a", time.Minute, time.Second)
	metrics.NodeClaimDisrupted(metrics.DisruptionReason(karpv1.DisruptionReasonEmpty), "lint", karpv1.CapacityTypeSpot, "when_empty", metrics.TerminationModeGraceful)
	metrics.NodeRegistered("lint", "zone-a")
	metrics.NodeTerminated("lint", "zone-a", time.Minute, time.Hour)
	metrics.NodeDrained("lint")
	metrics.PodDrained(metrics.ReasonForcefulTermination)
	metrics.EvictionRequested(429)
	metrics.SetEligibleNodes(map[karpv1.DisruptionReason]int{karpv1.DisruptionReasonEmpty: 2})
	metrics.DisruptionDecision(metrics.DecisionDelete, "empty", metrics.ConsolidationTypeEmpty)
	metrics.ObserveSchedulingDuration("lint", 0)
	metrics.ObserveCloudProviderCall("lint", "Get", "sim", "", 0, true, "")
	metrics.ObservePodBound(time.Second, false)
	metrics.ObservePodProvisioningBound(time.Second, false)
	metrics.ObservePodProvisioningStartup(time.Second)
	metrics.ObserveSchedulingDecisions([]time.Duration{time.Second})
	now := time.Now()
	metrics.SetPodWaits("lint", "lint", false, now, metrics.PodWaits{Unbound: now, ProvisioningUnbound: now, Unstarted: now, ProvisioningUnstarted: now, Undecided: now})
	defer metrics.ForgetPod("lint", "lint")
	metrics.SetIgnoredPods(0)
	metrics.SetPacking([]metrics.PackingFigures{{Ratio: 1.2, Repacked: 1, Bound: 0.9}})
	metrics.SetSchedulingOutcome("lint", 1, map[string]int{"zone-a": 1})
	run := metrics.StartSchedulingRun("lint", "lint-run", func() int { return 1 })
	defer run.Finish()
	problems, err := testutil.GatherAndLint(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		switch p.Metric {
		case "karpenter_cluster_state_node_count", "karpenter_nodepools_cost_total", "karpenter_scheduler_ignored_pods_count",
			"karpenter_scheduler_unschedulable_pods_count", "karpenter_scheduler_pending_pods_by_effective_zone_count":
			continue // Karpenter's names, kept for its dashboards and alerts despite their suffixes
		}
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

func TestServeGaugesServesTheLatestSourceUntilItStops(t *testing.T) {
	r := prometheus.NewRegistry()
	if err := metrics.Register(r); err != nil {
		t.Fatal(err)
	}
	nodeCount := func() string {
		t.Helper()
		if s := metricstest.Gathered(t, r, "karpenter_cluster_state_node_count", nil); len(s) > 0 {
			return fmt.Sprint(s[0].GetGauge().GetValue())
		}
		return "none"
	}
	if got := nodeCount(); got != "none" {
		t.Fatalf("before any source: %s, want none", got)
	}
	stopFirst := metrics.ServeGauges(fixedGauges(1))
	if got := nodeCount(); got != "1" {
		t.Errorf("first source: %s, want 1", got)
	}
	stopSecond := metrics.ServeGauges(fixedGauges(2))
	stopFirst() // replaced already: does nothing
	if got := nodeCount(); got != "2" {
		t.Errorf("after the first stopped late: %s, want 2 from the second", got)
	}
	stopSecond()
	if got := nodeCount(); got != "none" {
		t.Errorf("after the second stopped: %s, want none", got)
	}
}

func TestLabelValues(t *testing.T) {
	for in, want := range map[string]string{
		"cpu": "cpu", "ephemeral-storage": "ephemeral_storage", "nvidia.com/gpu": "nvidia.com/gpu", "hugepages-2Mi": "hugepages_2mi",
	} {
		if got := metrics.ResourceType(in); got != want {
			t.Errorf("ResourceType(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[karpv1.DisruptionReason]string{
		karpv1.DisruptionReasonEmpty: "empty", karpv1.DisruptionReasonUnderutilized: "underutilized",
		karpv1.DisruptionReasonDrifted: "drifted", karpv1.DisruptionReasonExpired: "expired", karpv1.DisruptionReasonInterrupted: "interrupted",
	} {
		if got := metrics.DisruptionReason(in); got != want {
			t.Errorf("DisruptionReason(%q) = %q, want %q", in, got, want)
		}
	}
	// Karpenter's snake case (its pretty.ToSnakeCase): a run of capitals stays one word.
	for in, want := range map[string]string{
		"Ready": "ready", "KernelReady": "kernel_ready", "AcceleratedHardwareReady": "accelerated_hardware_ready",
		"ContainerRuntimeReady": "container_runtime_ready", "EBSReady": "ebs_ready", "NVMe2Ready": "nv_me2_ready",
	} {
		if got := metrics.ConditionLabel(in); got != want {
			t.Errorf("ConditionLabel(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[karpv1.ConsolidationPolicy]string{
		karpv1.ConsolidationPolicyWhenEmpty: "when_empty", karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized: "when_empty_or_underutilized",
		karpv1.ConsolidationPolicyBalanced: "balanced",
	} {
		if got := metrics.ConsolidationPolicy(in); got != want {
			t.Errorf("ConsolidationPolicy(%q) = %q, want %q", in, got, want)
		}
	}
}
