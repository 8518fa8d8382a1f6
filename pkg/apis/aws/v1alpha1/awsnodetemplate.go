package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// AWSNodeTemplate is the legacy (Karpenter v0.x) AWS configuration a Provisioner referenced by
// providerRef. Replaced by EC2NodeClass; convert with `karpenter convert legacy`.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=awsnodetemplates,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="karpenter.k8s.aws/v1alpha1 AWSNodeTemplate is replaced by karpenter.k8s.aws/v1 EC2NodeClass; run `karpenter convert legacy` to migrate"
type AWSNodeTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the AWS configuration.
	Spec AWSNodeTemplateSpec `json:"spec,omitempty"`
	// Status is what the selectors resolved to.
	Status AWSNodeTemplateStatus `json:"status,omitempty"`
}

// AWSNodeTemplateSpec is the AWS configuration of a Provisioner's nodes.
type AWSNodeTemplateSpec struct {
	// UserData is merged into the instance's user data.
	// +optional
	UserData *string `json:"userData,omitempty"`
	// AWS holds the fields shared with a Provisioner's inline provider block.
	AWS `json:",inline"`
	// AMISelector selects images by tags (and the aws::ids, aws::name, aws::owners keys).
	// +optional
	AMISelector map[string]string `json:"amiSelector,omitempty"`
	// DetailedMonitoring turns on one-minute CloudWatch metrics.
	// +optional
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
}

// AWS is the legacy AWS provider configuration, inline in a Provisioner's spec.provider or in
// an AWSNodeTemplate's spec.
type AWS struct {
	// AMIFamily is AL2, Bottlerocket, Ubuntu, Windows2019, Windows2022 or Custom.
	// +optional
	AMIFamily *string `json:"amiFamily,omitempty"`
	// Context is the Context ID for special placement.
	// +optional
	Context *string `json:"context,omitempty"`
	// InstanceProfile is the IAM instance profile of the nodes.
	// +optional
	InstanceProfile *string `json:"instanceProfile,omitempty"`
	// SubnetSelector selects subnets by tags ("*" matches any value; aws-ids lists IDs).
	// +optional
	SubnetSelector map[string]string `json:"subnetSelector,omitempty"`
	// SecurityGroupSelector selects security groups by tags (aws-ids lists IDs).
	// +optional
	SecurityGroupSelector map[string]string `json:"securityGroupSelector,omitempty"`
	// Tags are put on the instances and volumes.
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// LaunchTemplate holds the launch-template fields.
	LaunchTemplate `json:",inline"`
}

// LaunchTemplate is the legacy launch-template configuration: either a named, user-managed
// launch template, or metadata options and block devices for Karpenter's own.
type LaunchTemplate struct {
	// LaunchTemplateName names a user-managed launch template. EC2NodeClass has no equivalent.
	// +optional
	LaunchTemplateName *string `json:"launchTemplate,omitempty"`
	// MetadataOptions configure the instance metadata service.
	// +optional
	MetadataOptions *awsv1.MetadataOptions `json:"metadataOptions,omitempty"`
	// BlockDeviceMappings are the instance's EBS volumes.
	// +optional
	BlockDeviceMappings []*awsv1.BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
}

// AWSNodeTemplateStatus is what an AWSNodeTemplate's selectors resolved to.
type AWSNodeTemplateStatus struct {
	// Subnets that matched.
	// +optional
	Subnets []awsv1.Subnet `json:"subnets,omitempty"`
	// SecurityGroups that matched.
	// +optional
	SecurityGroups []awsv1.SecurityGroup `json:"securityGroups,omitempty"`
	// AMIs that matched.
	// +optional
	AMIs []awsv1.AMI `json:"amis,omitempty"`
}

// AWSNodeTemplateList is a list of AWSNodeTemplates.
//
// +kubebuilder:object:root=true
type AWSNodeTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the AWSNodeTemplates.
	Items []AWSNodeTemplate `json:"items"`
}
