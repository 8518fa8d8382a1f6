package catalog

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
)

//go:embed ec2-instance-types.csv.gz
var embedded []byte

// Entry is what the catalog knows about one EC2 instance type. Numeric facts that are unknown
// are zero and string facts empty; zero counts mean "none".
type Entry struct {
	// Name is the instance type, such as m5.large.
	Name string
	// Family is the part of the name before the dot, such as m5 or c7i-flex.
	Family string
	// Category is the family's leading letters, such as m, c or inf.
	Category string
	// Generation is the digits after the category, such as 5 for m5.
	Generation int
	// Size is the part of the name after the dot, such as large or metal-24xl.
	Size string
	// VCPU is the number of vCPUs.
	VCPU int
	// MemoryMiB is the instance's memory as EC2 reports it, before any overhead.
	MemoryMiB int64
	// Arch is the Kubernetes architecture: amd64 or arm64.
	Arch string
	// CPUManufacturer is intel, amd or aws.
	CPUManufacturer string
	// CPUClockMHz is the sustained clock speed.
	CPUClockMHz int
	// Hypervisor is nitro or xen; empty for bare metal.
	Hypervisor string
	// BareMetal says the instance has no hypervisor.
	BareMetal bool
	// Burstable says the instance earns and spends CPU credits (t families).
	Burstable bool
	// Flex says the instance is a flex type (its family name contains "-flex").
	Flex bool
	// GPUCount is the number of GPUs.
	GPUCount int
	// GPUName is the GPU model in lower kebab case, such as a10g.
	GPUName string
	// GPUManufacturer is nvidia, amd or habana.
	GPUManufacturer string
	// GPUMemoryMiB is the memory of one GPU.
	GPUMemoryMiB int64
	// AcceleratorCount is the number of inference or training accelerators (Inferentia,
	// Trainium, Qualcomm AI 100, …).
	AcceleratorCount int
	// AcceleratorName is the accelerator model, such as inferentia2.
	AcceleratorName string
	// AcceleratorManufacturer is aws (Neuron devices) or another vendor.
	AcceleratorManufacturer string
	// NeuronCores is the total number of Neuron cores of the AWS accelerators.
	NeuronCores int
	// LocalNVMeGiB is the total size of the local NVMe instance store, as EC2 reports it
	// (TotalSizeInGB).
	LocalNVMeGiB int64
	// NetworkBandwidthMbps is the baseline network bandwidth.
	NetworkBandwidthMbps int64
	// EBSBandwidthMbps is the maximum EBS bandwidth of EBS-optimized-by-default types.
	EBSBandwidthMbps int64
	// EFAInterfaces is the maximum number of Elastic Fabric Adapters.
	EFAInterfaces int
	// ENIs is the number of network interfaces on the default network card (the ones the VPC
	// CNI uses); zero when unknown.
	ENIs int
	// IPv4PerENI is the number of IPv4 addresses per interface; zero when unknown.
	IPv4PerENI int
	// MaxPods is the ENI-limited pod density with no reserved ENIs,
	// ENIs × (IPv4PerENI − 1) + 2; for the few types with unknown ENI limits it comes from
	// Karpenter's published figures. Zero when unknown.
	MaxPods int
	// PodENIs is the number of branch interfaces available to pods with security groups.
	PodENIs int
	// OnDemandPrice is the Linux on-demand price in us-east-1, in $/hour; zero when unknown.
	OnDemandPrice float64
}

// HasPrice reports whether the catalog knows the entry's on-demand price.
func (e Entry) HasPrice() bool { return e.OnDemandPrice > 0 }

type parsed struct {
	entries []Entry
	byName  map[string]int
}

var load = sync.OnceValues(func() (*parsed, error) {
	entries, err := Parse(bytes.NewReader(embedded))
	if err != nil {
		return nil, err
	}
	p := &parsed{entries: entries, byName: make(map[string]int, len(entries))}
	for i, e := range entries {
		p.byName[e.Name] = i
	}
	return p, nil
})

// Load returns the embedded catalog, sorted by name. The file is parsed once; each call returns
// a fresh copy of the slice, so callers may modify it.
func Load() ([]Entry, error) {
	p, err := load()
	if err != nil {
		return nil, err
	}
	return append([]Entry(nil), p.entries...), nil
}

