//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

// seedNodePool is seed 004's NodePool and EC2NodeClass (eksctl's docs), as written but for the
// role, whose cluster-name placeholder is filled with the role the suite's other EC2NodeClass
// "default" has (the field is immutable, and the tests share the class).
const seedNodePool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general-purpose
  annotations:
    kubernetes.io/description: "General purpose NodePool for generic workloads"
spec:
  template:
    spec:
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
        - key: kubernetes.io/os
          operator: In
          values: ["linux"]
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: ["c", "m", "r"]
        - key: karpenter.k8s.aws/instance-generation
          operator: Gt
          values: ["2"]
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
  annotations:
    kubernetes.io/description: "General purpose EC2NodeClass for running Amazon Linux 2 nodes"
spec:
  role: "KarpenterNodeRole-e2e"
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: "e2e"
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: "e2e"
  amiSelectorTerms:
    - alias: al2023@latest
`

// TestBurstWithZonalSpread: seed 004's NodePool and a burst of 3,000 pods in three
// Deployments, one spread over zones (maxSkew 1, DoNotSchedule). The real kube-scheduler
// counts the pods nominated to a node as already there, for resources and for spread; every
// pod must be Running within a few minutes, none left behind a nomination the kube-scheduler
// refuses.
func TestBurstWithZonalSpread(t *testing.T) {
	if os.Getenv("E2E_SKIP_BURST") != "" {
		t.Skip("E2E_SKIP_BURST is set")
	}
	const namespace, workload = "karpenter-burst", "e2e-burst-spread"
	createNamespace(t, namespace)
	kubectlApply(t, seedNodePool)
	r := startKarpenter(t, namespace, "karpenter-burst")
	workloadNamespace(t, workload)
	// Cleanups run last first: the NodePool goes before the namespace's cleanup waits for the
	// NodeClaims to go, so its 100-odd nodes are deleted at once rather than consolidated at
	// the default budget of 10% at a time.
	t.Cleanup(func() { _, _ = cp.kubectlOutput("delete", "nodepool", "general-purpose", "--wait=false") })
	harness.Eventually(t, 30*time.Second, "the replica to lead", func() (bool, string) { return r.isLeader(t), "not leader" })

	manifests := strings.Join([]string{
		pauseDeployment(workload, "small", 1500, "250m", "512Mi", ""),
		pauseDeployment(workload, "medium", 1000, "1", "2Gi", ""),
		pauseDeployment(workload, "spread", 500, "500m", "4Gi", spreadOverZones),
	}, "---\n")
	start := time.Now()
	kubectlApply(t, manifests)
	var last string
	harness.Eventually(t, 8*time.Minute, "3,000 pods Running", func() (bool, string) {
		var l corev1.PodList
		if err := cp.env.Client.List(context.Background(), &l, client.InNamespace(workload)); err != nil {
			return false, err.Error()
		}
		running, pending, nominated := 0, 0, 0
		for _, p := range l.Items {
			switch {
			case p.Status.Phase == corev1.PodRunning:
				running++
			case p.Spec.NodeName == "":
				pending++
				if p.Status.NominatedNodeName != "" {
					nominated++
				}
			}
		}
		last = fmt.Sprintf("%d of %d pods Running after %s, %d unbound (%d with a nominated node), %d NodeClaims",
			running, len(l.Items), time.Since(start).Round(time.Second), pending, nominated, len(claims(t)))
		return len(l.Items) == 3000 && running == 3000, last
	}, explainUnbound(t, workload))
	t.Logf("%s", last)
	st := cloudState(t, namespace)
	t.Logf("%d instances, $%.4f/hour", len(st.Instances), cost(st))
	logClaimTimeline(t, start, workload)
	if n := len(claims(t)); n != len(st.Instances) {
		t.Errorf("%d NodeClaims for %d instances", n, len(st.Instances))
	}
}
