package kops

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

func TestAMISelectorTerm(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  awsv1.AMISelectorTerm
		err   string
	}{
		{image: "ami-0123456789abcdef0", want: awsv1.AMISelectorTerm{ID: "ami-0123456789abcdef0"}},
		{image: "  ami-0123456789abcdef0\n", want: awsv1.AMISelectorTerm{ID: "ami-0123456789abcdef0"}},
		{image: "ssm:/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id",
			want: awsv1.AMISelectorTerm{SSMParameter: "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"}},
		{image: "my-golden-image", want: awsv1.AMISelectorTerm{Name: "my-golden-image", Owner: "self"}},
		{image: "amazon/al2023-ami-*", want: awsv1.AMISelectorTerm{Owner: "137112412989", Name: "al2023-ami-*"}},
		{image: "amazon.com/x", want: awsv1.AMISelectorTerm{Owner: "137112412989", Name: "x"}},
		{image: "debian/x", want: awsv1.AMISelectorTerm{Owner: "136693071363", Name: "x"}},
		{image: "debian11/x", want: awsv1.AMISelectorTerm{Owner: "136693071363", Name: "x"}},
		{image: "flatcar/x", want: awsv1.AMISelectorTerm{Owner: "075585003325", Name: "x"}},
		{image: "redhat/x", want: awsv1.AMISelectorTerm{Owner: "309956199498", Name: "x"}},
		{image: "redhat.com/x", want: awsv1.AMISelectorTerm{Owner: "309956199498", Name: "x"}},
		{image: "ubuntu/ubuntu/images/hvm-ssd/x", want: awsv1.AMISelectorTerm{Owner: "099720109477", Name: "ubuntu/images/hvm-ssd/x"}},
		{image: "rocky/x", want: awsv1.AMISelectorTerm{Owner: "792107900819", Name: "x"}},
		{image: "rockylinux/x", want: awsv1.AMISelectorTerm{Owner: "792107900819", Name: "x"}},
		{image: "123456789012/team/image", want: awsv1.AMISelectorTerm{Owner: "123456789012", Name: "team/image"}},
		{image: "", err: "image is required"},
		{image: "   ", err: "image is required"},
		{image: "ssm:", err: "ssm image parameter is required"},
		{image: "https://example.com/image", err: `image "https://example.com/image" must be ami-*, ssm:<parameter>, <name>, or <owner>/<name>`},
		{image: "/name", err: `image "/name" must be ami-*, ssm:<parameter>, <name>, or <owner>/<name>`},
		{image: "owner/", err: `image "owner/" must be ami-*, ssm:<parameter>, <name>, or <owner>/<name>`},
	} {
		got, err := amiSelectorTerm(tc.image)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: got error %v, want %q", tc.image, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %+v, %v; want %+v", tc.image, got, err, tc.want)
		}
	}
}

// FuzzAMISelectorTerm checks that any image either fails or yields exactly one kind of term.
func FuzzAMISelectorTerm(f *testing.F) {
	for _, seed := range []string{"ami-1", "ssm:/a/b", "name", "owner/name/x", "/x", "x/", "a://b", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, image string) {
		term, err := amiSelectorTerm(image)
		if err != nil {
			return
		}
		kinds := 0
		for _, set := range []bool{term.ID != "", term.SSMParameter != "", term.Name != ""} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			t.Fatalf("%q gave term %+v", image, term)
		}
		if term.Name != "" && term.Owner == "" {
			t.Fatalf("%q: a name term without owner: %+v", image, term)
		}
	})
}

func TestStaticCapacityEnabled(t *testing.T) {
	for _, tc := range []struct {
		gates string
		nil   bool
		want  bool
	}{
		{nil: true, want: true},
		{gates: "", want: true},
		{gates: "   ", want: false},
		{gates: "StaticCapacity=true", want: true},
		{gates: "StaticCapacity=TRUE", want: true},
		{gates: "StaticCapacity=false", want: false},
		{gates: "ReservedCapacity=true,SpotToSpotConsolidation=false", want: false},
		{gates: "StaticCapacity=false,StaticCapacity=True", want: true},
		{gates: "StaticCapacity=true,StaticCapacity=no", want: false},
		{gates: "ReservedCapacity=true, StaticCapacity=true", want: true},
		{gates: "StaticCapacity", want: false},
	} {
		k := &Karpenter{Enabled: true, FeatureGates: tc.gates}
		if tc.nil {
			k = nil
		}
		if got := staticCapacityEnabled(k); got != tc.want {
			t.Errorf("featureGates %q: got %v, want %v", tc.gates, got, tc.want)
		}
	}
}

