package cloudprovider

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/kubeletcel"
)

// Extended resources EC2 instance types advertise; each is in Capacity only when non-zero.
const (
	// ResourceNVIDIAGPU counts NVIDIA GPUs.
	ResourceNVIDIAGPU corev1.ResourceName = "nvidia.com/gpu"
	// ResourceAMDGPU counts AMD GPUs.
	ResourceAMDGPU corev1.ResourceName = "amd.com/gpu"
	// ResourceHabanaGaudi counts Habana Gaudi accelerators.
	ResourceHabanaGaudi corev1.ResourceName = "habana.ai/gaudi"
	// ResourceAWSNeuron counts AWS Neuron devices (Inferentia, Trainium).
	ResourceAWSNeuron corev1.ResourceName = "aws.amazon.com/neuron"
	// ResourceAWSNeuronCore counts the cores of the AWS Neuron devices.
	ResourceAWSNeuronCore corev1.ResourceName = "aws.amazon.com/neuroncore"
	// ResourceEFA counts Elastic Fabric Adapter interfaces.
	ResourceEFA corev1.ResourceName = "vpc.amazonaws.com/efa"
	// ResourceAWSPodENI counts branch interfaces for pods with their own security groups.
	ResourceAWSPodENI corev1.ResourceName = "vpc.amazonaws.com/pod-eni"
	// ResourcePrivateIPv4Address counts the secondary IPv4 addresses the VPC resource
	// controller hands to pods on Windows nodes (a Windows AMI family's types only).
	ResourcePrivateIPv4Address corev1.ResourceName = "vpc.amazonaws.com/PrivateIPv4Address"
)

// Defaults of InstanceTypeOptions.
const (
	// DefaultVMMemoryOverheadPercent is the share of an instance's memory taken by the
	// hypervisor and firmware, as Karpenter's VM_MEMORY_OVERHEAD_PERCENT defaults it.
	DefaultVMMemoryOverheadPercent = 0.075
	// DefaultRootVolumeGiB is the root volume (and so ephemeral storage) of the AL2, AL2023 and
	// Bottlerocket images when the NodeClass does not size it.
	DefaultRootVolumeGiB = 20
	// DefaultMaxPods is the kubelet's pod limit when the ENI limits of a type are unknown, and
	// on Windows nodes whatever they are.
	DefaultMaxPods = 110
	// DefaultWindowsRootVolumeGiB is the root volume (C:, which holds ephemeral storage) of the
	// Windows images when the NodeClass does not size it, as the AWS provider v1.15.2's
	// amifamily.Windows.DefaultBlockDeviceMappings.
	DefaultWindowsRootVolumeGiB = 50
)

// The node.kubernetes.io/windows-build of the images of each Windows AMI family (Windows
// Server Core 2019, 2022, 2025), as the AWS provider v1.15.2 (pkg/apis/v1/labels.go).
const (
	Windows2019Build = "10.0.17763"
	Windows2022Build = "10.0.20348"
	Windows2025Build = "10.0.26100"
)

// WindowsBuild returns the node.kubernetes.io/windows-build of a Windows AMI family's images
// (Windows2019, Windows2022, Windows2025), and whether the family is one of them.
func WindowsBuild(family string) (string, bool) {
	switch family {
	case awsv1.AMIFamilyWindows2019:
		return Windows2019Build, true
	case awsv1.AMIFamilyWindows2022:
		return Windows2022Build, true
	case awsv1.AMIFamilyWindows2025:
		return Windows2025Build, true
	}
	return "", false
}

// Hard-eviction signals the overhead model reads.
const (
	evictionMemoryAvailable = "memory.available"
	evictionNodeFSAvailable = "nodefs.available"
)

const mib = 1 << 20

// InstanceTypeOptions configure how catalog entries become instance types: the NodeClass
// settings that change capacity and overhead, and where and at what price they are offered.
// The zero value is usable: AL2023 defaults, no offerings.
type InstanceTypeOptions struct {
	// Kubelet overrides pod density (maxPods, podsPerCore) and the reservations (kubeReserved,
	// systemReserved, evictionHard). Nil keeps the defaults.
	Kubelet *awsv1.KubeletConfiguration
	// KubeletExpressions is the AWS provider's NodeClassCEL feature gate: the CEL expressions
	// in Kubelet (a string maxPods, a kubeReserved or systemReserved value that is not a
	// quantity) are evaluated for each instance type (package kubeletcel). Off, they are
	// left out and the defaults stand, as in Karpenter's provider with the gate off, whose
	// validation refuses such a NodeClass anyway (ValidateKubelet).
	KubeletExpressions bool
	// AMIFamily is AL2, AL2023, Bottlerocket, Custom, Windows2019, Windows2022 or Windows2025;
	// empty means AL2023. It decides whether kube-reserved memory follows the ENI-limited pod
	// count (AL2, AL2023, Custom) or the actual one (Bottlerocket, Windows), whether podsPerCore
	// applies (not on Bottlerocket), whether the default pod limit is ENI-limited (not on
	// Windows: 110), the default root volume, and for Windows the os and windows-build labels.
	AMIFamily string
	// VMMemoryOverheadPercent is the share of memory lost to virtualization; nil means
	// DefaultVMMemoryOverheadPercent.
	VMMemoryOverheadPercent *float64
	// ReservedENIs are network interfaces kept from the VPC CNI; each lowers the ENI-limited
	// pod count by one interface's worth of addresses.
	ReservedENIs int
	// RootVolumeSize is the root volume, which holds ephemeral storage; nil means
	// DefaultRootVolumeGiB. OptionsFromNodeClass reads it from block device mappings.
	RootVolumeSize *resource.Quantity
	// InstanceStorePolicy RAID0 makes the local NVMe disks, where a type has them, the
	// ephemeral storage instead of the root volume.
	InstanceStorePolicy *awsv1.InstanceStorePolicy
	// Zones are the availability zones to make offerings in. None means no offerings.
	Zones []string
	// ZoneIDs are the zones' IDs (topology.k8s.aws/zone-id), by zone, as the EC2NodeClass's
	// subnets report them (ZoneIDsOf); a zone without one gives offerings without a zone ID.
	ZoneIDs map[string]string
	// CapacityTypes to make offerings of; nil means spot and on-demand.
	CapacityTypes []string
	// Prices price the offerings; a combination without a price gets no offering. Nil means
	// the embedded catalog's prices (catalog.DefaultPrices).
	Prices Prices
}

