//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/simulate"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

// fleetNodePool is the NodePool (and the suite's EC2NodeClass) of TestSpreadBurstAsPlanned: spot, c/m/r, three zones, consolidation
// WhenEmptyOrUnderutilized.
const fleetNodePool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: fleet
spec:
  template:
    spec:
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b, us-east-1c]}
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 30s
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
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

// TestSpreadBurstAsPlanned: issue 34's burst, 300 pods in three shapes, each spread over the
// zones (DoNotSchedule), on a spot NodePool of c, m and r types in three zones. Karpenter
// v1.15.0's own controller ran it on 3 to 9 nodes at $1.90–2.14/hour, all Running after
// 37–51s; this project's ran it on 34 to 49 nodes at up to $2.55/hour, because the plan split
// each zone's share over several nodes sized to the last pod, the kube-scheduler (which places
// spread pods itself: their nominations are not announced) packed them otherwise, and the pods
// left over launched more small nodes. The controller must launch what `karpenter simulate`
// plans for the same manifests: as many nodes (within 10%) at the same $/hour (within 3%).
func TestSpreadBurstAsPlanned(t *testing.T) {
	const namespace, workload = "karpenter-fleet", "e2e-fleet"
	createNamespace(t, namespace)
	// The burst has the cluster to itself, as simulate plans it: the NodePool other tests
	// leave behind (default, on-demand, first by name) would take its pods.
	kubectl(t, "delete", "nodepool", "--all", "--ignore-not-found", "--wait=true", "--timeout=3m")
	kubectlApply(t, fleetNodePool)
	// One batch for the burst, as simulate decides it: a loaded machine's ReplicaSets have left
	// gaps over the default idle second (see TestWorkloadEndToEnd).
	r := startKarpenter(t, namespace, "karpenter-fleet", "--batch-idle-duration", "5s", "--batch-max-duration", "20s")
	workloadNamespace(t, workload)
	t.Cleanup(func() { _, _ = cp.kubectlOutput("delete", "nodepool", "fleet", "--wait=false") })
	harness.Eventually(t, 30*time.Second, "the replica to lead", func() (bool, string) { return r.isLeader(t), "not leader" })
	deployments := []string{
		pauseDeployment(workload, "small", 100, "250m", "512Mi", spreadOverZones),
		pauseDeployment(workload, "medium", 100, "1", "2Gi", spreadOverZones),
		pauseDeployment(workload, "large", 100, "500m", "4Gi", spreadOverZones),
	}
	start := time.Now()
	kubectlApply(t, strings.Join(deployments, "---\n"))
	var last string
	harness.Eventually(t, 3*time.Minute, "300 pods Running", func() (bool, string) {
		var l corev1.PodList
		if err := cp.env.Client.List(context.Background(), &l, client.InNamespace(workload)); err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		last = fmt.Sprintf("%d of %d pods Running after %s, %d NodeClaims", running, len(l.Items), time.Since(start).Round(time.Second), len(claims(t)))
		return len(l.Items) == 300 && running == 300, last
	}, explainUnbound(t, workload))
	st := cloudState(t, namespace)
	t.Logf("%s; %d instances, $%.4f/hour", last, len(st.Instances), cost(st))
	logClaimTimeline(t, start, workload)

	planned := simulateManifests(t, fleetNodePool+"---\n"+strings.Join(deployments, "---\n"))
	nodes, price := planned.Nodes.Peak, planned.Cost.PeakPerHour
	if got := len(st.Instances); float64(got) > math.Ceil(1.1*float64(nodes)) {
		t.Errorf("%d instances for the burst; simulate plans %d nodes (10%% tolerance)", got, nodes)
	}
	if got := cost(st); got > 1.03*price {
		t.Errorf("$%.4f/hour for the burst; simulate plans $%.4f/hour (3%% tolerance)", got, price)
	}
	t.Logf("simulate plans %d nodes at $%.4f/hour", nodes, price)
}

// simulateManifests runs `karpenter simulate` on plain manifests and returns its report.
func simulateManifests(t *testing.T, manifests string) simulate.Report {
	t.Helper()
	var report simulate.Report
	harness.SimulateJSON(t, cp.karpenter, manifests, &report)
	return report
}

// logClaimTimeline logs every NodeClaim: when it was created after start, its instance type,
// zone and capacity type, and how many pods of namespace are bound to its node.
func logClaimTimeline(t *testing.T, start time.Time, namespace string) {
	t.Helper()
	cs := claims(t)
	sort.Slice(cs, func(i, j int) bool { return cs[i].CreationTimestamp.Before(&cs[j].CreationTimestamp) })
	podsOn := map[string]int{}
	for _, p := range pods(t, namespace) {
		podsOn[p.Spec.NodeName]++
	}
	for _, c := range cs {
		t.Logf("%s +%s %s %s %s pods=%d", c.Name, c.CreationTimestamp.Sub(start).Round(time.Second),
			c.Labels[corev1.LabelInstanceTypeStable], c.Labels[corev1.LabelTopologyZone], c.Labels[karpv1.CapacityTypeLabelKey], podsOn[c.Status.NodeName])
	}
}
