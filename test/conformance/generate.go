package conformance

import (
	"fmt"
	"math"
	"math/rand"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// The generator's universe is small on purpose, so that constraints collide often: three
// zones, two capacity types, a handful of families and sizes, one custom label key.
var (
	// Zones every instance type may be offered in.
	Zones = []string{"zone-a", "zone-b", "zone-c"}
	// CapacityTypes offered.
	CapacityTypes = []string{karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand}
)

const (
	// TierLabel is the custom label key NodePools and pods use.
	TierLabel = "example.com/tier"
	// TeamLabel is a custom label NodePool templates set.
	TeamLabel = "example.com/team"
	// GPUResource is the extended resource GPU instance types offer.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
	// AppLabel names a pending pod's workload.
	AppLabel = "app"
	// HashLabel is the label matchLabelKeys refers to, as a Deployment's pod-template-hash.
	HashLabel = "pod-template-hash"
	// StartupTaintKey is the startup taint some NodePools set.
	StartupTaintKey = "example.com/startup"
)

// family is a catalog family: its category, generation, arch and memory per vCPU.
type family struct {
	name, category, arch string
	generation           int
	gibPerCPU            int64
	perCPU               float64 // on-demand $/hour per vCPU
	gpu                  bool
}

var families = []family{
	{"c5", "c", "amd64", 5, 2, 0.0425, false},
	{"m5", "m", "amd64", 5, 4, 0.048, false},
	{"r5", "r", "amd64", 5, 8, 0.063, false},
	{"m6g", "m", "arm64", 6, 4, 0.0385, false},
	{"c7g", "c", "arm64", 7, 2, 0.0363, false},
	{"g4dn", "g", "amd64", 4, 4, 0.131, true},
}

var sizes = []struct {
	name string
	cpu  int64
}{{"large", 2}, {"xlarge", 4}, {"2xlarge", 8}, {"4xlarge", 16}}

// Generate builds the case of a seed. The same seed gives the same case.
func Generate(seed int64) *Case {
	g := &generator{r: rand.New(rand.NewSource(seed)), c: &Case{Seed: seed}}
	g.instanceTypes()
	g.nodePools()
	g.daemonSets()
	g.nodes()
	g.pendingPods()
	return g.c
}

type generator struct {
	r    *rand.Rand
	c    *Case
	apps []string // workloads generated so far, for pod affinity to point at
	uid  int
}

func (g *generator) chance(p float64) bool { return g.r.Float64() < p }

func (g *generator) pick(values []string) string { return values[g.r.Intn(len(values))] }

// subset returns a random non-empty subset of values, in their order.
func (g *generator) subset(values []string) []string {
	for {
		var out []string
		for _, v := range values {
			if g.chance(0.5) {
				out = append(out, v)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
}

func (g *generator) nextUID(prefix string) types.UID {
	g.uid++
	return types.UID(fmt.Sprintf("%s-%d-%d", prefix, g.c.Seed, g.uid))
}

func (g *generator) instanceTypes() {
	n := 3 + g.r.Intn(8)
	seen := map[string]bool{}
	for len(g.c.InstanceTypes) < n {
		f := families[g.r.Intn(len(families))]
		s := sizes[g.r.Intn(len(sizes))]
		name := f.name + "." + s.name
		if seen[name] {
			continue
		}
		seen[name] = true
		memGi := s.cpu * f.gibPerCPU
		pods := int64(8 + g.r.Intn(4)*8)
		it := &InstanceType{
			Name: name,
			Labels: map[string]string{
				corev1.LabelInstanceTypeStable:     name,
				corev1.LabelArchStable:             f.arch,
				corev1.LabelOSStable:               "linux",
				awsv1.LabelInstanceCategory:        f.category,
				awsv1.LabelInstanceFamily:          f.name,
				awsv1.LabelInstanceGeneration:      strconv.Itoa(f.generation),
				awsv1.LabelInstanceSize:            s.name,
				awsv1.LabelInstanceCPU:             strconv.FormatInt(s.cpu, 10),
				awsv1.LabelInstanceMemory:          strconv.FormatInt(memGi*1024, 10),
				awsv1.LabelInstanceHypervisor:      "nitro",
				awsv1.LabelInstanceCPUManufacturer: map[string]string{"amd64": "intel", "arm64": "aws"}[f.arch],
			},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:              *resource.NewQuantity(s.cpu, resource.DecimalSI),
				corev1.ResourceMemory:           *resource.NewQuantity(memGi<<30, resource.BinarySI),
				corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
				corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
			},
			Overhead: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(80+10*s.cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity((256+64*s.cpu)<<20, resource.BinarySI),
			},
		}
		if f.gpu {
			gpus := max(1, s.cpu/4)
			it.Capacity[GPUResource] = *resource.NewQuantity(gpus, resource.DecimalSI)
			it.Labels[awsv1.LabelInstanceGPUCount] = strconv.FormatInt(gpus, 10)
			it.Labels[awsv1.LabelInstanceGPUName] = "t4"
			it.Labels[awsv1.LabelInstanceGPUManufacturer] = "nvidia"
		}
		onDemand := math.Round(f.perCPU*float64(s.cpu)*(0.9+0.2*g.r.Float64())*10000) / 10000
		for _, zone := range g.subset(Zones) {
			for _, ct := range CapacityTypes {
				if ct == karpv1.CapacityTypeSpot && g.chance(0.25) {
					continue
				}
				price := onDemand
				if ct == karpv1.CapacityTypeSpot {
					price = math.Round(onDemand*(0.3+0.4*g.r.Float64())*10000) / 10000
				}
				it.Offerings = append(it.Offerings, Offering{Zone: zone, CapacityType: ct, Price: price, Available: !g.chance(0.08)})
			}
		}
		g.c.InstanceTypes = append(g.c.InstanceTypes, it)
	}
}

func (g *generator) nodePools() {
	n := 1 + g.r.Intn(3)
	for i := 0; i < n; i++ {
		np := &karpv1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("np-%d", i), UID: g.nextUID("nodepool")},
		}
		np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
		if g.chance(0.5) {
			w := int32(g.r.Intn(4) * 10)
			np.Spec.Weight = &w
		}
		var reqs []karpv1.NodeSelectorRequirementWithMinValues
		add := func(key string, op corev1.NodeSelectorOperator, values ...string) *karpv1.NodeSelectorRequirementWithMinValues {
			reqs = append(reqs, karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values})
			return &reqs[len(reqs)-1]
		}
		switch g.r.Intn(4) {
		case 0:
			add(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)
		case 1:
			add(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand)
		case 2:
			add(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpNotIn, karpv1.CapacityTypeSpot)
		}
		if g.chance(0.3) {
			add(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, g.subset(Zones)...)
		} else if g.chance(0.15) {
			add(corev1.LabelTopologyZone, corev1.NodeSelectorOpNotIn, g.pick(Zones))
		}
		if g.chance(0.3) {
			add(corev1.LabelArchStable, corev1.NodeSelectorOpIn, g.pick([]string{"amd64", "arm64"}))
		} else if g.chance(0.2) {
			add(corev1.LabelArchStable, corev1.NodeSelectorOpExists)
		}
		if g.chance(0.3) {
			add(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, g.subset([]string{"c", "m", "r", "g"})...)
		} else if g.chance(0.2) {
			add(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpNotIn, g.pick([]string{"c", "m", "r", "g"}))
		}
		if g.chance(0.25) {
			if g.chance(0.5) {
				add(awsv1.LabelInstanceCPU, corev1.NodeSelectorOpGt, g.pick([]string{"1", "2", "3"}))
			} else {
				add(awsv1.LabelInstanceCPU, karpv1.NodeSelectorOpGte, g.pick([]string{"2", "3", "4"}))
			}
		}
		if g.chance(0.25) {
			if g.chance(0.5) {
				add(awsv1.LabelInstanceCPU, corev1.NodeSelectorOpLt, g.pick([]string{"5", "9", "17"}))
			} else {
				add(awsv1.LabelInstanceCPU, karpv1.NodeSelectorOpLte, g.pick([]string{"4", "8", "16"}))
			}
		}
		if g.chance(0.25) {
			add(awsv1.LabelInstanceGPUCount, corev1.NodeSelectorOpDoesNotExist)
		}
		if g.chance(0.2) {
			r := add(awsv1.LabelInstanceFamily, corev1.NodeSelectorOpExists)
			mv := 1 + g.r.Intn(2)
			r.MinValues = &mv
		}
		switch {
		case g.chance(0.2):
			add(TierLabel, corev1.NodeSelectorOpIn, "gold", "silver")
		case g.chance(0.1):
			add(TierLabel, corev1.NodeSelectorOpExists)
		}
		np.Spec.Template.Spec.Requirements = reqs
		if g.chance(0.3) {
			np.Spec.Template.Labels = map[string]string{TeamLabel: g.pick([]string{"blue", "red"})}
		}
		if g.chance(0.25) {
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: np.Name, Effect: corev1.TaintEffectNoSchedule}}
		} else if g.chance(0.1) {
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "soft", Value: np.Name, Effect: corev1.TaintEffectPreferNoSchedule}}
		}
		if g.chance(0.2) {
			np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: StartupTaintKey, Effect: corev1.TaintEffectNoSchedule}}
		}
		if g.chance(0.25) {
			np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: *resource.NewQuantity(int64(8+8*g.r.Intn(6)), resource.DecimalSI)}
			if g.chance(0.3) {
				np.Spec.Limits[corev1.ResourceMemory] = *resource.NewQuantity(int64(32+32*g.r.Intn(4))<<30, resource.BinarySI)
			}
		}
		g.c.NodePools = append(g.c.NodePools, np)
	}
}

