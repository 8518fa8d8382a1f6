package simulate

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
)

const nodePoolManifests = `manifests: |
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: default}
  spec:
    template:
      spec:
        requirements:
          - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
          - {key: kubernetes.io/arch, operator: In, values: [amd64]}
          - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
` + nodeClassManifest

// nodeClassManifest is the EC2NodeClass the test NodePools name, as the last document of a
// workload's manifests block.
const nodeClassManifest = `  ---
  apiVersion: karpenter.k8s.aws/v1
  kind: EC2NodeClass
  metadata: {name: default}
  spec:
    role: KarpenterNodeRole
    amiSelectorTerms: [{alias: al2023@latest}]
    subnetSelectorTerms: [{tags: {karpenter.sh/discovery: sim}}]
    securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: sim}}]
`

const small = `name: small
duration: 2h
seed: 3
` + nodePoolManifests + `timeline:
  - at: 0s
    deploy: {name: web, replicas: 12, pod: {cpu: 500m, memory: 1Gi}}
  - at: 30m
    scale: {name: web, replicas: 30}
  - at: 1h
    jobs: {name: batch, count: 10, runtime: 20m, pod: {cpu: "2", memory: 4Gi}}
`

func run(t *testing.T, text string) *Report {
	t.Helper()
	w, err := ParseWorkload("small.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// runEngine runs a workload given as text and returns its report and the engine, for tests that
// look at the cluster or the cloud afterwards.
func runEngine(t *testing.T, name, text string) (*Report, *engine) {
	t.Helper()
	w, err := ParseWorkload(name, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return runWorkload(t, w)
}

// runWorkload runs a workload and returns its report and the engine.
func runWorkload(t *testing.T, w *Workload) (*Report, *engine) {
	t.Helper()
	e, err := newEngine(context.Background(), w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep, e
}

func TestSmallScenario(t *testing.T) {
	rep := run(t, small)
	// 40 pods are asked for; consolidation may move some, which their deployment recreates.
	if rep.Pods.Created < 40 || rep.Pods.Scheduled != rep.Pods.Created || rep.Pods.NeverScheduled != 0 {
		t.Errorf("pods %+v, want every pod created scheduled", rep.Pods)
	}
	if rep.Nodes.Launched == 0 || rep.Cost.Total <= 0 || rep.Cost.PeakPerHour <= 0 {
		t.Errorf("nodes %+v cost %+v", rep.Nodes, rep.Cost)
	}
	for _, tc := range rep.Nodes.ByType {
		if tc.CapacityType != "on-demand" || !(strings.HasPrefix(tc.InstanceType, "c") || strings.HasPrefix(tc.InstanceType, "m")) {
			t.Errorf("launched %s %s outside the NodePool's requirements", tc.InstanceType, tc.CapacityType)
		}
	}
	if rep.Pods.PendingMeanS <= 0 || rep.Pods.PendingMaxS > 300 {
		t.Errorf("pending %+v: pods should wait for launch and readiness, not minutes", rep.Pods)
	}
}

func TestDeterministicJSON(t *testing.T) {
	var first, second bytes.Buffer
	if err := WriteJSON(&first, run(t, small)); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&second, run(t, small)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatal("two runs with the same seed gave different JSON reports")
	}
}

func TestWorkloadErrors(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"unknown field", "name: x\nduration: 1h\nbogus: 1\n" + nodePoolManifests, "small.yaml:3: bogus: unknown field"},
		{"bad duration", "name: x\nduration: forever\n" + nodePoolManifests, `small.yaml:2: "forever" is not a duration`},
		{"negative replicas", "name: x\nduration: 1h\n" + nodePoolManifests + "timeline:\n  - at: 0s\n    deploy: {name: web, replicas: -2, pod: {cpu: 1}}\n", "small.yaml:25: timeline[0].deploy.replicas: -2 is negative"},
		{"unknown deployment", "name: x\nduration: 1h\n" + nodePoolManifests + "timeline:\n  - at: 0s\n    scale: {name: ghost, replicas: 2}\n", `small.yaml:25: timeline[0].scale.name: no deployment "ghost" was deployed before this event`},
		{"two actions", "name: x\nduration: 1h\n" + nodePoolManifests + "timeline:\n  - at: 0s\n    scale: {name: a, replicas: 2}\n    delete: {name: a}\n", "timeline[0]: needs exactly one of"},
		{"negative minAvailable", "name: x\nduration: 1h\n" + nodePoolManifests + "timeline:\n  - at: 0s\n    deploy: {name: web, replicas: 2, minAvailable: -1, pod: {cpu: 100m}}\n",
			"timeline[0].deploy.minAvailable: -1 is negative: the PodDisruptionBudget's minAvailable is how many pods must stay available, 0 or more"},
		{"bad quantity", "name: x\nduration: 1h\n" + nodePoolManifests + "timeline:\n  - at: 0s\n    deploy: {name: web, replicas: 1, pod: {cpu: lots}}\n", `timeline[0].deploy.pod: cpu: "lots" is not a quantity`},
		{"no nodepool", "name: x\nduration: 1h\n", "manifests: no NodePool"},
		{"unknown operator", "name: x\nduration: 1h\n" + strings.Replace(nodePoolManifests, "operator: In, values: [c, m]", "operator: Like, values: [c, m]", 1), `small.yaml:11: NodePool "default": spec.template.spec.requirements[0].operator: Unsupported value: "Like"`},
		{"restricted label", "name: x\nduration: 1h\n" + strings.Replace(nodePoolManifests, "    template:\n", "    template:\n      metadata: {labels: {karpenter.sh/team: a}}\n", 1), `spec.template.metadata.labels: Invalid value: label domain "karpenter.sh" is restricted`},
		{"bad consolidateAfter", "name: x\nduration: 1h\n" + strings.Replace(nodePoolManifests, "    template:\n", "    disruption: {consolidateAfter: 1 minute}\n    template:\n", 1), `small.yaml:8: NodePool "default": spec.disruption.consolidateAfter: "1 minute" is not a duration: write a Go duration such as 30s, 5m or 720h`},
		{"kubelet field Karpenter refuses", "name: x\nduration: 1h\n" + strings.Replace(nodePoolManifests, "    role: KarpenterNodeRole\n", "    role: KarpenterNodeRole\n    kubelet: {evictionHard: {memory.free: 1Gi}}\n", 1),
			`small.yaml:21: EC2NodeClass "default": spec.kubelet.evictionHard: "memory.free" isn't a valid eviction signal`},
		{"placement group", "name: x\nduration: 1h\n" + strings.Replace(nodePoolManifests, "    role: KarpenterNodeRole\n", "    role: KarpenterNodeRole\n    placementGroupSelector: {name: hpc}\n", 1),
			`small.yaml:21: EC2NodeClass "default": spec.placementGroupSelector: the simulated cloud (karpenter simulate, --cloud-provider sim) has no placement groups to resolve or launch into; remove the selector to simulate without one (the AWS provider supports it) (PlacementGroupsNotSupported: the EC2NodeClass would never be Ready)`},
		{"Windows", "name: x\nduration: 1h\n" + strings.Replace(nodePoolManifests, "amiSelectorTerms: [{alias: al2023@latest}]", "amiSelectorTerms: [{alias: windows2022@latest}]", 1),
			`EC2NodeClass "default": spec.amiFamily: Windows2022 (from the AMI family or alias): the simulated cloud does not model Windows nodes yet (the AWS provider launches them); simulate with AL2023, AL2, Bottlerocket or Custom (AMIFamilyNotSupported: the EC2NodeClass would never be Ready)`},
		{"kubelet CEL expression", "name: x\nduration: 1h\n" + strings.Replace(nodePoolManifests, "    role: KarpenterNodeRole\n", "    role: KarpenterNodeRole\n    kubelet: {maxPods: \"pods * 2\"}\n", 1),
			`EC2NodeClass "default": spec.kubelet contains a CEL expression, but the NodeClassCEL feature gate is disabled (KubeletExpressionsDisabled: the EC2NodeClass would never be Ready): add featureGates: {NodeClassCEL: true}`},
		{"kubelet CEL expression that does not compile", "name: x\nduration: 1h\nfeatureGates: {NodeClassCEL: true}\n" + strings.Replace(nodePoolManifests, "    role: KarpenterNodeRole\n", "    role: KarpenterNodeRole\n    kubelet: {maxPods: \"pods * 2\"}\n", 1),
			`EC2NodeClass "default": spec.kubelet.maxPods: compiling expression "pods * 2": ERROR: <input>:1:1: undeclared reference to 'pods'`},
		{"kubelet CEL expression negative for some instance type", "name: x\nduration: 1h\nfeatureGates: {NodeClassCEL: true}\n" + strings.Replace(nodePoolManifests, "    role: KarpenterNodeRole\n", "    role: KarpenterNodeRole\n    kubelet: {kubeReserved: {cpu: \"100 - vcpus\"}}\n", 1),
			`spec.kubelet.kubeReserved: cpu: "100 - vcpus" evaluated to`},
		{"unknown manifest field", "name: x\nduration: 1h\nmanifests: |\n  apiVersion: karpenter.sh/v1\n  kind: NodePool\n  metadata: {name: a}\n  spec: {template: {spec: {nodeClassRef: {group: g, kind: k, name: x}}}, bogus: 1}\n", `small.yaml:7: NodePool "a": spec.bogus: unknown field`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWorkload("small.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "some validation rules were not checked") {
				t.Errorf("the server's note that CEL rules were skipped is shown: %v", err)
			}
		})
	}
}

