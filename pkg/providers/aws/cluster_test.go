package aws

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
)

// TestClusterCIDRIsRetried: while DescribeCluster fails, the cluster's service CIDR is unknown,
// so an AL2023 NodeClass is not Ready (ValidationSucceeded False, ClusterCIDRNotFound) and no
// node is launched with a NodeConfig nodeadm would refuse; the failure is remembered only for
// clusterInfoRetry (EKS is not asked again within it), and once EKS answers, the NodeClass
// becomes Ready at its next retry and nodes get the CIDR.
func TestClusterCIDRIsRetried(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.ClusterName, o.ClusterEndpoint, o.ClusterCABundle = "late-cluster", "https://late.example.com", []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	})
	nc, np := f.seed004()
	if s, msg := condition(nc, awsv1.ConditionTypeValidationSucceeded); s != metav1.ConditionFalse || !strings.Contains(msg, "service CIDR is not known yet") {
		t.Fatalf("ValidationSucceeded = %s %q, want False: the CIDR is unknown", s, msg)
	}
	if s, _ := condition(nc, awsv1.ConditionTypeReady); s != metav1.ConditionFalse {
		t.Fatalf("Ready = %s, want False", s)
	}
	claim := claimFor(np, "late", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
	if _, err := f.provider.Create(f.ctx, claim); !cloudprovider.IsNodeClassNotReadyError(err) {
		t.Fatalf("Create: %v, want NodeClassNotReady", err)
	}
	if n := f.aws.Calls("CreateFleet"); n != 0 {
		t.Fatalf("%d fleets launched without the cluster CIDR", n)
	}
	asked := f.aws.Calls("DescribeCluster")
	f.aws.AddCluster(fake.Cluster{Name: "late-cluster", Endpoint: "https://late.example.com", ServiceCIDR: "172.20.0.0/16", Version: testVersion})
	if nc = f.reconcile(nc.Name); meta.IsStatusConditionTrue(nc.Status.Conditions, awsv1.ConditionTypeReady) {
		t.Fatal("Ready within clusterInfoRetry of the failed DescribeCluster")
	}
	if n := f.aws.Calls("DescribeCluster"); n != asked {
		t.Fatalf("DescribeCluster called %d times more within clusterInfoRetry of its failure", n-asked)
	}
	f.clock.Step(clusterInfoRetry)
	nc = f.reconcile(nc.Name)
	if s, msg := condition(nc, awsv1.ConditionTypeReady); s != metav1.ConditionTrue {
		t.Fatalf("Ready = %s %q once EKS answers", s, msg)
	}
	if _, err := f.provider.Create(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	if lts := f.launchTemplates(); len(lts) == 0 || !strings.Contains(lts[0].UserData, "cidr: 172.20.0.0/16") {
		t.Errorf("launch templates %d; the user data lacks the cluster CIDR", len(lts))
	}
}

// TestFailedDescribeClusterIsSharedByLaunches: with the endpoint given in the options, a
// NodeClass that does not need the service CIDR (AL2) launches while DescribeCluster fails;
// the launch templates of a launch and the launches that follow within clusterInfoRetry share
// one failed DescribeCluster, and EKS is asked again after it.
func TestFailedDescribeClusterIsSharedByLaunches(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.ClusterName, o.ClusterEndpoint = "no-eks", "https://no-eks.example.com"
	})
	f.aws.PutParameter("/aws/service/eks/optimized-ami/"+testVersion+"/amazon-linux-2/recommended/image_id", "ami-0a2023a00d6400001")
	f.aws.PutParameter("/aws/service/eks/optimized-ami/"+testVersion+"/amazon-linux-2-arm64/recommended/image_id", "ami-0a2023a00a6400001")
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	nc := ncs[0]
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2@latest"}}
	if nc = f.applyNodeClass(nc); !meta.IsStatusConditionTrue(nc.Status.Conditions, awsv1.ConditionTypeReady) {
		t.Fatalf("the AL2 nodeclass is not ready: %v", nc.Status.Conditions)
	}
	launch := func(name string) {
		t.Helper()
		if _, err := f.provider.Create(f.ctx, claimFor(nps[0], name, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})); err != nil {
			t.Fatal(err)
		}
	}
	launch("first")
	if n := len(f.launchTemplates()); n < 2 {
		t.Fatalf("%d launch templates, want several (each asks for the cluster)", n)
	}
	launch("second")
	if n := f.aws.Calls("DescribeCluster"); n != 1 {
		t.Errorf("DescribeCluster called %d times by two launches within clusterInfoRetry, want 1", n)
	}
	f.clock.Step(clusterInfoRetry)
	launch("third")
	if n := f.aws.Calls("DescribeCluster"); n != 2 {
		t.Errorf("DescribeCluster called %d times, want once more after clusterInfoRetry", n)
	}
}
