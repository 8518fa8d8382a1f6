package scheduler

import (
	"errors"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// TestDocListsPipelineInOrder holds the package documentation's list of stages to the
// pipeline the code runs.
func TestDocListsPipelineInOrder(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`The stages,\s+in\s+order:\n`)
	doc := f.Doc.Text()
	at := heading.FindStringIndex(doc)
	if at == nil {
		t.Fatalf("doc.go has no %q list", "The stages, in order:")
	}
	list := doc[at[1]:]
	var documented []string
	for _, line := range strings.Split(strings.TrimLeft(list, "\n"), "\n") {
		item, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
		if line == "" {
			break
		}
		if !ok {
			continue // an item's continuation line
		}
		name, _, _ := strings.Cut(item, ":")
		documented = append(documented, name)
	}
	var code []string
	for _, stage := range pipeline {
		code = append(code, stage.String())
	}
	if !reflect.DeepEqual(documented, code) {
		t.Errorf("doc.go lists the stages %q, the pipeline runs %q", documented, code)
	}
}

// TestEachStageRefusesWithItsReason puts a pod beside one existing node that fails one stage
// (and, where it can, later ones too: the earlier stage must be the one to say why).
func TestEachStageRefusesWithItsReason(t *testing.T) {
	web := map[string]string{"app": "web"}
	labels := map[string]string{corev1.LabelHostname: "n", corev1.LabelTopologyZone: zone1, corev1.LabelArchStable: "amd64"}
	roomy := builders.Resources("cpu", "8", "memory", "16Gi", "pods", "100")
	taint := []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	anti := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: web}, TopologyKey: corev1.LabelHostname}}}}
	for _, tc := range []struct {
		name  string
		node  Node
		pod   builders.PodOptions
		avoid bool
		stage Stage
		want  string
	}{
		{name: "avoid", node: Node{Available: roomy}, avoid: true, stage: StageAvoid,
			want: "1 node refused: 1 it turned the pod away before"},
		{name: "room before taints", node: Node{Available: builders.Resources("cpu", "8", "memory", "1Gi", "pods", "100"), Taints: taint},
			pod: builders.PodOptions{Memory: "2Gi"}, stage: StageRoom, want: "1 node refused: 1 too little memory"},
		{name: "extended room", node: Node{Available: roomy}, pod: builders.PodOptions{Extended: map[corev1.ResourceName]string{"nvidia.com/gpu": "1"}},
			stage: StageRoom, want: "1 node refused: 1 too little nvidia.com/gpu"},
		{name: "taints before requirements", node: Node{Available: roomy, Taints: taint}, pod: builders.PodOptions{NodeSelector: map[string]string{corev1.LabelArchStable: "arm64"}},
			stage: StageTaints, want: "1 node refused: 1 taints: did not tolerate taint dedicated=db:NoSchedule"},
		{name: "requirements", node: Node{Available: roomy}, pod: builders.PodOptions{NodeSelector: map[string]string{corev1.LabelArchStable: "arm64"}},
			stage: StageRequirements, want: "1 node refused: 1 requirements: label kubernetes.io/arch=amd64 does not satisfy kubernetes.io/arch In [arm64]"},
		{name: "host ports", node: Node{Available: roomy, HostPorts: []scheduling.HostPort{{Protocol: corev1.ProtocolTCP, Port: 8080}}}, pod: builders.PodOptions{HostPorts: []int32{8080}},
			stage: StageHostPorts, want: "1 node refused: 1 host ports: host port :8080/TCP is already bound on the node"},
		{name: "topology", node: Node{Available: roomy, Pods: []*corev1.Pod{builders.Pod(builders.PodOptions{Name: "web-0", Labels: web})}}, pod: builders.PodOptions{Labels: web, Affinity: anti},
			stage: StageTopology, want: "1 node refused: 1 topology: pod anti-affinity on kubernetes.io/hostname: a matching pod is already in n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.node.Name, tc.node.Labels = "n", labels
			tc.pod.Name, tc.pod.CPU = "p", "1"
			pod := builders.Pod(tc.pod)
			in := Input{Pods: []*corev1.Pod{pod}, Nodes: []*Node{&tc.node}}
			if tc.avoid {
				in.Avoid = map[types.UID][]string{pod.UID: {"n"}}
			}
			r := Solve(in)
			if len(r.PodErrors) != 1 {
				t.Fatalf("the pod was placed: %+v", r)
			}
			var ue *UnschedulableError
			if !errors.As(r.PodErrors[0].Err, &ue) || len(ue.Nodes) != 1 || ue.Nodes[0].Stage != tc.stage {
				t.Fatalf("error %v, want one refusal at stage %s", r.PodErrors[0].Err, tc.stage)
			}
			if got, want := r.PodErrors[0].Err.Error(), tc.want+"; no NodePool can launch nodes"; got != want {
				t.Errorf("error\n got  %s\n want %s", got, want)
			}
			// The pod is tried twice: the second time tolerating PreferNoSchedule taints.
			if want := []Refusal{{Stage: tc.stage, Count: 2}}; !reflect.DeepEqual(r.Refusals, want) {
				t.Errorf("refusals %v, want %v", r.Refusals, want)
			}
		})
	}
}

