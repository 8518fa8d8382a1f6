package simulate

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openkarpenter/karpenter/pkg/providers/sim"
)

// spotInterruption: four pods on spot nodes, one of which gets EC2's two-minute warning at 10m.
const spotInterruption = `name: spot interruption
duration: 30m
manifests: |
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: default}
  spec:
    template:
      spec:
        requirements:
          - {key: kubernetes.io/arch, operator: In, values: [amd64]}
          - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
          - {key: karpenter.k8s.aws/instance-category, operator: In, values: [m]}
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
` + nodeClassManifest + `timeline:
  - at: 0s
    deploy: {name: web, replicas: 4, pod: {cpu: "1", memory: 2Gi}}
  - at: 10m
    interrupt: {count: 1}
`

// A spot interruption acts at the warning, through the same handler as the SQS queue in the
// cluster: the node is drained and its instance terminated by Karpenter, and the replacement
// is launched, before the two minutes run out; the cloud never has to reclaim it.
func TestSpotInterruptionActsAtTheWarning(t *testing.T) {
	rep, e := runEngine(t, "interruption.yaml", spotInterruption)
	warning := Start.Add(10 * time.Minute)
	reclaim := warning.Add(sim.DefaultInterruptionNotice)
	var interrupted *sim.Instance
	replaced := false
	for _, in := range e.cloud.Instances() {
		switch {
		case in.TerminationReason == sim.TerminationReasonInterrupted:
			t.Errorf("instance %s was reclaimed by the cloud at %s: nothing acted on the warning", in.ID, in.TerminationTime.Sub(Start))
		case in.LaunchTime.Before(warning) && !in.TerminationTime.IsZero():
			in := in
			interrupted = &in
		case !in.LaunchTime.Before(warning) && in.LaunchTime.Before(reclaim):
			replaced = true
		}
	}
	if interrupted == nil || !interrupted.TerminationTime.Before(reclaim) {
		t.Errorf("interrupted instance %+v, want it drained and terminated before the reclaim at %s", interrupted, reclaim.Sub(Start))
	}
	if !replaced {
		t.Errorf("no replacement launched between the warning and the reclaim")
	}
	if rep.Pods.NeverScheduled != 0 || rep.Pods.Unscheduled != nil {
		t.Errorf("pods %+v", rep.Pods)
	}
}

// The report's event log tells the interruption's story in order: the timeline event, the
// warning, then the drained instance's termination and the launch for its evicted pods; the
// same run gives the same log.
func TestEventLog(t *testing.T) {
	rep := run(t, spotInterruption)
	var kinds []string
	for _, e := range rep.Events {
		if e.AtSeconds >= 600 && e.AtSeconds < 700 {
			kinds = append(kinds, e.Kind)
		}
	}
	if len(kinds) > 2 {
		slices.Sort(kinds[2:])
	}
	want := []string{LogTimeline, LogInterruption, LogLaunch, LogTermination}
	if !slices.Equal(slices.Compact(kinds), want) {
		t.Errorf("events at the interruption %v, want %v", kinds, want)
	}
	for _, e := range rep.Events {
		if e.Kind == LogTermination && !strings.Contains(e.Message, "Deleted") {
			t.Errorf("%s: an instance was not deleted by Karpenter", e.Message)
		}
	}
	again := run(t, spotInterruption)
	a, _ := json.Marshal(rep.Events)
	b, _ := json.Marshal(again.Events)
	if string(a) != string(b) {
		t.Error("two runs of the same workload logged different events")
	}
}