// Validate reports the first invalid option, including unparsable kubelet quantities.
func (o InstanceTypeOptions) Validate() error {
	_, err := o.compile()
	return err
}

// ZoneIDsOf maps the zones of the subnets to their IDs (topology.k8s.aws/zone-id), as the
// EC2NodeClass's status reports them (DescribeSubnets' AvailabilityZoneId); nil when none is
// known.
func ZoneIDsOf(subnets []awsv1.Subnet) map[string]string {
	var ids map[string]string
	for _, s := range subnets {
		if s.Zone == "" || s.ZoneID == "" {
			continue
		}
		if ids == nil {
			ids = map[string]string{}
		}
		ids[s.Zone] = s.ZoneID
	}
	return ids
}

// OptionsFromNodeClass returns the options an EC2NodeClass implies: its kubelet settings, AMI
// family (spec.amiFamily, or the family of an alias term), root volume size and instance-store
// policy. Zones, capacity types and prices are left for the caller.
func OptionsFromNodeClass(nc *awsv1.EC2NodeClass) InstanceTypeOptions {
	opts := InstanceTypeOptions{
		Kubelet:             nc.Spec.Kubelet,
		InstanceStorePolicy: nc.Spec.InstanceStorePolicy,
	}
	switch {
	case nc.Spec.AMIFamily != nil:
		opts.AMIFamily = *nc.Spec.AMIFamily
	default:
		for _, term := range nc.Spec.AMISelectorTerms {
			if family, _, ok := strings.Cut(term.Alias, "@"); ok {
				opts.AMIFamily = aliasFamilies[strings.ToLower(family)]
				break
			}
		}
	}
	if traits, err := amiTraitsOf(opts.AMIFamily); err == nil {
		opts.RootVolumeSize = rootVolumeSize(nc.Spec.BlockDeviceMappings, traits)
	}
	return opts
}

var aliasFamilies = map[string]string{
	"al2":          awsv1.AMIFamilyAL2,
	"al2023":       awsv1.AMIFamilyAL2023,
	"bottlerocket": awsv1.AMIFamilyBottlerocket,
	"windows2019":  awsv1.AMIFamilyWindows2019,
	"windows2022":  awsv1.AMIFamilyWindows2022,
	"windows2025":  awsv1.AMIFamilyWindows2025,
}

// rootVolumeSize finds the volume that holds ephemeral storage: the one marked rootVolume, else
// the family's ephemeral device (the last mapping for Custom), else nil for the default.
func rootVolumeSize(bdms []*awsv1.BlockDeviceMapping, traits amiTraits) *resource.Quantity {
	size := func(bdm *awsv1.BlockDeviceMapping) *resource.Quantity {
		if bdm == nil || bdm.EBS == nil || bdm.EBS.VolumeSize == nil {
			return nil
		}
		q := bdm.EBS.VolumeSize.DeepCopy()
		return &q
	}
	for _, bdm := range bdms {
		if bdm != nil && bdm.RootVolume {
			if q := size(bdm); q != nil {
				return q
			}
		}
	}
	if len(bdms) == 0 {
		return nil
	}
	if traits.ephemeralDevice == "" {
		return size(bdms[len(bdms)-1])
	}
	for _, bdm := range bdms {
		if bdm != nil && bdm.DeviceName != nil && *bdm.DeviceName == traits.ephemeralDevice {
			return size(bdm)
		}
	}
	return nil
}

