package kops

import (
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group is the kOps API group; both kops.k8s.io/v1alpha2 (what `kops get -o yaml` prints) and
// kops.k8s.io/v1alpha3 are read.
const Group = "kops.k8s.io"

// Cluster is the part of a kOps Cluster the conversion reads.
type Cluster struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata holds the cluster name.
	Metadata metav1.ObjectMeta `json:"metadata"`
	// Spec is the cluster spec.
	Spec ClusterSpec `json:"spec"`
}

// ClusterSpec is the part of a kOps cluster spec the conversion reads. Fields that moved
// between v1alpha2 and v1alpha3 are read from both places.
type ClusterSpec struct {
	// CloudProvider is "aws" (v1alpha2) or {aws: {...}} (v1alpha3).
	CloudProvider CloudProvider `json:"cloudProvider"`
	// ConfigBase is the cluster's folder in the state store (for the nodeup script's path).
	ConfigBase string `json:"configBase,omitempty"`
	// KubernetesVersion decides, for the legacy output, whether the external cloud controller
	// manager runs (1.24 and later).
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Subnets are the cluster subnets (v1alpha2).
	Subnets []Subnet `json:"subnets,omitempty"`
	// Networking holds the cluster subnets in v1alpha3.
	Networking *Networking `json:"networking,omitempty"`
	// Kubelet is the kubelet configuration of all nodes.
	Kubelet *Kubelet `json:"kubelet,omitempty"`
	// CloudLabels are tags put on every cloud resource of the cluster.
	CloudLabels map[string]string `json:"cloudLabels,omitempty"`
	// Karpenter is the Karpenter addon.
	Karpenter *Karpenter `json:"karpenter,omitempty"`
	// IAM holds the IRSA switch.
	IAM *IAM `json:"iam,omitempty"`
	// ServiceAccountIssuerDiscovery configures the OIDC issuer IRSA relies on.
	ServiceAccountIssuerDiscovery *ServiceAccountIssuerDiscovery `json:"serviceAccountIssuerDiscovery,omitempty"`
	// NodeTerminationHandler is the AWS node termination handler addon (v1alpha2).
	NodeTerminationHandler *NodeTerminationHandler `json:"nodeTerminationHandler,omitempty"`
	// CloudControllerManager, when present, runs the external cloud controller manager
	// (v1alpha2 spelling).
	CloudControllerManager *json.RawMessage `json:"cloudControllerManager,omitempty"`
	// ExternalCloudControllerManager is the v1alpha3 spelling of CloudControllerManager.
	ExternalCloudControllerManager *json.RawMessage `json:"externalCloudControllerManager,omitempty"`
}

// CloudProvider is the cluster's cloud: a name in v1alpha2, an object keyed by the name in
// v1alpha3.
type CloudProvider struct {
	// Name is "aws", "gce", "openstack", …; empty when unset.
	Name string
	// AWS is the v1alpha3 AWS block.
	AWS *AWSSpec
}

// AWSSpec is the part of the v1alpha3 AWS cloud block the conversion reads.
type AWSSpec struct {
	// NodeTerminationHandler is the AWS node termination handler addon.
	NodeTerminationHandler *NodeTerminationHandler `json:"nodeTerminationHandler,omitempty"`
}

// UnmarshalJSON reads either spelling.
func (c *CloudProvider) UnmarshalJSON(data []byte) error {
	var name string
	if err := json.Unmarshal(data, &name); err == nil {
		*c = CloudProvider{Name: name}
		return nil
	}
	var blocks map[string]json.RawMessage
	if err := json.Unmarshal(data, &blocks); err != nil {
		return fmt.Errorf("want a name such as aws or an object such as {aws: {}}")
	}
	names := make([]string, 0, len(blocks))
	for name := range blocks {
		names = append(names, name)
	}
	sort.Strings(names)
	*c = CloudProvider{}
	if len(names) > 0 {
		c.Name = names[0]
	}
	if raw, ok := blocks["aws"]; ok {
		c.Name = "aws"
		c.AWS = &AWSSpec{}
		if string(raw) != "null" {
			if err := json.Unmarshal(raw, c.AWS); err != nil {
				return fmt.Errorf("aws: %w", err)
			}
		}
	}
	return nil
}

