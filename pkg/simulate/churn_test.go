package simulate

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// churnWorkload is a steady mix of services on a NodePool that allows spot and on-demand,
// scaled down once at 2h so consolidation has work to do; nothing changes after that.
func churnWorkload(duration string) string {
	pool := strings.Replace(nodePoolManifests, "values: [on-demand]}", "values: [spot, on-demand]}", 1)
	return "name: churn\nduration: " + duration + "\nseed: 11\n" + pool + `timeline:
  - at: 0s
    deploy: {name: web, replicas: 40, minAvailable: 8, pod: {cpu: 250m, memory: 512Mi}}
  - at: 0s
    deploy: {name: api, replicas: 24, pod: {cpu: "1", memory: 2Gi}}
  - at: 0s
    deploy: {name: cache, replicas: 8, pod: {cpu: 500m, memory: 6Gi}}
  - at: 0s
    deploy: {name: worker, replicas: 6, pod: {cpu: "3", memory: 4Gi}}
  - at: 2h
    scale: {name: api, replicas: 4}
  - at: 2h
    scale: {name: web, replicas: 10}
  - at: 2h
    scale: {name: worker, replicas: 2}
`
}

// TestNoChurnOverAWeek: once the fleet has settled after the scale-down, a week of the same
// workload disrupts nothing. Runs are deterministic, so a 6-hour run and a 174-hour run share
// their first six hours; every disruption, pod and node of the longer run must already be in
// the shorter one.
func TestNoChurnOverAWeek(t *testing.T) {
	settled := run(t, churnWorkload("6h"))
	week := run(t, churnWorkload("174h"))
	if settled.DisruptionMethods["multi-node consolidation"]+settled.DisruptionMethods["single-node consolidation"] == 0 {
		t.Errorf("the scale-down consolidated nothing: %v", settled.Disruptions)
	}
	if fmt.Sprint(week.Disruptions) != fmt.Sprint(settled.Disruptions) {
		t.Errorf("after settling, the week added disruptions: %v by 6h, %v by 174h", settled.Disruptions, week.Disruptions)
	}
	if week.Nodes.Launched != settled.Nodes.Launched || week.Pods.Created != settled.Pods.Created {
		t.Errorf("after settling, the week launched %d more nodes and created %d more pods",
			week.Nodes.Launched-settled.Nodes.Launched, week.Pods.Created-settled.Pods.Created)
	}
	if week.Cost.FinalPerHour != settled.Cost.FinalPerHour {
		t.Errorf("$%.4f/hour after 6h, $%.4f/hour after a week", settled.Cost.FinalPerHour, week.Cost.FinalPerHour)
	}
	t.Logf("settled at $%.4f/hour on %d nodes (peak $%.4f/hour); disruptions %v; a week later the same", settled.Cost.FinalPerHour, settled.Nodes.Final, settled.Cost.PeakPerHour, settled.Disruptions)
}

// TestSleepingSkipsNothing: the engine sleeps until the next timer while nothing is due; a run
// that instead wakes every controller on each 10s tick of the disruption loop, as a cluster's
// controllers run, decides exactly the same: the same disruptions, launches, pods and cost.
func TestSleepingSkipsNothing(t *testing.T) {
	w, err := ParseWorkload("churn.yaml", []byte(churnWorkload("12h")))
	if err != nil {
		t.Fatal(err)
	}
	sleeping, err := Run(context.Background(), w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ticking, err := Run(context.Background(), w, Options{EveryTick: true})
	if err != nil {
		t.Fatal(err)
	}
	outcome := func(r *Report) string {
		return fmt.Sprintf("disruptions %v; nodes %+v; pods created %d scheduled %d; cost $%.4f total, $%.4f/h at the end",
			r.Disruptions, r.Nodes, r.Pods.Created, r.Pods.Scheduled, r.Cost.Total, r.Cost.FinalPerHour)
	}
	if a, b := outcome(sleeping), outcome(ticking); a != b {
		t.Errorf("sleeping: %s\nticking:  %s", a, b)
	}
	t.Log(outcome(sleeping))
}