// TestUnplacedPodSaysWhichNodesRefused: the pod's error counts the existing nodes that refused
// it by reason, most first, then says why each NodePool could not take it; the run's totals
// count the same refusals per NodePool and stage.
func TestUnplacedPodSaysWhichNodesRefused(t *testing.T) {
	labels := func(name string) map[string]string {
		return map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zone1, corev1.LabelArchStable: "amd64"}
	}
	taint := []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	nodes := []*Node{
		{Name: "db-1", Labels: labels("db-1"), Taints: taint, Available: builders.Resources("cpu", "64", "memory", "256Gi", "pods", "100")},
		{Name: "full", Labels: labels("full"), Available: builders.Resources("cpu", "64", "memory", "1Gi", "pods", "100")},
		{Name: "db-2", Labels: labels("db-2"), Taints: taint, Available: builders.Resources("cpu", "64", "memory", "256Gi", "pods", "100")},
	}
	pod := builders.Pod(builders.PodOptions{Name: "big", CPU: "20", Memory: "8Gi"})
	r := Solve(Input{Pods: []*corev1.Pod{pod}, Nodes: nodes, NodePools: []*NodePool{onDemandPool("default")}})
	if len(r.PodErrors) != 1 {
		t.Fatalf("the pod was placed: %+v", r)
	}
	const want = "3 nodes refused: 2 taints: did not tolerate taint dedicated=db:NoSchedule, 1 too little memory; " +
		"incompatible with every nodepool: nodepool default: no instance type has enough resources, "
	if got := r.PodErrors[0].Err.Error(); !strings.HasPrefix(got, want) {
		t.Errorf("error\n got  %s\n want %s…", got, want)
	}
	// Twice each: the pod is tried again tolerating PreferNoSchedule taints.
	wantRefusals := []Refusal{{Stage: StageRoom, Count: 2}, {Stage: StageTaints, Count: 4}, {NodePool: "default", Stage: StageInstanceType, Count: 2}}
	if !reflect.DeepEqual(r.Refusals, wantRefusals) {
		t.Errorf("refusals %v, want %v", r.Refusals, wantRefusals)
	}
}

// TestClaimRefusalsAreCounted: pods that each need a node of their own are refused by the
// claims opened before them, at the topology stage, under their NodePool.
func TestClaimRefusalsAreCounted(t *testing.T) {
	web := map[string]string{"app": "web"}
	anti := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: web}, TopologyKey: corev1.LabelHostname}}}}
	r := Solve(Input{Pods: builders.Pods(3, builders.PodOptions{Name: "web", CPU: "100m", Labels: web, Affinity: anti}), NodePools: []*NodePool{onDemandPool("default")}})
	mustPlaceAll(t, r)
	// The second pod is refused by the first claim, the third by the second: hostname
	// anti-affinity refuses for good, so the first claim is not asked again.
	if want := []Refusal{{NodePool: "default", Stage: StageTopology, Count: 2}}; !reflect.DeepEqual(r.Refusals, want) {
		t.Errorf("refusals %v, want %v", r.Refusals, want)
	}
	if got := r.Refusals[0].String(); got != "default/topology=2" {
		t.Errorf("String() = %q", got)
	}
}

