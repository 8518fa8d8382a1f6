package aws

import (
	"bufio"
	"bytes"
	"context"
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
	"github.com/openkarpenter/karpenter/pkg/providers/aws/fake"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
)

// env is the real API server the tests read and write NodeClasses and NodeClaims on.
var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// The cluster of seed 004.
const (
	testCluster  = fake.SeedClusterName
	testRole     = fake.SeedNodeRole
	testVersion  = fake.SeedKubernetesVersion
	testEndpoint = fake.SeedClusterEndpoint
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
	far.SeedEKS(clk.Now())
	cfg := far.Config()
	cfg.Retryer = func() aws.Retryer { return NewRetryer(20 * time.Millisecond) }
	opts := Options{
		ClusterName:       testCluster,
		KubeClient:        env.Client,
		KubernetesVersion: func() (string, error) { return testVersion, nil },
		Clock:             clk,
		InterruptionQueue: "karpenter-interruptions",
		Refresh:           DefaultRefreshIntervals,
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

// launchTemplates are the fake's launch templates made for launches, in creation order: not the
// one the NodeClass's launch check made (checkLaunch), which is of no NodePool.
func (f *fixture) launchTemplates() []fake.LaunchTemplate {
	var out []fake.LaunchTemplate
	for _, lt := range f.aws.LaunchTemplates() {
		if lt.Tags[TagNodePool] != "" {
			out = append(out, lt)
		}
	}
	return out
}