// MarshalJSON writes the v1alpha2 spelling.
func (c CloudProvider) MarshalJSON() ([]byte, error) { return json.Marshal(c.Name) }

// Networking holds the v1alpha3 cluster subnets.
type Networking struct {
	// Subnets are the cluster subnets.
	Subnets []Subnet `json:"subnets,omitempty"`
}

// Subnet is a cluster subnet.
type Subnet struct {
	// Name is what InstanceGroups refer to.
	Name string `json:"name"`
	// Type is Public, Private, Utility or DualStack.
	Type string `json:"type,omitempty"`
	// Zone is the subnet's availability zone.
	Zone string `json:"zone,omitempty"`
	// ID is set for a subnet kOps did not create (a shared subnet), which kOps does not tag.
	ID string `json:"id,omitempty"`
}

// Karpenter is the kOps Karpenter addon.
type Karpenter struct {
	// Enabled installs Karpenter and generates its objects.
	Enabled bool `json:"enabled,omitempty"`
	// FeatureGates are Karpenter's feature gates, "Name=value,…"; empty means the addon's
	// default, which enables StaticCapacity.
	FeatureGates string `json:"featureGates,omitempty"`
}

// IAM is the part of the cluster IAM spec the conversion reads.
type IAM struct {
	// UseServiceAccountExternalPermissions turns on IAM roles for service accounts (IRSA).
	UseServiceAccountExternalPermissions *bool `json:"useServiceAccountExternalPermissions,omitempty"`
}

// ServiceAccountIssuerDiscovery configures the service-account OIDC issuer.
type ServiceAccountIssuerDiscovery struct {
	// DiscoveryStore is where the OIDC discovery documents are published.
	DiscoveryStore string `json:"discoveryStore,omitempty"`
	// EnableAWSOIDCProvider creates the AWS IAM OIDC provider IRSA needs.
	EnableAWSOIDCProvider bool `json:"enableAWSOIDCProvider,omitempty"`
}

// NodeTerminationHandler is the AWS node termination handler addon.
type NodeTerminationHandler struct {
	// Enabled defaults to true when the block is present.
	Enabled *bool `json:"enabled,omitempty"`
}

// IsEnabled reports whether the addon runs: the block is present and not disabled.
func (n *NodeTerminationHandler) IsEnabled() bool {
	return n != nil && (n.Enabled == nil || *n.Enabled)
}

