package differential_test

import (
	"fmt"
	"strings"
)

// workload is what both controllers are given, in phases: a NodePool, a burst of
// Deployments, then optionally a scale-down that consolidation must shrink and a NodePool
// change that drifts every node.
type workload struct {
	name string
	// short says the workload is part of the short form (`make e2e`, CI).
	short bool
	// nodePool is the NodePool's spec.template.spec.requirements and spec.disruption, as YAML
	// under the NodePool's spec, without the nodeClassRef (each controller adds its own).
	nodePool    string
	deployments []deployment
	// scaleTo, when set, are the replicas each Deployment is scaled to after the burst.
	scaleTo map[string]int
	// drift, when set, changes the NodePool's template labels after the other phases, which
	// drifts every node.
	drift bool
	// expireAfter, when set, is the NodePool's spec.template.spec.expireAfter: after the other
	// phases the suite waits for every node to expire and its pods to run again.
	expireAfter string
}

// deployment is a Deployment of pause pods with requests.
type deployment struct {
	name        string
	replicas    int
	cpu, memory string
	// constraints are YAML lines under the pod spec (indented by 6 spaces), such as
	// topologySpreadConstraints or affinity; "%s" in them is the Deployment's name.
	constraints string
}

// fleetRequirements is issue 34's NodePool: spot, c/m/r, three zones, amd64, consolidation
// WhenEmptyOrUnderutilized.
const fleetRequirements = `  template:
    spec:
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b, us-east-1c]}
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 15s
`

// seedRequirements is seed 004's NodePool (eksctl's docs): on-demand c/m/r of generation 3 or
// later, amd64 Linux, Karpenter's default disruption.
const seedRequirements = `  template:
    spec:
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: kubernetes.io/os, operator: In, values: [linux]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["2"]}
`

// spreadOverZones spreads a Deployment's pods evenly over the zones.
const spreadOverZones = `      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: %s}}
`

// onePerHost keeps a Deployment's pods on different nodes.
const onePerHost = `      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {app: %s}}
`

// nextToWeb puts a pod in a zone that runs a pod of the web Deployment.
const nextToWeb = `      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: topology.kubernetes.io/zone
              labelSelector: {matchLabels: {app: web}}
`

// workloads are the differential suite's workloads; see README.md.
var workloads = []workload{
	{
		name: "spread-burst", short: true, nodePool: fleetRequirements,
		deployments: []deployment{
			{name: "small", replicas: 100, cpu: "250m", memory: "512Mi", constraints: spreadOverZones},
			{name: "medium", replicas: 100, cpu: "1", memory: "2Gi", constraints: spreadOverZones},
			{name: "large", replicas: 100, cpu: "500m", memory: "4Gi", constraints: spreadOverZones},
		},
		scaleTo: map[string]int{"small": 20, "medium": 20, "large": 20},
	},
	{
		name: "burst", nodePool: fleetRequirements,
		deployments: []deployment{
			{name: "small", replicas: 100, cpu: "250m", memory: "512Mi"},
			{name: "medium", replicas: 100, cpu: "1", memory: "2Gi"},
			{name: "large", replicas: 100, cpu: "500m", memory: "4Gi"},
		},
		scaleTo: map[string]int{"small": 20, "medium": 20, "large": 20},
	},
	{
		name: "affinity-burst", short: true, nodePool: fleetRequirements,
		deployments: []deployment{
			{name: "web", replicas: 12, cpu: "1", memory: "2Gi", constraints: onePerHost},
			{name: "cache", replicas: 40, cpu: "500m", memory: "1Gi", constraints: nextToWeb},
		},
	},
	{
		// The end-to-end suite's TestBurstWithZonalSpread.
		name: "big-burst", nodePool: seedRequirements,
		deployments: []deployment{
			{name: "small", replicas: 1500, cpu: "250m", memory: "512Mi"},
			{name: "medium", replicas: 1000, cpu: "1", memory: "2Gi"},
			{name: "spread", replicas: 500, cpu: "500m", memory: "4Gi", constraints: spreadOverZones},
		},
	},
	{
		name: "drift", nodePool: fleetRequirements,
		deployments: []deployment{
			{name: "app", replicas: 60, cpu: "500m", memory: "1Gi", constraints: spreadOverZones},
		},
		drift: true,
	},
	{
		name: "expiry", nodePool: fleetRequirements,
		deployments: []deployment{
			{name: "app", replicas: 60, cpu: "500m", memory: "1Gi", constraints: spreadOverZones},
		},
		expireAfter: "3m",
	},
}

// nodePoolManifest is the workload's NodePool named "fleet" for a controller, with extra
// template labels.
func (w workload) nodePoolManifest(c controller, labels map[string]string) string {
	var b strings.Builder
	b.WriteString("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: fleet\nspec:\n")
	spec := w.nodePool
	templateSpec := "    spec:\n      nodeClassRef: " + c.nodeClassRef + "\n"
	if w.expireAfter != "" {
		templateSpec += "      expireAfter: " + w.expireAfter + "\n"
	}
	template := "  template:\n" + templateSpec
	if len(labels) > 0 {
		template = "  template:\n    metadata:\n      labels:\n"
		for k, v := range labels {
			template += fmt.Sprintf("        %s: %q\n", k, v)
		}
		template += templateSpec
	}
	b.WriteString(strings.Replace(spec, "  template:\n    spec:\n", template, 1))
	return b.String()
}

// manifest is the Deployment with the given replicas.
func (d deployment) manifest(namespace string, replicas int) string {
	constraints := ""
	if d.constraints != "" {
		constraints = strings.ReplaceAll(d.constraints, "%s", d.name)
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  replicas: %[3]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      terminationGracePeriodSeconds: 0
%[6]s      containers:
        - name: pause
          image: registry.k8s.io/pause:3.10
          resources:
            requests: {cpu: "%[4]s", memory: "%[5]s"}
`, d.name, namespace, replicas, d.cpu, d.memory, constraints)
}

// deploymentsManifest is every Deployment of the workload at its burst size.
func (w workload) deploymentsManifest(namespace string) string {
	var docs []string
	for _, d := range w.deployments {
		docs = append(docs, d.manifest(namespace, d.replicas))
	}
	return strings.Join(docs, "---\n")
}

// pods is the number of pods of the burst.
func (w workload) pods() int {
	n := 0
	for _, d := range w.deployments {
		n += d.replicas
	}
	return n
}

// scaled is the Deployment's replicas after the scale-down phase (its burst size when the
// workload does not scale it).
func (w workload) scaled(d deployment) int {
	if n, ok := w.scaleTo[d.name]; ok {
		return n
	}
	return d.replicas
}

// scaledPods is the number of pods after the scale-down phase.
func (w workload) scaledPods() int {
	n := 0
	for _, d := range w.deployments {
		n += w.scaled(d)
	}
	return n
}
