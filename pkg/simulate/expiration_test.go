package simulate

import (
	"sort"
	"testing"
	"time"
)

// expiryWorkload: three m5.xlarge nodes of six web pods, in a NodePool whose nodes expire after
// an hour, whose budget allows no disruption at all, and whose pods a PodDisruptionBudget keeps
// from eviction (until the claims' ten-minute terminationGracePeriod ends).
const expiryWorkload = `
name: expiry
duration: 2h
seed: 1
manifests: |
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata:
    name: web
  spec:
    disruption:
      consolidationPolicy: WhenEmpty
      consolidateAfter: Never
      budgets:
        - nodes: "0"
    template:
      spec:
        expireAfter: 1h
        terminationGracePeriod: 10m
        requirements:
          - key: node.kubernetes.io/instance-type
            operator: In
            values: ["m5.xlarge"]
          - key: karpenter.sh/capacity-type
            operator: In
            values: ["on-demand"]
        nodeClassRef:
          group: karpenter.k8s.aws
          kind: EC2NodeClass
          name: default
  ---
  apiVersion: karpenter.k8s.aws/v1
  kind: EC2NodeClass
  metadata:
    name: default
  spec:
    role: KarpenterNodeRole-my-cluster
    amiSelectorTerms:
      - alias: al2023@latest
    subnetSelectorTerms:
      - tags:
          karpenter.sh/discovery: my-cluster
    securityGroupSelectorTerms:
      - tags:
          karpenter.sh/discovery: my-cluster
timeline:
  - at: 0s
    deploy:
      name: web
      replicas: 9
      minAvailable: 9
      pod: {cpu: "1", memory: 2Gi}
`

// TestExpiryIsForceful: as Karpenter v1.15's nodeclaim.expiration controller
// (pkg/controllers/nodeclaim/expiration/controller.go Reconcile), every node is deleted the
// moment it expires, all at once, though its NodePool's budget allows no disruption and a
// PodDisruptionBudget allows no eviction; no replacement is launched first, but the provisioner
// launches room for the draining nodes' pods at once (provisioner.go Schedule: the deleting
// nodes' CurrentlyReschedulablePods), and the pods, force-deleted at the terminationGracePeriod,
// run again there. Before, expiry was a disruption command: one node at a time, each waiting
// for its replacement to initialize.
func TestExpiryIsForceful(t *testing.T) {
	rep, e := runEngine(t, "expiry.yaml", expiryWorkload)
	expired := map[string]time.Duration{}
	for _, ev := range rep.Events {
		if ev.Kind != LogDisruption {
			continue
		}
		if ev.Method != MethodExpiration || ev.Reason != "Expired" || len(ev.Nodes) != 1 {
			t.Errorf("disruption %+v: only expiry may act here", ev)
			continue
		}
		expired[ev.Nodes[0]] = time.Duration(ev.AtSeconds) * time.Second
	}
	instances := e.cloud.Instances()
	sort.Slice(instances, func(i, j int) bool { return instances[i].LaunchTime.Before(instances[j].LaunchTime) })
	var first, second []string
	var expiredAt time.Duration
	for _, in := range instances {
		launched := in.LaunchTime.Sub(Start)
		switch {
		case launched < time.Hour:
			first = append(first, in.Hostname)
			at, ok := expired[in.Hostname]
			if !ok {
				t.Errorf("node %s, launched at %s, never expired", in.Hostname, launched)
				continue
			}
			if lifetime := at - launched; lifetime < time.Hour || lifetime > time.Hour+10*time.Second {
				t.Errorf("node %s expired %s after its launch, want an hour", in.Hostname, lifetime)
			}
			expiredAt = max(expiredAt, at)
		default:
			second = append(second, in.Hostname)
		}
	}
	if len(first) != 3 {
		t.Fatalf("first nodes %v, want three m5.xlarge for nine pods", first)
	}
	if len(second) != 3 {
		t.Errorf("nodes launched after the expiry %v, want three for the nine pods", second)
	}
	for _, in := range instances {
		if launched := in.LaunchTime.Sub(Start); launched >= time.Hour && (launched < expiredAt || launched > expiredAt+15*time.Second) {
			t.Errorf("node %s launched at %s: room for the expired nodes' pods launches as they start draining (%s), not before nor after they leave",
				in.Hostname, launched, expiredAt)
		}
	}
	if rep.Pods.NeverScheduled != 0 || rep.Pods.Scheduled != rep.Pods.Created {
		t.Errorf("pods %+v: the expired nodes' pods should run again", rep.Pods)
	}
}