// TestConsolidationAfterScaleDown: 300 pods scaled down to 60 end up costing within 10% of 60
// pods provisioned fresh, every pod keeps a node, and the PodDisruptionBudget held throughout
// (the in-memory cluster's eviction API refuses evictions it would break).
func TestConsolidationAfterScaleDown(t *testing.T) {
	scaled := run(t, "name: scaled\nduration: 3h\nseed: 5\n"+nodePoolManifests+`timeline:
  - at: 0s
    deploy: {name: web, replicas: 300, minAvailable: 50, pod: {cpu: 500m, memory: 1Gi}}
  - at: 1h
    scale: {name: web, replicas: 60}
`)
	fresh := run(t, "name: fresh\nduration: 1h\nseed: 5\n"+nodePoolManifests+`timeline:
  - at: 0s
    deploy: {name: web, replicas: 60, pod: {cpu: 500m, memory: 1Gi}}
`)
	if scaled.Cost.FinalPerHour > 1.10*fresh.Cost.FinalPerHour {
		t.Errorf("after scaling down, $%.4f/hour; 60 pods provisioned fresh cost $%.4f/hour (want within 10%%)", scaled.Cost.FinalPerHour, fresh.Cost.FinalPerHour)
	}
	if scaled.Cost.FinalPerHour >= scaled.Cost.PeakPerHour {
		t.Errorf("nothing was consolidated: $%.4f/hour at the peak and at the end", scaled.Cost.PeakPerHour)
	}
	if scaled.Pods.NeverScheduled != 0 {
		t.Errorf("%d pods left without a node", scaled.Pods.NeverScheduled)
	}
	t.Logf("peak $%.4f/h, after scale-down and consolidation $%.4f/h, fresh $%.4f/h; removed %v", scaled.Cost.PeakPerHour, scaled.Cost.FinalPerHour, fresh.Cost.FinalPerHour, scaled.Disruptions)
}

