package cloudprovider_test

import (
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

const mi = 1 << 20
const gi = 1 << 30

func entry(t *testing.T, name string) catalog.Entry {
	t.Helper()
	e, ok := catalog.Lookup(name)
	if !ok {
		t.Fatalf("%s is not in the catalog", name)
	}
	return e
}

func build(t *testing.T, name string, opts cloudprovider.InstanceTypeOptions) *cloudprovider.InstanceType {
	t.Helper()
	it, err := cloudprovider.NewInstanceType(entry(t, name), opts)
	if err != nil {
		t.Fatalf("building %s: %v", name, err)
	}
	return it
}

// want is an expected allocatable; zero fields are not checked.
type want struct {
	milliCPU, memory, ephemeral int64
	pods                        *int64
	// capacity checks
	capPods, capMemory int64
	extended           map[corev1.ResourceName]int64
}

func check(t *testing.T, it *cloudprovider.InstanceType, w want) {
	t.Helper()
	got := it.AllocatableResources()
	if w.milliCPU != 0 && got.MilliCPU != w.milliCPU {
		t.Errorf("allocatable cpu = %dm, want %dm", got.MilliCPU, w.milliCPU)
	}
	if w.memory != 0 && got.Memory != w.memory {
		t.Errorf("allocatable memory = %d (%.2fMi), want %d (%.2fMi)", got.Memory, float64(got.Memory)/mi, w.memory, float64(w.memory)/mi)
	}
	if w.pods != nil && got.Pods != *w.pods {
		t.Errorf("allocatable pods = %d, want %d", got.Pods, *w.pods)
	}
	if w.ephemeral != 0 && got.EphemeralStorage != w.ephemeral {
		t.Errorf("allocatable ephemeral-storage = %d (%.3fGi), want %d (%.3fGi)", got.EphemeralStorage, float64(got.EphemeralStorage)/gi, w.ephemeral, float64(w.ephemeral)/gi)
	}
	capacity := scheduling.ResourcesOf(it.Capacity)
	if w.capPods != 0 && capacity.Pods != w.capPods {
		t.Errorf("capacity pods = %d, want %d", capacity.Pods, w.capPods)
	}
	if w.capMemory != 0 && capacity.Memory != w.capMemory {
		t.Errorf("capacity memory = %.2fMi, want %.2fMi", float64(capacity.Memory)/mi, float64(w.capMemory)/mi)
	}
	for name, n := range w.extended {
		q := it.Allocatable()[name]
		if q.Value() != n {
			t.Errorf("allocatable %s = %d, want %d", name, q.Value(), n)
		}
	}
	// Allocatable and AllocatableResources agree.
	if r := scheduling.ResourcesOf(it.Allocatable()); r != got {
		t.Errorf("ResourcesOf(Allocatable()) = %+v, AllocatableResources() = %+v", r, got)
	}
}

func TestAllocatableKnownTypes(t *testing.T) {
	// Worked by hand from the rules in NewInstanceTypes; the memory figures agree with
	// Karpenter's docs (6903, 6584, 355262, 548 and 6844 MiB).
	for _, tc := range []struct {
		name string
		want want
	}{
		// 8192 MiB − ⌈614.4⌉ = 7577 MiB capacity; kube-reserved 11×29+255 = 574 MiB, 70m; eviction 100 MiB.
		{"m5.large", want{milliCPU: 1930, memory: 6903 * mi, pods: ptr.To[int64](29), ephemeral: 17 * gi, capMemory: 7577 * mi}},
		// kube-reserved 11×58+255 = 893 MiB; cpu 60+10+10 = 80m.
		{"c5.xlarge", want{milliCPU: 3920, memory: 6584 * mi, pods: ptr.To[int64](58), ephemeral: 17 * gi}},
		// 393216 − 29492 = 363724 MiB; kube-reserved 11×737+255 = 8362 MiB; cpu 80 + 0.25% × 92000 = 310m.
		{"m5.24xlarge", want{milliCPU: 95690, memory: 355262 * mi, pods: ptr.To[int64](737), ephemeral: 17 * gi}},
		// 62464 − 4685 = 57779 MiB; kube-reserved 893 MiB; cpu 90m; one NVIDIA V100.
		{"p3.2xlarge", want{milliCPU: 7910, memory: 56786 * mi, pods: ptr.To[int64](58), extended: map[corev1.ResourceName]int64{cloudprovider.ResourceNVIDIAGPU: 1}}},
		// 1024 − 77 = 947 MiB; only 4 pods: kube-reserved 11×4+255 = 299 MiB.
		{"t3.micro", want{milliCPU: 1930, memory: 548 * mi, pods: ptr.To[int64](4), capPods: 4}},
		// Graviton: 8192 − 64 = 8128, less ⌈609.6⌉ = 7518 MiB.
		{"m6g.large", want{milliCPU: 1930, memory: 6844 * mi, pods: ptr.To[int64](29), capMemory: 7518 * mi}},
		{"g4ad.xlarge", want{pods: ptr.To[int64](8), extended: map[corev1.ResourceName]int64{cloudprovider.ResourceAMDGPU: 1}}},
		{"inf2.xlarge", want{pods: ptr.To[int64](58), extended: map[corev1.ResourceName]int64{cloudprovider.ResourceAWSNeuron: 1, cloudprovider.ResourceAWSNeuronCore: 2}}},
		{"dl1.24xlarge", want{pods: ptr.To[int64](737), extended: map[corev1.ResourceName]int64{cloudprovider.ResourceHabanaGaudi: 8}}},
		{"p5.48xlarge", want{extended: map[corev1.ResourceName]int64{cloudprovider.ResourceNVIDIAGPU: 8, cloudprovider.ResourceEFA: 32}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check(t, build(t, tc.name, cloudprovider.InstanceTypeOptions{}), tc.want)
		})
	}
}

func TestKubeletOverrides(t *testing.T) {
	// m5.large unless said otherwise: 2 vCPU, 7577 MiB memory capacity, 29 ENI-limited pods,
	// kube-reserved 70m / 574 MiB / 1Gi, eviction 100 MiB / 2Gi, 20Gi root volume.
	const memCap = 7577 * mi
	for _, tc := range []struct {
		name     string
		instance string
		opts     cloudprovider.InstanceTypeOptions
		want     want
	}{
		{
			name: "maxPods raises pods; AL2023 kube-reserved memory stays ENI-limited",
			opts: cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](110)}},
			want: want{pods: ptr.To[int64](110), memory: memCap - 574*mi - 100*mi},
		},
		{
			name: "maxPods on Bottlerocket: kube-reserved memory follows pods",
			opts: cloudprovider.InstanceTypeOptions{AMIFamily: awsv1.AMIFamilyBottlerocket, Kubelet: &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](110)}},
			want: want{pods: ptr.To[int64](110), memory: memCap - (11*110+255)*mi - 100*mi},
		},
		{
			name: "maxPods zero",
			opts: cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](0)}},
			want: want{pods: ptr.To[int64](0), memory: 6903 * mi},
		},
		{
			name: "podsPerCore caps pods at 4 × 2 vCPU",
			opts: cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{PodsPerCore: ptr.To[int32](4)}},
			want: want{pods: ptr.To[int64](8), memory: 6903 * mi},
		},
		{
			name: "podsPerCore above the ENI limit changes nothing",
			opts: cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{PodsPerCore: ptr.To[int32](100)}},
			want: want{pods: ptr.To[int64](29)},
		},
		{
			name:     "podsPerCore caps maxPods",
			instance: "m5.xlarge",
			opts:     cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](20), PodsPerCore: ptr.To[int32](4)}},
			want:     want{pods: ptr.To[int64](16)},
		},
		{
			name: "podsPerCore is ignored on Bottlerocket",
			opts: cloudprovider.InstanceTypeOptions{AMIFamily: awsv1.AMIFamilyBottlerocket, Kubelet: &awsv1.KubeletConfiguration{PodsPerCore: ptr.To[int32](4)}},
			want: want{pods: ptr.To[int64](29), memory: 6903 * mi},
		},
		{
			name: "systemReserved adds to the defaults",
			opts: cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{SystemReserved: map[string]string{"cpu": "100m", "memory": "200Mi", "ephemeral-storage": "1Gi"}}},
			want: want{milliCPU: 1830, memory: 6703 * mi, pods: ptr.To[int64](29), ephemeral: 16 * gi},
		},
		{
			name: "kubeReserved replaces the defaults per key",
			opts: cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"cpu": "200m", "memory": "1Gi"}}},
			want: want{milliCPU: 1800, memory: memCap - 1024*mi - 100*mi, pods: ptr.To[int64](29), ephemeral: 17 * gi},
		},
		{
			name: "kubeReserved pid is accepted and reserves no schedulable resource",
			opts: cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"pid": "1000"}}},
			want: want{milliCPU: 1930, memory: 6903 * mi, pods: ptr.To[int64](29), ephemeral: 17 * gi},
		},
		{
			name: "evictionHard memory.available absolute",
			opts: cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "500Mi"}}},
			want: want{memory: memCap - 574*mi - 500*mi, ephemeral: 17 * gi},
		},
		{
			name: "evictionHard memory.available percent of memory capacity, rounded up",
			opts: cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "5%"}}},
			// 5% of 7577 MiB = 397253017.6 bytes → 397253018.
			want: want{memory: memCap - 574*mi - 397253018},
		},
		{
			name: "evictionHard nodefs.available percent of ephemeral storage",
			opts: cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{EvictionHard: map[string]string{"nodefs.available": "15%"}}},
			want: want{memory: 6903 * mi, ephemeral: 16 * gi},
		},
		{
			name: "evictionHard nodefs.available absolute; other signals ignored",
			opts: cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{EvictionHard: map[string]string{"nodefs.available": "5Gi", "imagefs.available": "50%", "pid.available": "10%"}}},
			want: want{memory: 6903 * mi, ephemeral: 14 * gi},
		},
		{
			name: "root volume size",
			opts: cloudprovider.InstanceTypeOptions{RootVolumeSize: ptr.To(resource.MustParse("100Gi"))},
			want: want{ephemeral: 89 * gi},
		},
		{
			name:     "RAID0 uses local NVMe (75 GB) for ephemeral storage",
			instance: "m5d.large",
			opts:     cloudprovider.InstanceTypeOptions{InstanceStorePolicy: ptr.To(awsv1.InstanceStorePolicyRAID0)},
			want:     want{ephemeral: 75e9 - 1*gi - 75e8},
		},
		{
			name: "RAID0 without local NVMe keeps the root volume",
			opts: cloudprovider.InstanceTypeOptions{InstanceStorePolicy: ptr.To(awsv1.InstanceStorePolicyRAID0)},
			want: want{ephemeral: 17 * gi},
		},
		{
			name: "no VM memory overhead",
			opts: cloudprovider.InstanceTypeOptions{VMMemoryOverheadPercent: ptr.To(0.0)},
			want: want{capMemory: 8192 * mi, memory: (8192 - 574 - 100) * mi},
		},
		{
			name: "one reserved ENI: (3 − 1) × (10 − 1) + 2 pods; kube-reserved memory unchanged",
			opts: cloudprovider.InstanceTypeOptions{ReservedENIs: 1},
			want: want{pods: ptr.To[int64](20), memory: 6903 * mi},
		},
		{
			name: "every ENI reserved leaves no pods",
			opts: cloudprovider.InstanceTypeOptions{ReservedENIs: 3},
			want: want{pods: ptr.To[int64](0)},
		},
		{
			name: "more ENIs reserved than exist",
			opts: cloudprovider.InstanceTypeOptions{ReservedENIs: 7},
			want: want{pods: ptr.To[int64](0)},
		},
		{
			name:     "reserved ENIs do not apply without ENI data (docs' pods kept)",
			instance: "hpc7a.12xlarge",
			opts:     cloudprovider.InstanceTypeOptions{ReservedENIs: 1},
			want:     want{pods: ptr.To[int64](100)},
		},
		{
			name:     "maxPods on a t3.micro",
			instance: "t3.micro",
			opts:     cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](2)}},
			want:     want{pods: ptr.To[int64](2), memory: 548 * mi},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.instance
			if name == "" {
				name = "m5.large"
			}
			check(t, build(t, name, tc.opts), tc.want)
		})
	}
}

