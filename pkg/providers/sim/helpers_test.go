package sim

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openkarpenter/karpenter/pkg/apis"
	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// env is the real API server the kubelet tests run against; the cloud's unit tests read
// NodeClasses from a fake client instead and do not need it.
var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// epoch is the virtual start of every test's clock.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// smallCatalog is a handful of real catalog entries, so tests can reason about prices.
func smallCatalog(t *testing.T) []catalog.Entry {
	t.Helper()
	var out []catalog.Entry
	for _, name := range []string{"c5.large", "c6g.large", "m5.large", "m5.xlarge", "m5.2xlarge", "p3.2xlarge", "r5.large"} {
		e, ok := catalog.Lookup(name)
		if !ok {
			t.Fatalf("catalog has no %s", name)
		}
		out = append(out, e)
	}
	return out
}

// testNodeClass is a valid EC2NodeClass, changed by the mutators.
func testNodeClass(name string, mutate ...func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "KarpenterNodeRole",
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@v20250101"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "sim"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "sim"}}},
		},
	}
	for _, m := range mutate {
		m(nc)
	}
	return nc
}

// fakeReader is a fake client holding objs.
func fakeReader(objs ...client.Object) client.WithWatch {
	return fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(objs...).Build()
}

// newTestCloud builds a cloud on a fake clock at epoch with the small catalog (unless opts
// names another), reading NodeClasses from a fake client holding the default NodeClass.
func newTestCloud(t *testing.T, opts Options) (*Cloud, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	opts.Clock = clk
	if opts.NodeClasses == nil {
		opts.NodeClasses = fakeReader(testNodeClass("default"))
	}
	if opts.Catalog == nil {
		opts.Catalog = smallCatalog(t)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, clk
}

// testClaim is a NodeClaim of the "default" NodePool and NodeClass with the requirements.
func testClaim(name string, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	return builders.NodeClaim(builders.NodeClaimOptions{
		Name:         name,
		NodePool:     "default",
		Requirements: append([]karpv1.NodeSelectorRequirementWithMinValues{builders.Requirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "default")}, reqs...),
	})
}

// withRequests sets the claim's resource requests, such as "cpu", "1".
func withRequests(claim *karpv1.NodeClaim, kv ...string) *karpv1.NodeClaim {
	claim.Spec.Resources.Requests = corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		claim.Spec.Resources.Requests[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return claim
}

// mustCreate launches the claim or fails the test.
func mustCreate(t *testing.T, c *Cloud, claim *karpv1.NodeClaim) *karpv1.NodeClaim {
	t.Helper()
	out, err := c.Create(context.Background(), claim)
	if err != nil {
		t.Fatalf("Create(%s): %v", claim.Name, err)
	}
	return out
}

// offeringOf reads the launched offering from a created claim's labels.
func offeringOf(claim *karpv1.NodeClaim) (instanceType, zone, capacityType string) {
	return claim.Labels[corev1.LabelInstanceTypeStable], claim.Labels[corev1.LabelTopologyZone], claim.Labels[karpv1.CapacityTypeLabelKey]
}