// TestNeverScheduledReasons: pods no NodePool can take are reported per workload with the
// provisioner's reason, alike in the text, JSON and HTML reports.
func TestNeverScheduledReasons(t *testing.T) {
	rep := run(t, "name: nofit\nduration: 10m\n"+strings.Replace(nodePoolManifests, "values: [c, m]", "values: [zz]", 1)+`timeline:
  - at: 0s
    deploy: {name: web, replicas: 3, pod: {cpu: 500m, memory: 1Gi}}
`)
	if rep.Pods.NeverScheduled != 3 || len(rep.Pods.Unscheduled) != 1 {
		t.Fatalf("pods %+v, want 3 never scheduled in one group", rep.Pods)
	}
	u := rep.Pods.Unscheduled[0]
	const want = "karpenter.k8s.aws/instance-category In [zz]"
	if u.Workload != "web" || u.Pods != 3 || !strings.Contains(u.Reason, want) {
		t.Fatalf("unscheduled %+v, want web's 3 pods with a reason naming %q", u, want)
	}
	var text, js, html bytes.Buffer
	if err := WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "  web: 3 pods: "+u.Reason+"\n") || !strings.Contains(text.String(), "no pod was scheduled") {
		t.Errorf("text report lacks the reason:\n%s", text.String())
	}
	if !strings.Contains(js.String(), `"workload": "web"`) || !strings.Contains(js.String(), want) {
		t.Errorf("JSON report lacks the reason:\n%s", js.String())
	}
	if !strings.Contains(html.String(), "Pods never scheduled") || !strings.Contains(html.String(), want) {
		t.Errorf("HTML report lacks the reason")
	}
}