func (g *generator) daemonSets() {
	n := g.r.Intn(3)
	for i := 0; i < n; i++ {
		spec := corev1.PodSpec{Containers: []corev1.Container{{
			Name: "d",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(50+50*g.r.Intn(6)), resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(int64(64+64*g.r.Intn(4))<<20, resource.BinarySI),
			}},
		}}}
		if g.chance(0.5) {
			spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}
		if g.chance(0.25) {
			spec.NodeSelector = map[string]string{corev1.LabelArchStable: g.pick([]string{"amd64", "arm64"})}
		}
		g.c.DaemonSets = append(g.c.DaemonSets, &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ds-%d", i), Namespace: "kube-system", UID: g.nextUID("ds")},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"ds": strconv.Itoa(i)}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"ds": strconv.Itoa(i)}}, Spec: spec},
			},
		})
	}
}

// nodes creates existing nodes from the NodePools' instance types, with a few pods each.
func (g *generator) nodes() {
	n := g.r.Intn(4)
	for i := 0; i < n; i++ {
		np := g.c.NodePools[g.r.Intn(len(g.c.NodePools))]
		it := g.c.InstanceTypes[g.r.Intn(len(g.c.InstanceTypes))]
		if len(it.Offerings) == 0 {
			continue
		}
		o := it.Offerings[g.r.Intn(len(it.Offerings))]
		labels := map[string]string{}
		for k, v := range np.Spec.Template.Labels {
			labels[k] = v
		}
		for _, r := range np.Spec.Template.Spec.Requirements {
			if r.Key == TierLabel && r.Operator == corev1.NodeSelectorOpIn {
				labels[TierLabel] = r.Values[0]
			}
		}
		node := &Node{
			Name: fmt.Sprintf("node-%d", i), NodePool: np.Name, InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType,
			Labels: labels, Taints: np.Spec.Template.Spec.Taints,
		}
		if g.chance(0.15) {
			node.NodePool = "" // a node no NodePool manages
			node.Labels = nil
			node.Taints = nil
		}
		pods := g.r.Intn(4)
		for j := 0; j < pods; j++ {
			app := fmt.Sprintf("app-%d", g.r.Intn(3))
			pod := g.basePod(fmt.Sprintf("bound-%d-%d", i, j), app, "100m", "256Mi")
			pod.Spec.NodeName = node.Name
			pod.Status = corev1.PodStatus{Phase: corev1.PodRunning}
			pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
			if g.chance(0.2) {
				pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
						TopologyKey:   g.pick([]string{corev1.LabelHostname, corev1.LabelTopologyZone}),
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{AppLabel: fmt.Sprintf("app-%d", g.r.Intn(6))}},
					}},
				}}
			}
			node.Pods = append(node.Pods, pod)
		}
		g.c.Nodes = append(g.c.Nodes, node)
	}
}

