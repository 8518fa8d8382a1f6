// Package apis gathers the project's API groups: karpenter.sh (v1 NodePool and NodeClaim,
// v1alpha1 NodeOverlay, legacy v1alpha5 Provisioner), karpenter.k8s.aws (v1 EC2NodeClass,
// legacy v1alpha1 AWSNodeTemplate) and autoscaling.x-k8s.io (v1beta1 CapacityBuffer).
// Subpackages hold the types; this one registers them together.
package apis

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	autoscalingv1beta1 "github.com/openkarpenter/karpenter/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	awsv1alpha1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1alpha1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	karpv1alpha1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha1"
	karpv1alpha5 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1alpha5"
)

var builder = runtime.SchemeBuilder{
	karpv1.AddToScheme,
	karpv1alpha1.AddToScheme,
	karpv1alpha5.AddToScheme,
	awsv1.AddToScheme,
	awsv1alpha1.AddToScheme,
	autoscalingv1beta1.AddToScheme,
}

// AddToScheme adds every API group of the project to a scheme.
var AddToScheme = builder.AddToScheme

// NewScheme returns a scheme with the Kubernetes built-in types and the project's APIs.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := AddToScheme(scheme); err != nil {
		panic(err)
	}
	return scheme
}