// amiTraits are the differences between image families that change capacity or overhead, as
// the AWS provider v1.15.2's amifamily FeatureFlags, EphemeralBlockDevice and
// DefaultBlockDeviceMappings give them.
type amiTraits struct {
	// eniLimitedMemoryOverhead: kube-reserved memory is computed from the ENI-limited pod count
	// (the EKS bootstrap script's rule), whatever maxPods says.
	eniLimitedMemoryOverhead bool
	// eniLimitedPods: without maxPods the pod limit is the ENI-limited count (the VPC CNI's
	// rule); otherwise it is DefaultMaxPods.
	eniLimitedPods bool
	// podsPerCore: the kubelet's podsPerCore setting is honoured.
	podsPerCore bool
	// ephemeralDevice is the device holding ephemeral storage; empty for Custom (the last
	// block device mapping).
	ephemeralDevice string
	// rootVolumeGiB is the default size of the volume holding ephemeral storage.
	rootVolumeGiB int64
	// windowsBuild is the Windows families' node.kubernetes.io/windows-build; empty for Linux.
	windowsBuild string
}

func amiTraitsOf(family string) (amiTraits, error) {
	switch family {
	case "", awsv1.AMIFamilyAL2023, awsv1.AMIFamilyAL2:
		return amiTraits{eniLimitedMemoryOverhead: true, eniLimitedPods: true, podsPerCore: true, ephemeralDevice: "/dev/xvda", rootVolumeGiB: DefaultRootVolumeGiB}, nil
	case awsv1.AMIFamilyCustom:
		return amiTraits{eniLimitedMemoryOverhead: true, eniLimitedPods: true, podsPerCore: true, rootVolumeGiB: DefaultRootVolumeGiB}, nil
	case awsv1.AMIFamilyBottlerocket:
		return amiTraits{eniLimitedPods: true, ephemeralDevice: "/dev/xvdb", rootVolumeGiB: DefaultRootVolumeGiB}, nil
	}
	if build, ok := WindowsBuild(family); ok {
		// amifamily.Windows: FeatureFlags{UsesENILimitedMemoryOverhead: false,
		// PodsPerCoreEnabled: true, SupportsENILimitedPodDensity: false}, C: on /dev/sda1, 50Gi.
		return amiTraits{podsPerCore: true, ephemeralDevice: "/dev/sda1", rootVolumeGiB: DefaultWindowsRootVolumeGiB, windowsBuild: build}, nil
	}
	return amiTraits{}, fmt.Errorf("unsupported ami family %q", family)
}

// builder holds options compiled once for many instance types.
type builder struct {
	traits         amiTraits
	vmOverhead     float64
	reservedENIs   int
	rootVolume     resource.Quantity
	raid0          bool
	maxPods        *int64
	podsPerCore    int64
	kubeReserved   corev1.ResourceList
	systemReserved corev1.ResourceList
	// The kubelet's CEL expressions (KubeletExpressions), compiled; kubeReservedExprs and
	// systemReservedExprs hold the whole maps, quantities too, when they have expressions.
	maxPodsExpr                            *kubeletcel.Expression
	kubeReservedExprs, systemReservedExprs kubeletcel.Reserved
	evictMemory                            *threshold
	evictNodeFS                            *threshold
	zones                                  []string
	zoneIDs                                map[string]string
	capacityTypes                          []string
	prices                                 Prices
}

// threshold is an eviction threshold: a quantity or a percentage of capacity.
type threshold struct {
	percent   float64
	isPercent bool
	quantity  resource.Quantity
}

func (t threshold) of(capacity int64, format resource.Format) resource.Quantity {
	if !t.isPercent {
		return t.quantity.DeepCopy()
	}
	return *resource.NewQuantity(int64(math.Ceil(float64(capacity)/100*t.percent)), format)
}

