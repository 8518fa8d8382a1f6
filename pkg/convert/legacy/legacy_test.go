package legacy_test

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"

	"github.com/openkarpenter/karpenter/pkg/convert"
	"github.com/openkarpenter/karpenter/pkg/convert/internal/golden"
	"github.com/openkarpenter/karpenter/pkg/convert/legacy"
)

// TestGolden converts every testdata case and compares the outcome with its golden files.
func TestGolden(t *testing.T) {
	for _, c := range golden.Cases(t, "testdata") {
		t.Run(c.Name, func(t *testing.T) {
			result, err := ConvertCase(t, c)
			golden.Check(t, c, golden.OutcomeOf(t, result, err))
		})
	}
}

// ConvertCase runs the conversion of a case with its options.yaml.
func ConvertCase(t testing.TB, c golden.Case) (*convert.Result, error) {
	t.Helper()
	var opts legacy.Options
	c.Options(t, &opts)
	return legacy.Convert(c.Sources(t), opts)
}

// TestSeed003MeansTheSame checks the meaning, not just the text, of the seed's reference
// Provisioner once converted: same nodes allowed, same limits, same emptiness rule.
func TestSeed003MeansTheSame(t *testing.T) {
	c := golden.Case{Name: "seed-003", Dir: "testdata/seed-003"}
	result, err := legacy.Convert(c.Sources(t), legacy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pool, class := golden.PoolAndClass(t, result)
	if pool.Name != "default" || pool.Spec.Template.Spec.NodeClassRef.Name != class.Name {
		t.Errorf("NodePool %q refers to %q, EC2NodeClass is %q", pool.Name, pool.Spec.Template.Spec.NodeClassRef.Name, class.Name)
	}
	if got := pool.Spec.Template.Labels["node-type"]; got != "worker" {
		t.Errorf("label node-type = %q", got)
	}
	want := map[string][]string{
		"karpenter.sh/capacity-type":       {"spot"},
		"node.kubernetes.io/instance-type": {"m5.large", "m5.xlarge", "c5.xlarge"},
		"kubernetes.io/os":                 {"linux"},
		"kubernetes.io/arch":               {"amd64"},
	}
	for _, r := range pool.Spec.Template.Spec.Requirements {
		if r.Operator != corev1.NodeSelectorOpIn || !reflect.DeepEqual(r.Values, want[r.Key]) {
			t.Errorf("unexpected requirement %+v", r)
		}
		delete(want, r.Key)
	}
	if len(want) > 0 {
		t.Errorf("missing requirements %v", want)
	}
	if cpu := pool.Spec.Limits["cpu"]; cpu.Cmp(resource.MustParse("1000")) != 0 {
		t.Errorf("cpu limit = %s", cpu.String())
	}
	d := pool.Spec.Disruption
	if d.ConsolidationPolicy != karpv1.ConsolidationPolicyWhenEmpty || d.ConsolidateAfter.Duration == nil || *d.ConsolidateAfter.Duration != 30*time.Second {
		t.Errorf("disruption = %s after %s, want WhenEmpty after 30s", d.ConsolidationPolicy, d.ConsolidateAfter)
	}
	if !pool.Spec.Template.Spec.ExpireAfter.IsNever() || pool.Spec.Template.Spec.ExpireAfter.IsZero() {
		t.Errorf("expireAfter = %s, want Never (v0.x did not expire nodes)", pool.Spec.Template.Spec.ExpireAfter)
	}
	if !reflect.DeepEqual(class.Spec.SubnetSelectorTerms, []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"kubernetes.io/cluster/my-cluster": "*"}}}) {
		t.Errorf("subnets %+v", class.Spec.SubnetSelectorTerms)
	}
	if !reflect.DeepEqual(class.Spec.SecurityGroupSelectorTerms, []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"aws:eks:cluster-name": "my-cluster"}}}) {
		t.Errorf("security groups %+v", class.Spec.SecurityGroupSelectorTerms)
	}
	if class.Spec.InstanceProfile == nil || *class.Spec.InstanceProfile != "KarpenterNodeInstanceProfile-my-cluster" {
		t.Errorf("instance profile %v", class.Spec.InstanceProfile)
	}
	if !reflect.DeepEqual(class.Spec.AMISelectorTerms, []awsv1.AMISelectorTerm{{Alias: "al2@latest"}}) {
		t.Errorf("AMIs %+v, want the AL2 default of v0.x", class.Spec.AMISelectorTerms)
	}
}

// TestLongestTTLsConvert: the longest TTLs v1 durations hold (see error-ttl-too-long for one
// second more) convert to durations Karpenter reads back as the same number of seconds.
func TestLongestTTLsConvert(t *testing.T) {
	input := `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: longest}
spec:
  ttlSecondsAfterEmpty: 9223372036
  ttlSecondsUntilExpired: 9223372036
  providerRef: {name: default}
---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: default}
spec:
  subnetSelector: {karpenter.sh/discovery: my-cluster}
  securityGroupSelector: {karpenter.sh/discovery: my-cluster}
  instanceProfile: KarpenterNodeInstanceProfile-my-cluster
`
	sources, err := convert.ReadSources("longest.yaml", strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	result, err := legacy.Convert(sources, legacy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pool, _ := golden.PoolAndClass(t, result)
	u, data := golden.Unstructured(t, convert.Document{Content: pool})
	for _, path := range [][]string{{"spec", "template", "spec", "expireAfter"}, {"spec", "disruption", "consolidateAfter"}} {
		text, _, _ := unstructured.NestedString(u.Object, path...)
		var read karpv1.NillableDuration
		if err := read.UnmarshalJSON([]byte(strconv.Quote(text))); err != nil || read.Duration == nil || *read.Duration != 9223372036*time.Second {
			t.Errorf("%s = %q reads back as %v (%v), want 9223372036s\n%s", strings.Join(path, "."), text, read, err, data)
		}
	}
}
