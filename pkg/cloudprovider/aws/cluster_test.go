package aws

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/aws/fake"
)

// TestClusterCIDRIsRetried: while DescribeCluster fails, the cluster's service CIDR is unknown,
// so an AL2023 NodeClass is not Ready (ValidationSucceeded False, ClusterCIDRNotFound) and no
// node is launched with a NodeConfig nodeadm would refuse; the failure is not remembered, and
// once EKS answers, the NodeClass becomes Ready and nodes get the CIDR.
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
	f.aws.AddCluster(fake.Cluster{Name: "late-cluster", Endpoint: "https://late.example.com", ServiceCIDR: "172.20.0.0/16", Version: testVersion})
	nc = f.reconcile(nc.Name)
	if s, msg := condition(nc, awsv1.ConditionTypeReady); s != metav1.ConditionTrue {
		t.Fatalf("Ready = %s %q once EKS answers", s, msg)
	}
	if _, err := f.provider.Create(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	if lts := f.aws.LaunchTemplates(); len(lts) == 0 || !strings.Contains(lts[0].UserData, "cidr: 172.20.0.0/16") {
		t.Errorf("launch templates %d; the user data lacks the cluster CIDR", len(lts))
	}
}
