package simulate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gettingStarted is what a Karpenter user applies first: a NodePool, an EC2NodeClass and a
// Deployment, here with a DaemonSet, a PodDisruptionBudget, a Job and a Service beside them.
const gettingStarted = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
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
      expireAfter: 720h
  limits:
    cpu: 1000
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: "KarpenterNodeRole-demo"
  amiSelectorTerms:
    - alias: "al2023@latest"
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: "demo"
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: "demo"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: inflate
spec:
  replicas: 5
  selector:
    matchLabels:
      app: inflate
  template:
    metadata:
      labels:
        app: inflate
    spec:
      terminationGracePeriodSeconds: 0
      containers:
        - name: inflate
          image: public.ecr.aws/eks-distro/kubernetes/pause:3.7
          resources:
            requests:
              cpu: 1
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: agent, resources: {requests: {cpu: 200m, memory: 128Mi}}}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: inflate}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: inflate}}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: crunch
  annotations: {simulate.karpenter.sh/runtime: 20m}
spec:
  completions: 4
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, resources: {requests: {cpu: "2", memory: 4Gi}}}]
---
apiVersion: v1
kind: Service
metadata: {name: inflate}
spec:
  selector: {app: inflate}
  ports: [{port: 80}]
`

func TestPlainManifestsAreAWorkload(t *testing.T) {
	w, err := ParseWorkload("getting-started.yaml", []byte(gettingStarted))
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "getting-started" || w.Duration.Duration != PlainManifestsDuration {
		t.Errorf("name %q duration %s", w.Name, w.Duration)
	}
	if len(w.Timeline) != 2 {
		t.Fatalf("%d events, want the deployment and the job", len(w.Timeline))
	}
	d, j := w.Timeline[0].Deploy, w.Timeline[1].Jobs
	if d == nil || d.Name != "inflate" || d.Replicas != 5 || d.MinAvailable == nil || *d.MinAvailable != 4 {
		t.Errorf("deployment %+v: want inflate, 5 replicas, 4 kept available by its PDB", d)
	}
	if j == nil || j.Count != 4 || j.Runtime.Duration != 20*time.Minute {
		t.Errorf("jobs %+v: want 4 pods of 20m", j)
	}
	kinds := map[string]int{}
	for _, o := range w.Objects {
		kinds[o.GetObjectKind().GroupVersionKind().Kind]++
	}
	if kinds["NodePool"] != 1 || kinds["EC2NodeClass"] != 1 || kinds["DaemonSet"] != 1 || len(w.Objects) != 3 {
		t.Errorf("objects %v", kinds)
	}
	rep := run(t, gettingStarted)
	if rep.Pods.Created < 9 || rep.Pods.Scheduled != rep.Pods.Created || rep.Pods.NeverScheduled != 0 {
		t.Errorf("pods %+v, want all 9 (and any recreated) scheduled", rep.Pods)
	}
	for _, tc := range rep.Nodes.ByType {
		if tc.CapacityType != "on-demand" || !strings.ContainsAny(tc.InstanceType[:1], "cmr") {
			t.Errorf("launched %s %s outside the NodePool's requirements", tc.InstanceType, tc.CapacityType)
		}
	}
}

// staticManifests are an EC2NodeClass and a static NodePool of 2³¹−1 nodes, which the
// simulator once tried to run (out of memory) rather than refuse.
const staticManifests = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: R
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: s
spec:
  replicas: 2147483647
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
`