func (o InstanceTypeOptions) compile() (*builder, error) {
	traits, err := amiTraitsOf(o.AMIFamily)
	if err != nil {
		return nil, err
	}
	b := &builder{
		traits:       traits,
		vmOverhead:   DefaultVMMemoryOverheadPercent,
		reservedENIs: o.ReservedENIs,
		rootVolume:   *resource.NewQuantity(traits.rootVolumeGiB<<30, resource.BinarySI),
		raid0:        o.InstanceStorePolicy != nil && *o.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0,
		prices:       o.Prices,
	}
	if p := o.VMMemoryOverheadPercent; p != nil {
		if *p < 0 || *p >= 1 || math.IsNaN(*p) {
			return nil, fmt.Errorf("vm memory overhead percent %v is not in [0, 1)", *p)
		}
		b.vmOverhead = *p
	}
	if o.ReservedENIs < 0 {
		return nil, fmt.Errorf("reserved enis %d is negative", o.ReservedENIs)
	}
	if o.RootVolumeSize != nil {
		if o.RootVolumeSize.Sign() <= 0 {
			return nil, fmt.Errorf("root volume size %s is not positive", o.RootVolumeSize)
		}
		b.rootVolume = o.RootVolumeSize.DeepCopy()
	}
	if b.zones, err = sortedSet("zone", o.Zones); err != nil {
		return nil, err
	}
	b.zoneIDs = o.ZoneIDs
	capacityTypes := o.CapacityTypes
	if capacityTypes == nil {
		capacityTypes = []string{karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot}
	}
	for _, ct := range capacityTypes {
		if ct != karpv1.CapacityTypeOnDemand && ct != karpv1.CapacityTypeSpot && ct != karpv1.CapacityTypeReserved {
			return nil, fmt.Errorf("unknown capacity type %q", ct)
		}
	}
	if b.capacityTypes, err = sortedSet("capacity type", capacityTypes); err != nil {
		return nil, err
	}
	if b.prices == nil && len(b.zones) > 0 {
		prices, err := catalog.DefaultPrices()
		if err != nil {
			return nil, fmt.Errorf("loading catalog prices: %w", err)
		}
		b.prices = prices
	}
	if k := o.Kubelet; k != nil {
		if err := b.compileExpressions(k, o.KubeletExpressions); err != nil {
			return nil, err
		}
		if k.MaxPods != nil {
			if *k.MaxPods < 0 {
				return nil, fmt.Errorf("kubelet maxPods %d is negative", *k.MaxPods)
			}
			v := int64(*k.MaxPods)
			b.maxPods = &v
		}
		if k.PodsPerCore != nil {
			if *k.PodsPerCore < 0 {
				return nil, fmt.Errorf("kubelet podsPerCore %d is negative", *k.PodsPerCore)
			}
			b.podsPerCore = int64(*k.PodsPerCore)
		}
		if b.kubeReserved, err = parseReserved("kubeReserved", quantitiesOnly(k.KubeReserved)); err != nil {
			return nil, err
		}
		if b.systemReserved, err = parseReserved("systemReserved", quantitiesOnly(k.SystemReserved)); err != nil {
			return nil, err
		}
		if b.evictMemory, err = parseThreshold(k.EvictionHard, evictionMemoryAvailable); err != nil {
			return nil, err
		}
		if b.evictNodeFS, err = parseThreshold(k.EvictionHard, evictionNodeFSAvailable); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// compileExpressions compiles the kubelet's CEL expressions when they are enabled; each error
// names its field.
func (b *builder) compileExpressions(k *awsv1.KubeletConfiguration, enabled bool) error {
	if !enabled {
		return nil
	}
	if expr, ok := k.MaxPodsExpression(); ok {
		e, err := kubeletcel.Compile(expr)
		if err != nil {
			return &kubeletcel.FieldError{Field: "spec.kubelet.maxPods", Err: err}
		}
		b.maxPodsExpr = e
	}
	var err error
	if b.kubeReservedExprs, err = kubeletcel.CompileReserved("spec.kubelet.kubeReserved", k.KubeReserved); err != nil {
		return err
	}
	b.systemReservedExprs, err = kubeletcel.CompileReserved("spec.kubelet.systemReserved", k.SystemReserved)
	return err
}

// quantitiesOnly is a reservation map without its expressions (values that are not
// quantities), which are resolved per instance type when enabled and dropped when not.
func quantitiesOnly(m map[string]string) map[string]string {
	var out map[string]string
	for k, v := range m {
		if kubeletcel.IsExpression(v) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(m))
		}
		out[k] = v
	}
	return out
}

// resolvedKubelet is the kubelet configuration's sizing fields for one instance type, with
// its expressions evaluated.
type resolvedKubelet struct {
	// maxPods is the pod limit the configuration sets (a number, or its expression's
	// result), before podsPerCore; nil leaves the ENI-limited default.
	maxPods *int64
	// pods is the node's pod limit: maxPods or the default, capped by podsPerCore.
	pods int64
	// kubeReserved and systemReserved are the maps with their expressions replaced by their
	// results (kubeletcel.FormatReserved); nil when they have no expressions.
	kubeReserved, systemReserved map[string]string
	// reservedErr says which reservation expressions failed or came out negative for this
	// type; those entries are left out, as Karpenter's provider leaves them out (and its
	// validation refuses the NodeClass: EvaluateKubelet).
	reservedErr error
}

// resolveKubelet evaluates the kubelet's expressions for an instance type, as Karpenter's AWS
// provider v1.15.2 resolves them (pkg/providers/instancetype/types.go, resolveMaxPods then
// resolveResourceExpressions): maxPods first, with max_pods the default limit (the expression
// cannot refer to itself), its result an int32; then the reservations, with max_pods the
// resolved limit. A maxPods expression that fails is an error.
func (b *builder) resolveKubelet(e *catalog.Entry) (resolvedKubelet, error) {
	capped := func(pods int64) int64 {
		if b.podsPerCore > 0 && b.traits.podsPerCore {
			return min(pods, b.podsPerCore*int64(e.VCPU))
		}
		return pods
	}
	vars := func(maxPods int64) kubeletcel.Vars {
		return kubeletcel.Vars{VCPUs: int64(e.VCPU), MemoryMiB: e.MemoryMiB, DefaultENIs: int64(e.ENIs),
			IPsPerENI: int64(e.IPv4PerENI), MaxPods: maxPods, InstanceType: e.Name}
	}
	r := resolvedKubelet{maxPods: b.maxPods}
	defaultPods := int64(DefaultMaxPods)
	if b.traits.eniLimitedPods {
		defaultPods = eniLimitedPods(e, b.reservedENIs)
	}
	if b.maxPodsExpr != nil {
		v, err := b.maxPodsExpr.Eval(vars(capped(defaultPods)))
		if err == nil && (v < 0 || v > math.MaxInt32) {
			err = fmt.Errorf("%q evaluated to %d for %s, outside [0, %d]", b.maxPodsExpr, v, e.Name, math.MaxInt32)
		}
		if err != nil {
			return r, &kubeletcel.FieldError{Field: "spec.kubelet.maxPods", Err: err}
		}
		r.maxPods = &v
	}
	r.pods = defaultPods
	if r.maxPods != nil {
		r.pods = *r.maxPods
	}
	r.pods = capped(r.pods)
	var errs kubeletErrors
	if b.kubeReservedExprs.HasExpressions() {
		var err error
		if r.kubeReserved, err = b.kubeReservedExprs.Resolve(vars(r.pods)); err != nil {
			errs = append(errs, fmt.Errorf("spec.kubelet.kubeReserved: %w", err))
		}
	}
	if b.systemReservedExprs.HasExpressions() {
		var err error
		if r.systemReserved, err = b.systemReservedExprs.Resolve(vars(r.pods)); err != nil {
			errs = append(errs, fmt.Errorf("spec.kubelet.systemReserved: %w", err))
		}
	}
	if len(errs) > 0 {
		r.reservedErr = errs
	}
	return r, nil
}