func TestAllocatableNeverNegative(t *testing.T) {
	it := build(t, "t3.nano", cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{SystemReserved: map[string]string{"memory": "1Gi", "cpu": "4"}}})
	got := it.AllocatableResources()
	if got.Memory != 0 || got.MilliCPU != 0 {
		t.Errorf("allocatable = %+v, want zero cpu and memory", got)
	}
}

func TestInvalidOptions(t *testing.T) {
	for name, opts := range map[string]cloudprovider.InstanceTypeOptions{
		"negative reserved ENIs": {ReservedENIs: -1},
		"vm overhead 150%":       {VMMemoryOverheadPercent: ptr.To(1.5)},
		"negative vm overhead":   {VMMemoryOverheadPercent: ptr.To(-0.1)},
		"zero root volume":       {RootVolumeSize: ptr.To(resource.MustParse("0"))},
		"unknown family":         {AMIFamily: "Gentoo"},
		"duplicate zone":         {Zones: []string{"a", "a"}},
		"empty zone":             {Zones: []string{""}},
		"unknown capacity type":  {CapacityTypes: []string{"preemptible"}},
		"negative maxPods":       {Kubelet: &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](-1)}},
		"negative podsPerCore":   {Kubelet: &awsv1.KubeletConfiguration{PodsPerCore: ptr.To[int32](-1)}},
		// A value that is not a quantity is a CEL expression: dropped without NodeClassCEL
		// (ValidateKubelet refuses the NodeClass), compiled with it.
		"bad kubeReserved":          {Kubelet: &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"cpu": "lots"}}, KubeletExpressions: true},
		"negative systemReserved":   {Kubelet: &awsv1.KubeletConfiguration{SystemReserved: map[string]string{"memory": "-1Gi"}}},
		"bad eviction percent":      {Kubelet: &awsv1.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "abc%"}}},
		"eviction percent over 100": {Kubelet: &awsv1.KubeletConfiguration{EvictionHard: map[string]string{"nodefs.available": "120%"}}},
		"bad eviction quantity":     {Kubelet: &awsv1.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "1 Gi"}}},
	} {
		t.Run(name, func(t *testing.T) {
			if err := opts.Validate(); err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			_, err := cloudprovider.NewInstanceTypes([]catalog.Entry{entry(t, "m5.large")}, opts)
			if err == nil || !strings.HasPrefix(err.Error(), "invalid instance type options: ") {
				t.Fatalf("NewInstanceTypes error = %v, want invalid instance type options", err)
			}
		})
	}
	if err := (cloudprovider.InstanceTypeOptions{}).Validate(); err != nil {
		t.Errorf("zero options: %v", err)
	}
	if _, err := cloudprovider.NewInstanceType(catalog.Entry{Name: "x.large", VCPU: 2}, cloudprovider.InstanceTypeOptions{}); err == nil {
		t.Error("entry without memory: want an error")
	}
}

