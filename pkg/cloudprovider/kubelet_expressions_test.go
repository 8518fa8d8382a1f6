package cloudprovider_test

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider/catalog"
)

// kubeletJSON decodes a spec.kubelet as the API server stores it.
func kubeletJSON(t *testing.T, s string) *awsv1.KubeletConfiguration {
	t.Helper()
	k := &awsv1.KubeletConfiguration{}
	if err := json.Unmarshal([]byte(s), k); err != nil {
		t.Fatal(err)
	}
	return k
}

func quantityIs(t *testing.T, what string, rl corev1.ResourceList, name corev1.ResourceName, want string) {
	t.Helper()
	got, ok := rl[name]
	if w := resource.MustParse(want); !ok || got.Cmp(w) != 0 {
		t.Errorf("%s %s = %s (set %t), want %s", what, name, got.String(), ok, want)
	}
}

// TestKubeletExpressionsSizeInstanceTypes: with the NodeClassCEL gate, the maxPods expression
// gives the pods capacity, and the reservation expressions the overhead, evaluated for each
// type, as Karpenter's AWS provider v1.15.2 resolves them in
// pkg/providers/instancetype/types.go (DefaultResolver.Resolve: resolveMaxPods, then
// resolveResourceExpressions with max_pods the resolved count; its suite_test.go "CEL"
// cases). Off, they are left out and the defaults stand, as resolveMaxPods and
// resolveResourceExpressions do with the gate off.
func TestKubeletExpressionsSizeInstanceTypes(t *testing.T) {
	// m5.large: 2 vCPUs, 8192 MiB, 3 interfaces of 10 addresses (29 ENI-limited pods).
	k := kubeletJSON(t, `{"maxPods": "default_enis * 4", "kubeReserved": {"cpu": "vcpus * 100", "memory": "max_pods * 20", "pid": "1000"},
		"systemReserved": {"memory": "memory_mib / 64", "cpu": "50m"}}`)
	it := build(t, "m5.large", cloudprovider.InstanceTypeOptions{Kubelet: k, KubeletExpressions: true})
	if pods := it.Capacity.Pods().Value(); pods != 12 {
		t.Errorf("pods = %d, want 12 (default_enis * 4)", pods)
	}
	quantityIs(t, "kube-reserved", it.Overhead.KubeReserved, corev1.ResourceCPU, "200m")
	quantityIs(t, "kube-reserved", it.Overhead.KubeReserved, corev1.ResourceMemory, "240Mi") // 12 pods × 20, a multiple of 16
	quantityIs(t, "kube-reserved", it.Overhead.KubeReserved, corev1.ResourceEphemeralStorage, "1Gi")
	quantityIs(t, "kube-reserved", it.Overhead.KubeReserved, "pid", "1000")
	quantityIs(t, "system-reserved", it.Overhead.SystemReserved, corev1.ResourceMemory, "128Mi")
	quantityIs(t, "system-reserved", it.Overhead.SystemReserved, corev1.ResourceCPU, "50m")

	// A larger type gets its own values from the same expressions.
	big := build(t, "m5.4xlarge", cloudprovider.InstanceTypeOptions{Kubelet: k, KubeletExpressions: true})
	if pods := big.Capacity.Pods().Value(); pods != 32 {
		t.Errorf("m5.4xlarge pods = %d, want 32 (8 interfaces × 4)", pods)
	}
	quantityIs(t, "m5.4xlarge kube-reserved", big.Overhead.KubeReserved, corev1.ResourceCPU, "1600m")
	quantityIs(t, "m5.4xlarge system-reserved", big.Overhead.SystemReserved, corev1.ResourceMemory, "1Gi")

	// max_pods in the maxPods expression is the default count capped by podsPerCore, and the
	// result is capped again (upstream: pods()).
	capped := kubeletJSON(t, `{"maxPods": "max_pods + 1", "podsPerCore": 4, "kubeReserved": {"memory": "max_pods"}}`)
	it = build(t, "m5.large", cloudprovider.InstanceTypeOptions{Kubelet: capped, KubeletExpressions: true})
	if pods := it.Capacity.Pods().Value(); pods != 8 {
		t.Errorf("podsPerCore 4: pods = %d, want 8", pods)
	}
	quantityIs(t, "podsPerCore kube-reserved", it.Overhead.KubeReserved, corev1.ResourceMemory, "16Mi") // 8, rounded up to 16Mi

	// Gate off: the expressions are dropped, the defaults and the quantities stand.
	off := build(t, "m5.large", cloudprovider.InstanceTypeOptions{Kubelet: k})
	if pods := off.Capacity.Pods().Value(); pods != 29 {
		t.Errorf("gate off: pods = %d, want the ENI-limited 29", pods)
	}
	quantityIs(t, "gate off kube-reserved", off.Overhead.KubeReserved, corev1.ResourceCPU, "70m")
	quantityIs(t, "gate off system-reserved", off.Overhead.SystemReserved, corev1.ResourceCPU, "50m")
	if _, ok := off.Overhead.SystemReserved[corev1.ResourceMemory]; ok {
		t.Error("gate off: the systemReserved memory expression was applied")
	}
	if a, b := (cloudprovider.InstanceTypeOptions{Kubelet: k}).CacheKey(), (cloudprovider.InstanceTypeOptions{Kubelet: k, KubeletExpressions: true}).CacheKey(); a == b {
		t.Error("the gate does not change the cache key")
	}
}

