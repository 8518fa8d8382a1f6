package eksctl_test

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/convert"
	"github.com/openkarpenter/karpenter/pkg/convert/eksctl"
	"github.com/openkarpenter/karpenter/pkg/convert/internal/golden"
)

// TestGolden converts every testdata case and compares the outcome with its golden files.
func TestGolden(t *testing.T) {
	for _, c := range golden.Cases(t, "testdata") {
		t.Run(c.Name, func(t *testing.T) {
			var opts eksctl.Options
			c.Options(t, &opts)
			result, err := eksctl.Convert(c.Sources(t), opts)
			golden.Check(t, c, golden.OutcomeOf(t, result, err))
		})
	}
}

// TestSeed004Manifests checks the NodePool and EC2NodeClass of eksctl's documentation (seed
// 004) as written: the CRDs accept them, and the starter objects written for the seed's
// ClusterConfig select the same nodes, subnets, security groups, role and images.
func TestSeed004Manifests(t *testing.T) {
	c := golden.Case{Name: "seed-004", Dir: "testdata/seed-004"}
	var seedPool *karpv1.NodePool
	var seedClass *awsv1.EC2NodeClass
	seed := &convert.Result{}
	for _, src := range c.SourcesOf(t, "manifests.yaml") {
		var obj runtime.Object
		switch src.Kind {
		case "NodePool":
			seedPool = &karpv1.NodePool{}
			obj = seedPool
		case "EC2NodeClass":
			seedClass = &awsv1.EC2NodeClass{}
			obj = seedClass
		default:
			t.Fatalf("%s: unexpected %s", src, src.Object())
		}
		problems, err := convert.DecodeStrict(src.JSON, obj)
		if err != nil || len(problems) > 0 {
			t.Fatalf("%s: %v %v", src, err, problems)
		}
		seed.Add(convert.Document{Content: obj})
	}
	if seedPool == nil || seedClass == nil {
		t.Fatal("want the seed's NodePool and EC2NodeClass")
	}
	golden.Validate(t, seed)

	result, err := eksctl.Convert(c.Sources(t), eksctl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pool, class := golden.PoolAndClass(t, result)
	if pool.Name != seedPool.Name || class.Name != seedClass.Name {
		t.Errorf("names %q and %q, want the seed's %q and %q", pool.Name, class.Name, seedPool.Name, seedClass.Name)
	}
	if !reflect.DeepEqual(pool.Spec.Template.Spec.Requirements, seedPool.Spec.Template.Spec.Requirements) {
		t.Errorf("requirements\n%+v\nwant the seed's\n%+v", pool.Spec.Template.Spec.Requirements, seedPool.Spec.Template.Spec.Requirements)
	}
	if !reflect.DeepEqual(pool.Spec.Template.Spec.NodeClassRef, seedPool.Spec.Template.Spec.NodeClassRef) {
		t.Errorf("nodeClassRef %+v, want %+v", pool.Spec.Template.Spec.NodeClassRef, seedPool.Spec.Template.Spec.NodeClassRef)
	}
	got, want := class.Spec, seedClass.Spec
	if got.Role != want.Role || !reflect.DeepEqual(got.SubnetSelectorTerms, want.SubnetSelectorTerms) ||
		!reflect.DeepEqual(got.SecurityGroupSelectorTerms, want.SecurityGroupSelectorTerms) ||
		!reflect.DeepEqual(got.AMISelectorTerms, want.AMISelectorTerms) {
		t.Errorf("EC2NodeClass spec\n%+v\nwant the seed's\n%+v", got, want)
	}
}
