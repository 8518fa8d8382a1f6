package eksctl

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// Names of the starter objects, as in eksctl's documentation.
const (
	starterNodeClass = "default"
	starterNodePool  = "general-purpose"
	descriptionKey   = "kubernetes.io/description"
)

// ec2NodeClass is the starter EC2NodeClass eksctl's documentation asks users to write: the
// eksctl node role, subnets and security groups found by the discovery tag, AL2023 images.
func (c *cluster) ec2NodeClass() *awsv1.EC2NodeClass {
	discovery := map[string]string{discoveryTag: c.discoveryValue()}
	return &awsv1.EC2NodeClass{
		TypeMeta: metav1.TypeMeta{APIVersion: awsv1.SchemeGroupVersion.String(), Kind: "EC2NodeClass"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        starterNodeClass,
			Annotations: map[string]string{descriptionKey: "General purpose EC2NodeClass for running Amazon Linux 2023 nodes"},
		},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       c.nodeRoleName(),
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: discovery}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: discovery}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		},
	}
}

// nodePool is the starter NodePool of eksctl's documentation, with a CPU limit and
// consolidation so that it starts bounded and tidy.
func (c *cluster) nodePool() *karpv1.NodePool {
	in := func(key string, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
		return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	return &karpv1.NodePool{
		TypeMeta: metav1.TypeMeta{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        starterNodePool,
			Annotations: map[string]string{descriptionKey: "General purpose NodePool for generic workloads"},
		},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
					in(corev1.LabelArchStable, "amd64"),
					in(corev1.LabelOSStable, string(corev1.Linux)),
					in(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand),
					in(awsv1.LabelInstanceCategory, "c", "m", "r"),
					{Key: awsv1.LabelInstanceGeneration, Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}},
				},
				NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: starterNodeClass},
			}},
			Limits: karpv1.Limits{corev1.ResourceCPU: resource.MustParse("1000")},
			Disruption: karpv1.Disruption{
				ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				ConsolidateAfter:    karpv1.MustParseNillableDuration("1m"),
			},
		},
	}
}

// starterComment introduces the starter objects.
func (c *cluster) starterComment() string {
	return fmt.Sprintf("nodepool.yaml: a first EC2NodeClass and NodePool for EKS cluster %s, selecting subnets and security groups tagged %s=%s.",
		c.name, discoveryTag, c.discoveryValue())
}