func (g *generator) basePod(name, app, cpu, memory string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: g.nextUID("pod"),
			Labels: map[string]string{AppLabel: app, HashLabel: app + "-hash"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(cpu),
				corev1.ResourceMemory: resource.MustParse(memory),
			}},
		}}},
	}
}

// pendingPods creates workloads: groups of identical pods, each drawing a few constraint kinds.
func (g *generator) pendingPods() {
	workloads := 1 + g.r.Intn(5)
	for w := 0; w < workloads; w++ {
		app := fmt.Sprintf("app-%d", len(g.apps)+3*int(g.r.Intn(2)))
		if len(g.apps) > 0 && g.chance(0.1) {
			app = g.apps[g.r.Intn(len(g.apps))] // two workloads with one app label
		}
		cpu := g.pick([]string{"100m", "250m", "500m", "750m", "1", "1500m", "2", "3"})
		memory := g.pick([]string{"128Mi", "512Mi", "1Gi", "2Gi", "3Gi", "6Gi"})
		template := g.basePod("", app, cpu, memory)
		g.constrain(template, app)
		replicas := 1 + g.r.Intn(6)
		for i := 0; i < replicas; i++ {
			pod := template.DeepCopy()
			pod.Name = fmt.Sprintf("w%d-%d", w, i)
			pod.UID = g.nextUID("pod")
			pod.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			}}}
			if len(pod.Spec.Volumes) > 0 {
				g.volumes(pod, i)
			}
			g.c.Pods = append(g.c.Pods, pod)
		}
		g.apps = append(g.apps, app)
	}
}