// TestInclusiveBounds: a NodePool of karpenter.k8s.aws/instance-cpu Gte 4 and Lte 16 launches
// only types of 4 to 16 vCPUs, both ends included (a lone small pod gets 4 vCPUs, a pod of 12
// that comes later gets 16), and leaves a pod of 20 unscheduled; Gt 3 and Lt 17, the same set, plan the same.
func TestInclusiveBounds(t *testing.T) {
	bounded := func(lower, upper string) string {
		return strings.Replace(nodePoolManifests, "          - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}\n",
			"          - {key: karpenter.k8s.aws/instance-cpu, operator: "+lower+"}\n          - {key: karpenter.k8s.aws/instance-cpu, operator: "+upper+"}\n", 1)
	}
	const timeline = `timeline:
  - at: 0s
    deploy: {name: small, replicas: 1, pod: {cpu: 250m, memory: 256Mi}}
  - at: 5m
    deploy: {name: big, replicas: 1, pod: {cpu: "12", memory: 8Gi}}
  - at: 5m
    deploy: {name: huge, replicas: 1, pod: {cpu: "20", memory: 8Gi}}
`
	inclusive := run(t, "name: inclusive\nduration: 10m\n"+bounded(`Gte, values: ["4"]`, `Lte, values: ["16"]`)+timeline)
	vcpus := map[int]bool{}
	for _, tc := range inclusive.Nodes.ByType {
		e, ok := catalog.Lookup(tc.InstanceType)
		if !ok {
			t.Fatalf("launched %s, which the catalog does not know", tc.InstanceType)
		}
		if e.VCPU < 4 || e.VCPU > 16 {
			t.Errorf("launched %s with %d vCPUs, outside Gte 4 and Lte 16", tc.InstanceType, e.VCPU)
		}
		vcpus[e.VCPU] = true
	}
	if !vcpus[4] || !vcpus[16] {
		t.Errorf("launched types of %v vCPUs, want both ends of the range (4 and 16)", vcpus)
	}
	if inclusive.Pods.NeverScheduled != 1 || len(inclusive.Pods.Unscheduled) != 1 || inclusive.Pods.Unscheduled[0].Workload != "huge" {
		t.Errorf("pods %+v, want only huge's pod never scheduled", inclusive.Pods)
	}
	exclusive := run(t, "name: exclusive\nduration: 10m\n"+bounded(`Gt, values: ["3"]`, `Lt, values: ["17"]`)+timeline)
	if !reflect.DeepEqual(exclusive.Nodes.ByType, inclusive.Nodes.ByType) || exclusive.Cost != inclusive.Cost {
		t.Errorf("Gt 3 and Lt 17 launched %+v ($%v), Gte 4 and Lte 16 %+v ($%v)", exclusive.Nodes.ByType, exclusive.Cost, inclusive.Nodes.ByType, inclusive.Cost)
	}
}

