package metrics

import (
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Label names of the pod and scheduler metrics, as Karpenter spells them.
const (
	// LabelDynamicResources is "true" when a pod asks for dynamic resources (resource claims).
	LabelDynamicResources = "dynamic_resources"
	// LabelSchedulingID identifies one scheduling run.
	LabelSchedulingID = "scheduling_id"
	// LabelScheduled is "true" when a pod is bound to a node.
	LabelScheduled = "scheduled"
	// LabelReady is "true" when a pod's Ready condition is True.
	LabelReady = "ready"
)

// The pod metrics. Their per-pod gauges are set by the pod metrics controller
// (pkg/clustermetrics), refreshed while the pod waits; the provisioning ones measure from the
// moment a provisioning pass first placed the pod, as Karpenter's.
var (
	// PodsBoundDurationSeconds observes, once per pod, the time from its creation until it was
	// bound (its PodScheduled condition turned True).
	PodsBoundDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemPods, Name: "bound_duration_seconds",
		Help:    "The time from pod creation until the pod is bound, by whether the pod asks for dynamic resources.",
		Buckets: DurationBuckets(),
	}, []string{LabelDynamicResources})
	// PodsUnboundTimeSeconds is, for each pending pod not bound yet, the time since its creation.
	PodsUnboundTimeSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemPods, Name: "unbound_time_seconds",
		Help: "The time from pod creation until now, for each pending pod not bound yet.",
	}, []string{LabelName, LabelNamespace, LabelDynamicResources})
	// PodsUnstartedTimeSeconds is, for each pod seen pending that has not become ready yet, the
	// time since its creation.
	PodsUnstartedTimeSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemPods, Name: "unstarted_time_seconds",
		Help: "The time from pod creation until now, for each pod seen pending that is not ready yet.",
	}, []string{LabelName, LabelNamespace})
	// PodsProvisioningBoundDurationSeconds observes, once per pod a provisioning pass placed,
	// the time from that first placement until the pod was bound.
	PodsProvisioningBoundDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemPods, Name: "provisioning_bound_duration_seconds",
		Help:    "The time from when Karpenter first thought the pod could schedule until it was bound. Measured from a moment held in memory, not from the pod's creation.",
		Buckets: DurationBuckets(),
	}, []string{LabelDynamicResources})
	// PodsProvisioningUnboundTimeSeconds is, for each pending pod a provisioning pass placed and
	// that is not bound yet, the time since that first placement.
	PodsProvisioningUnboundTimeSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemPods, Name: "provisioning_unbound_time_seconds",
		Help: "The time from when Karpenter first thought the pod could schedule until now, for each pending pod not bound yet. Measured from a moment held in memory, not from the pod's creation.",
	}, []string{LabelName, LabelNamespace, LabelDynamicResources})
	// PodsProvisioningStartupDurationSeconds observes, once per pod a provisioning pass placed,
	// the time from that first placement until the pod became ready.
	PodsProvisioningStartupDurationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemPods, Name: "provisioning_startup_duration_seconds",
		Help:    "The time from when Karpenter first thought the pod could schedule until it became ready. Measured from a moment held in memory, not from the pod's creation.",
		Buckets: DurationBuckets(),
	})
	// PodsProvisioningUnstartedTimeSeconds is, for each pod a provisioning pass placed and that
	// is not ready yet, the time since that first placement.
	PodsProvisioningUnstartedTimeSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemPods, Name: "provisioning_unstarted_time_seconds",
		Help: "The time from when Karpenter first thought the pod could schedule until now, for each pod not ready yet. Measured from a moment held in memory, not from the pod's creation.",
	}, []string{LabelName, LabelNamespace})
	// PodsSchedulingUndecidedTimeSeconds is, for each pod the provisioner acknowledged and no
	// provisioning pass has decided on yet, the time since the acknowledgement.
	PodsSchedulingUndecidedTimeSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemPods, Name: "provisioning_scheduling_undecided_time_seconds",
		Help: "The time since Karpenter first saw a pod wait for capacity, for each pod it has made no scheduling decision for yet. Measured from a moment held in memory, not from the pod's creation.",
	}, []string{LabelName, LabelNamespace})
	// PodsSchedulingDecisionDurationSeconds observes, once per pod, the time from the
	// provisioner's acknowledgement of the pod to the first provisioning pass that decided on it.
	PodsSchedulingDecisionDurationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystemPods, Name: "scheduling_decision_duration_seconds",
		Help:    "The time from when Karpenter first saw a pod wait for capacity until it first tried to schedule it.",
		Buckets: DurationBuckets(),
	})
	// SchedulerIgnoredPodsCount is, after each provisioning pass, how many pending pods it left
	// out of scheduling because no node would take them (a volume that does not exist).
	SchedulerIgnoredPodsCount = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemScheduler, Name: "ignored_pods_count",
		Help: "Number of pending pods the last provisioning pass ignored: left out of scheduling because no node would take them.",
	})
	// SchedulerUnschedulablePodsCount is, after each scheduling run, how many of its pods it
	// could place nowhere, by controller.
	SchedulerUnschedulablePodsCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemScheduler, Name: "unschedulable_pods_count",
		Help: "The number of pods the last scheduling run could not place, by controller.",
	}, []string{LabelController})
	// SchedulerPendingPodsByEffectiveZoneCount is, after each scheduling run, its pending pods
	// by effective zone: the zone their zonal constraints leave, or the scheduler's
	// EffectiveZoneFlexible or EffectiveZoneNone.
	SchedulerPendingPodsByEffectiveZoneCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: subsystemScheduler, Name: "pending_pods_by_effective_zone_count",
		Help: "Pending pods of the last scheduling run by effective zone: the intersection of the pod's required zones, its volumes' zones and the zones its topology constraints allow. Values: a zone name, 'flexible' (several zones), or 'none' (no zone).",
	}, []string{LabelController, LabelZone})
)