// constrain draws the constraint kinds of a workload.
func (g *generator) constrain(pod *corev1.Pod, app string) {
	spec := &pod.Spec
	if g.chance(0.15) {
		spec.NodeSelector = map[string]string{}
		switch g.r.Intn(4) {
		case 0:
			spec.NodeSelector[corev1.LabelArchStable] = g.pick([]string{"amd64", "arm64"})
		case 1:
			spec.NodeSelector[karpv1.CapacityTypeLabelKey] = g.pick(CapacityTypes)
		case 2:
			spec.NodeSelector[corev1.LabelTopologyZone] = g.pick(Zones)
		case 3:
			spec.NodeSelector[TierLabel] = g.pick([]string{"gold", "silver"})
		}
	}
	affinity := &corev1.Affinity{}
	if g.chance(0.2) {
		var terms []corev1.NodeSelectorTerm
		for t := 0; t < 1+g.r.Intn(2); t++ {
			terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{g.nodeRequirement()}})
		}
		affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}
	}
	if g.chance(0.15) {
		if affinity.NodeAffinity == nil {
			affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{{
			Weight: int32(1 + g.r.Intn(100)), Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{g.nodeRequirement()}},
		}}
	}
	for _, np := range g.c.NodePools {
		for _, t := range np.Spec.Template.Spec.Taints {
			if g.chance(0.6) {
				spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpEqual, Value: t.Value, Effect: t.Effect})
			}
		}
	}
	if g.chance(0.05) {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
	}
	self := &metav1.LabelSelector{MatchLabels: map[string]string{AppLabel: app}}
	if g.chance(0.3) {
		c := corev1.TopologySpreadConstraint{
			MaxSkew:           int32(1 + g.r.Intn(2)),
			TopologyKey:       g.pick([]string{corev1.LabelTopologyZone, corev1.LabelHostname}),
			WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector:     self,
		}
		if g.chance(0.2) {
			c.WhenUnsatisfiable = corev1.ScheduleAnyway
		} else if g.chance(0.3) {
			md := int32(2 + g.r.Intn(3))
			c.MinDomains = &md
		}
		if g.chance(0.2) {
			c.MatchLabelKeys = []string{HashLabel}
		}
		if g.chance(0.15) {
			p := corev1.NodeInclusionPolicyIgnore
			c.NodeAffinityPolicy = &p
		}
		if g.chance(0.15) {
			p := corev1.NodeInclusionPolicyHonor
			c.NodeTaintsPolicy = &p
		}
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, c)
	}
	if g.chance(0.12) {
		target := self
		if len(g.apps) > 0 && g.chance(0.6) {
			target = &metav1.LabelSelector{MatchLabels: map[string]string{AppLabel: g.apps[g.r.Intn(len(g.apps))]}}
		}
		term := corev1.PodAffinityTerm{TopologyKey: g.pick([]string{corev1.LabelTopologyZone, corev1.LabelHostname}), LabelSelector: target}
		affinity.PodAffinity = &corev1.PodAffinity{}
		if g.chance(0.3) {
			affinity.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 50, PodAffinityTerm: term}}
		} else {
			affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term}
		}
	}
	if g.chance(0.15) {
		term := corev1.PodAffinityTerm{TopologyKey: g.pick([]string{corev1.LabelHostname, corev1.LabelHostname, corev1.LabelTopologyZone}), LabelSelector: self}
		affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
		if g.chance(0.3) {
			affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 50, PodAffinityTerm: term}}
		} else {
			affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term}
		}
	}
	if affinity.NodeAffinity != nil || affinity.PodAffinity != nil || affinity.PodAntiAffinity != nil {
		spec.Affinity = affinity
	}
	if g.chance(0.08) {
		spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: int32(8080 + g.r.Intn(2)), Protocol: corev1.ProtocolTCP}}
	}
	if g.chance(0.1) {
		spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(g.pick([]string{"500m", "2", "4"})),
		}}}}
	}
	if g.chance(0.08) {
		always := corev1.ContainerRestartPolicyAlways
		spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: "sidecar", RestartPolicy: &always,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}})
	}
	if g.chance(0.05) {
		spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	}
	if g.chance(0.07) {
		q := resource.MustParse("1")
		spec.Containers[0].Resources.Requests[GPUResource] = q
		spec.Containers[0].Resources.Limits = corev1.ResourceList{GPUResource: q}
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists})
	}
	if g.chance(0.08) {
		spec.Volumes = []corev1.Volume{{Name: "data"}}
	}
}