// TestResolveKubelet: the configuration nodes get has the expressions' values, the same that
// sized the type; the amifamily resolver of Karpenter's AWS provider v1.15.2 writes the same
// back into the launch template's kubelet configuration
// (pkg/providers/amifamily/resolver.go, resolveLaunchTemplates).
func TestResolveKubelet(t *testing.T) {
	k := kubeletJSON(t, `{"maxPods": "min(110, max_pods * 2)", "kubeReserved": {"cpu": "70 + vcpus"}, "systemReserved": {"memory": "100Mi"}, "containerLogMaxSize": "50Mi"}`)
	opts := cloudprovider.InstanceTypeOptions{Kubelet: k, KubeletExpressions: true}
	got, err := opts.ResolveKubelet(entry(t, "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxPods == nil || *got.MaxPods != 58 {
		t.Errorf("maxPods = %v, want 58 (min(110, 29 × 2))", got.MaxPods)
	}
	if _, ok := got.MaxPodsExpression(); ok {
		t.Error("the maxPods expression is still there")
	}
	if got.KubeReserved["cpu"] != "80m" || got.SystemReserved["memory"] != "100Mi" {
		t.Errorf("reservations %v %v, want cpu 80m and memory 100Mi", got.KubeReserved, got.SystemReserved)
	}
	if _, ok := got.Other["containerLogMaxSize"]; !ok {
		t.Error("other fields were lost")
	}
	if _, ok := k.MaxPodsExpression(); !ok || k.MaxPods != nil {
		t.Error("the NodeClass's configuration was changed")
	}
	it := build(t, "m5.large", opts)
	if it.Capacity.Pods().Value() != int64(*got.MaxPods) {
		t.Errorf("capacity pods %d, user data maxPods %d", it.Capacity.Pods().Value(), *got.MaxPods)
	}
	// Without the gate, or without expressions, it is the configuration itself.
	for _, o := range []cloudprovider.InstanceTypeOptions{{Kubelet: k}, {Kubelet: kubeletJSON(t, `{"maxPods": 20}`), KubeletExpressions: true}} {
		if got, err := o.ResolveKubelet(entry(t, "m5.large")); err != nil || got != o.Kubelet {
			t.Errorf("ResolveKubelet = %v, %v; want the configuration itself", got, err)
		}
	}
}

// TestEvaluateKubelet: an expression that fails or gives an unusable value for any instance
// type is refused naming the field and the type, as Karpenter's AWS provider v1.15.2 refuses
// it (pkg/providers/instancetype/instancetype.go, ValidateKubeletExpressions and
// evaluateKubeletExpressions; pkg/controllers/nodeclass/validation_test.go,
// KubeletExpressionEvaluationFailed); a maxPods expression that fails fails the build of
// instance types too (upstream: Resolve's error fails the listing).
func TestEvaluateKubelet(t *testing.T) {
	entries, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ kubelet, want string }{
		{`{"kubeReserved": {"cpu": "100 - vcpus"}}`, `spec.kubelet.kubeReserved: cpu: "100 - vcpus" evaluated to`},
		{`{"systemReserved": {"memory": "1000 / (vcpus - 2)"}}`, "instance type a1.large: spec.kubelet.systemReserved: memory: evaluating \"1000 / (vcpus - 2)\" for a1.large: division by zero"},
		{`{"maxPods": "memory_mib * 1000"}`, "spec.kubelet.maxPods: \"memory_mib * 1000\" evaluated to"},
		{`{"maxPods": "vcpus - 3"}`, "instance type a1.large: spec.kubelet.maxPods"},
	} {
		opts := cloudprovider.InstanceTypeOptions{Kubelet: kubeletJSON(t, tc.kubelet), KubeletExpressions: true}
		if err := opts.EvaluateKubelet(entries); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.kubelet, err, tc.want)
		}
		if strings.Contains(tc.kubelet, "maxPods") {
			if _, err := cloudprovider.NewInstanceTypes(entries, opts); err == nil || !strings.Contains(err.Error(), "spec.kubelet.maxPods") {
				t.Errorf("%s: NewInstanceTypes error %v, want the maxPods expression's", tc.kubelet, err)
			}
		}
	}
	ok := cloudprovider.InstanceTypeOptions{Kubelet: kubeletJSON(t, `{"maxPods": "min(110, max_pods)", "kubeReserved": {"cpu": "max(60, vcpus * 30)", "memory": "max_pods * 11 + 255"}}`), KubeletExpressions: true}
	if err := ok.EvaluateKubelet(entries); err != nil {
		t.Errorf("expressions good for every type: %v", err)
	}
	ok.KubeletExpressions = false
	bad := cloudprovider.InstanceTypeOptions{Kubelet: kubeletJSON(t, `{"maxPods": "vcpus - 3"}`)}
	if err := bad.EvaluateKubelet(entries); err != nil {
		t.Errorf("gate off: %v, want nothing evaluated", err)
	}
}

