package simulate

import (
	"strings"
	"testing"
	"time"
)

// protectedBatch: a pod protected by do-not-disrupt for 2h, alone on a node far too large once
// the web pods beside it are gone (scaled to 0 at 10m). The node is replaced by a cheaper one
// when, and only when, the protection ends: the engine wakes for the end of the duration,
// though nothing else happens then.
const protectedBatch = `name: do-not-disrupt 2h
duration: 4h
cloud:
  zones: [us-east-1a]
manifests: |
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: default}
  spec:
    disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 1m}
    template:
      spec:
        requirements:
          - {key: kubernetes.io/arch, operator: In, values: [amd64]}
          - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
          - {key: karpenter.k8s.aws/instance-category, operator: In, values: [m]}
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
` + nodeClassManifest + `timeline:
  - at: 0s
    deploy:
      name: batch
      replicas: 1
      pod:
        template:
          metadata:
            labels: {app: batch}
            annotations: {karpenter.sh/do-not-disrupt: "2h"}
          spec:
            containers: [{name: main, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
  - at: 0s
    deploy: {name: web, replicas: 12, pod: {cpu: "1", memory: 2Gi}}
  - at: 10m
    scale: {name: web, replicas: 0}
`

// costDrops are the virtual times at which the fleet's $/hour fell.
func costDrops(rep *Report) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(rep.Series); i++ {
		if rep.Series[i].CostPerHour < rep.Series[i-1].CostPerHour {
			out = append(out, time.Duration(rep.Series[i].AtSeconds)*time.Second)
		}
	}
	return out
}

func TestDoNotDisruptDurationEndsInSimulate(t *testing.T) {
	rep := run(t, protectedBatch)
	drops := costDrops(rep)
	// Whatever the web pods leave empty goes after ~11m (when the batch packs them apart from
	// the protected pod); the protected node is replaced just after 2h, and not before.
	last := len(drops) - 1
	if last < 0 || drops[last] < 2*time.Hour || drops[last] > 2*time.Hour+5*time.Minute {
		t.Errorf("cost fell at %v, want a fall within 5m after the 2h protection ended", drops)
	}
	for _, d := range drops[:max(last, 0)] {
		if d > 15*time.Minute {
			t.Errorf("cost fell at %v, want no fall between the web pods' node at ~11m and the end of the protection", drops)
		}
	}
}

// A budget that allows no disruption from 00:00 for 3h (the run starts at midnight) holds the
// nodes until 03:00, then consolidation acts: the engine wakes for the window's end.
func TestBudgetWindowEndsInSimulate(t *testing.T) {
	text := strings.Replace(protectedBatch, "consolidateAfter: 1m}", `consolidateAfter: 1m, budgets: [{nodes: "0", schedule: "0 0 * * *", duration: 3h}]}`, 1)
	text = strings.Replace(text, `annotations: {karpenter.sh/do-not-disrupt: "2h"}`, "annotations: {}", 1)
	rep := run(t, text)
	drops := costDrops(rep)
	if len(drops) == 0 || drops[0] < 3*time.Hour || drops[0] > 3*time.Hour+5*time.Minute {
		t.Errorf("cost fell at %v, want first within 5m after the budget window closed at 3h", drops)
	}
}

// timelineActions exercises the timeline's apply and annotate events: at 20m a label added to
// the NodePool's template drifts the two nodes launched before it (one pod fits each); at 1h
// the web pods are protected by do-not-disrupt, and the template change at 1h10m replaces
// nothing while they run there.
const timelineActions = `name: timeline actions
duration: 2h
cloud: {zones: [us-east-1a]}
manifests: |
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: default}
  spec:
    disruption: {consolidateAfter: 1h}
    template:
      spec:
        requirements:
          - {key: kubernetes.io/arch, operator: In, values: [amd64]}
          - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
` + nodeClassManifest + `timeline:
  - at: 0s
    deploy: {name: web, replicas: 2, pod: {cpu: "1", memory: 1Gi}}
  - at: 20m
    apply: |
      apiVersion: karpenter.sh/v1
      kind: NodePool
      metadata: {name: default}
      spec:
        disruption: {consolidateAfter: 1h}
        template:
          metadata: {labels: {team: web}}
          spec:
            requirements:
              - {key: kubernetes.io/arch, operator: In, values: [amd64]}
              - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
            nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  - at: 1h
    annotate: {deployment: web, annotations: {karpenter.sh/do-not-disrupt: "true"}}
  - at: 1h10m
    apply: |
      apiVersion: karpenter.sh/v1
      kind: NodePool
      metadata: {name: default}
      spec:
        disruption: {consolidateAfter: 1h}
        template:
          metadata: {labels: {team: platform}}
          spec:
            requirements:
              - {key: kubernetes.io/arch, operator: In, values: [amd64]}
              - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
            nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`

