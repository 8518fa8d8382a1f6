package simulate

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// poolAndClass are the getting-started NodePool and EC2NodeClass (on-demand c, m and r).
var poolAndClass = strings.Join(strings.Split(gettingStarted, "\n---\n")[:2], "\n---\n") + "\n"

// placed are a finished run's pods of the workload owner, each with its node.
func placed(t *testing.T, e *engine, owner string) map[*corev1.Pod]*corev1.Node {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	var nodes corev1.NodeList
	if err := e.kube.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	if err := e.kube.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	byName := map[string]*corev1.Node{}
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	out := map[*corev1.Pod]*corev1.Node{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Labels[ownerLabel] != owner || p.DeletionTimestamp != nil {
			continue
		}
		if byName[p.Spec.NodeName] == nil {
			t.Fatalf("pod %s is not on a node (%q)", p.Name, p.Spec.NodeName)
		}
		out[p] = byName[p.Spec.NodeName]
	}
	if len(out) == 0 {
		t.Fatalf("no pods of %s", owner)
	}
	return out
}

// TestLimitsOnlyPodsRequestTheirLimits: a container with limits and no requests requests its
// limits, as the API server defaults it, so a 3500m pod gets a node with room for 3500m.
func TestLimitsOnlyPodsRequestTheirLimits(t *testing.T) {
	_, e := runEngine(t, "limits.yaml", poolAndClass+`---
apiVersion: apps/v1
kind: Deployment
metadata: {name: big}
spec:
  replicas: 1
  selector: {matchLabels: {app: big}}
  template:
    metadata: {labels: {app: big}}
    spec:
      containers: [{name: main, image: app, resources: {limits: {cpu: 3500m, memory: 1Gi}}}]
`)
	for p, n := range placed(t, e, "big") {
		if got := p.Spec.Containers[0].Resources.Requests.Cpu(); got.Cmp(resource.MustParse("3500m")) != 0 {
			t.Errorf("pod %s requests %s cpu, want its limit 3500m", p.Name, got)
		}
		if n.Status.Allocatable.Cpu().Cmp(resource.MustParse("3500m")) < 0 {
			t.Errorf("pod %s of 3500m is on %s with %s cpu allocatable", p.Name, n.Labels[corev1.LabelInstanceTypeStable], n.Status.Allocatable.Cpu())
		}
	}
}

// TestHostNetworkPortsAreHostPorts: a hostNetwork pod's container ports are host ports, so two
// such pods of the same port never share a node.
func TestHostNetworkPortsAreHostPorts(t *testing.T) {
	_, e := runEngine(t, "hostnetwork.yaml", poolAndClass+`---
apiVersion: apps/v1
kind: Deployment
metadata: {name: proxy}
spec:
  replicas: 3
  selector: {matchLabels: {app: proxy}}
  template:
    metadata: {labels: {app: proxy}}
    spec:
      hostNetwork: true
      containers: [{name: main, image: proxy, ports: [{containerPort: 8080}], resources: {requests: {cpu: 100m}}}]
`)
	nodes := map[string]bool{}
	for p, n := range placed(t, e, "proxy") {
		if nodes[n.Name] {
			t.Errorf("pod %s shares node %s and port 8080 with another", p.Name, n.Name)
		}
		nodes[n.Name] = true
	}
	if len(nodes) != 3 {
		t.Errorf("3 pods on %d nodes, want one each", len(nodes))
	}
}

// TestMismatchLabelKeysSeparateTenants: an anti-affinity term with mismatchLabelKeys keeps a
// tenant's pods away from other tenants' only (the API server merges "tenant NotIn (mine)"
// into its selector), so each tenant's pods share a node.
func TestMismatchLabelKeysSeparateTenants(t *testing.T) {
	tenant := func(name string) string {
		return `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `}
spec:
  replicas: 3
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `, tenant: ` + name + `}}
    spec:
      containers: [{name: main, image: app, resources: {requests: {cpu: 100m}}}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector: {matchExpressions: [{key: tenant, operator: Exists}]}
              mismatchLabelKeys: [tenant]
`
	}
	_, e := runEngine(t, "tenants.yaml", poolAndClass+tenant("blue")+tenant("red"))
	tenants := map[string]map[string]bool{} // node -> tenants
	for _, name := range []string{"blue", "red"} {
		for _, n := range placed(t, e, name) {
			if tenants[n.Name] == nil {
				tenants[n.Name] = map[string]bool{}
			}
			tenants[n.Name][name] = true
		}
	}
	for node, on := range tenants {
		if len(on) > 1 {
			t.Errorf("node %s holds tenants %v", node, on)
		}
	}
	if len(tenants) != 2 {
		t.Errorf("2 tenants of 3 small pods on %d nodes, want one node each", len(tenants))
	}
}