// TestValidateKubeletExpressions: the gate off, an expression leaves the NodeClass not ready
// with the reason and message of Karpenter's AWS provider v1.15.2
// (pkg/controllers/nodeclass/validation.go, ValidationReconciler: KubeletExpressionsDisabled);
// on, one that does not compile is refused naming its field (validateKubeletExpressions:
// KubeletExpressionInvalid), and valid ones pass.
func TestValidateKubeletExpressions(t *testing.T) {
	nc := func(kubelet string) *awsv1.EC2NodeClass {
		return &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{Kubelet: kubeletJSON(t, kubelet)}}
	}
	valid := nc(`{"maxPods": "min(110, max_pods)", "systemReserved": {"cpu": "max(60, vcpus * 30)"}}`)
	reason, err := cloudprovider.ValidateKubelet(valid, false)
	if reason != cloudprovider.ReasonKubeletExpressionsDisabled || err == nil ||
		err.Error() != "spec.kubelet contains a CEL expression, but the NodeClassCEL feature gate is disabled" {
		t.Errorf("gate off: %q, %v", reason, err)
	}
	if reason, err := cloudprovider.ValidateKubelet(valid, true); err != nil {
		t.Errorf("gate on, valid: %q, %v", reason, err)
	}
	if reason, err := cloudprovider.ValidateKubelet(nc(`{"maxPods": 20, "kubeReserved": {"cpu": "100m"}}`), false); err != nil {
		t.Errorf("gate off, values only: %q, %v", reason, err)
	}
	for kubelet, field := range map[string]string{
		`{"maxPods": "pods * 2"}`:                             "spec.kubelet.maxPods: compiling expression \"pods * 2\"",
		`{"maxPods": "vcpus > 2"}`:                            "spec.kubelet.maxPods: expression \"vcpus > 2\" returns bool",
		`{"kubeReserved": {"memory": "max_pods * "}}`:         "spec.kubelet.kubeReserved[memory]: compiling",
		`{"systemReserved": {"cpu": "instance_type"}}`:        "spec.kubelet.systemReserved[cpu]: expression \"instance_type\" returns string",
		`{"systemReserved": {"cpu": "1", "pid": "x"}}`:        "spec.kubelet.systemReserved[pid]: compiling expression \"x\": ERROR: <input>:1:1: undeclared reference to 'x'",
		`{"maxPods": "max_pods", "evictionHard": {"x": "1"}}`: "spec.kubelet.evictionHard",
	} {
		reason, err := cloudprovider.ValidateKubelet(nc(kubelet), true)
		wantReason := cloudprovider.ReasonKubeletExpressionInvalid
		if strings.Contains(kubelet, "evictionHard") {
			wantReason = cloudprovider.ReasonInvalidKubeletConfiguration // the structural check comes first, as upstream
		}
		if reason != wantReason || err == nil || !strings.Contains(err.Error(), field) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %q, %v; want %s naming %q on one line", kubelet, reason, err, wantReason, field)
		}
	}
}