// ResolveKubelet returns the kubelet configuration as the nodes of one instance type get it:
// Kubelet with its expressions (KubeletExpressions) replaced by their values for the entry,
// maxPods a number and the reservations quantities, exactly as NewInstanceTypes sized the
// type; Kubelet itself when it has none. Expressions that are disabled are left as written
// (ValidateKubelet keeps such a NodeClass from launching).
func (o InstanceTypeOptions) ResolveKubelet(entry catalog.Entry) (*awsv1.KubeletConfiguration, error) {
	if o.Kubelet == nil || !o.KubeletExpressions || len(o.Kubelet.Expressions()) == 0 {
		return o.Kubelet, nil
	}
	o.Zones = nil // no offerings: nothing to price
	b, err := o.compile()
	if err != nil {
		return nil, err
	}
	r, err := b.resolveKubelet(&entry)
	if err != nil {
		return nil, fmt.Errorf("instance type %s: %w", entry.Name, err)
	}
	k := o.Kubelet.DeepCopy()
	if b.maxPodsExpr != nil {
		delete(k.Other, "maxPods")
		if len(k.Other) == 0 {
			k.Other = nil
		}
		v := int32(*r.maxPods) // in range: resolveKubelet checks it
		k.MaxPods = &v
	}
	if r.kubeReserved != nil {
		k.KubeReserved = r.kubeReserved
	}
	if r.systemReserved != nil {
		k.SystemReserved = r.systemReserved
	}
	return k, nil
}

// EvaluateKubelet evaluates the kubelet's expressions for every entry, as Karpenter's AWS
// provider v1.15.2 does before it lets a NodeClass launch
// (pkg/providers/instancetype/instancetype.go, ValidateKubeletExpressions): the first entry,
// by name, whose maxPods expression fails or is out of range, or whose reservation
// expression fails or is negative, is the error, naming the field and the instance type. Nil
// when the expressions are disabled or there are none.
func (o InstanceTypeOptions) EvaluateKubelet(entries []catalog.Entry) error {
	if o.Kubelet == nil || !o.KubeletExpressions || len(o.Kubelet.Expressions()) == 0 {
		return nil
	}
	o.Zones = nil
	b, err := o.compile()
	if err != nil {
		return err
	}
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b catalog.Entry) int { return strings.Compare(a.Name, b.Name) })
	for i := range sorted {
		r, err := b.resolveKubelet(&sorted[i])
		if err == nil {
			err = r.reservedErr
		}
		if err != nil {
			return fmt.Errorf("instance type %s: %w", sorted[i].Name, err)
		}
	}
	return nil
}

func sortedSet(what string, values []string) ([]string, error) {
	out := slices.Clone(values)
	slices.Sort(out)
	for i, v := range out {
		if v == "" {
			return nil, fmt.Errorf("empty %s", what)
		}
		if i > 0 && out[i-1] == v {
			return nil, fmt.Errorf("duplicate %s %q", what, v)
		}
	}
	return out, nil
}

func parseReserved(field string, m map[string]string) (corev1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	rl := make(corev1.ResourceList, len(m))
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("kubelet %s %s: %w", field, k, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("kubelet %s %s: %s is negative", field, k, v)
		}
		rl[corev1.ResourceName(k)] = q
	}
	return rl, nil
}

func parseThreshold(m map[string]string, signal string) (*threshold, error) {
	v, ok := m[signal]
	if !ok {
		return nil, nil
	}
	if p, isPercent := strings.CutSuffix(v, "%"); isPercent {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return nil, fmt.Errorf("kubelet evictionHard %s: %w", signal, err)
		}
		if f < 0 || f > 100 || math.IsNaN(f) {
			return nil, fmt.Errorf("kubelet evictionHard %s: %s is not a percentage", signal, v)
		}
		return &threshold{percent: f, isPercent: true}, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return nil, fmt.Errorf("kubelet evictionHard %s: %w", signal, err)
	}
	if q.Sign() < 0 {
		return nil, fmt.Errorf("kubelet evictionHard %s: %s is negative", signal, v)
	}
	return &threshold{quantity: q}, nil
}