// TestStartupTaintsAreLifted: a NodePool's startupTaints (here Cilium's) are lifted
// cloud.startupTaintDelay after a node is Ready, as the agent would, so every pod schedules,
// that much later; the nodes stayed tainted, and no pod scheduled, before.
func TestStartupTaintsAreLifted(t *testing.T) {
	manifests := strings.Replace(nodePoolManifests, "        nodeClassRef:",
		"        startupTaints: [{key: node.cilium.io/agent-not-ready, value: \"true\", effect: NoExecute}]\n        nodeClassRef:", 1)
	workload := func(cloud string) string {
		return "name: startup\nduration: 30m\n" + cloud + manifests + `timeline:
  - at: 0s
    deploy: {name: web, replicas: 10, pod: {cpu: 500m, memory: 1Gi}}
`
	}
	byDefault := run(t, workload(""))
	slow := run(t, workload("cloud: {startupTaintDelay: 25s}\n"))
	for name, rep := range map[string]*Report{"default": byDefault, "25s": slow} {
		if rep.Pods.Created != 10 || rep.Pods.Scheduled != 10 || rep.Pods.NeverScheduled != 0 {
			t.Errorf("%s: pods %+v, want all 10 scheduled once the startup taint is lifted", name, rep.Pods)
		}
	}
	if d := slow.Pods.PendingMaxS - byDefault.Pods.PendingMaxS; d != 20 {
		t.Errorf("pods waited at most %vs with a 25s startup taint delay and %vs with the default 5s: want 20s more", slow.Pods.PendingMaxS, byDefault.Pods.PendingMaxS)
	}
}

// TestDedicatedTenancy: pods that select karpenter.k8s.aws/instance-tenancy: dedicated get
// dedicated nodes, as Karpenter v1.15.2 launches them (the others may share them); every other
// node is of the default tenancy, labelled so.
func TestDedicatedTenancy(t *testing.T) {
	rep := run(t, "name: tenancy\nduration: 10m\n"+nodePoolManifests+`timeline:
  - at: 0s
    deploy: {name: shared, replicas: 2, pod: {cpu: "1", memory: 1Gi}}
  - at: 0s
    deploy: {name: dedicated, replicas: 2, pod: {cpu: "1", memory: 1Gi, nodeSelector: {karpenter.k8s.aws/instance-tenancy: dedicated}}}
`)
	if rep.Pods.NeverScheduled != 0 {
		t.Fatalf("%d pods never scheduled: %+v", rep.Pods.NeverScheduled, rep.Pods.Unscheduled)
	}
	tenancies := map[string]int{}
	for _, n := range rep.NodeHistory {
		tenancies[n.Labels["karpenter.k8s.aws/instance-tenancy"]]++
	}
	if tenancies["dedicated"] == 0 || tenancies["dedicated"]+tenancies["default"] != len(rep.NodeHistory) {
		t.Errorf("nodes by tenancy %v, want dedicated ones, and default ones only besides", tenancies)
	}
	for _, p := range rep.PodHistory {
		if p.Node == "" {
			continue
		}
		for _, n := range rep.NodeHistory {
			if n.Name == p.Node && p.Workload == "dedicated" && n.Labels["karpenter.k8s.aws/instance-tenancy"] != "dedicated" {
				t.Errorf("pod %s on node %s of tenancy %s", p.Name, n.Name, n.Labels["karpenter.k8s.aws/instance-tenancy"])
			}
		}
	}
}

// TestNodeClassCELHonoured: with featureGates NodeClassCEL, a workload's EC2NodeClass may hold
// CEL expressions in spec.kubelet, and the simulated cloud sizes its nodes by them as the AWS
// provider v1.15.2 does (pkg/providers/instancetype/types.go, resolveMaxPods): a maxPods of
// "min(2, max_pods)" puts at most two pods on a node, so six tiny pods need three nodes.
func TestNodeClassCELHonoured(t *testing.T) {
	text := "name: cel\nduration: 30m\nseed: 1\nfeatureGates: {NodeClassCEL: true}\n" +
		strings.Replace(nodePoolManifests, "    role: KarpenterNodeRole\n", "    role: KarpenterNodeRole\n    kubelet: {maxPods: \"min(2, max_pods)\"}\n", 1) +
		"timeline:\n  - at: 0s\n    deploy: {name: web, replicas: 6, pod: {cpu: 10m, memory: 16Mi}}\n"
	rep, _ := runEngine(t, "cel.yaml", text)
	if rep.Pods.Scheduled != 6 || rep.Pods.NeverScheduled != 0 {
		t.Errorf("pods %+v, want all six scheduled", rep.Pods)
	}
	if rep.Nodes.Launched < 3 {
		t.Errorf("%d nodes launched, want at least 3 (two pods each)", rep.Nodes.Launched)
	}
}