func TestTruncateName(t *testing.T) {
	short := "nodes.my-cluster.example.com"
	if got := truncateName(short, maxIAMNameLength); got != short {
		t.Errorf("short name changed: %q", got)
	}
	long := "nodes." + strings.Repeat("very-long-cluster-name.", 4) + "example.com"
	got := truncateName(long, maxIAMNameLength)
	if len(got) != maxIAMNameLength || !strings.HasPrefix(got, long[:maxIAMNameLength-7]+"-") {
		t.Errorf("got %q (%d characters)", got, len(got))
	}
	other := truncateName(long+"x", maxIAMNameLength)
	if other == got {
		t.Errorf("two long names truncate to the same %q", got)
	}
}

func TestParseTaint(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want corev1.Taint
		err  string
	}{
		{spec: "dedicated=batch:NoSchedule", want: corev1.Taint{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}},
		{spec: "nvidia.com/gpu:NoExecute", want: corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoExecute}},
		{spec: "example.com/empty=:PreferNoSchedule", want: corev1.Taint{Key: "example.com/empty", Effect: corev1.TaintEffectPreferNoSchedule}},
		{spec: "dedicated=batch", err: "invalid taint spec: dedicated=batch"},
		{spec: "dedicated=batch:Never", err: "invalid taint effect: Never, unsupported taint effect"},
		{spec: "a=b=c:NoSchedule", err: "invalid taint spec: a=b=c:NoSchedule"},
		{spec: "=b:NoSchedule", err: "invalid taint spec: =b:NoSchedule"},
	} {
		got, err := parseTaint(tc.spec)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: got error %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v", tc.spec, got, err, tc.want)
		}
	}
}

func TestNodeTerminationHandlerIsEnabled(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		nth  *NodeTerminationHandler
		want bool
	}{
		{nil, false},
		{&NodeTerminationHandler{}, true},
		{&NodeTerminationHandler{Enabled: &yes}, true},
		{&NodeTerminationHandler{Enabled: &no}, false},
	} {
		if got := tc.nth.IsEnabled(); got != tc.want {
			t.Errorf("%+v: got %v", tc.nth, got)
		}
	}
}

func TestDefaultNodeSubnets(t *testing.T) {
	subnet := func(name, typ string) Subnet { return Subnet{Name: name, Type: typ} }
	for _, tc := range []struct {
		name    string
		subnets []Subnet
		want    []string
	}{
		{"private and utility", []Subnet{subnet("utility-a", "Utility"), subnet("a", "Private"), subnet("b", "Private")}, []string{"a", "b"}},
		{"dual-stack left out", []Subnet{subnet("dualstack-a", "DualStack"), subnet("a", "Public"), subnet("utility-a", "Utility")}, []string{"a"}},
		{"dual-stack only", []Subnet{subnet("utility-a", "Utility"), subnet("dualstack-a", "DualStack"), subnet("dualstack-b", "DualStack")}, []string{"dualstack-a", "dualstack-b"}},
		{"utility only", []Subnet{subnet("utility-a", "Utility")}, nil},
	} {
		if got := defaultNodeSubnets(tc.subnets); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestInstanceTypes(t *testing.T) {
	for _, tc := range []struct {
		machineType string
		instances   []string
		want        []string
	}{
		{machineType: "", want: nil},
		{machineType: " , ,", want: nil},
		{machineType: "m6i.large", want: []string{"m6i.large"}},
		{machineType: " m6i.large , m5.large,,c6i.large ", want: []string{"c6i.large", "m5.large", "m6i.large"}},
		{machineType: "m5.large", instances: []string{"m6i.large", " m5.large ", ""}, want: []string{"m5.large", "m6i.large"}},
		{instances: []string{"r6i.large", "c6i.large", "r6i.large"}, want: []string{"c6i.large", "r6i.large"}},
	} {
		ig := &InstanceGroup{Spec: InstanceGroupSpec{MachineType: tc.machineType}}
		if tc.instances != nil {
			ig.Spec.MixedInstancesPolicy = &MixedInstancesPolicy{Instances: tc.instances}
		}
		if got := instanceTypes(ig); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("machineType %q, instances %q: got %q, want %q", tc.machineType, tc.instances, got, tc.want)
		}
	}
}
