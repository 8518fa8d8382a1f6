package apiserver

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// Lookup reads the object key names through reader; nil when it does not exist. Any other
// error fails the test.
//
//	claim := apiserver.Lookup[karpv1.NodeClaim](t, env.Client, client.ObjectKey{Name: name})
func Lookup[T any, PT interface {
	*T
	client.Object
}](t testing.TB, reader client.Reader, key client.ObjectKey) PT {
	t.Helper()
	obj := PT(new(T))
	if err := reader.Get(context.Background(), key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatalf("getting %T %s: %v", obj, key, err)
	}
	return obj
}

// EnsureNodeClass creates the EC2NodeClass of that name that the simulated cloud's tests launch
// from (AL2023, subnets and security groups tagged karpenter.sh/discovery: sim), unless it
// exists. It is left for the package's later tests.
func (e *Env) EnsureNodeClass(t testing.TB, name string) {
	t.Helper()
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "KarpenterNodeRole",
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@v20250101"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "sim"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "sim"}}},
		},
	}
	if err := e.Client.Create(context.Background(), nc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating ec2nodeclass %s: %v", name, err)
	}
}
