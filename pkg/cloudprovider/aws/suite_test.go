package aws

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/aws/fake"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
)

// env is the real API server the tests read and write NodeClasses and NodeClaims on.
var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// The cluster of seed 004.
const (
	testCluster  = "cluster-with-karpenter"
	testRole     = "eksctl-KarpenterNodeRole-cluster-with-karpenter"
	testVersion  = "1.35"
	testEndpoint = "https://0123456789ABCDEF.gr7.us-west-2.eks.amazonaws.com"
)

// fixture is one test's world: a fresh far end seeded like an eksctl cluster, a provider
// calling it through the real SDK clients, and the API server.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	aws      *fake.AWS
	clock    *clocktesting.FakeClock
	provider *Provider
}

func newFixture(t *testing.T, mutate ...func(*Options)) *fixture {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Now())
	far := fake.New(fake.Options{Region: "us-west-2", Clock: clk})
	t.Cleanup(far.Close)
	seedFarEnd(far, clk.Now())
	cfg := far.Config()
	cfg.Retryer = func() aws.Retryer { return NewRetryer(20 * time.Millisecond) }
	opts := Options{
		ClusterName:       testCluster,
		KubeClient:        env.Client,
		KubernetesVersion: func() (string, error) { return testVersion, nil },
		Clock:             clk,
		InterruptionQueue: "karpenter-interruptions",
	}
	for _, m := range mutate {
		m(&opts)
	}
	p, err := New(NewClients(cfg), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		env.Purge(t, []client.ObjectList{&karpv1.NodeClaimList{}, &awsv1.EC2NodeClassList{}, &karpv1.NodePoolList{}})
	})
	return &fixture{t: t, ctx: context.Background(), aws: far, clock: clk, provider: p}
}

// seedFarEnd creates what eksctl and AWS provide: tagged subnets in three zones (and an
// untagged one), security groups, the node role, AL2023 and Bottlerocket images with their
// SSM parameters, the EKS cluster and the interruption queue.
func seedFarEnd(far *fake.AWS, now time.Time) {
	disc := map[string]string{"karpenter.sh/discovery": testCluster}
	for i, zone := range []string{"us-west-2a", "us-west-2b", "us-west-2c"} {
		far.AddSubnet(fake.Subnet{ID: "subnet-0" + string(rune('a'+i)) + "000000000000000", Zone: zone, ZoneID: "usw2-az" + string(rune('1'+i)),
			VPCID: "vpc-1", CIDR: "10.0." + string(rune('0'+i)) + ".0/24", AvailableIPs: 250 - i, Tags: disc})
	}
	far.AddSubnet(fake.Subnet{ID: "subnet-0f000000000000000", Zone: "us-west-2a", VPCID: "vpc-1", CIDR: "10.0.9.0/24", AvailableIPs: 4000})
	far.AddSecurityGroup(fake.SecurityGroup{ID: "sg-0a00000000000000a", Name: "eksctl-nodes", VPCID: "vpc-1", Tags: disc})
	far.AddSecurityGroup(fake.SecurityGroup{ID: "sg-0b00000000000000b", Name: "other", VPCID: "vpc-1"})
	far.AddRole(testRole)
	images := []fake.Image{
		{ID: "ami-0a2023a00d6400001", Name: "amazon-eks-node-al2023-x86_64-standard-1.35-v20261101", OwnerID: "602401143452", Architecture: "x86_64", CreationDate: now.Add(-20 * 24 * time.Hour)},
		{ID: "ami-0a2023a00a6400001", Name: "amazon-eks-node-al2023-arm64-standard-1.35-v20261101", OwnerID: "602401143452", Architecture: "arm64", CreationDate: now.Add(-20 * 24 * time.Hour)},
		{ID: "ami-0a2023a00d6400000", Name: "amazon-eks-node-al2023-x86_64-standard-1.35-v20240807", OwnerID: "602401143452", Architecture: "x86_64", CreationDate: now.Add(-800 * 24 * time.Hour)},
		{ID: "ami-0b0771e0c4e786000", Name: "bottlerocket-aws-k8s-1.35-x86_64-v1.50.0", OwnerID: "092701018921", Architecture: "x86_64", CreationDate: now.Add(-10 * 24 * time.Hour)},
		{ID: "ami-0ab0124040d640000", Name: "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250101", OwnerID: "099720109477", Architecture: "x86_64", CreationDate: now.Add(-300 * 24 * time.Hour)},
	}
	deprecated := now.Add(-time.Hour)
	images = append(images, fake.Image{ID: "ami-0de0de0de0de00000", Name: "old-custom", OwnerID: "111122223333", Architecture: "x86_64", CreationDate: now.Add(-900 * 24 * time.Hour), DeprecationTime: &deprecated})
	for _, im := range images {
		far.AddImage(im)
	}
	far.PutParameter("/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/standard/recommended/image_id", "ami-0a2023a00d6400001")
	far.PutParameter("/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/arm64/standard/recommended/image_id", "ami-0a2023a00a6400001")
	far.PutParameter("/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.35-v20240807/image_id", "ami-0a2023a00d6400000")
	far.PutParameter("/aws/service/bottlerocket/aws-k8s-1.35/x86_64/latest/image_id", "ami-0b0771e0c4e786000")
	far.AddCluster(fake.Cluster{Name: testCluster, Endpoint: testEndpoint, CAData: base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")), ServiceCIDR: "10.100.0.0/16", Version: testVersion})
	far.CreateQueue("karpenter-interruptions")
}

// readManifests decodes the objects of a YAML file of pkg/apis/testdata/valid.
func readManifests(t *testing.T, name string) (nodeClasses []*awsv1.EC2NodeClass, nodePools []*karpv1.NodePool) {
	t.Helper()
	raw, err := os.ReadFile("../../apis/testdata/valid/" + name)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatal(err)
		}
		switch tm.Kind {
		case "EC2NodeClass":
			nc := &awsv1.EC2NodeClass{}
			if err := yaml.UnmarshalStrict(doc, nc); err != nil {
				t.Fatal(err)
			}
			nodeClasses = append(nodeClasses, nc)
		case "NodePool":
			np := &karpv1.NodePool{}
			if err := yaml.UnmarshalStrict(doc, np); err != nil {
				t.Fatal(err)
			}
			nodePools = append(nodePools, np)
		}
	}
	return nodeClasses, nodePools
}

// applyNodeClass creates the NodeClass on the API server and reconciles it once.
func (f *fixture) applyNodeClass(nc *awsv1.EC2NodeClass) *awsv1.EC2NodeClass {
	f.t.Helper()
	if err := env.Client.Create(f.ctx, nc); err != nil {
		f.t.Fatalf("creating ec2nodeclass: %v", err)
	}
	return f.reconcile(nc.Name)
}

// reconcile runs the NodeClass controller once and returns the NodeClass it wrote.
func (f *fixture) reconcile(name string) *awsv1.EC2NodeClass {
	f.t.Helper()
	if _, err := NewNodeClassController(f.provider).Reconcile(f.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
		f.t.Fatalf("reconciling ec2nodeclass %s: %v", name, err)
	}
	nc := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(f.ctx, client.ObjectKey{Name: name}, nc); err != nil {
		f.t.Fatal(err)
	}
	return nc
}

// condition returns the NodeClass's condition of the type (status and message).
func condition(nc *awsv1.EC2NodeClass, t string) (metav1.ConditionStatus, string) {
	c := meta.FindStatusCondition(nc.Status.Conditions, t)
	if c == nil {
		return "", ""
	}
	return c.Status, c.Message
}