// Lookup returns the catalog entry of the named instance type. It reports false when the name is
// unknown, and also when the embedded catalog cannot be loaded (Load returns that error).
func Lookup(name string) (Entry, bool) {
	p, err := load()
	if err != nil {
		return Entry{}, false
	}
	i, ok := p.byName[name]
	if !ok {
		return Entry{}, false
	}
	return p.entries[i], true
}

// Parse reads a catalog in the format hack/catalog writes (gzip'd CSV with a header row; lines
// starting with # are comments). Entries are returned sorted by name.
func Parse(r io.Reader) ([]Entry, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("opening catalog: %w", err)
	}
	defer zr.Close()
	cr := csv.NewReader(zr)
	cr.Comment = '#'
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading catalog header: %w", err)
	}
	col := make(map[string]int, len(header))
	for i, h := range header {
		col[h] = i
	}
	for _, name := range requiredColumns {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("catalog has no column %q", name)
		}
	}
	var entries []Entry
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading catalog: %w", err)
		}
		f := fields{rec: rec, col: col}
		e := Entry{
			Name:                    f.str("name"),
			Family:                  f.str("family"),
			Category:                f.str("category"),
			Generation:              f.int("generation"),
			Size:                    f.str("size"),
			VCPU:                    f.int("vcpu"),
			MemoryMiB:               f.int64("memory_mib"),
			Arch:                    f.str("arch"),
			CPUManufacturer:         f.str("cpu_manufacturer"),
			CPUClockMHz:             f.int("cpu_clock_mhz"),
			Hypervisor:              f.str("hypervisor"),
			BareMetal:               f.bool("bare_metal"),
			Burstable:               f.bool("burstable"),
			Flex:                    f.bool("flex"),
			GPUCount:                f.int("gpu_count"),
			GPUName:                 f.str("gpu_name"),
			GPUManufacturer:         f.str("gpu_manufacturer"),
			GPUMemoryMiB:            f.int64("gpu_memory_mib"),
			AcceleratorCount:        f.int("accelerator_count"),
			AcceleratorName:         f.str("accelerator_name"),
			AcceleratorManufacturer: f.str("accelerator_manufacturer"),
			NeuronCores:             f.int("neuron_cores"),
			LocalNVMeGiB:            f.int64("local_nvme_gib"),
			NetworkBandwidthMbps:    f.int64("network_mbps"),
			EBSBandwidthMbps:        f.int64("ebs_mbps"),
			EFAInterfaces:           f.int("efa"),
			ENIs:                    f.int("enis"),
			IPv4PerENI:              f.int("ipv4_per_eni"),
			MaxPods:                 f.int("max_pods"),
			PodENIs:                 f.int("pod_enis"),
			OnDemandPrice:           f.float("od_price"),
		}
		if f.err != nil {
			return nil, fmt.Errorf("catalog entry %q: %w", e.Name, f.err)
		}
		if e.Name == "" || e.VCPU <= 0 || e.MemoryMiB <= 0 || e.Arch == "" {
			return nil, fmt.Errorf("catalog entry %q: name, vcpu, memory and arch are required", e.Name)
		}
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	for i := 1; i < len(entries); i++ {
		if entries[i].Name == entries[i-1].Name {
			return nil, fmt.Errorf("catalog entry %q appears twice", entries[i].Name)
		}
	}
	return entries, nil
}

var requiredColumns = []string{"name", "family", "size", "vcpu", "memory_mib", "arch"}

// fields reads named columns of one CSV record, remembering the first parse error. Missing
// columns and empty cells read as zero.
type fields struct {
	rec []string
	col map[string]int
	err error
}

func (f *fields) str(name string) string {
	i, ok := f.col[name]
	if !ok || i >= len(f.rec) {
		return ""
	}
	return f.rec[i]
}

func (f *fields) int64(name string) int64 {
	s := f.str(name)
	if s == "" {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("column %s: %w", name, err)
	}
	return v
}

func (f *fields) int(name string) int { return int(f.int64(name)) }

func (f *fields) float(name string) float64 {
	s := f.str(name)
	if s == "" {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("column %s: %w", name, err)
	}
	return v
}

func (f *fields) bool(name string) bool {
	switch s := f.str(name); s {
	case "", "0", "false":
		return false
	case "1", "true":
		return true
	default:
		if f.err == nil {
			f.err = fmt.Errorf("column %s: %q is not a boolean", name, s)
		}
		return false
	}
}
