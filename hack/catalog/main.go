// Command catalog regenerates the EC2 instance-type catalog embedded in the binary
// (pkg/cloudprovider/catalog/ec2-instance-types.csv.gz) and the allocatable figures the
// cloudprovider tests check the overhead model against
// (pkg/cloudprovider/testdata/karpenter-allocatable.csv).
//
// Run it from the repository root:
//
//	go run ./hack/catalog /work/shared/data/ec2-instance-types.json
//
// The input is the shared EC2 data file (see its "meta" for sources). The output is a gzip'd
// CSV holding only the facts the instance-type model needs, one row per instance type, sorted
// by name; it is byte-for-byte reproducible from the same input. What is kept and why:
//
//   - Only complete entries (vCPU, memory and architecture known) are written; the input's
//     partialInstanceTypes cannot be given a capacity and are skipped (the generator lists them).
//   - Types without a us-east-1 on-demand price are kept with an empty price; the model gives
//     them offerings only when a price source (for example a user override) prices them.
//   - "enis" is the number of network interfaces on the default network card, derived from
//     maxPods = enis × (ipv4PerENI − 1) + 2 (the input's maxENIs counts every card). For the few
//     types missing from Karpenter's VPC limits, max_pods is taken from the pods figure of
//     Karpenter's instance-type docs and enis is left empty.
//   - neuron_cores is taken from the docs' aws.amazon.com/neuroncore figure.
//   - A short table below fills GPU facts the sources lack for p3 and dl1 (values as EC2's
//     DescribeInstanceTypes reports them).
//   - flex is taken from the input, or from the family name (contains "-flex") when unknown.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// record mirrors one instance type of the shared data file; pointers are nullable fields.
type record struct {
	Name                    string              `json:"name"`
	Family                  string              `json:"family"`
	Category                *string             `json:"category"`
	Generation              *int                `json:"generation"`
	Size                    string              `json:"size"`
	VCPU                    *int                `json:"vcpu"`
	MemoryMiB               *int64              `json:"memoryMiB"`
	Arch                    *string             `json:"arch"`
	GPUs                    int                 `json:"gpus"`
	GPUName                 *string             `json:"gpuName"`
	GPUManufacturer         *string             `json:"gpuManufacturer"`
	GPUMemoryMiB            *int64              `json:"gpuMemoryMiB"`
	Accelerators            int                 `json:"accelerators"`
	AcceleratorName         *string             `json:"acceleratorName"`
	AcceleratorManufacturer *string             `json:"acceleratorManufacturer"`
	CPUManufacturer         *string             `json:"cpuManufacturer"`
	CPUClockMHz             *int                `json:"cpuSustainedClockMHz"`
	Hypervisor              *string             `json:"hypervisor"`
	BareMetal               bool                `json:"bareMetal"`
	Burstable               bool                `json:"burstable"`
	Flex                    *bool               `json:"flex"`
	LocalNVMeGiB            *int64              `json:"localNvmeGiB"`
	NetworkMbps             *int64              `json:"networkBandwidthMbps"`
	EBSMbps                 *int64              `json:"ebsBandwidthMbps"`
	EFAInterfaces           *int                `json:"efaInterfaces"`
	IPv4PerENI              *int                `json:"ipv4PerENI"`
	MaxPods                 *int                `json:"maxPods"`
	PodENIs                 *int                `json:"podENIs"`
	Allocatable             *docsRes            `json:"karpenterAllocatable"`
	OnDemand                map[string]*float64 `json:"onDemandPricePerHour"`
}

// docsRes is the allocatable figure Karpenter's docs publish (AL2023, default settings).
type docsRes struct {
	CPUMillicores    int64   `json:"cpuMillicores"`
	MemoryMiB        float64 `json:"memoryMiB"`
	EphemeralStorage string  `json:"ephemeralStorage"`
	Pods             int64   `json:"pods"`
	NvidiaGPU        int64   `json:"nvidia.com/gpu"`
	AMDGPU           int64   `json:"amd.com/gpu"`
	Neuron           int64   `json:"aws.amazon.com/neuron"`
	NeuronCore       int64   `json:"aws.amazon.com/neuroncore"`
}

type input struct {
	Meta struct {
		Sources map[string]json.RawMessage `json:"sources"`
	} `json:"meta"`
	InstanceTypes        []record `json:"instanceTypes"`
	PartialInstanceTypes []record `json:"partialInstanceTypes"`
}

