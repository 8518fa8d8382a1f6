package simulate

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// zoneIDWorkload: a NodePool restricted to zone ID use1-az2 (us-east-1b in the simulated
// cloud), and one unrestricted whose pods select zone ID use1-az3 (us-east-1c).
const zoneIDWorkload = `name: zone ids
duration: 30m
seed: 1
manifests: |
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: pinned}
  spec:
    template:
      metadata: {labels: {pool: pinned}}
      spec:
        requirements:
          - {key: topology.k8s.aws/zone-id, operator: In, values: [use1-az2]}
          - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  ---
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: open}
  spec:
    template:
      metadata: {labels: {pool: open}}
      spec:
        requirements:
          - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
` + nodeClassManifest + `timeline:
  - at: 0s
    deploy: {name: pinned, replicas: 6, pod: {cpu: "1", memory: 2Gi, nodeSelector: {pool: pinned}}}
  - at: 0s
    deploy: {name: chooser, replicas: 4, pod: {cpu: "1", memory: 2Gi, nodeSelector: {pool: open, topology.k8s.aws/zone-id: use1-az3}}}
`

// TestZoneID: topology.k8s.aws/zone-id is a well-known label, as in the AWS provider v1.15.2
// (apis/v1/labels.go; offerings carry their zone's ID, instancetype/offering): a NodePool
// requirement on it restricts the zones its nodes launch in, a pod can select it, and every node
// carries its zone's true ID. Before, the requirement was a plain label: nodes launched in every
// zone and all claimed use1-az2, and a pod selecting a zone ID never scheduled.
func TestZoneID(t *testing.T) {
	rep, e := runEngine(t, "zoneid.yaml", zoneIDWorkload)
	if rep.Pods.NeverScheduled != 0 {
		t.Errorf("pods %+v: every pod should run", rep.Pods)
	}
	var nodes corev1.NodeList
	if err := e.kube.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"us-east-1a": "use1-az1", "us-east-1b": "use1-az2", "us-east-1c": "use1-az3"}
	wantPool := map[string]string{"pinned": "use1-az2", "open": "use1-az3"}
	for _, n := range nodes.Items {
		zone, id := n.Labels[corev1.LabelTopologyZone], n.Labels[awsv1.LabelTopologyZoneID]
		if id != want[zone] {
			t.Errorf("node %s in %s carries zone ID %q, want %q", n.Name, zone, id, want[zone])
		}
		if pool := n.Labels["pool"]; id != wantPool[pool] {
			t.Errorf("node %s of NodePool %s is in zone ID %s, want %s", n.Name, pool, id, wantPool[pool])
		}
	}
	if len(nodes.Items) == 0 {
		t.Fatal("no nodes")
	}
}
