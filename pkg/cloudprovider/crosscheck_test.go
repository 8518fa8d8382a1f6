package cloudprovider_test

import (
	"encoding/csv"
	"os"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// docsAllocatable is one row of testdata/karpenter-allocatable.csv: what Karpenter's
// instance-type docs say a type has allocatable with AL2023 and default settings.
type docsAllocatable struct {
	name             string
	milliCPU         int64
	memoryMiB        int64
	pods             int64
	ephemeralStorage resource.Quantity
	extended         map[corev1.ResourceName]int64
}

func readDocsAllocatable(t *testing.T) []docsAllocatable {
	t.Helper()
	f, err := os.Open("testdata/karpenter-allocatable.csv")
	if err != nil {
		t.Fatalf("opening cross-check data (regenerate with go run ./hack/catalog): %v", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	records, err := r.ReadAll()
	if err != nil {
		t.Fatalf("reading cross-check data: %v", err)
	}
	var out []docsAllocatable
	for _, rec := range records[1:] {
		num := func(s string) int64 {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%s: parsing %q: %v", rec[0], s, err)
			}
			return int64(f)
		}
		d := docsAllocatable{
			name:             rec[0],
			milliCPU:         num(rec[1]),
			memoryMiB:        num(rec[2]),
			pods:             num(rec[3]),
			ephemeralStorage: resource.MustParse(rec[4]),
			extended:         map[corev1.ResourceName]int64{},
		}
		if rec[5] != "" {
			for _, kv := range strings.Split(rec[5], ";") {
				k, v, _ := strings.Cut(kv, "=")
				d.extended[corev1.ResourceName(k)] = num(v)
			}
		}
		out = append(out, d)
	}
	return out
}

// TestAllocatableMatchesKarpenterDocs compares the overhead model with the allocatable figures
// Karpenter publishes for every instance type (AL2023, default settings). Agreement is exact:
// cpu and pods, memory to the MiB, ephemeral storage, and the GPU and Neuron counts.
func TestAllocatableMatchesKarpenterDocs(t *testing.T) {
	docs := readDocsAllocatable(t)
	if len(docs) < 1300 {
		t.Fatalf("only %d rows of cross-check data", len(docs))
	}
	its, err := cloudprovider.DefaultInstanceTypes(cloudprovider.InstanceTypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := make(map[string]*cloudprovider.InstanceType, len(its))
	for _, it := range its {
		byName[it.Name] = it
	}
	var mismatches []string
	report := func(name, what string, got, want any) {
		mismatches = append(mismatches, name+" "+what+": got "+toString(got)+", docs "+toString(want))
	}
	for _, d := range docs {
		it, ok := byName[d.name]
		if !ok {
			mismatches = append(mismatches, d.name+": not in the catalog")
			continue
		}
		alloc := it.Allocatable()
		if got := alloc.Cpu().MilliValue(); got != d.milliCPU {
			report(d.name, "cpu (m)", got, d.milliCPU)
		}
		if got := alloc.Memory().Value(); got != d.memoryMiB<<20 {
			report(d.name, "memory (MiB)", float64(got)/(1<<20), d.memoryMiB)
		}
		if got := alloc.Pods().Value(); got != d.pods {
			report(d.name, "pods", got, d.pods)
		}
		if got := alloc[corev1.ResourceEphemeralStorage]; got.Cmp(d.ephemeralStorage) != 0 {
			report(d.name, "ephemeral-storage", got.String(), d.ephemeralStorage.String())
		}
		for name, want := range d.extended {
			q := alloc[name]
			if got := q.Value(); got != want {
				report(d.name, string(name), got, want)
			}
		}
		for _, name := range []corev1.ResourceName{cloudprovider.ResourceNVIDIAGPU, cloudprovider.ResourceAMDGPU, cloudprovider.ResourceAWSNeuron, cloudprovider.ResourceAWSNeuronCore} {
			if _, ok := alloc[name]; ok && d.extended[name] == 0 {
				report(d.name, string(name), "present", "absent")
			}
		}
	}
	for i, m := range mismatches {
		if i == 50 {
			t.Errorf("… and %d more", len(mismatches)-50)
			break
		}
		t.Error(m)
	}
	t.Logf("compared %d instance types with Karpenter's docs: %d mismatches", len(docs), len(mismatches))
}

func toString(v any) string {
	switch v := v.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case string:
		return v
	default:
		return "?"
	}
}
