package eksctl

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// APIVersion and Kind of the one document read.
const (
	APIVersion = "eksctl.io/v1alpha5"
	Kind       = "ClusterConfig"
)

// ClusterConfig is the part of an eksctl ClusterConfig the conversion reads.
type ClusterConfig struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata names the cluster.
	Metadata ClusterMeta `json:"metadata"`
	// IAM holds the OIDC switch and the permissions boundary.
	IAM *ClusterIAM `json:"iam,omitempty"`
	// Karpenter is the karpenter section.
	Karpenter *Karpenter `json:"karpenter,omitempty"`
	// Outpost places the control plane on an Outpost, where Karpenter is not supported.
	Outpost *Outpost `json:"outpost,omitempty"`
	// VPC says whether eksctl creates the VPC (and tags its subnets) or uses an existing one.
	VPC *VPC `json:"vpc,omitempty"`
	// Addons are the EKS addons eksctl installs; only their names are read.
	Addons []Addon `json:"addons,omitempty"`
	// AddonsConfig can turn off the default addons, VPC CNI among them.
	AddonsConfig *AddonsConfig `json:"addonsConfig,omitempty"`
	// AutoModeConfig turns EKS Auto Mode on, which needs no VPC CNI addon.
	AutoModeConfig *AutoModeConfig `json:"autoModeConfig,omitempty"`
}

// Addon is one entry of the addons section.
type Addon struct {
	// Name of the EKS addon, such as vpc-cni.
	Name string `json:"name,omitempty"`
}

// AddonsConfig is the part of the addonsConfig section the conversion reads.
type AddonsConfig struct {
	// DisableDefaultAddons leaves out the addons eksctl installs by default (VPC CNI,
	// kube-proxy, CoreDNS) unless the addons section lists them.
	DisableDefaultAddons bool `json:"disableDefaultAddons,omitempty"`
}

// AutoModeConfig is the part of the autoModeConfig section the conversion reads.
type AutoModeConfig struct {
	// Enabled turns EKS Auto Mode on.
	Enabled *bool `json:"enabled,omitempty"`
}

// ClusterMeta is the cluster's name, region, Kubernetes version and tags.
type ClusterMeta struct {
	// Name of the EKS cluster.
	Name string `json:"name"`
	// Region of the cluster.
	Region string `json:"region,omitempty"`
	// Version is the Kubernetes version.
	Version string `json:"version,omitempty"`
	// Tags go on every CloudFormation stack, and so on what the stacks create.
	Tags map[string]string `json:"tags,omitempty"`
}

// ClusterIAM is the part of the iam section the conversion reads.
type ClusterIAM struct {
	// WithOIDC creates the IAM OIDC provider IRSA needs; Karpenter forbids only false.
	WithOIDC *bool `json:"withOIDC,omitempty"`
	// ServiceRolePermissionsBoundary is the permissions boundary of the roles eksctl creates.
	ServiceRolePermissionsBoundary *string `json:"serviceRolePermissionsBoundary,omitempty"`
}

// Karpenter is the karpenter section.
type Karpenter struct {
	// Version of Karpenter's Helm chart; required.
	Version string `json:"version"`
	// CreateServiceAccount lets the chart create the service account (eksctl creates it
	// otherwise).
	CreateServiceAccount *bool `json:"createServiceAccount,omitempty"`
	// DefaultInstanceProfile names the instance profile eksctl creates for the nodes.
	DefaultInstanceProfile *string `json:"defaultInstanceProfile,omitempty"`
	// WithSpotInterruptionQueue creates the interruption queue and its rules.
	WithSpotInterruptionQueue *bool `json:"withSpotInterruptionQueue,omitempty"`
}

// Outpost is the part of the outpost section the conversion reads.
type Outpost struct {
	// ControlPlaneOutpostARN is the Outpost of the control plane.
	ControlPlaneOutpostARN string `json:"controlPlaneOutpostARN,omitempty"`
}

// VPC is the part of the vpc section the conversion reads.
type VPC struct {
	// ID of an existing VPC.
	ID string `json:"id,omitempty"`
	// Subnets lists existing subnets by zone.
	Subnets *ClusterSubnets `json:"subnets,omitempty"`
}

// ClusterSubnets are the cluster's subnets by zone (or by name).
type ClusterSubnets struct {
	// Private subnets.
	Private map[string]Subnet `json:"private,omitempty"`
	// Public subnets.
	Public map[string]Subnet `json:"public,omitempty"`
}

// Subnet is one subnet of the vpc section.
type Subnet struct {
	// ID of an existing subnet.
	ID string `json:"id,omitempty"`
}

func isTrue(b *bool) bool { return b != nil && *b }