// runtimeClassed is a workload of plain manifests whose pods name the RuntimeClass kata: its
// overhead (1 cpu) and its scheduling (a NodePool of its own, tainted).
const runtimeClassed = `---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: sandbox}
spec:
  template:
    metadata: {labels: {sandbox: kata}}
    spec:
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      taints: [{key: sandbox, value: kata, effect: NoSchedule}]
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead: {podFixed: {cpu: "1", memory: 256Mi}}
scheduling:
  nodeSelector: {sandbox: kata}
  tolerations: [{key: sandbox, operator: Equal, value: kata, effect: NoSchedule}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: sandboxed}
spec:
  replicas: 1
  selector: {matchLabels: {app: sandboxed}}
  template:
    metadata: {labels: {app: sandboxed}}
    spec:
      runtimeClassName: kata
      containers: [{name: main, image: app, resources: {requests: {cpu: 1500m, memory: 1Gi}}}]
`

// TestRuntimeClassOverheadAndScheduling: a pod naming a RuntimeClass gets its overhead, which
// counts in the node it needs (1500m and 1 cpu do not fit a 2-vCPU node), and its scheduling:
// the class's nodeSelector and tolerations take it to the NodePool they select.
func TestRuntimeClassOverheadAndScheduling(t *testing.T) {
	_, e := runEngine(t, "runtimeclass.yaml", poolAndClass+runtimeClassed)
	for p, n := range placed(t, e, "sandboxed") {
		if got := p.Spec.Overhead.Cpu(); got.Cmp(resource.MustParse("1")) != 0 {
			t.Errorf("pod %s overhead %s cpu, want the RuntimeClass's 1", p.Name, got)
		}
		if n.Labels[karpv1.NodePoolLabelKey] != "sandbox" || p.Spec.NodeSelector["sandbox"] != "kata" {
			t.Errorf("pod %s (nodeSelector %v) on a node of NodePool %q, want sandbox", p.Name, p.Spec.NodeSelector, n.Labels[karpv1.NodePoolLabelKey])
		}
		if n.Status.Allocatable.Cpu().Cmp(resource.MustParse("2500m")) < 0 {
			t.Errorf("pod %s of 1500m and 1 cpu of overhead on %s with %s cpu allocatable", p.Name, n.Labels[corev1.LabelInstanceTypeStable], n.Status.Allocatable.Cpu())
		}
	}
}

// TestRuntimeClassErrors: what the API server's RuntimeClass admission refuses is refused at the
// file, line and field: a RuntimeClass that does not exist, a nodeSelector conflicting with the
// class's. In a workload file too.
func TestRuntimeClassErrors(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"missing class", poolAndClass + strings.Replace(runtimeClassed, "runtimeClassName: kata", "runtimeClassName: gvisor", 1),
			`m.yaml:78: Deployment "sandboxed": spec.template.spec.runtimeClassName: Forbidden: pods "sandboxed-1" is forbidden: pod rejected: RuntimeClass "gvisor" not found; add RuntimeClass "gvisor" (node.k8s.io/v1) to the manifests`},
		{"conflicting nodeSelector", poolAndClass + strings.Replace(runtimeClassed, "runtimeClassName: kata", "runtimeClassName: kata\n      nodeSelector: {sandbox: gvisor}", 1),
			`m.yaml:79: Deployment "sandboxed": spec.template.spec.nodeSelector[sandbox]: Forbidden: pods "sandboxed-1" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = kata; pod.spec.nodeSelector[sandbox] = gvisor`},
		{"missing class of a Pod", poolAndClass + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {runtimeClassName: gvisor, containers: [{name: c, image: i}]}\n",
			`m.yaml:50: Pod "p": spec.runtimeClassName: Forbidden: pods "p-1" is forbidden: pod rejected: RuntimeClass "gvisor" not found`},
		{"invalid class", poolAndClass + strings.Replace(runtimeClassed, "handler: kata", "handler: Kata_1", 1),
			`m.yaml:63: RuntimeClass "kata": handler: Invalid value: "Kata_1"`},
		{"missing class in a workload file", `duration: 1h
manifests: |
` + indent(poolAndClass) + `timeline:
  - deploy:
      name: web
      replicas: 1
      pod:
        template:
          spec:
            runtimeClassName: gvisor
            containers: [{name: main, image: app}]
`, `m.yaml:55: timeline[0].deploy.pod.template.spec.runtimeClassName: Forbidden: pods "web-1" is forbidden: pod rejected: RuntimeClass "gvisor" not found`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWorkload("m.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestRuntimeClassInAWorkloadFile: a workload file's manifests may hold RuntimeClasses, and its
// events' pods get theirs.
func TestRuntimeClassInAWorkloadFile(t *testing.T) {
	w, err := ParseWorkload("w.yaml", []byte(`duration: 1h
manifests: |
`+indent(poolAndClass+"---\napiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: kata}\nhandler: kata\noverhead: {podFixed: {cpu: 250m}}\n")+`timeline:
  - deploy:
      name: web
      replicas: 1
      pod:
        template:
          spec:
            runtimeClassName: kata
            containers: [{name: main, image: app, resources: {limits: {cpu: "1"}}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	spec := w.Timeline[0].Deploy.template.Spec
	if got := spec.Overhead.Cpu(); got.Cmp(resource.MustParse("250m")) != 0 {
		t.Errorf("overhead %s cpu, want the RuntimeClass's 250m", got)
	}
	if got := spec.Containers[0].Resources.Requests.Cpu(); got.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("request %s cpu, want the limit 1", got)
	}
}

// indent indents text by two spaces, for a YAML literal block.
func indent(text string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(text, "\n"), "\n", "\n  ") + "\n"
}
