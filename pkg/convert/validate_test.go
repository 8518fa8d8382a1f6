package convert_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/convert"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// TestValidateReportsAtTheInputField: a value the CRD refuses is reported at the input field
// traced to it (the same field below a traced parent, or the parsed value itself), with the
// input's file and line and the CRD's message; untraced parts are reported at the input
// object; problems come sorted by line, each once.
func TestValidateReportsAtTheInputField(t *testing.T) {
	input := `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: p
spec:
  requirements:
  - key: zone
    operator: Maybe
  taints:
  - "bad key=x:NoSchedule"
  weight: 300
`
	sources, err := convert.ReadSources("p.yaml", strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	src := sources[0]

	pool := builders.NodePool(builders.NodePoolOptions{Name: "p"}, withTypeMeta)
	pool.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
		{Key: "zone", Operator: "Maybe"},
	}
	pool.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "bad key", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
	pool.Spec.Weight = ptr.To(int32(300))
	poolDoc := convert.Document{File: "nodepool-p.yaml", Content: pool, From: &src}
	poolDoc.Trace("spec.template.spec.requirements[1]", src, "spec.requirements[0]")
	poolDoc.TraceParsed("spec.template.spec.taints[0]", src, "spec.taints[0]")

	// A second object from the same input, refused for the same input value: reported once.
	again := builders.NodePool(builders.NodePoolOptions{Name: "q"}, withTypeMeta)
	again.Spec.Weight = ptr.To(int32(300))
	class := &awsv1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.k8s.aws/v1", Kind: "EC2NodeClass"},
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "", // from an option
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{ID: "subnet-1"}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{ID: "sg-1"}},
			InstanceProfile:            ptr.To(""),
		},
	}
	classDoc := convert.Document{File: "ec2nodeclass.yaml", Content: class, From: &src}
	classDoc.TraceParsed("spec.instanceProfile", convert.Source{}, "--instance-profile")

	result := &convert.Result{}
	result.Add(poolDoc, classDoc, convert.Document{File: "values.yaml", Content: map[string]any{"weight": -1}})
	weightDoc := convert.Document{File: "other.yaml", Content: again}
	weightDoc.Trace("spec.weight", src, "spec.weight")
	poolDoc.Trace("spec.weight", src, "spec.weight")
	result.Documents[0] = poolDoc
	result.Add(weightDoc, convert.Document{File: "nodepool-p.yaml", Content: builders.NodePool(builders.NodePoolOptions{Name: "p"}, withTypeMeta), From: &src})

	got := convert.AsErrors(result.Validate()).Lines()
	want := []string{
		// The last NodePool "p" is a second object of one kind and name; untraced, it is
		// reported at its input object.
		`p.yaml:1: Provisioner "p": the NodePool "p" written from it would be refused: metadata.name: Duplicate value: "p": Provisioner "p" (p.yaml: document 1) also writes a NodePool of that name; rename one`,
		`p.yaml:8: Provisioner "p": spec.requirements[0].operator: Unsupported value: "Maybe": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte" (the NodePool "p" written from it would be refused at spec.template.spec.requirements[1].operator)`,
		`p.yaml:10: Provisioner "p": spec.taints[0]: Invalid value: "bad key": should match '^([a-z0-9]`,
		`p.yaml:11: Provisioner "p": spec.weight: Invalid value: 300: should be less than or equal to 100 (the NodePool "p" written from it would be refused at spec.weight)`,
		`--instance-profile: Invalid value: "": instanceProfile cannot be empty (the EC2NodeClass "default" written from it would be refused at spec.instanceProfile)`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d:\n got %s\nwant %s", i, got[i], w)
		}
	}

	valid := &convert.Result{}
	valid.Add(convert.Document{File: "nodepool.yaml", Content: builders.NodePool(builders.NodePoolOptions{Name: "fine"}, withTypeMeta)})
	if err := valid.Validate(); err != nil {
		t.Errorf("a valid NodePool: %v", err)
	}
}

// withTypeMeta sets the apiVersion and kind a NodePool document carries.
func withTypeMeta(np *karpv1.NodePool) {
	np.TypeMeta = metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodePool"}
}