// nodeRequirement draws one node selector requirement with any operator.
func (g *generator) nodeRequirement() corev1.NodeSelectorRequirement {
	switch g.r.Intn(9) {
	case 0:
		return corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: g.subset(Zones)}
	case 1:
		return corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpNotIn, Values: []string{g.pick(Zones)}}
	case 2:
		return corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceCPU, Operator: corev1.NodeSelectorOpGt, Values: []string{g.pick([]string{"1", "3", "7"})}}
	case 3:
		return corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceCPU, Operator: corev1.NodeSelectorOpLt, Values: []string{g.pick([]string{"3", "5", "9"})}}
	case 4:
		return corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist}
	case 5:
		return corev1.NodeSelectorRequirement{Key: TierLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{g.pick([]string{"gold", "silver"})}}
	case 6:
		return corev1.NodeSelectorRequirement{Key: TierLabel, Operator: corev1.NodeSelectorOpExists}
	case 7:
		return corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: g.subset([]string{"c", "m", "r"})}
	default:
		return corev1.NodeSelectorRequirement{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{g.pick(CapacityTypes)}}
	}
}

// volumes gives a pod a claim: bound to a zonal volume, or unbound with a zonal StorageClass.
func (g *generator) volumes(pod *corev1.Pod, i int) {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + pod.Name, Namespace: pod.Namespace, UID: g.nextUID("pvc")}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name},
	}}}
	zone := g.pick(Zones)
	if g.chance(0.5) {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-" + pod.Name, UID: g.nextUID("pv")},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
				AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-" + pod.Name}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
				}}}},
			},
		}
		pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID}
		pv.Status.Phase = corev1.VolumeBound
		claim.Spec.VolumeName = pv.Name
		claim.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
		claim.Status.Phase = corev1.ClaimBound
		g.c.PersistentVolumes = append(g.c.PersistentVolumes, pv)
	} else {
		name := "sc-" + zone
		found := false
		for _, sc := range g.c.StorageClasses {
			found = found || sc.Name == name
		}
		if !found {
			mode := storagev1.VolumeBindingWaitForFirstConsumer
			g.c.StorageClasses = append(g.c.StorageClasses, &storagev1.StorageClass{
				ObjectMeta:        metav1.ObjectMeta{Name: name, UID: g.nextUID("sc")},
				Provisioner:       "ebs.csi.aws.com",
				VolumeBindingMode: &mode,
				AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{zone}}}}},
			})
		}
		claim.Spec.StorageClassName = &name
	}
	claim.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	claim.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}
	g.c.PersistentVolumeClaims = append(g.c.PersistentVolumeClaims, claim)
	_ = i
}