// gpuGaps fills GPU facts missing from the sources, as EC2 reports them (names lower-kebab-cased
// as Karpenter labels them).
var gpuGaps = map[string]struct {
	name, manufacturer string
	memoryMiB          int64
}{
	"p3":  {"v100", "nvidia", 16384},
	"dl1": {"gaudi-hl-205", "habana", 32768},
}

// columns of the catalog CSV, in order. The loader reads them by name.
var columns = []string{
	"name", "family", "category", "generation", "size", "vcpu", "memory_mib", "arch",
	"cpu_manufacturer", "cpu_clock_mhz", "hypervisor", "bare_metal", "burstable", "flex",
	"gpu_count", "gpu_name", "gpu_manufacturer", "gpu_memory_mib",
	"accelerator_count", "accelerator_name", "accelerator_manufacturer", "neuron_cores",
	"local_nvme_gib", "network_mbps", "ebs_mbps", "efa", "enis", "ipv4_per_eni", "max_pods",
	"pod_enis", "od_price",
}

func main() {
	out := flag.String("out", "pkg/cloudprovider/catalog/ec2-instance-types.csv.gz", "catalog file to write")
	testdata := flag.String("testdata", "pkg/cloudprovider/testdata/karpenter-allocatable.csv", "allocatable cross-check file to write (empty to skip)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./hack/catalog [flags] ec2-instance-types.json\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *out, *testdata, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "catalog: %v\n", err)
		os.Exit(1)
	}
}