func TestLabels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		want   map[string]string
		absent []string
	}{
		{"m5.large", map[string]string{
			corev1.LabelInstanceTypeStable:               "m5.large",
			corev1.LabelArchStable:                       "amd64",
			corev1.LabelOSStable:                         "linux",
			awsv1.LabelInstanceCategory:                  "m",
			awsv1.LabelInstanceFamily:                    "m5",
			awsv1.LabelInstanceGeneration:                "5",
			awsv1.LabelInstanceSize:                      "large",
			awsv1.LabelInstanceCPU:                       "2",
			awsv1.LabelInstanceCPUManufacturer:           "intel",
			awsv1.LabelInstanceCPUSustainedClockSpeedMhz: "3100",
			awsv1.LabelInstanceMemory:                    "8192",
			awsv1.LabelInstanceHypervisor:                "nitro",
			awsv1.LabelInstanceNetworkBandwidth:          "750",
			awsv1.LabelInstanceEBSBandwidth:              "4750",
			awsv1.LabelInstanceCapabilityFlex:            "false",
		}, []string{awsv1.LabelInstanceGPUCount, awsv1.LabelInstanceGPUName, awsv1.LabelInstanceLocalNVME, awsv1.LabelInstanceAcceleratorName}},
		{"m7i-flex.large", map[string]string{awsv1.LabelInstanceFamily: "m7i-flex", awsv1.LabelInstanceCapabilityFlex: "true", awsv1.LabelInstanceGeneration: "7"}, nil},
		{"m6g.large", map[string]string{corev1.LabelArchStable: "arm64", awsv1.LabelInstanceCPUManufacturer: "aws"}, nil},
		{"m5d.large", map[string]string{awsv1.LabelInstanceLocalNVME: "75"}, nil},
		{"p3.2xlarge", map[string]string{awsv1.LabelInstanceGPUName: "v100", awsv1.LabelInstanceGPUManufacturer: "nvidia", awsv1.LabelInstanceGPUCount: "1", awsv1.LabelInstanceGPUMemory: "16384"}, nil},
		{"g5.xlarge", map[string]string{awsv1.LabelInstanceGPUName: "a10g", awsv1.LabelInstanceGPUCount: "1", awsv1.LabelInstanceGPUMemory: "22888"}, nil},
		{"inf2.xlarge", map[string]string{awsv1.LabelInstanceAcceleratorName: "inferentia2", awsv1.LabelInstanceAcceleratorManufacturer: "aws", awsv1.LabelInstanceAcceleratorCount: "1", awsv1.LabelInstanceCategory: "inf", awsv1.LabelInstanceGeneration: "2"}, []string{awsv1.LabelInstanceGPUCount}},
		{"c5.metal", map[string]string{awsv1.LabelInstanceSize: "metal"}, []string{awsv1.LabelInstanceHypervisor}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := build(t, tc.name, cloudprovider.InstanceTypeOptions{})
			for k, v := range tc.want {
				if got, ok := it.Labels[k]; !ok || got != v {
					t.Errorf("label %s = %q (present %v), want %q", k, got, ok, v)
				}
			}
			for _, k := range tc.absent {
				if v, ok := it.Labels[k]; ok {
					t.Errorf("label %s = %q, want absent", k, v)
				}
			}
		})
	}
}