// TestFeasibleRunsPipelineInOrder holds feasible, which calls the stages one after another, to
// the order of pipeline: with a fault for a stage and every later one, that stage refuses. The
// instance type stage, claims only, is tried on a NodePool whose types are all too small.
func TestFeasibleRunsPipelineInOrder(t *testing.T) {
	web := map[string]string{"app": "web"}
	anti := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: web}, TopologyKey: corev1.LabelHostname}}}}
	build := func(faulty func(Stage) bool) Input {
		node := &Node{Name: "n", Labels: map[string]string{corev1.LabelHostname: "n", corev1.LabelArchStable: "arm64"},
			Available: builders.Resources("cpu", "8", "memory", "16Gi", "pods", "100")}
		pool := onDemandPool("default")
		pool.InstanceTypes = []*cloudprovider.InstanceType{builders.InstanceType(builders.InstanceTypeOptions{Name: "big", CPU: 8, MemoryGiB: 16, Arch: "arm64", PricePerHour: 1})}
		pod := builders.Pod(builders.PodOptions{Name: "p", CPU: "2", Labels: web, Affinity: anti, HostPorts: []int32{8080},
			NodeSelector: map[string]string{corev1.LabelArchStable: "arm64"}})
		in := Input{Pods: []*corev1.Pod{pod}, Nodes: []*Node{node}, NodePools: []*NodePool{pool}}
		for _, stage := range pipeline {
			if !faulty(stage) {
				continue
			}
			switch stage {
			case StageAvoid:
				in.Avoid = map[types.UID][]string{pod.UID: {"n"}}
			case StageRoom:
				node.Available = builders.Resources("cpu", "0", "memory", "16Gi", "pods", "100")
			case StageTaints:
				node.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
				pool.Taints = node.Taints
			case StageRequirements:
				node.Labels[corev1.LabelArchStable] = "amd64"
			case StageHostPorts:
				node.HostPorts = []scheduling.HostPort{{Protocol: corev1.ProtocolTCP, Port: 8080}}
			case StageTopology:
				node.Pods = []*corev1.Pod{builders.Pod(builders.PodOptions{Name: "web-0", Labels: web})}
			case StageInstanceType:
				pool.InstanceTypes = []*cloudprovider.InstanceType{builders.InstanceType(builders.InstanceTypeOptions{Name: "tiny", CPU: 1, MemoryGiB: 1, Arch: "arm64", PricePerHour: 1})}
			}
		}
		return in
	}
	for i, stage := range pipeline {
		faulty := func(s Stage) bool { return slices.Index(pipeline[:], s) >= i }
		if stage == StageInstanceType {
			// Claims only: the node is kept off by avoiding it.
			faulty = func(s Stage) bool { return s == StageAvoid || s == StageInstanceType }
		}
		r := Solve(build(faulty))
		if len(r.PodErrors) != 1 {
			t.Fatalf("faults from %s on: the pod was placed", stage)
		}
		var ue *UnschedulableError
		if !errors.As(r.PodErrors[0].Err, &ue) || len(ue.Nodes) != 1 {
			t.Fatalf("faults from %s on: %v", stage, r.PodErrors[0].Err)
		}
		if got := ue.Nodes[0].Stage; stage != StageInstanceType && got != stage {
			t.Errorf("faults from %s on: the node refused at %s (%v)", stage, got, r.PodErrors[0].Err)
		}
		// The NodePool's refusal: the taints stage comes before the instance type stage.
		if want := map[Stage]string{StageTaints: "did not tolerate taint", StageInstanceType: "no instance type has enough resources"}[stage]; want != "" &&
			!strings.Contains(r.PodErrors[0].Err.Error(), "nodepool default: "+want) {
			t.Errorf("faults from %s on: the NodePool says %v", stage, r.PodErrors[0].Err)
		}
	}
	if r := Solve(build(func(Stage) bool { return false })); len(r.PodErrors) > 0 || len(r.ExistingPlacements) != 1 {
		t.Errorf("without faults the pod should land on the node: %+v", r)
	}
}

// TestCheckNodeRunsEveryNodeStage: outside a solve, every node stage judges the pod on its own
// and each refusal is returned, in pipeline order; room says the amounts.
func TestCheckNodeRunsEveryNodeStage(t *testing.T) {
	node := &Node{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: zone1},
		Taints:    []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}},
		Available: builders.Resources("cpu", "1", "memory", "8Gi", "pods", "10"),
		Pods:      builders.Pods(1, builders.PodOptions{Name: "web", HostPorts: []int32{8080}})}
	pod := builders.Pod(builders.PodOptions{CPU: "2", HostPorts: []int32{8080}, NodeSelector: map[string]string{corev1.LabelTopologyZone: zone2}})
	var got []string
	for _, r := range CheckNode(pod, node, scheduling.Requirements{}) {
		got = append(got, r.Stage.String()+": "+r.Err.Error())
	}
	want := []string{
		"room: insufficient cpu (wants 2, has 1)",
		"taints: did not tolerate taint dedicated=db:NoSchedule",
		"requirements: label topology.kubernetes.io/zone=" + zone1 + " does not satisfy topology.kubernetes.io/zone In [" + zone2 + "]",
		"host ports: host port :8080/TCP is already bound on the node",
	}
	if !slices.Equal(got, want) {
		t.Errorf("CheckNode = %q, want %q", got, want)
	}
	if r := CheckNode(builders.Pod(builders.PodOptions{CPU: "1", Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}), node, scheduling.Requirements{}); len(r) != 0 {
		t.Errorf("CheckNode = %v for a pod the node takes, want none", r)
	}
}