func TestPlainManifestErrors(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"unsupported kind", gettingStarted + "---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\n",
			`m.yaml:105: CronJob "nightly": not simulated; use NodePool, EC2NodeClass, Deployment`},
		{"legacy provisioner", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: default}\nspec: {}\n",
			`m.yaml:1: Provisioner "default": an older or foreign format: convert the file first (karpenter convert m.yaml > nodepools.yaml)`},
		{"kops", "apiVersion: kops.k8s.io/v1alpha2\nkind: InstanceGroup\nmetadata: {name: nodes}\nspec: {}\n", `m.yaml:1: InstanceGroup "nodes": an older or foreign format`},
		{"missing nodeclass", strings.Replace(gettingStarted, "kind: EC2NodeClass\nmetadata:\n  name: default", "kind: EC2NodeClass\nmetadata:\n  name: other", 1),
			`m.yaml:24: NodePool "default": spec.template.spec.nodeClassRef.name: EC2NodeClass "default" is not among the manifests`},
		{"no nodepool", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n", "no NodePool: add at least one NodePool"},
		{"pdb selects nothing", gettingStarted + "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: ghost}\nspec: {minAvailable: 1, selector: {matchLabels: {app: ghost}}}\n",
			`m.yaml:108: PodDisruptionBudget "ghost": spec.selector: Invalid value: "app=ghost": selects no Deployment`},
		{"bad runtime", strings.Replace(gettingStarted, "runtime: 20m", "runtime: soon", 1), `metadata.annotations[simulate.karpenter.sh/runtime]: "soon" is not a positive duration`},
		{"unknown field", strings.Replace(gettingStarted, "  replicas: 5\n", "  replicas: 5\n  replica: 6\n", 1), `m.yaml:53: Deployment "inflate": spec.replica: unknown field; did you mean replicas?`},
		{"invalid nodepool", strings.Replace(gettingStarted, "operator: Gt", "operator: Above", 1), `spec.template.spec.requirements[3].operator: Unsupported value: "Above"`},
		{"negative replicas", strings.Replace(gettingStarted, "  replicas: 5\n", "  replicas: -3\n", 1), `m.yaml:52: Deployment "inflate": spec.replicas: Invalid value: -3: must be greater than or equal to 0`},
		{"invalid nodepool after a deployment", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n---\n" + strings.Replace(gettingStarted, "operator: Gt", "operator: Above", 1),
			`m.yaml:24: NodePool "default": spec.template.spec.requirements[3].operator: Unsupported value: "Above"`},
		{"invalid nodepool in a list", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: karpenter.sh/v1\n  kind: NodePool\n  metadata: {name: default}\n  spec: {template: {spec: {requirements: [], nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}}, weight: 0}\n",
			`m.yaml:7: NodePool "default": spec.weight: Invalid value: 0: should be greater than or equal to 1`},
		{"duplicate nodepool", gettingStarted + "---\n" + strings.Split(gettingStarted, "\n---\n")[0] + "\n",
			`m.yaml:108: NodePool "default": metadata.name: Duplicate value: "default": used by an earlier NodePool (m.yaml:1)`},
		{"negative cpu request", strings.Replace(gettingStarted, "              cpu: 1\n", "              cpu: -1\n", 1),
			`m.yaml:67: Deployment "inflate": spec.template.spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0`},
		{"budget with minAvailable and maxUnavailable", strings.Replace(gettingStarted, "  maxUnavailable: 1\n", "  maxUnavailable: 1\n  minAvailable: 2\n", 1),
			`m.yaml:82: PodDisruptionBudget "inflate": spec: Invalid value: `},
		{"completions past 32 bits", strings.Replace(gettingStarted, "  completions: 4\n", "  completions: 1000000000000\n", 1),
			`m.yaml:92: Job "crunch": spec.completions: want a whole number from -2147483648 to 2147483647, got 1000000000000`},
		{"completions past the bound", strings.Replace(gettingStarted, "  completions: 4\n", "  completions: 200000\n  parallelism: 1\n", 1),
			`m.yaml:92: Job "crunch": spec.completions: 200000 is more than the simulator's bound of 100000 pods`},
		{"static nodepool without the gate", staticManifests, `m.yaml:16: NodePool "s": spec.replicas: NodePool s sets spec.replicas (a static NodePool), which needs the StaticCapacity feature gate: add featureGates: {StaticCapacity: true}, or remove spec.replicas (plain manifests run with Karpenter's default feature gates`},
		{"nodeoverlay without the gate", gettingStarted + "---\napiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: cheaper}\nspec: {requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m7i]}], priceAdjustment: \"-10%\"}\n",
			`NodeOverlay "cheaper": NodeOverlay cheaper needs the NodeOverlay feature gate, which is off by default as in Karpenter`},
		{"duplicate name", gettingStarted + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: inflate}\nspec: {containers: [{name: c, image: i}]}\n", `m.yaml:107: Pod "inflate": metadata.name: Duplicate value: "inflate": used by an earlier Deployment (m.yaml:47)`},
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

// TestPlainManifestsInAList reads a List, as kubectl get -o yaml prints, as its items.
func TestPlainManifestsInAList(t *testing.T) {
	want, err := ParseWorkload("m.yaml", []byte(gettingStarted))
	if err != nil {
		t.Fatal(err)
	}
	list := "apiVersion: v1\nkind: List\nmetadata: {resourceVersion: \"\"}\nitems:\n"
	for _, doc := range strings.Split(gettingStarted, "\n---\n") {
		list += "- " + strings.ReplaceAll(strings.TrimSpace(doc), "\n", "\n  ") + "\n"
	}
	got, err := ParseWorkload("m.yaml", []byte(list))
	if err != nil {
		t.Fatalf("%v\n%s", err, list)
	}
	if len(got.Objects) != len(want.Objects) || len(got.Timeline) != len(want.Timeline) {
		t.Errorf("a List gives %d objects and %d events, the same documents %d and %d", len(got.Objects), len(got.Timeline), len(want.Objects), len(want.Timeline))
	}
}

// TestCompareWithPlainManifests takes the NodePools of a file of plain manifests and leaves its
// workloads, keeping the compared workload's DaemonSets.
func TestCompareWithPlainManifests(t *testing.T) {
	w, err := ParseWorkload("m.yaml", []byte(gettingStarted))
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "spot.yaml")
	if err := os.WriteFile(other, []byte(strings.Replace(gettingStarted, `values: ["on-demand"]`, `values: ["spot"]`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := w.WithManifests(other)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range b.Objects {
		kinds[o.GetObjectKind().GroupVersionKind().Kind]++
	}
	if kinds["NodePool"] != 1 || kinds["EC2NodeClass"] != 1 || kinds["DaemonSet"] != 1 || len(b.Objects) != 3 {
		t.Errorf("objects %v, want the other file's NodePool and EC2NodeClass and this workload's DaemonSet", kinds)
	}
}

// TestExamplesParse keeps every bundled example a valid workload.
func TestExamplesParse(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../../examples/compare/*.yaml")
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatalf("found %d examples", len(files))
	}
	for _, f := range files {
		if _, err := LoadWorkload(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
