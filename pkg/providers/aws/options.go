package aws

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// Name is the AWS provider's name.
const Name = "aws"

// Options configure the AWS provider. The flags and environment variables that set them are
// named as in Karpenter's Helm chart (see cmd/karpenter).
type Options struct {
	// ClusterName tags everything the provider creates and names the cluster to nodes
	// (CLUSTER_NAME). Required.
	ClusterName string
	// ClusterEndpoint is the API server URL nodes join (CLUSTER_ENDPOINT); empty means the
	// endpoint EKS DescribeCluster reports.
	ClusterEndpoint string
	// ClusterCABundle is the PEM of the cluster's certificate authority, given to nodes; empty
	// means the one EKS DescribeCluster reports.
	ClusterCABundle []byte
	// InterruptionQueue is the name of the SQS queue EventBridge sends spot interruption
	// warnings, rebalance recommendations, scheduled changes and state changes to
	// (INTERRUPTION_QUEUE); empty disables interruption handling.
	InterruptionQueue string
	// IsolatedVPC says the cluster cannot reach the Pricing API (ISOLATED_VPC): on-demand prices
	// come from the shipped catalog.
	IsolatedVPC bool
	// ReservedENIs are network interfaces kept from the VPC CNI (RESERVED_ENIS).
	ReservedENIs int
	// VMMemoryOverheadPercent is the share of memory lost to virtualization
	// (VM_MEMORY_OVERHEAD_PERCENT); zero means the default, 0.075.
	VMMemoryOverheadPercent float64
	// NodeClassCEL is the AWS provider's feature gate of that name (AWS_FEATURE_GATES): CEL
	// expressions in an EC2NodeClass's spec.kubelet are evaluated per instance type for its
	// capacity, overhead and user data. Off, a NodeClass with one is not Ready
	// (KubeletExpressionsDisabled), as in Karpenter.
	NodeClassCEL bool
	// DRANVIDIAGPU is the AWS provider's feature gate of that name (AWS_FEATURE_GATES): an
	// EC2NodeClass may ask, by its karpenter.k8s.aws/nvidia-consumable-capacity annotation,
	// for GPU sharing (cloudprovider.ValidateNVIDIAConsumableCapacity).
	DRANVIDIAGPU bool
	// ReservedCapacity is Karpenter's feature gate of that name (FEATURE_GATES, on by default
	// in v1.15; the operator sets it): an EC2NodeClass's capacityReservationSelectorTerms
	// resolve to status.capacityReservations (CapacityReservationsReady), each reservation is a
	// reserved offering, claims that allow reserved capacity launch into one first, and other
	// launches opt out of open reservations (preference none), as the AWS provider v1.15.2.
	// Off, the terms are ignored and nothing is reserved, as there.
	ReservedCapacity bool
	// Recorder records Events on NodeClaims (a spot launch refused for want of the Spot
	// service-linked role); nil records none.
	Recorder record.EventRecorder
	// KubeDNSIP is the cluster DNS Service's address (kube-system/kube-dns), which nodes get
	// as their kubelet's clusterDNS when the EC2NodeClass sets none, as Karpenter injects it.
	// Empty when it could not be read: the image's own default then stands.
	KubeDNSIP string
	// KubernetesVersion returns the cluster's version as "major.minor" (used by AMI aliases),
	// read from the API server. Required.
	KubernetesVersion func() (string, error)
	// EKSControlPlane reads the version from EKS DescribeCluster instead (EKS_CONTROL_PLANE),
	// as Karpenter's version provider does when it is set.
	EKSControlPlane bool
	// Refresh is how often a NodeClass's images, subnets and security groups are read from
	// EC2 again.
	Refresh RefreshIntervals
	// KubeClient reads and writes NodeClasses, NodeClaims and Nodes. Required.
	KubeClient client.Client
	// Unavailable is the offering cache shared with the scheduler: offerings that ran out of
	// capacity in a fleet are marked in it. Nil means a private cache.
	Unavailable *cloudprovider.UnavailableOfferings
	// Clock defaults to the real clock.
	Clock clock.Clock
	// InstanceTypesRefresh and PricingRefresh are how often instance types and prices are
	// re-read (default 12h).
	InstanceTypesRefresh, PricingRefresh time.Duration
	// RebootForRepair is the AWS provider's RebootForRepair gate (AWS_FEATURE_GATES): the repair
	// policies reboot a node for GPU faults a reboot clears instead of replacing it.
	RebootForRepair bool
	// DisableDryRun skips the launch check of each EC2NodeClass (DISABLE_DRY_RUN), as
	// Karpenter's option of that name: by default the NodeClass is Ready only once a launch
	// template is created and a CreateFleet and a RunInstances from it are dry-run allowed
	// (see Provider.Resolve); set, ValidationSucceeded needs no EC2 call, and a missing
	// permission shows only when a launch fails.
	DisableDryRun bool
	// OrphanGracePeriod is how long an instance may live without a NodeClaim before it is
	// terminated (default 5 minutes, longer than a launch takes to be recorded).
	OrphanGracePeriod time.Duration
}

