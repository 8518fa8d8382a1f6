package simulate

import "testing"

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
