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
)

// TestKubeletExpressionsSizeTypesAndUserData: with the NodeClassCEL gate, a CEL maxPods
// changes the pods capacity of each instance type the fake EC2 describes, and its launch
// template's user data carries the evaluated numbers, one template per distinct result, as
// Karpenter's AWS provider v1.15.2 does (pkg/providers/instancetype/types.go
// DefaultResolver.Resolve for capacity; pkg/providers/amifamily/resolver.go Resolve, which
// groups launch templates by the resolved maxPods and reservations, and resolveLaunchTemplates,
// which writes them into the kubelet configuration; its launchtemplate suite_test.go "CEL"
// cases).
func TestKubeletExpressionsSizeTypesAndUserData(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.NodeClassCEL = true })
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	nc := ncs[0]
	nc.Spec.Kubelet = kubeletOf(t, `{"maxPods": "default_enis * 4", "kubeReserved": {"cpu": "vcpus * 100"}, "systemReserved": {"memory": "100Mi"}}`)
	got := f.applyNodeClass(nc)
	if s, msg := condition(got, awsv1.ConditionTypeReady); s != metav1.ConditionTrue {
		t.Fatalf("Ready %s: %s", s, msg)
	}
	its, err := f.provider.GetInstanceTypes(f.ctx, nps[0])
	if err != nil {
		t.Fatal(err)
	}
	// m5.large: 3 interfaces; m5.xlarge: 4 (DescribeInstanceTypes' default network card).
	want := map[string]struct {
		pods int64
		cpu  string
	}{"m5.large": {12, "200m"}, "m5.xlarge": {16, "400m"}}
	for _, it := range its {
		w, ok := want[it.Name]
		if !ok {
			continue
		}
		delete(want, it.Name)
		if pods := it.Capacity.Pods().Value(); pods != w.pods {
			t.Errorf("%s: pods capacity %d, want %d", it.Name, pods, w.pods)
		}
		if q := it.Overhead.KubeReserved[corev1.ResourceCPU]; q.Cmp(resource.MustParse(w.cpu)) != 0 {
			t.Errorf("%s: kube-reserved cpu %s, want %s", it.Name, q.String(), w.cpu)
		}
		if a := it.Allocatable()[corev1.ResourcePods]; a.Value() != w.pods {
			t.Errorf("%s: allocatable pods %d, want %d", it.Name, a.Value(), w.pods)
		}
	}
	if len(want) > 0 {
		t.Fatalf("instance types %v not offered", want)
	}

	claim := claimFor(nps[0], "cel", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large", "m5.xlarge"))
	if _, err := f.provider.Create(f.ctx, claim); err != nil {
		t.Fatal(err)
	}
	lts := f.launchTemplates()
	if len(lts) != 2 {
		t.Fatalf("%d launch templates, want one per evaluated kubelet configuration (2)", len(lts))
	}
	found := map[string]bool{}
	for _, lt := range lts {
		for _, values := range [][]string{{"maxPods: 12", "cpu: 200m"}, {"maxPods: 16", "cpu: 400m"}} {
			if strings.Contains(lt.UserData, values[0]) && strings.Contains(lt.UserData, values[1]) && strings.Contains(lt.UserData, "memory: 100Mi") {
				found[values[0]] = true
			}
		}
		for _, expr := range []string{"default_enis", "vcpus"} {
			if strings.Contains(lt.UserData, expr) {
				t.Errorf("user data carries the expression %q:\n%s", expr, lt.UserData)
			}
		}
	}
	if !found["maxPods: 12"] || !found["maxPods: 16"] {
		t.Errorf("user data lacks the evaluated values (found %v):\n%s\n---\n%s", found, lts[0].UserData, lts[1].UserData)
	}

	// The same expressions on Bottlerocket reach its settings.
	br := ncs[0].DeepCopy()
	br.ResourceVersion, br.Name = "", "cel-bottlerocket"
	br.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
	if s, msg := condition(f.applyNodeClass(br), awsv1.ConditionTypeReady); s != metav1.ConditionTrue {
		t.Fatalf("Bottlerocket Ready %s: %s", s, msg)
	}
	np := nps[0].DeepCopy()
	np.Name = "bottlerocket"
	np.Spec.Template.Spec.NodeClassRef.Name = br.Name
	before := len(f.launchTemplates())
	if _, err := f.provider.Create(f.ctx, claimFor(np, "cel-bottlerocket", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"))); err != nil {
		t.Fatal(err)
	}
	ud := f.launchTemplates()[before].UserData
	for _, w := range []string{"max-pods = 12", `cpu = "200m"`} {
		if !strings.Contains(ud, w) {
			t.Errorf("Bottlerocket user data lacks %q:\n%s", w, ud)
		}
	}
}

// TestKubeletExpressionsGateOff: without the NodeClassCEL gate an EC2NodeClass whose
// spec.kubelet holds a CEL expression is not Ready, with the reason and message of Karpenter's
// AWS provider v1.15.2 (pkg/controllers/nodeclass/validation.go, ValidationReconciler:
// KubeletExpressionsDisabled; validation_test.go "NodeClassCEL: lo.ToPtr(false)"), and
// nothing launches from it. With the gate, an expression that does not compile is refused
// naming its field (KubeletExpressionInvalid), and one that fails for an instance type
// (KubeletExpressionEvaluationFailed, ValidateKubeletExpressions).
func TestKubeletExpressionsGateOff(t *testing.T) {
	f := newFixture(t)
	ncs, nps := readManifests(t, "seed-004-nodepool.yaml")
	nc := ncs[0]
	nc.Spec.Kubelet = kubeletOf(t, `{"maxPods": "default_enis * 4"}`)
	got := f.applyNodeClass(nc)
	c := meta.FindStatusCondition(got.Status.Conditions, awsv1.ConditionTypeValidationSucceeded)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "KubeletExpressionsDisabled" ||
		c.Message != "spec.kubelet contains a CEL expression, but the NodeClassCEL feature gate is disabled" {
		t.Errorf("ValidationSucceeded %+v, want False KubeletExpressionsDisabled with Karpenter's message", c)
	}
	if s, _ := condition(got, awsv1.ConditionTypeReady); s != metav1.ConditionFalse {
		t.Errorf("Ready %s, want False", s)
	}
	if _, err := f.provider.Create(f.ctx, claimFor(nps[0], "off", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})); !cloudprovider.IsNodeClassNotReadyError(err) {
		t.Errorf("Create: %v, want the NodeClass not ready", err)
	}
	if n := len(f.aws.LaunchTemplates()); n != 0 {
		t.Errorf("%d launch templates created", n)
	}

	on := newFixture(t, func(o *Options) { o.NodeClassCEL = true })
	for _, tc := range []struct{ name, kubelet, reason, message string }{
		{"invalid", `{"kubeReserved": {"memory": "pods * 11"}}`, "KubeletExpressionInvalid", "spec.kubelet.kubeReserved[memory]: compiling expression \"pods * 11\""},
		{"eval-failed", `{"maxPods": "100 / (vcpus - 2)"}`, "KubeletExpressionEvaluationFailed", "spec.kubelet.maxPods: evaluating \"100 / (vcpus - 2)\""},
	} {
		nc := ncs[0].DeepCopy()
		nc.ResourceVersion, nc.Name = "", tc.name
		nc.Spec.Kubelet = kubeletOf(t, tc.kubelet)
		got := on.applyNodeClass(nc)
		c := meta.FindStatusCondition(got.Status.Conditions, awsv1.ConditionTypeValidationSucceeded)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message) {
			t.Errorf("%s: ValidationSucceeded %+v, want False %s saying %q", tc.name, c, tc.reason, tc.message)
		}
	}
}