// Kubelet is the part of a kOps kubelet configuration the conversion reads.
type Kubelet struct {
	// NodeLabels are labels the node registers with.
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`
	// MaxPods caps the pods per node.
	MaxPods *int32 `json:"maxPods,omitempty"`
	// SystemReserved is held back for OS daemons.
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	// KubeReserved is held back for Kubernetes daemons.
	KubeReserved map[string]string `json:"kubeReserved,omitempty"`
}

// InstanceGroup is the part of a kOps InstanceGroup the conversion reads.
type InstanceGroup struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata holds the name and the kops.k8s.io/cluster label.
	Metadata metav1.ObjectMeta `json:"metadata"`
	// Spec is the InstanceGroup spec.
	Spec InstanceGroupSpec `json:"spec"`
}

// InstanceGroupSpec is the part of a kOps InstanceGroup spec the conversion reads.
type InstanceGroupSpec struct {
	// Role is Node, ControlPlane (Master), APIServer or Bastion.
	Role string `json:"role,omitempty"`
	// Manager is CloudGroup (an Auto Scaling Group, the default) or Karpenter.
	Manager string `json:"manager,omitempty"`
	// Image is the AMI: ami-…, ssm:<parameter>, <name> or <owner>/<name>.
	Image string `json:"image,omitempty"`
	// MinSize, when positive, makes the NodePool static with that many replicas.
	MinSize *int32 `json:"minSize,omitempty"`
	// MaxSize caps the NodePool's nodes.
	MaxSize *int32 `json:"maxSize,omitempty"`
	// MachineType is one instance type or a comma-separated list.
	MachineType string `json:"machineType,omitempty"`
	// MixedInstancesPolicy lists instance types and the on-demand/spot split.
	MixedInstancesPolicy *MixedInstancesPolicy `json:"mixedInstancesPolicy,omitempty"`
	// MaxPrice makes the group spot.
	MaxPrice *string `json:"maxPrice,omitempty"`
	// SpotDurationInMinutes makes the group spot (spot blocks).
	SpotDurationInMinutes *int64 `json:"spotDurationInMinutes,omitempty"`
	// Subnets names the cluster subnets of the group; empty means every non-utility subnet.
	Subnets []string `json:"subnets,omitempty"`
	// SecurityGroupOverride replaces the kOps node security group.
	SecurityGroupOverride *string `json:"securityGroupOverride,omitempty"`
	// AdditionalSecurityGroups are added to the node security group.
	AdditionalSecurityGroups []string `json:"additionalSecurityGroups,omitempty"`
	// IAM holds a custom instance profile ARN.
	IAM *IAMProfile `json:"iam,omitempty"`
	// RootVolume is the v1alpha3 root volume block.
	RootVolume *RootVolume `json:"rootVolume,omitempty"`
	// RootVolumeSize and the other rootVolume… fields are the v1alpha2 spelling of RootVolume.
	RootVolumeSize *int32 `json:"rootVolumeSize,omitempty"`
	// RootVolumeType is the v1alpha2 spelling of RootVolume.Type.
	RootVolumeType *string `json:"rootVolumeType,omitempty"`
	// RootVolumeIOPS is the v1alpha2 spelling of RootVolume.IOPS.
	RootVolumeIOPS *int32 `json:"rootVolumeIops,omitempty"`
	// RootVolumeThroughput is the v1alpha2 spelling of RootVolume.Throughput.
	RootVolumeThroughput *int32 `json:"rootVolumeThroughput,omitempty"`
	// RootVolumeOptimization is the v1alpha2 spelling of RootVolume.Optimization.
	RootVolumeOptimization *bool `json:"rootVolumeOptimization,omitempty"`
	// RootVolumeEncryption is the v1alpha2 spelling of RootVolume.Encryption.
	RootVolumeEncryption *bool `json:"rootVolumeEncryption,omitempty"`
	// RootVolumeEncryptionKey is the v1alpha2 spelling of RootVolume.EncryptionKey.
	RootVolumeEncryptionKey *string `json:"rootVolumeEncryptionKey,omitempty"`
	// AssociatePublicIP asks for public IPs in public subnets.
	AssociatePublicIP *bool `json:"associatePublicIp,omitempty"`
	// CloudLabels are tags for the group's instances.
	CloudLabels map[string]string `json:"cloudLabels,omitempty"`
	// NodeLabels are labels of the group's nodes.
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`
	// Taints are "key=value:Effect" or "key:Effect".
	Taints []string `json:"taints,omitempty"`
	// Kubelet overrides the cluster kubelet configuration.
	Kubelet *Kubelet `json:"kubelet,omitempty"`
	// Volumes are additional volumes; Karpenter groups do not get them.
	Volumes []json.RawMessage `json:"volumes,omitempty"`
	// VolumeMounts mount the additional volumes.
	VolumeMounts []json.RawMessage `json:"volumeMounts,omitempty"`
}