// run writes the catalog to out and the cross-check data to testdata (unless empty), reporting
// what it did to log.
func run(in, out, testdata string, log io.Writer) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("reading input: %w", err)
	}
	var data input
	if err := json.Unmarshal(raw, &data); err != nil {
		return fmt.Errorf("decoding input: %w", err)
	}
	var rows [][]string
	var skipped []string
	var allocRows [][]string
	for i := range data.InstanceTypes {
		r := &data.InstanceTypes[i]
		if r.VCPU == nil || r.MemoryMiB == nil || r.Arch == nil || *r.VCPU <= 0 || *r.MemoryMiB <= 0 {
			skipped = append(skipped, r.Name)
			continue
		}
		row, err := toRow(r)
		if err != nil {
			return fmt.Errorf("instance type %s: %w", r.Name, err)
		}
		rows = append(rows, row)
		if a := r.Allocatable; a != nil {
			allocRows = append(allocRows, []string{r.Name, itoa(a.CPUMillicores),
				strconv.FormatFloat(a.MemoryMiB, 'f', -1, 64), itoa(a.Pods), a.EphemeralStorage,
				extended(a)})
		}
	}
	for _, r := range data.PartialInstanceTypes {
		skipped = append(skipped, r.Name)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	sort.Slice(allocRows, func(i, j int) bool { return allocRows[i][0] < allocRows[j][0] })
	sort.Strings(skipped)

	sum := sha256.Sum256(raw)
	var snapshot string
	if s, ok := data.Meta.Sources["repoSnapshot"]; ok {
		_ = json.Unmarshal(s, &snapshot)
	}
	header := []string{
		"EC2 instance types; generated by hack/catalog, do not edit.",
		fmt.Sprintf("input sha256 %x", sum),
		"sources: " + snapshot,
	}
	var plain bytes.Buffer
	if err := writeCSV(&plain, header, columns, rows); err != nil {
		return err
	}
	var zipped bytes.Buffer
	zw, err := gzip.NewWriterLevel(&zipped, gzip.BestCompression)
	if err != nil {
		return fmt.Errorf("compressing: %w", err)
	}
	if _, err := zw.Write(plain.Bytes()); err != nil {
		return fmt.Errorf("compressing: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("compressing: %w", err)
	}
	if err := writeFile(out, zipped.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(log, "wrote %s: %d instance types, %d bytes (%d uncompressed)\n", out, len(rows), zipped.Len(), plain.Len())

	if testdata != "" {
		var buf bytes.Buffer
		allocHeader := []string{
			"Allocatable per Karpenter's instance-type docs (AL2023, default settings); generated by hack/catalog.",
			"memory_mib is allocatable memory; extended lists other resources as name=count separated by ';'.",
		}
		if err := writeCSV(&buf, allocHeader, []string{"name", "cpu_m", "memory_mib", "pods", "ephemeral_storage", "extended"}, allocRows); err != nil {
			return err
		}
		if err := writeFile(testdata, buf.Bytes()); err != nil {
			return err
		}
		fmt.Fprintf(log, "wrote %s: %d instance types\n", testdata, len(allocRows))
	}
	fmt.Fprintf(log, "skipped %d incomplete instance types (no vCPU, memory or architecture): %s\n", len(skipped), strings.Join(skipped, " "))
	return nil
}

func toRow(r *record) ([]string, error) {
	gpuName, gpuMfr, gpuMem := str(r.GPUName), str(r.GPUManufacturer), i64p(r.GPUMemoryMiB)
	if gap, ok := gpuGaps[r.Family]; ok && r.GPUs > 0 && gpuName == "" {
		gpuName, gpuMfr, gpuMem = gap.name, gap.manufacturer, itoa(gap.memoryMiB)
	}
	if r.GPUs > 0 && gpuMfr == "" {
		return nil, errors.New("gpus without a manufacturer; add it to gpuGaps")
	}
	flex := strings.Contains(r.Family, "-flex")
	if r.Flex != nil {
		flex = *r.Flex
	}
	// ENIs on the default network card, from maxPods = enis × (ipv4PerENI − 1) + 2.
	var enis, ipv4, maxPods string
	switch {
	case r.MaxPods != nil && r.IPv4PerENI != nil && *r.IPv4PerENI > 1:
		n := *r.MaxPods - 2
		if n%(*r.IPv4PerENI-1) != 0 {
			return nil, fmt.Errorf("maxPods %d is not enis × (%d − 1) + 2", *r.MaxPods, *r.IPv4PerENI)
		}
		enis, ipv4, maxPods = strconv.Itoa(n/(*r.IPv4PerENI-1)), strconv.Itoa(*r.IPv4PerENI), strconv.Itoa(*r.MaxPods)
	case r.Allocatable != nil && r.Allocatable.Pods > 0:
		maxPods = itoa(r.Allocatable.Pods)
	}
	var neuronCores string
	if r.Allocatable != nil && r.Allocatable.NeuronCore > 0 {
		neuronCores = itoa(r.Allocatable.NeuronCore)
	}
	var price string
	if p := r.OnDemand["us-east-1"]; p != nil && *p > 0 {
		price = strconv.FormatFloat(*p, 'f', -1, 64)
	}
	return []string{
		r.Name, r.Family, str(r.Category), ip(r.Generation), r.Size, ip(r.VCPU), i64p(r.MemoryMiB), str(r.Arch),
		str(r.CPUManufacturer), ip(r.CPUClockMHz), str(r.Hypervisor), b(r.BareMetal), b(r.Burstable), b(flex),
		nz(r.GPUs), gpuName, gpuMfr, gpuMem,
		nz(r.Accelerators), str(r.AcceleratorName), str(r.AcceleratorManufacturer), neuronCores,
		i64p(r.LocalNVMeGiB), i64p(r.NetworkMbps), i64p(r.EBSMbps), ip(r.EFAInterfaces), enis, ipv4, maxPods,
		ip(r.PodENIs), price,
	}, nil
}

func extended(a *docsRes) string {
	var parts []string
	for _, kv := range []struct {
		k string
		v int64
	}{{"amd.com/gpu", a.AMDGPU}, {"aws.amazon.com/neuron", a.Neuron}, {"aws.amazon.com/neuroncore", a.NeuronCore}, {"nvidia.com/gpu", a.NvidiaGPU}} {
		if kv.v > 0 {
			parts = append(parts, kv.k+"="+itoa(kv.v))
		}
	}
	return strings.Join(parts, ";")
}

func writeCSV(buf *bytes.Buffer, comments, header []string, rows [][]string) error {
	for _, c := range comments {
		buf.WriteString("# " + c + "\n")
	}
	w := csv.NewWriter(buf)
	if err := w.Write(header); err != nil {
		return fmt.Errorf("writing csv: %w", err)
	}
	if err := w.WriteAll(rows); err != nil {
		return fmt.Errorf("writing csv: %w", err)
	}
	return nil
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating directory: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ip(i *int) string {
	if i == nil {
		return ""
	}
	return strconv.Itoa(*i)
}

func i64p(i *int64) string {
	if i == nil {
		return ""
	}
	return itoa(*i)
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// nz writes a count, leaving zero empty to keep the file small.
func nz(i int) string {
	if i == 0 {
		return ""
	}
	return strconv.Itoa(i)
}

func b(v bool) string {
	if v {
		return "1"
	}
	return ""
}