// The gauges of the scheduling run in progress, built on every scrape.
var (
	// SchedulerQueueDepth is the number of pods the latest scheduling run of a controller has
	// not placed yet (0 once it finished).
	SchedulerQueueDepth = desc(subsystemScheduler, "queue_depth",
		"The number of pods currently waiting to be scheduled in the latest scheduling run, by controller and run.", LabelController, LabelSchedulingID)
	// SchedulerUnfinishedWorkSeconds is how long a scheduling run still in progress has run.
	SchedulerUnfinishedWorkSeconds = desc(subsystemScheduler, "unfinished_work_seconds",
		"How many seconds of work has been done that is in progress and hasn't been observed by scheduling_duration_seconds.", LabelController, LabelSchedulingID)
)

// podMetrics are the pod and scheduler metrics: pods' provisioning timings and the scheduler's queue.
func podMetrics() []prometheus.Collector {
	return []prometheus.Collector{
		PodsBoundDurationSeconds, PodsUnboundTimeSeconds, PodsUnstartedTimeSeconds,
		PodsProvisioningBoundDurationSeconds, PodsProvisioningUnboundTimeSeconds,
		PodsProvisioningStartupDurationSeconds, PodsProvisioningUnstartedTimeSeconds,
		PodsSchedulingUndecidedTimeSeconds, PodsSchedulingDecisionDurationSeconds,
		SchedulerIgnoredPodsCount, SchedulerUnschedulablePodsCount, SchedulerPendingPodsByEffectiveZoneCount,
		schedulingRuns,
	}
}

// ObservePodBound records a pod bound waited after its creation; dynamicResources says whether
// it asks for dynamic resources.
func ObservePodBound(waited time.Duration, dynamicResources bool) {
	PodsBoundDurationSeconds.WithLabelValues(strconv.FormatBool(dynamicResources)).Observe(waited.Seconds())
}

// ObservePodProvisioningBound records a pod bound waited after a provisioning pass first placed it.
func ObservePodProvisioningBound(waited time.Duration, dynamicResources bool) {
	PodsProvisioningBoundDurationSeconds.WithLabelValues(strconv.FormatBool(dynamicResources)).Observe(waited.Seconds())
}

// ObservePodProvisioningStartup records a pod ready waited after a provisioning pass first placed it.
func ObservePodProvisioningStartup(waited time.Duration) {
	PodsProvisioningStartupDurationSeconds.Observe(waited.Seconds())
}

// ObserveSchedulingDecisions records, for each pod a provisioning pass decided on for the first
// time, how long it waited since the provisioner acknowledged it.
func ObserveSchedulingDecisions(waited []time.Duration) {
	for _, d := range waited {
		PodsSchedulingDecisionDurationSeconds.Observe(d.Seconds())
	}
}

// PodWaits are the moments from which the per-pod gauges measure a pod's wait; a zero moment
// means the pod is not waiting that way, and drops its series of that gauge.
type PodWaits struct {
	// Unbound: the creation of a pending pod not bound yet.
	Unbound time.Time
	// ProvisioningUnbound: the first placement of a pending pod not bound yet.
	ProvisioningUnbound time.Time
	// Unstarted: the creation of a pod seen pending and not ready yet.
	Unstarted time.Time
	// ProvisioningUnstarted: the first placement of a pod not ready yet.
	ProvisioningUnstarted time.Time
	// Undecided: the acknowledgement of a pod no provisioning pass has decided on yet.
	Undecided time.Time
}

// Waiting reports whether the pod has a series in any of the gauges.
func (w PodWaits) Waiting() bool { return w != PodWaits{} }