// NewInstanceTypes builds an instance type from each catalog entry with Karpenter's AWS rules
// for capacity and overhead, and offerings in the options' zones and capacity types. The
// result is sorted by name. It fails on invalid options or an entry without vCPUs, memory or
// architecture.
//
// The rules, per instance type:
//   - cpu = vCPUs.
//   - memory = MiB, less 64 MiB on arm64 (Graviton CMA), less ⌈that × VM overhead percent⌉ MiB.
//   - pods = the kubelet's maxPods if set, else the ENI-limited count
//     (ENIs − reserved ENIs) × (IPv4 per ENI − 1) + 2 (0 when no ENI is left; the catalog's
//     MaxPods, then 110, when ENI limits are unknown), capped at podsPerCore × vCPUs when
//     podsPerCore is set.
//   - ephemeral-storage = the root volume (20Gi by default, 50Gi on Windows), or the local NVMe total with
//     instanceStorePolicy RAID0.
//   - kube-reserved: cpu 6% of the first core, 1% of the second, 0.5% of cores 3–4 and 0.25%
//     of every further core (millicores, each band truncated); memory 11 MiB × pods + 255 MiB,
//     where pods is the ENI-limited count without reserved ENIs on AL2/AL2023/Custom (as their
//     bootstrap computes it) and the pods above on Bottlerocket; ephemeral-storage 1Gi. Each
//     key of the kubelet's kubeReserved replaces its default.
//   - system-reserved: the kubelet's systemReserved, nothing by default.
//   - eviction threshold: memory 100Mi, ephemeral-storage ⌈10% of ephemeral storage⌉; the
//     kubelet's evictionHard memory.available and nodefs.available replace them, percentages
//     taken of memory and ephemeral-storage capacity.
//   - the Windows families (as amifamily.Windows in the AWS provider v1.15.2): pods default to
//     110 (no ENI-limited density), kube-reserved memory follows those pods, podsPerCore
//     applies, the root volume is 50Gi, the labels say kubernetes.io/os windows and the
//     family's node.kubernetes.io/windows-build, vpc.amazonaws.com/PrivateIPv4Address is
//     IPv4 per ENI − 1, and arm64 types are left out (the images are x86_64 only).
//   - with KubeletExpressions, a maxPods expression is evaluated first (max_pods the default
//     pod count above, capped by podsPerCore) and stands as maxPods; then the kubeReserved and
//     systemReserved expressions (max_pods the resulting pods); see resolveKubelet. A maxPods
//     expression that fails for an entry fails the build.
func NewInstanceTypes(entries []catalog.Entry, opts InstanceTypeOptions) ([]*InstanceType, error) {
	b, err := opts.compile()
	if err != nil {
		return nil, fmt.Errorf("invalid instance type options: %w", err)
	}
	out := make([]*InstanceType, 0, len(entries))
	for i := range entries {
		if !b.runsImages(&entries[i]) {
			continue
		}
		it, err := b.build(&entries[i])
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	slices.SortFunc(out, func(a, b *InstanceType) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// NewInstanceType builds one instance type; see NewInstanceTypes for the rules. To build many,
// NewInstanceTypes is faster: it compiles the options once.
func NewInstanceType(entry catalog.Entry, opts InstanceTypeOptions) (*InstanceType, error) {
	b, err := opts.compile()
	if err != nil {
		return nil, fmt.Errorf("invalid instance type options: %w", err)
	}
	return b.build(&entry)
}

// runsImages reports whether the family has images for the entry's architecture: every
// family but Windows, whose images are x86_64 only. The AWS provider v1.15.2 keeps an arm64
// type for a Windows family with a kubernetes.io/os requirement of no value (getOS in
// pkg/providers/instancetype/types.go), which no Windows image matches, so it can never
// launch; here it is left out.
func (b *builder) runsImages(e *catalog.Entry) bool {
	return b.traits.windowsBuild == "" || e.Arch != "arm64"
}

func (b *builder) build(e *catalog.Entry) (*InstanceType, error) {
	if e.Name == "" || e.VCPU <= 0 || e.MemoryMiB <= 0 || (e.Arch != "amd64" && e.Arch != "arm64") {
		return nil, fmt.Errorf("instance type %q: needs a name, vcpus, memory and an amd64 or arm64 architecture", e.Name)
	}
	if !b.runsImages(e) {
		return nil, fmt.Errorf("instance type %s: the Windows images are x86_64 only, not %s", e.Name, e.Arch)
	}
	milliCPU := int64(e.VCPU) * 1000

	memMiB := e.MemoryMiB
	if e.Arch == "arm64" {
		memMiB -= 64
	}
	memMiB -= int64(math.Ceil(float64(memMiB) * b.vmOverhead))
	memory := max(memMiB, 0) * mib

	k, err := b.resolveKubelet(e)
	if err != nil {
		return nil, fmt.Errorf("instance type %s: %w", e.Name, err)
	}
	pods := k.pods
	userKubeReserved, userSystemReserved := b.kubeReserved, b.systemReserved
	if k.kubeReserved != nil {
		if userKubeReserved, err = parseReserved("kubeReserved", k.kubeReserved); err != nil {
			return nil, fmt.Errorf("instance type %s: %w", e.Name, err)
		}
	}
	if k.systemReserved != nil {
		if userSystemReserved, err = parseReserved("systemReserved", k.systemReserved); err != nil {
			return nil, fmt.Errorf("instance type %s: %w", e.Name, err)
		}
	}

	storage := b.rootVolume
	if b.raid0 && e.LocalNVMeGiB > 0 {
		storage = *resource.NewQuantity(e.LocalNVMeGiB*1e9, resource.DecimalSI)
	}

	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(milliCPU, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(memory, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: storage.DeepCopy(),
	}
	addExtended(capacity, e)
	if b.traits.windowsBuild != "" && e.IPv4PerENI > 1 {
		// As NewInstanceType's privateIPv4Address for a Windows type: the VPC resource
		// controller's secondary addresses, one interface's IPv4 addresses but the primary.
		capacity[ResourcePrivateIPv4Address] = *resource.NewQuantity(int64(e.IPv4PerENI-1), resource.DecimalSI)
	}

	podsForMemory := pods
	if b.traits.eniLimitedMemoryOverhead {
		podsForMemory = eniLimitedPods(e, 0)
	}
	kubeReserved := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(kubeReservedMilliCPU(milliCPU), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity((11*podsForMemory+255)*mib, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(1<<30, resource.BinarySI),
	}
	for name, q := range userKubeReserved {
		kubeReserved[name] = q.DeepCopy()
	}
	var systemReserved corev1.ResourceList
	if len(userSystemReserved) > 0 {
		systemReserved = make(corev1.ResourceList, len(userSystemReserved))
		for name, q := range userSystemReserved {
			systemReserved[name] = q.DeepCopy()
		}
	}
	storageBytes := storage.Value()
	eviction := corev1.ResourceList{
		corev1.ResourceMemory:           *resource.NewQuantity(100*mib, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(math.Ceil(float64(storageBytes)/100*10)), resource.BinarySI),
	}
	if b.evictMemory != nil {
		eviction[corev1.ResourceMemory] = b.evictMemory.of(memory, resource.BinarySI)
	}
	if b.evictNodeFS != nil {
		eviction[corev1.ResourceEphemeralStorage] = b.evictNodeFS.of(storageBytes, resource.BinarySI)
	}

	return &InstanceType{
		Name:      e.Name,
		Labels:    labels(e, b.traits.windowsBuild),
		Capacity:  capacity,
		Overhead:  InstanceTypeOverhead{KubeReserved: kubeReserved, SystemReserved: systemReserved, EvictionThreshold: eviction},
		Offerings: b.offerings(e.Name),
	}, nil
}

func (b *builder) offerings(name string) Offerings {
	if len(b.zones) == 0 || len(b.capacityTypes) == 0 {
		return nil
	}
	var ofs Offerings
	for _, zone := range b.zones {
		for _, ct := range b.capacityTypes {
			if price, ok := b.prices.Price(name, zone, ct); ok {
				if ofs == nil {
					ofs = make(Offerings, 0, len(b.zones)*len(b.capacityTypes))
				}
				ofs = append(ofs, Offering{Zone: zone, ZoneID: b.zoneIDs[zone], CapacityType: ct, Price: price, Available: true})
			}
		}
	}
	return ofs
}

// eniLimitedPods is the VPC CNI's pod limit: every usable interface of the default network card
// gives its addresses but the primary to pods, plus two host-network pods.
func eniLimitedPods(e *catalog.Entry, reservedENIs int) int64 {
	if e.ENIs <= 0 || e.IPv4PerENI <= 0 {
		if e.MaxPods > 0 {
			return int64(e.MaxPods)
		}
		return DefaultMaxPods
	}
	usable := int64(e.ENIs - reservedENIs)
	if usable <= 0 {
		return 0
	}
	return usable*int64(e.IPv4PerENI-1) + 2
}

// kubeReservedMilliCPU is the default kube-reserved cpu: 6% of the first core, 1% of the
// second, 0.5% of the third and fourth, 0.25% of the rest, each band truncated to millicores.
func kubeReservedMilliCPU(milliCPU int64) int64 {
	bands := [...]struct{ start, end, perTenThousand int64 }{
		{0, 1000, 600},
		{1000, 2000, 100},
		{2000, 4000, 50},
		{4000, math.MaxInt64, 25},
	}
	var total int64
	for _, band := range bands {
		if milliCPU <= band.start {
			break
		}
		total += (min(milliCPU, band.end) - band.start) * band.perTenThousand / 10000
	}
	return total
}

func addExtended(capacity corev1.ResourceList, e *catalog.Entry) {
	add := func(name corev1.ResourceName, n int) {
		if n > 0 {
			capacity[name] = *resource.NewQuantity(int64(n), resource.DecimalSI)
		}
	}
	switch e.GPUManufacturer {
	case "nvidia":
		add(ResourceNVIDIAGPU, e.GPUCount)
	case "amd":
		add(ResourceAMDGPU, e.GPUCount)
	case "habana":
		add(ResourceHabanaGaudi, e.GPUCount)
	}
	if e.AcceleratorManufacturer == "aws" {
		add(ResourceAWSNeuron, e.AcceleratorCount)
		add(ResourceAWSNeuronCore, e.NeuronCores)
	}
	add(ResourceEFA, e.EFAInterfaces)
	add(ResourceAWSPodENI, e.PodENIs)
}

// labels are the entry's facts as node labels; windowsBuild, for a Windows family, makes the
// os windows and sets node.kubernetes.io/windows-build, as computeRequirements in the AWS
// provider v1.15.2's pkg/providers/instancetype/types.go (getOS and the Windows build label).
func labels(e *catalog.Entry, windowsBuild string) map[string]string {
	l := make(map[string]string, 24)
	l[corev1.LabelInstanceTypeStable] = e.Name
	l[corev1.LabelArchStable] = e.Arch
	l[corev1.LabelOSStable] = string(corev1.Linux)
	if windowsBuild != "" {
		l[corev1.LabelOSStable] = string(corev1.Windows)
		l[corev1.LabelWindowsBuild] = windowsBuild
	}
	set := func(key, value string) {
		if value != "" {
			l[key] = value
		}
	}
	setInt := func(key string, v int64) {
		if v > 0 {
			l[key] = strconv.FormatInt(v, 10)
		}
	}
	set(awsv1.LabelInstanceFamily, e.Family)
	set(awsv1.LabelInstanceSize, e.Size)
	if e.Category != "" {
		l[awsv1.LabelInstanceCategory] = e.Category
		l[awsv1.LabelInstanceGeneration] = strconv.Itoa(e.Generation)
	}
	setInt(awsv1.LabelInstanceCPU, int64(e.VCPU))
	set(awsv1.LabelInstanceCPUManufacturer, e.CPUManufacturer)
	setInt(awsv1.LabelInstanceCPUSustainedClockSpeedMhz, int64(e.CPUClockMHz))
	setInt(awsv1.LabelInstanceMemory, e.MemoryMiB)
	set(awsv1.LabelInstanceHypervisor, e.Hypervisor)
	setInt(awsv1.LabelInstanceLocalNVME, e.LocalNVMeGiB)
	setInt(awsv1.LabelInstanceNetworkBandwidth, e.NetworkBandwidthMbps)
	setInt(awsv1.LabelInstanceEBSBandwidth, e.EBSBandwidthMbps)
	if e.GPUCount > 0 {
		set(awsv1.LabelInstanceGPUName, e.GPUName)
		set(awsv1.LabelInstanceGPUManufacturer, e.GPUManufacturer)
		setInt(awsv1.LabelInstanceGPUCount, int64(e.GPUCount))
		setInt(awsv1.LabelInstanceGPUMemory, e.GPUMemoryMiB)
	}
	if e.AcceleratorCount > 0 {
		set(awsv1.LabelInstanceAcceleratorName, e.AcceleratorName)
		set(awsv1.LabelInstanceAcceleratorManufacturer, e.AcceleratorManufacturer)
		setInt(awsv1.LabelInstanceAcceleratorCount, int64(e.AcceleratorCount))
	}
	l[awsv1.LabelInstanceCapabilityFlex] = strconv.FormatBool(e.Flex)
	return l
}

// DefaultInstanceTypes builds every instance type of the embedded catalog with the options.
func DefaultInstanceTypes(opts InstanceTypeOptions) ([]*InstanceType, error) {
	entries, err := catalog.Load()
	if err != nil {
		return nil, fmt.Errorf("loading catalog: %w", err)
	}
	return NewInstanceTypes(entries, opts)
}

// MaxCachedConfigurations bounds a provider's cache of instance types per NodeClass
// configuration; distinct configurations beyond it start the cache afresh.
const MaxCachedConfigurations = 64

// CacheKey identifies what, of the options, changes the instance types built from a catalog
// (kubelet settings, AMI family, root volume, instance-store policy, zones): equal keys give
// equal instance types for equal prices. Prices and capacity types are left to the caller.
func (o InstanceTypeOptions) CacheKey() string {
	key := struct {
		Kubelet             *awsv1.KubeletConfiguration `json:"kubelet,omitempty"`
		AMIFamily           string                      `json:"amiFamily,omitempty"`
		RootVolume          string                      `json:"rootVolume,omitempty"`
		InstanceStorePolicy *awsv1.InstanceStorePolicy  `json:"instanceStorePolicy,omitempty"`
		ReservedENIs        int                         `json:"reservedENIs,omitempty"`
		VMMemoryOverhead    *float64                    `json:"vmMemoryOverhead,omitempty"`
		Zones               []string                    `json:"zones"`
		ZoneIDs             map[string]string           `json:"zoneIDs,omitempty"`
		KubeletExpressions  bool                        `json:"kubeletExpressions,omitempty"`
	}{o.Kubelet, o.AMIFamily, "", o.InstanceStorePolicy, o.ReservedENIs, o.VMMemoryOverheadPercent, o.Zones, o.ZoneIDs, o.KubeletExpressions}
	if o.RootVolumeSize != nil {
		key.RootVolume = o.RootVolumeSize.String()
	}
	b, err := json.Marshal(key)
	if err != nil { // the API types always marshal; stay deterministic regardless
		return fmt.Sprintf("%#v", key)
	}
	return string(b)
}