func TestOfferings(t *testing.T) {
	zones := []string{"us-east-1b", "us-east-1a"}
	it := build(t, "m5.large", cloudprovider.InstanceTypeOptions{Zones: zones})
	var got []string
	for _, o := range it.Offerings {
		got = append(got, o.Zone+"/"+o.CapacityType)
		if !o.Available {
			t.Errorf("%s/%s not available", o.Zone, o.CapacityType)
		}
		switch o.CapacityType {
		case karpv1.CapacityTypeOnDemand:
			if o.Price != 0.096 {
				t.Errorf("on-demand price = %v, want 0.096", o.Price)
			}
		case karpv1.CapacityTypeSpot:
			if o.Price < 0.096*0.25-1e-12 || o.Price > 0.096*0.45+1e-12 {
				t.Errorf("spot price %v outside 25–45%% of on-demand", o.Price)
			}
		}
	}
	if want := "us-east-1a/on-demand us-east-1a/spot us-east-1b/on-demand us-east-1b/spot"; strings.Join(got, " ") != want {
		t.Errorf("offerings = %s, want %s", strings.Join(got, " "), want)
	}

	// Only on-demand.
	it = build(t, "m5.large", cloudprovider.InstanceTypeOptions{Zones: zones, CapacityTypes: []string{karpv1.CapacityTypeOnDemand}})
	if len(it.Offerings) != 2 || it.Offerings.CapacityTypes()[0] != karpv1.CapacityTypeOnDemand {
		t.Errorf("on-demand only: %+v", it.Offerings)
	}

	// A type the catalog cannot price has no offerings until a price is given.
	if it := build(t, "dl2q.24xlarge", cloudprovider.InstanceTypeOptions{Zones: zones}); len(it.Offerings) != 0 {
		t.Errorf("unpriced type has offerings %+v", it.Offerings)
	}
	base, err := catalog.DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	prices, err := cloudprovider.WithPriceOverrides(base,
		cloudprovider.PriceOverride{InstanceType: "dl2q.24xlarge", CapacityType: karpv1.CapacityTypeOnDemand, Price: 8.9},
		cloudprovider.PriceOverride{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: karpv1.CapacityTypeSpot, Price: 0.01},
	)
	if err != nil {
		t.Fatal(err)
	}
	its, err := cloudprovider.NewInstanceTypes([]catalog.Entry{entry(t, "m5.large"), entry(t, "dl2q.24xlarge")}, cloudprovider.InstanceTypeOptions{Zones: zones, Prices: prices})
	if err != nil {
		t.Fatal(err)
	}
	if its[0].Name != "dl2q.24xlarge" || len(its[0].Offerings) != 2 || its[0].Offerings[0].Price != 8.9 {
		t.Errorf("overridden dl2q.24xlarge offerings = %+v", its[0].Offerings)
	}
	cheapest, ok := its[1].Offerings.Cheapest()
	if !ok || cheapest.Zone != "us-east-1a" || cheapest.CapacityType != karpv1.CapacityTypeSpot || cheapest.Price != 0.01 {
		t.Errorf("cheapest m5.large offering = %+v", cheapest)
	}
}