// SetPodWaits sets the per-pod gauges of the pod (name, namespace) to the time from each of w's
// moments until now, and drops the series of the moments that are zero.
func SetPodWaits(name, namespace string, dynamicResources bool, now time.Time, w PodWaits) {
	dra := strconv.FormatBool(dynamicResources)
	set := func(g *prometheus.GaugeVec, since time.Time, values ...string) {
		if since.IsZero() {
			g.DeleteLabelValues(values...) // by exact values: a partial match would scan every series
			return
		}
		g.WithLabelValues(values...).Set(now.Sub(since).Seconds())
	}
	set(PodsUnboundTimeSeconds, w.Unbound, name, namespace, dra)
	set(PodsProvisioningUnboundTimeSeconds, w.ProvisioningUnbound, name, namespace, dra)
	set(PodsUnstartedTimeSeconds, w.Unstarted, name, namespace)
	set(PodsProvisioningUnstartedTimeSeconds, w.ProvisioningUnstarted, name, namespace)
	set(PodsSchedulingUndecidedTimeSeconds, w.Undecided, name, namespace)
}

// ForgetPod drops every per-pod gauge series of the pod (name, namespace): it is gone.
func ForgetPod(name, namespace string) {
	for _, dynamicResources := range []bool{false, true} {
		SetPodWaits(name, namespace, dynamicResources, time.Time{}, PodWaits{})
	}
}

// SetIgnoredPods records how many pending pods the last provisioning pass left out of scheduling.
func SetIgnoredPods(n int) { SchedulerIgnoredPodsCount.Set(float64(n)) }

// SetSchedulingOutcome records, for the last scheduling run of the controller, how many pods it
// could place nowhere and how many of its pending pods each effective zone had (the zone, or
// the scheduler's EffectiveZoneFlexible or EffectiveZoneNone); zones not given are dropped.
func SetSchedulingOutcome(controller string, unschedulable int, pendingByZone map[string]int) {
	SchedulerUnschedulablePodsCount.WithLabelValues(controller).Set(float64(unschedulable))
	SchedulerPendingPodsByEffectiveZoneCount.DeletePartialMatch(prometheus.Labels{LabelController: controller})
	for zone, n := range pendingByZone {
		SchedulerPendingPodsByEffectiveZoneCount.WithLabelValues(controller, zone).Set(float64(n))
	}
}

// SchedulingRun is a scheduling run reported by SchedulerQueueDepth and
// SchedulerUnfinishedWorkSeconds: from StartSchedulingRun until the controller's next run.
type SchedulingRun struct {
	controller, id string
	start          time.Time
	queued         func() int
	finished       bool // guarded by schedulingRuns.mu
}

// StartSchedulingRun reports a scheduling run of the controller, identified by id, starting
// now: until Finish, each scrape reads its queue depth from queued (which must be safe to call
// from another goroutine) and its unfinished work from the time elapsed. It replaces the
// controller's previous run.
func StartSchedulingRun(controller, id string, queued func() int) *SchedulingRun {
	r := &SchedulingRun{controller: controller, id: id, start: time.Now(), queued: queued}
	schedulingRuns.mu.Lock()
	defer schedulingRuns.mu.Unlock()
	schedulingRuns.latest[controller] = r
	return r
}

// Finish ends the run: its queue depth reads 0 until the controller's next run, and its
// unfinished work is no longer reported.
func (r *SchedulingRun) Finish() {
	schedulingRuns.mu.Lock()
	defer schedulingRuns.mu.Unlock()
	r.finished = true
}

// schedulingRunGauges collects the gauges of the latest scheduling run of each controller.
type schedulingRunGauges struct {
	mu     sync.Mutex
	latest map[string]*SchedulingRun
}

var schedulingRuns = &schedulingRunGauges{latest: map[string]*SchedulingRun{}}

// Describe implements prometheus.Collector.
func (g *schedulingRunGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- SchedulerQueueDepth
	ch <- SchedulerUnfinishedWorkSeconds
}

// Collect implements prometheus.Collector.
func (g *schedulingRunGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	runs := make([]SchedulingRun, 0, len(g.latest))
	for _, r := range g.latest {
		runs = append(runs, *r)
	}
	g.mu.Unlock()
	sort.Slice(runs, func(i, j int) bool { return runs[i].controller < runs[j].controller })
	for _, r := range runs {
		depth := 0
		if !r.finished {
			depth = r.queued()
			ch <- prometheus.MustNewConstMetric(SchedulerUnfinishedWorkSeconds, prometheus.GaugeValue, time.Since(r.start).Seconds(), r.controller, r.id)
		}
		ch <- prometheus.MustNewConstMetric(SchedulerQueueDepth, prometheus.GaugeValue, float64(depth), r.controller, r.id)
	}
}
