package integration_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/providers/sim"
	"github.com/openkarpenter/karpenter/pkg/simulate"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

// equivalenceWorkload is a small scenario both paths run: 24 pods of two shapes, created at
// once, on the NodePool of examples/web.yaml (spot or on-demand, c/m/r, generation 6+).
const equivalenceWorkload = `name: equivalence
duration: 10m
seed: 7
cloud:
  launchLatency: 1s
  readyDelay: 1s
manifests: |
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: default}
  spec:
    template:
      spec:
        requirements:
          - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
          - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["5"]}
          - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  ---
  apiVersion: karpenter.k8s.aws/v1
  kind: EC2NodeClass
  metadata: {name: default}
  spec:
    role: KarpenterNodeRole
    amiSelectorTerms: [{alias: al2023@latest}]
    subnetSelectorTerms: [{tags: {karpenter.sh/discovery: eq}}]
    securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: eq}}]
timeline:
  - at: 0s
    deploy: {name: web, replicas: 16, pod: {cpu: 500m, memory: 1Gi}}
  - at: 0s
    deploy: {name: api, replicas: 8, pod: {cpu: "2", memory: 4Gi}}
`

// TestSimulateMatchesTheCluster: the simulator and the controllers on a real API server, given
// the same workload, launch the same instance types at the same $/hour.
func TestSimulateMatchesTheCluster(t *testing.T) {
	t.Cleanup(func() { cleanup(t) })
	w, err := simulate.ParseWorkload("equivalence.yaml", []byte(equivalenceWorkload))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := simulate.Run(context.Background(), w, simulate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	simulated := map[string]int{}
	for _, tc := range rep.Nodes.ByType {
		simulated[tc.InstanceType+"/"+tc.CapacityType] += tc.Count
	}

	// The same objects and pods on the API server, then the controllers.
	for _, obj := range w.Objects {
		create(t, obj.DeepCopyObject().(client.Object))
	}
	for _, d := range []struct {
		name     string
		replicas int
		cpu, mem string
	}{{"web", 16, "500m", "1Gi"}, {"api", 8, "2", "4Gi"}} {
		for i := 1; i <= d.replicas; i++ {
			create(t, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", d.name, i), Namespace: "default", Labels: map[string]string{"app": d.name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(d.cpu), corev1.ResourceMemory: resource.MustParse(d.mem)}}}}},
			})
		}
	}
	cloud := newCloud(t, func(o *sim.Options) { o.Seed = 7; o.LaunchLatency = time.Second })
	harness.StartBinder(t, env.Client)
	r := startOperator(t, cloud)
	defer r.stop(t)
	harness.Eventually(t, 60*time.Second, "every pod bound", func() (bool, string) {
		n, detail := unbound(t)
		return n == 0, detail
	})
	launched := map[string]int{}
	for _, in := range cloud.Instances() {
		launched[in.InstanceType+"/"+in.CapacityType]++
	}
	if fmt.Sprint(sorted(launched)) != fmt.Sprint(sorted(simulated)) {
		t.Errorf("the cluster launched %v, the simulator %v", sorted(launched), sorted(simulated))
	}
	if math.Abs(cloud.Cost()-rep.Series[0].CostPerHour) > 1e-3 && math.Abs(cloud.Cost()-rep.Cost.PeakPerHour) > 1e-3 {
		t.Errorf("the cluster runs $%.4f/hour, the simulator $%.4f/hour", cloud.Cost(), rep.Cost.PeakPerHour)
	}
	t.Logf("both launched %v for $%.4f/hour", sorted(launched), cloud.Cost())
}

func sorted(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s×%d", k, v))
	}
	sort.Strings(out)
	return out
}