func TestNodeLabels(t *testing.T) {
	it := build(t, "m5.large", cloudprovider.InstanceTypeOptions{})
	labels := it.NodeLabels(cloudprovider.Offering{Zone: "us-east-1c", CapacityType: karpv1.CapacityTypeSpot})
	if labels[corev1.LabelTopologyZone] != "us-east-1c" || labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeSpot || labels[corev1.LabelInstanceTypeStable] != "m5.large" {
		t.Errorf("NodeLabels = %v", labels)
	}
	if _, ok := it.Labels[corev1.LabelTopologyZone]; ok {
		t.Error("NodeLabels modified the instance type's labels")
	}
}

func TestOverheadTotal(t *testing.T) {
	it := build(t, "m5.large", cloudprovider.InstanceTypeOptions{Kubelet: &awsv1.KubeletConfiguration{SystemReserved: map[string]string{"memory": "26Mi"}}})
	total := it.Overhead.Total()
	if got := total.Memory().Value(); got != (574+26+100)*mi {
		t.Errorf("total memory overhead = %dMi, want 700Mi", got/mi)
	}
	if got := total.Cpu().MilliValue(); got != 70 {
		t.Errorf("total cpu overhead = %dm, want 70m", got)
	}
	if got := total[corev1.ResourceEphemeralStorage]; got.Value() != 3*gi {
		t.Errorf("total ephemeral-storage overhead = %s, want 3Gi", got.String())
	}
	// Total must not alias the parts.
	if q := it.Overhead.KubeReserved[corev1.ResourceMemory]; q.Value() != 574*mi {
		t.Errorf("Total modified kube-reserved memory: %s", q.String())
	}
}

