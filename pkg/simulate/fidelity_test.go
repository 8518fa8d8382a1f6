package simulate

import (
	"strings"
	"testing"
)

// customLabels is a NodePool offering label keys of its own through requirements, and pods
// that select one value of each: Karpenter puts the chosen values on the nodes it launches.
const customLabels = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: example.com/tier, operator: In, values: [gold, silver]}
        - {key: example.com/team, operator: Exists}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: sim}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: sim}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 2
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      nodeSelector: {example.com/tier: silver, example.com/team: platform}
      containers: [{name: app, image: app, resources: {requests: {cpu: "1", memory: 1Gi}}}]
`

// The pods bind to the nodes launched for them, and nothing else is launched in the hour
// (before the nodes carried the values, a node was launched about once a minute: 118 in an
// hour for 2 pods).
func TestCustomLabelRequirementsBind(t *testing.T) {
	rep := run(t, customLabels)
	if rep.Pods.Scheduled != 2 || rep.Pods.NeverScheduled != 0 {
		t.Errorf("pods %+v, want both scheduled", rep.Pods)
	}
	if rep.Nodes.Launched > 2 {
		t.Errorf("%d nodes launched for 2 pods", rep.Nodes.Launched)
	}
}

// brokenNodes is a workload whose every node registers with a taint its pod does not
// tolerate: the nodes Karpenter launches can never take the pod they were launched for.
const brokenNodes = `name: broken-nodes
duration: 3h
cloud:
  registerWithTaints:
    - {key: example.com/broken, value: "true", effect: NoSchedule}
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
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
` + nodeClassManifest + `timeline:
  - at: 0s
    deploy: {name: app, replicas: 1, pod: {cpu: "1", memory: 1Gi}}
`

// The safety valve in simulate: a pod whose nodes never take it causes a few launches an
// hour that back off (5m, 10m, 20m, … up to an hour apart), not one a minute, and the report
// says why it never scheduled, naming the taint.
func TestNodesThatCannotTakeTheirPodBackOff(t *testing.T) {
	rep := run(t, brokenNodes)
	if rep.Pods.NeverScheduled != 1 {
		t.Errorf("pods %+v, want the one pod never scheduled", rep.Pods)
	}
	// Launches at about 0, 5m, 15m, 35m, 1h15m, 2h15m: six in three hours, where an unchecked
	// retry would launch one a minute.
	if rep.Nodes.Launched < 2 || rep.Nodes.Launched > 7 {
		t.Errorf("%d nodes launched in 3h for one pod that no node takes, want 2-7", rep.Nodes.Launched)
	}
	if len(rep.Pods.Unscheduled) != 1 || !strings.Contains(rep.Pods.Unscheduled[0].Reason, "example.com/broken") {
		t.Errorf("unscheduled %+v, want the reason to name the taint example.com/broken", rep.Pods.Unscheduled)
	}
}

func TestRegisterWithTaintsIsValidated(t *testing.T) {
	bad := strings.Replace(brokenNodes, "effect: NoSchedule", "effect: Sometimes", 1)
	_, err := ParseWorkload("broken.yaml", []byte(bad))
	if err == nil || !strings.Contains(err.Error(), "broken.yaml:5: cloud.registerWithTaints[0].effect") {
		t.Errorf("error %v, want one naming the file, line and field", err)
	}
}