// RefreshIntervals are how often each part of an EC2NodeClass's status is read from EC2 again
// (Karpenter's AMI_REFRESH_INTERVAL, SUBNET_REFRESH_INTERVAL and
// SECURITY_GROUP_REFRESH_INTERVAL), each at least MinRefreshInterval. A change of the
// NodeClass's spec reads every part at once.
type RefreshIntervals struct {
	AMIs, Subnets, SecurityGroups time.Duration
}

// MinRefreshInterval is Karpenter's default, and its minimum, for each refresh interval.
const MinRefreshInterval = time.Minute

// DefaultRefreshIntervals are Karpenter's defaults.
var DefaultRefreshIntervals = RefreshIntervals{AMIs: MinRefreshInterval, Subnets: MinRefreshInterval, SecurityGroups: MinRefreshInterval}

// Validate reports each interval under MinRefreshInterval, naming its setting.
func (r RefreshIntervals) Validate() error {
	var errs []error
	for _, i := range []struct {
		flag, env string
		interval  time.Duration
	}{
		{"--ami-refresh-interval", "AMI_REFRESH_INTERVAL", r.AMIs},
		{"--subnet-refresh-interval", "SUBNET_REFRESH_INTERVAL", r.Subnets},
		{"--security-group-refresh-interval", "SECURITY_GROUP_REFRESH_INTERVAL", r.SecurityGroups},
	} {
		if i.interval < MinRefreshInterval {
			errs = append(errs, fmt.Errorf("%s (%s) %s: must be at least 1m, as in Karpenter", i.flag, i.env, i.interval))
		}
	}
	return errors.Join(errs...)
}

// Validate reports every invalid option, naming the flag and environment variable to fix.
func (o Options) Validate() error {
	var errs []error
	if o.ClusterName == "" {
		errs = append(errs, errors.New("--cluster-name (CLUSTER_NAME) is required with --cloud-provider aws"))
	}
	if o.ClusterEndpoint != "" {
		if u, err := url.Parse(o.ClusterEndpoint); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--cluster-endpoint (CLUSTER_ENDPOINT) %q: must be an https URL such as https://ABCD.gr7.us-west-2.eks.amazonaws.com", o.ClusterEndpoint))
		}
	}
	if o.ReservedENIs < 0 {
		errs = append(errs, fmt.Errorf("--reserved-enis (RESERVED_ENIS) %d: must not be negative", o.ReservedENIs))
	}
	if o.VMMemoryOverheadPercent < 0 || o.VMMemoryOverheadPercent >= 1 {
		errs = append(errs, fmt.Errorf("--vm-memory-overhead-percent (VM_MEMORY_OVERHEAD_PERCENT) %v: must be a fraction in [0, 1), such as 0.075", o.VMMemoryOverheadPercent))
	}
	if err := o.Refresh.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.KubeClient == nil {
		errs = append(errs, errors.New("a Kubernetes client is required"))
	}
	if o.KubernetesVersion == nil {
		errs = append(errs, errors.New("a Kubernetes version source is required"))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Unavailable == nil {
		o.Unavailable = cloudprovider.NewUnavailableOfferings(o.Clock, 0)
	}
	if o.InstanceTypesRefresh <= 0 {
		o.InstanceTypesRefresh = 12 * time.Hour
	}
	if o.PricingRefresh <= 0 {
		o.PricingRefresh = 12 * time.Hour
	}
	if o.VMMemoryOverheadPercent == 0 {
		o.VMMemoryOverheadPercent = cloudprovider.DefaultVMMemoryOverheadPercent
	}
	if o.OrphanGracePeriod <= 0 {
		o.OrphanGracePeriod = 5 * time.Minute
	}
	return o
}
