package v1

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// kubeletOf decodes a kubelet configuration written as YAML.
func kubeletOf(t *testing.T, doc string) *KubeletConfiguration {
	t.Helper()
	k := &KubeletConfiguration{}
	if err := yaml.Unmarshal([]byte(doc), k); err != nil {
		t.Fatalf("decoding %s: %v", doc, err)
	}
	return k
}

func TestKubeletRoundTrip(t *testing.T) {
	for _, doc := range []string{
		`{}`,
		`{maxPods: 110, kubeReserved: {cpu: 100m}, evictionSoftGracePeriod: {memory.available: 1m30s}}`,
		`{maxPods: 110, containerLogMaxSize: 50Mi, shutdownGracePeriod: 30s, featureGates: {A: true}}`,
		`{maxPods: "pods * 2", MaxPods: 3, evictionSoftGracePeriod: {memory.available: soon}}`,
	} {
		k := kubeletOf(t, doc)
		data, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		var want, got map[string]any
		_ = yaml.Unmarshal([]byte(doc), &want)
		_ = json.Unmarshal(data, &got)
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s round-trips as %s", doc, data)
		}
	}
	k := kubeletOf(t, `{maxPods: "pods * 2", MaxPods: 3, podsPerCore: 2, containerLogMaxSize: 50Mi}`)
	if k.MaxPods != nil || k.PodsPerCore == nil || *k.PodsPerCore != 2 {
		t.Errorf("typed fields: maxPods %v, podsPerCore %v", k.MaxPods, k.PodsPerCore)
	}
	if got, want := k.Unmanaged(), []string{"MaxPods", "containerLogMaxSize"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Unmanaged() = %v, want %v", got, want)
	}
	if got, want := k.Expressions(), []string{"spec.kubelet.maxPods"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Expressions() = %v, want %v", got, want)
	}
}

// TestKubeletHashUnchanged: a configuration of typed fields only marshals as the typed fields
// did before Other existed, so EC2NodeClass hashes (and launch template names) do not change.
func TestKubeletHashUnchanged(t *testing.T) {
	k := kubeletOf(t, `{systemReserved: {memory: 1Gi}, maxPods: 20, clusterDNS: [10.0.0.10]}`)
	data, _ := json.Marshal(k)
	if want := `{"clusterDNS":["10.0.0.10"],"maxPods":20,"systemReserved":{"memory":"1Gi"}}`; string(data) != want {
		t.Errorf("marshals as %s, want %s", data, want)
	}
}

func TestKubeletValidate(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want []string // each a substring of one error, in order; none: valid
	}{
		{`{maxPods: 110, podsPerCore: 0, clusterDNS: [10.0.0.10], cpuCFSQuota: true}`, nil},
		{`{containerLogMaxSize: 50Mi, containerLogMaxFiles: 5, shutdownGracePeriod: 30s, featureGates: {A: true}, logging: {format: json, flushFrequency: 5s}}`, nil},
		{`{kubeReserved: {cpu: 100m, memory: 1Gi, ephemeral-storage: 1Gi, pid: "100"}, evictionHard: {memory.available: 5%, nodefs.available: 100.00%, pid.available: 100Mi}}`, nil},
		{`{evictionSoft: {memory.available: 500Mi}, evictionSoftGracePeriod: {memory.available: 1m}, evictionMinimumReclaim: {memory.available: 0.5Gi}}`, nil},
		{`{imageGCHighThresholdPercent: 85, imageGCLowThresholdPercent: 80, reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]}`, nil},
		{`{maxPods: "pods * 2", kubeReserved: {cpu: "vcpus * 10"}}`, nil}, // expressions: Expressions says
		{`{containerLogMaxSise: 50Mi}`, []string{`spec.kubelet.containerLogMaxSise: unknown field`}},
		{`{MaxPods: 3}`, []string{`spec.kubelet.MaxPods: unknown field`}},
		{`{logging: {fromat: json}}`, []string{`spec.kubelet.logging.fromat: unknown field`}},
		{`{maxPods: 1.5}`, []string{`spec.kubelet.maxPods: 1.5 is not an integer of 32 bits`}},
		{`{maxPods: 3000000000}`, []string{`spec.kubelet.maxPods: 3000000000 is not an integer of 32 bits`}},
		{`{containerLogMaxFiles: "5"}`, []string{`spec.kubelet.containerLogMaxFiles: "5" is not an integer`}},
		{`{shutdownGracePeriod: soon}`, []string{`spec.kubelet.shutdownGracePeriod: "soon" is not a duration`}},
		{`{failSwapOn: "no"}`, []string{`spec.kubelet.failSwapOn: "no" is not true or false`}},
		{`{featureGates: {A: 1}}`, []string{`spec.kubelet.featureGates[A]: 1 is not true or false`}},
		{`{registerWithTaints: []}`, []string{`spec.kubelet.registerWithTaints: can't be set`}},
		{`{evictionHard: {memory.free: 1Gi}}`, []string{`spec.kubelet.evictionHard: "memory.free" isn't a valid eviction signal`}},
		{`{evictionHard: {nodefs.available: 101%}}`, []string{`spec.kubelet.evictionHard[nodefs.available]: "101%" must be a percentage or a resource quantity`}},
		{`{evictionHard: {memory.available: abc}}`, []string{`must be a percentage or a resource quantity`}},
		{`{evictionHard: {memory.available: -1Gi}}`, []string{`can't be a negative resource quantity`}},
		{`{evictionSoft: {memory.available: 1Gi}}`, []string{`spec.kubelet.evictionSoft[memory.available]: has no matching evictionSoftGracePeriod`}},
		{`{evictionSoftGracePeriod: {memory.available: 1m}}`, []string{`spec.kubelet.evictionSoftGracePeriod[memory.available]: has no matching evictionSoft`}},
		{`{evictionSoft: {memory.available: 1Gi}, evictionSoftGracePeriod: {memory.available: soon}}`, []string{`spec.kubelet.evictionSoftGracePeriod[memory.available]: "soon" must be a duration`}},
		{`{kubeReserved: {gpu: "1"}}`, []string{`spec.kubelet.kubeReserved: "gpu" isn't a reservable resource`}},
		{`{systemReserved: {cpu: "-1"}}`, []string{`spec.kubelet.systemReserved[cpu]: "-1" can't be a negative resource quantity`}},
		{`{imageGCHighThresholdPercent: 101}`, []string{`spec.kubelet.imageGCHighThresholdPercent: 101 must be between 0 and 100`}},
		{`{imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60}`, []string{`imageGCHighThresholdPercent (50) must be greater than imageGCLowThresholdPercent (60)`}},
		{`{maxPods: -1, podsPerCore: -1}`, []string{`spec.kubelet.podsPerCore: -1 can't be negative`, `spec.kubelet.maxPods: -1 can't be negative`}},
	} {
		errs := kubeletOf(t, tc.doc).Validate()
		if len(errs) != len(tc.want) {
			t.Errorf("%s: errors %v, want %d: %q", tc.doc, errs, len(tc.want), tc.want)
			continue
		}
		for i, err := range errs {
			if !strings.Contains(err.Error(), tc.want[i]) {
				t.Errorf("%s: error %q does not say %q", tc.doc, err, tc.want[i])
			}
		}
	}
}