// MixedInstancesPolicy is the part of a kOps mixed instances policy the conversion reads.
type MixedInstancesPolicy struct {
	// Instances are instance types.
	Instances []string `json:"instances,omitempty"`
	// InstanceRequirements are cpu and memory ranges (not used by kOps 1.36 for Karpenter).
	InstanceRequirements *InstanceRequirements `json:"instanceRequirements,omitempty"`
	// OnDemandBase is not used for Karpenter.
	OnDemandBase *int64 `json:"onDemandBase,omitempty"`
	// OnDemandAboveBase below 100 allows spot.
	OnDemandAboveBase *int64 `json:"onDemandAboveBase,omitempty"`
	// SpotAllocationStrategy is not used for Karpenter.
	SpotAllocationStrategy *string `json:"spotAllocationStrategy,omitempty"`
	// SpotInstancePools is not used for Karpenter.
	SpotInstancePools *int64 `json:"spotInstancePools,omitempty"`
}

// InstanceRequirements are cpu and memory ranges.
type InstanceRequirements struct {
	// CPU is the vCPU range.
	CPU *MinMax `json:"cpu,omitempty"`
	// Memory is the memory range.
	Memory *MinMax `json:"memory,omitempty"`
}

// MinMax is a range of quantities; either end may be open.
type MinMax struct {
	// Min is the lower bound.
	Min *resource.Quantity `json:"min,omitempty"`
	// Max is the upper bound.
	Max *resource.Quantity `json:"max,omitempty"`
}

// IAMProfile holds a custom instance profile.
type IAMProfile struct {
	// Profile is the instance profile ARN.
	Profile *string `json:"profile,omitempty"`
}

// RootVolume is the root EBS volume.
type RootVolume struct {
	// Size in GB; 0 or unset means the role's default.
	Size *int32 `json:"size,omitempty"`
	// Type is the EBS volume type; gp3 by default.
	Type *string `json:"type,omitempty"`
	// IOPS of io1, io2 and gp3 volumes.
	IOPS *int32 `json:"iops,omitempty"`
	// Throughput of gp3 volumes.
	Throughput *int32 `json:"throughput,omitempty"`
	// Optimization (EBS-optimized instances) is not mapped.
	Optimization *bool `json:"optimization,omitempty"`
	// Encryption defaults to true.
	Encryption *bool `json:"encryption,omitempty"`
	// EncryptionKey is the KMS key, used only when Encryption is set to true.
	EncryptionKey *string `json:"encryptionKey,omitempty"`
}

// rootVolume merges the v1alpha3 block and the v1alpha2 fields (the block wins).
func (s *InstanceGroupSpec) rootVolume() RootVolume {
	var v RootVolume
	if s.RootVolume != nil {
		v = *s.RootVolume
	}
	if v.Size == nil {
		v.Size = s.RootVolumeSize
	}
	if v.Type == nil {
		v.Type = s.RootVolumeType
	}
	if v.IOPS == nil {
		v.IOPS = s.RootVolumeIOPS
	}
	if v.Throughput == nil {
		v.Throughput = s.RootVolumeThroughput
	}
	if v.Optimization == nil {
		v.Optimization = s.RootVolumeOptimization
	}
	if v.Encryption == nil {
		v.Encryption = s.RootVolumeEncryption
	}
	if v.EncryptionKey == nil {
		v.EncryptionKey = s.RootVolumeEncryptionKey
	}
	return v
}

// subnets returns the cluster subnets, wherever the spec holds them.
func (s *ClusterSpec) subnets() []Subnet {
	if len(s.Subnets) > 0 || s.Networking == nil {
		return s.Subnets
	}
	return s.Networking.Subnets
}

// nodeTerminationHandler returns the node termination handler, wherever the spec holds it.
func (s *ClusterSpec) nodeTerminationHandler() *NodeTerminationHandler {
	if s.CloudProvider.AWS != nil && s.CloudProvider.AWS.NodeTerminationHandler != nil {
		return s.CloudProvider.AWS.NodeTerminationHandler
	}
	return s.NodeTerminationHandler
}

// karpenterEnabled reports whether the Karpenter addon is on.
func (s *ClusterSpec) karpenterEnabled() bool { return s.Karpenter != nil && s.Karpenter.Enabled }

// isAWS reports whether the cluster runs on AWS.
func (s *ClusterSpec) isAWS() bool { return s.CloudProvider.Name == "aws" }