func TestTimelineApplyDriftsAndAnnotateProtects(t *testing.T) {
	rep := run(t, timelineActions)
	if got := rep.DisruptionMethods["drift"]; got != 2 {
		t.Errorf("disruptions %v, want the two nodes drifted by the 20m change, and none by the 1h10m change (their pods protected)", rep.DisruptionMethods)
	}
	if rep.Nodes.Launched != 4 {
		t.Errorf("%d nodes launched, want the first two and their drift replacements", rep.Nodes.Launched)
	}
}

// TestWorkloadFeatureGates: the workload's gates are checked against the controller's table
// (package featuregate), and a static NodePool needs StaticCapacity, as in Karpenter.
func TestWorkloadFeatureGates(t *testing.T) {
	staticManifest := strings.Replace(timelineActions, "  spec:\n    disruption:", "  spec:\n    replicas: 2\n    disruption:", 1)
	staticApply := strings.Replace(timelineActions, "      spec:\n        disruption:", "      spec:\n        replicas: 2\n        disruption:", 1)
	if staticManifest == timelineActions || staticApply == timelineActions {
		t.Fatal("the static NodePool variants of the workload did not change it")
	}
	for _, tc := range []struct{ gates, workload, want string }{
		{"featureGates: {SpotToSpotConsolidation: true}\n", timelineActions, ""},
		{"featureGates: {NodeRepair: false, ReservedCapacity: true}\n", timelineActions, ""},
		{"featureGates: {NodeRepair: true}\n", timelineActions, ""},
		{"featureGates: {PodDeletionCostManagement: true}\n", timelineActions, ""},
		{"featureGates: {CapacityBuffer: true}\n", timelineActions, ""},
		{"featureGates: {SpotToSpot: true}\n", timelineActions, `unknown feature gate "SpotToSpot": the known gates are NodeRepair, ReservedCapacity, SpotToSpotConsolidation`},
		{"", staticManifest, "manifests: NodePool default sets spec.replicas (a static NodePool), which needs the StaticCapacity feature gate"},
		{"featureGates: {StaticCapacity: false}\n", staticApply, "timeline[1].apply: NodePool default sets spec.replicas"},
		{"featureGates: {StaticCapacity: true}\n", staticManifest, ""},
		{"featureGates: {StaticCapacity: true}\n", staticApply, ""},
	} {
		_, err := ParseWorkload("gates.yaml", []byte(tc.gates+tc.workload))
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s (static manifest %t, static apply %t): error %v, want %q", strings.TrimSpace(tc.gates), tc.workload == staticManifest, tc.workload == staticApply, err, tc.want)
		}
	}
}

// TestStaticDrift: a static NodePool's drifted nodes are replaced one at a time (its default
// budget, 10% of three nodes, allows one), each replacement launched before the node it
// replaces goes, and the NodePool keeps its three nodes, as Karpenter v1.15.0's StaticDrift
// (disruption/staticdrift.go). Before, static NodePools were left out of disruption entirely.
func TestStaticDrift(t *testing.T) {
	static := strings.Replace(timelineActions, "  spec:\n    disruption:", "  spec:\n    replicas: 3\n    disruption:", 1)
	static = strings.Replace(static, "      spec:\n        disruption:", "      spec:\n        replicas: 3\n        disruption:", 1)
	static = "featureGates: {StaticCapacity: true}\n" + static[:strings.Index(static, "  - at: 1h\n")]
	rep := run(t, static)
	if got := rep.DisruptionMethods["static drift"]; got != 3 {
		t.Errorf("disruptions %v, want the three static nodes replaced once each", rep.DisruptionMethods)
	}
	if rep.Nodes.Launched != 6 || rep.Nodes.Final != 3 {
		t.Errorf("%d nodes launched, %d at the end; want the three and their replacements, three at the end", rep.Nodes.Launched, rep.Nodes.Final)
	}
	if rep.Nodes.Peak > 4 {
		t.Errorf("%d nodes at once, want at most four: one replacement at a time", rep.Nodes.Peak)
	}
}