func TestAllocatableMemoizedAndConcurrent(t *testing.T) {
	it := build(t, "m5.large", cloudprovider.InstanceTypeOptions{})
	var wg sync.WaitGroup
	results := make([]scheduling.Resources, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = it.AllocatableResources()
			_ = it.Allocatable()
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r != results[0] {
			t.Fatalf("concurrent results differ: %+v vs %+v", r, results[0])
		}
	}
	a, b := it.Allocatable(), it.Allocatable()
	a[corev1.ResourceName("probe")] = resource.MustParse("1")
	if _, ok := b["probe"]; !ok {
		t.Error("Allocatable is recomputed on each call; want memoized")
	}
	delete(a, "probe")
	if n := testing.AllocsPerRun(100, func() { _ = it.Allocatable(); _ = it.AllocatableResources() }); n != 0 {
		t.Errorf("memoized Allocatable allocates %v times per call", n)
	}
}

func TestHandBuiltInstanceType(t *testing.T) {
	it := &cloudprovider.InstanceType{
		Name: "custom",
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("16Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
		Overhead: cloudprovider.InstanceTypeOverhead{
			KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		},
	}
	want := scheduling.Resources{MilliCPU: 3900, Memory: 15 * gi, Pods: 110}
	if got := it.AllocatableResources(); got != want {
		t.Errorf("AllocatableResources = %+v, want %+v", got, want)
	}
}

func TestNewInstanceTypesSortedAndComplete(t *testing.T) {
	entries, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	// Reverse the input; the output is sorted regardless.
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	its, err := cloudprovider.NewInstanceTypes(entries, cloudprovider.InstanceTypeOptions{Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(its) != len(entries) {
		t.Fatalf("built %d of %d", len(its), len(entries))
	}
	priced := 0
	for i, it := range its {
		if i > 0 && its[i-1].Name >= it.Name {
			t.Fatalf("not sorted at %s", it.Name)
		}
		if len(it.Offerings) > 0 {
			priced++
		}
		r := it.AllocatableResources()
		if r.MilliCPU <= 0 || r.Memory <= 0 || r.Pods <= 0 || r.EphemeralStorage <= 0 {
			t.Errorf("%s: allocatable %+v has a non-positive resource", it.Name, r)
		}
	}
	t.Logf("%d instance types, %d with offerings", len(its), priced)
}

func TestOptionsFromNodeClass(t *testing.T) {
	bdm := func(device string, size string, root bool) *awsv1.BlockDeviceMapping {
		q := resource.MustParse(size)
		return &awsv1.BlockDeviceMapping{DeviceName: ptr.To(device), EBS: &awsv1.BlockDevice{VolumeSize: &q}, RootVolume: root}
	}
	for _, tc := range []struct {
		name       string
		spec       awsv1.EC2NodeClassSpec
		wantFamily string
		wantRoot   string
	}{
		{"alias with default disks", awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}}, awsv1.AMIFamilyAL2023, ""},
		{"al2023 root device", awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@v20240807"}},
			BlockDeviceMappings: []*awsv1.BlockDeviceMapping{bdm("/dev/xvdb", "200Gi", false), bdm("/dev/xvda", "80Gi", false)}}, awsv1.AMIFamilyAL2023, "80Gi"},
		{"bottlerocket data volume", awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}},
			BlockDeviceMappings: []*awsv1.BlockDeviceMapping{bdm("/dev/xvda", "4Gi", false), bdm("/dev/xvdb", "50Gi", false)}}, awsv1.AMIFamilyBottlerocket, "50Gi"},
		{"rootVolume wins", awsv1.EC2NodeClassSpec{AMIFamily: ptr.To(awsv1.AMIFamilyAL2023),
			BlockDeviceMappings: []*awsv1.BlockDeviceMapping{bdm("/dev/xvda", "30Gi", false), bdm("/dev/sdf", "60Gi", true)}}, awsv1.AMIFamilyAL2023, "60Gi"},
		{"custom takes the last mapping", awsv1.EC2NodeClassSpec{AMIFamily: ptr.To(awsv1.AMIFamilyCustom), AMISelectorTerms: []awsv1.AMISelectorTerm{{ID: "ami-123"}},
			BlockDeviceMappings: []*awsv1.BlockDeviceMapping{bdm("/dev/xvda", "30Gi", false), bdm("/dev/sdf", "70Gi", false)}}, awsv1.AMIFamilyCustom, "70Gi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := cloudprovider.OptionsFromNodeClass(&awsv1.EC2NodeClass{Spec: tc.spec})
			if opts.AMIFamily != tc.wantFamily {
				t.Errorf("AMIFamily = %q, want %q", opts.AMIFamily, tc.wantFamily)
			}
			switch {
			case tc.wantRoot == "" && opts.RootVolumeSize != nil:
				t.Errorf("RootVolumeSize = %s, want default", opts.RootVolumeSize)
			case tc.wantRoot != "" && (opts.RootVolumeSize == nil || opts.RootVolumeSize.Cmp(resource.MustParse(tc.wantRoot)) != 0):
				t.Errorf("RootVolumeSize = %v, want %s", opts.RootVolumeSize, tc.wantRoot)
			}
			if err := opts.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

// TestWindowsInstanceTypes: a Windows family's instance types, as the AWS provider v1.15.2
// builds them (pkg/providers/instancetype/types.go NewInstanceType, computeRequirements, getOS,
// pods, privateIPv4Address; pkg/providers/amifamily/windows.go FeatureFlags and
// DefaultBlockDeviceMappings): kubernetes.io/os windows and the family's windows-build, 110
// pods whatever the ENI limits, kube-reserved memory from those pods, podsPerCore honoured, a
// 50Gi root volume (or the /dev/sda1 mapping's size), vpc.amazonaws.com/PrivateIPv4Address of
// one interface's addresses but the primary, and no arm64 type (the images are x86_64 only).
func TestWindowsInstanceTypes(t *testing.T) {
	for family, build := range map[string]string{
		awsv1.AMIFamilyWindows2019: "10.0.17763", awsv1.AMIFamilyWindows2022: "10.0.20348", awsv1.AMIFamilyWindows2025: "10.0.26100",
	} {
		t.Run(family, func(t *testing.T) {
			opts := cloudprovider.InstanceTypeOptions{AMIFamily: family}
			its, err := cloudprovider.NewInstanceTypes([]catalog.Entry{entry(t, "m5.large"), entry(t, "m6g.large")}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(its) != 1 || its[0].Name != "m5.large" {
				t.Fatalf("instance types %d, want m5.large only (no arm64)", len(its))
			}
			it := its[0]
			if it.Labels[corev1.LabelOSStable] != "windows" || it.Labels[corev1.LabelWindowsBuild] != build {
				t.Errorf("labels %v, want os windows and windows-build %s", it.Labels, build)
			}
			e := entry(t, "m5.large")
			for name, want := range map[corev1.ResourceName]int64{
				corev1.ResourcePods:                      110,
				corev1.ResourceEphemeralStorage:          50 << 30,
				cloudprovider.ResourcePrivateIPv4Address: int64(e.IPv4PerENI - 1),
			} {
				if q := it.Capacity[name]; q.Value() != want {
					t.Errorf("capacity %s = %d, want %d", name, q.Value(), want)
				}
			}
			if q := it.Overhead.KubeReserved[corev1.ResourceMemory]; q.Value() != (11*110+255)<<20 {
				t.Errorf("kube-reserved memory %s, want (11 × 110 + 255)Mi", q.String())
			}
			if _, err := cloudprovider.NewInstanceType(entry(t, "m6g.large"), opts); err == nil {
				t.Error("an arm64 Windows instance type: want an error")
			}
		})
	}
	// podsPerCore and a root volume on /dev/sda1 apply; maxPods sizes kube-reserved memory.
	nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
		AMISelectorTerms:    []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}},
		Kubelet:             &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](40), PodsPerCore: ptr.To[int32](10)},
		BlockDeviceMappings: []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/sda1"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("80Gi"))}}},
	}}
	it := build(t, "m5.large", cloudprovider.OptionsFromNodeClass(nc))
	if q := it.Capacity[corev1.ResourcePods]; q.Value() != 20 {
		t.Errorf("pods %d, want min(40, 10 × 2 vCPUs) = 20", q.Value())
	}
	if q := it.Capacity[corev1.ResourceEphemeralStorage]; q.Cmp(resource.MustParse("80Gi")) != 0 {
		t.Errorf("ephemeral-storage %s, want 80Gi", q.String())
	}
	if q := it.Overhead.KubeReserved[corev1.ResourceMemory]; q.Value() != (11*20+255)<<20 {
		t.Errorf("kube-reserved memory %s, want (11 × 20 + 255)Mi", q.String())
	}
}
