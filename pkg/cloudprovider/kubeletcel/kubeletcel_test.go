package kubeletcel_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/openkarpenter/karpenter/pkg/cloudprovider/kubeletcel"
)

// m5large is the m5.large of the upstream cases: 2 vCPUs, 8 GiB, 3 ENIs of 10 addresses.
var m5large = kubeletcel.Vars{VCPUs: 2, MemoryMiB: 8192, DefaultENIs: 3, IPsPerENI: 10, MaxPods: 20, InstanceType: "m5.large"}

func eval(t *testing.T, source string, v kubeletcel.Vars) (int64, error) {
	t.Helper()
	e, err := kubeletcel.Compile(source)
	if err != nil {
		t.Fatalf("Compile(%q): %v", source, err)
	}
	return e.Eval(v)
}

// TestEval checks results against the cases of Karpenter's AWS provider v1.15.2,
// pkg/cel/environment_test.go ("EvaluateExpression", "max and min overloads"), which test
// pkg/cel/environment.go CELEnvironment.EvaluateExpression.
func TestEval(t *testing.T) {
	large16 := kubeletcel.Vars{VCPUs: 16, MemoryMiB: 65536, DefaultENIs: 8, IPsPerENI: 30, MaxPods: 58}
	small4 := kubeletcel.Vars{VCPUs: 4, MemoryMiB: 8192, DefaultENIs: 3, IPsPerENI: 10, MaxPods: 20, InstanceType: "m5.large"}
	for _, tc := range []struct {
		name, expr string
		vars       kubeletcel.Vars
		want       int64
	}{
		{"ENI formula", "((default_enis - 1) * (ips_per_eni - 1)) + 2", m5large, 20},
		{"prefix delegation with min", "min(250, ((default_enis - 1) * (ips_per_eni - 1)) * 16 + 2)", m5large, 250},
		{"kube-reserved cpu", "max(60, vcpus * 30)", large16, 480},
		{"kube-reserved memory", "11 * max_pods + 255", large16, 11*58 + 255},
		{"min against max_pods", "min(110, max_pods)", small4, 20},
		{"max int, double", "max(vcpus, 60.5)", small4, 60},
		{"min double, int", "min(110.5, max_pods)", small4, 20},
		{"instance_type in a condition", `instance_type == "m5.large" ? vcpus * 2 : vcpus`, small4, 8},
		{"instance_type, other branch", `instance_type == "m5.large" ? vcpus * 2 : vcpus`, kubeletcel.Vars{VCPUs: 4, InstanceType: "c5.xlarge"}, 4},
		{"negative result returned", "vcpus - 100", m5large, -98},
		{"double truncated", "double(memory_mib) * 0.5", m5large, 4096},
		{"max int/int", "max(3, 7)", small4, 7},
		{"max double/double", "max(3.9, 7.9)", small4, 7},
		{"max int/double", "max(3, 7.9)", small4, 7},
		{"max double/int", "max(7.9, 3)", small4, 7},
		{"min int/int", "min(3, 7)", small4, 3},
		{"min double/double", "min(3.9, 7.9)", small4, 3},
		{"min int/double", "min(3, 7.9)", small4, 3},
		{"min double/int", "min(7.9, 3)", small4, 3},
		{"max of ints above 2^53 stays exact", "max(9007199254740993, 9007199254740992)", small4, 9007199254740993},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := eval(t, tc.expr, tc.vars)
			if err != nil || got != tc.want {
				t.Fatalf("%q = %d, %v; want %d", tc.expr, got, err, tc.want)
			}
		})
	}
}

// TestEvalErrors: runtime failures are errors, as upstream's "should error on ..." cases
// (pkg/cel/environment_test.go), and a double too large for int64 too (ours: upstream
// converts it unchecked).
func TestEvalErrors(t *testing.T) {
	for _, expr := range []string{"100 / (vcpus - vcpus)", "100 % (vcpus - vcpus)", "100.0 / 0.0", "0.0 / 0.0", "1e30 * double(vcpus)", "9223372036854775807 + vcpus"} {
		if got, err := eval(t, expr, m5large); err == nil {
			t.Errorf("%q = %d, want an error", expr, got)
		} else if !strings.Contains(err.Error(), "m5.large") {
			t.Errorf("%q: error %q does not name the instance type", expr, err)
		}
	}
}

// TestEvalAcrossSizes: the upstream table "EvaluateExpression across instance type sizes"
// (pkg/cel/environment_test.go), from m5.large to u-24tb1.metal, evaluates without overflow.
func TestEvalAcrossSizes(t *testing.T) {
	for _, v := range []kubeletcel.Vars{
		{VCPUs: 2, MemoryMiB: 8192, DefaultENIs: 3, IPsPerENI: 10, MaxPods: 27, InstanceType: "m5.large"},
		{VCPUs: 4, MemoryMiB: 8192, DefaultENIs: 4, IPsPerENI: 15, MaxPods: 58, InstanceType: "c5.xlarge"},
		{VCPUs: 16, MemoryMiB: 65536, DefaultENIs: 8, IPsPerENI: 30, MaxPods: 234, InstanceType: "m5.4xlarge"},
		{VCPUs: 96, MemoryMiB: 393216, DefaultENIs: 15, IPsPerENI: 50, MaxPods: 737, InstanceType: "m5.24xlarge"},
		{VCPUs: 128, MemoryMiB: 3997696, DefaultENIs: 8, IPsPerENI: 30, MaxPods: 234, InstanceType: "x1e.32xlarge"},
		{VCPUs: 448, MemoryMiB: 25165824, DefaultENIs: 15, IPsPerENI: 50, MaxPods: 737, InstanceType: "u-24tb1.metal"},
	} {
		for expr, want := range map[string]int64{
			"min(110, default_enis * (ips_per_eni - 1))": min(110, v.DefaultENIs*(v.IPsPerENI-1)),
			"max_pods * 11":             v.MaxPods * 11,
			"memory_mib / 100":          v.MemoryMiB / 100,
			"max(60, vcpus * 30)":       max(60, v.VCPUs*30),
			"max(100, memory_mib / 64)": max(100, v.MemoryMiB/64),
		} {
			if got, err := eval(t, expr, v); err != nil || got != want {
				t.Errorf("%s: %q = %d, %v; want %d", v.InstanceType, expr, got, err, want)
			}
		}
	}
}

// TestCompileRefuses: upstream's "ValidateExpression" cases (pkg/cel/environment_test.go,
// CELEnvironment.ValidateExpression): bad syntax, unknown variables, a boolean or string
// result, and empty expressions are refused, each on one line.
func TestCompileRefuses(t *testing.T) {
	if _, err := kubeletcel.Compile("((default_enis - 1) * (ips_per_eni - 1)) + 2"); err != nil {
		t.Fatalf("a valid expression: %v", err)
	}
	for expr, want := range map[string]string{
		"((default_enis -":  "Syntax error",
		"undefined_var + 1": "undeclared reference to 'undefined_var'",
		"vcpus > 4":         "returns bool",
		"instance_type":     "returns string",
		"":                  "compiling",
		"   ":               "compiling",
	} {
		_, err := kubeletcel.Compile(expr)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Compile(%q) = %v, want one line containing %q", expr, err, want)
		}
	}
}

// TestResolveReserved checks the reservation maps against upstream's "ResolveResourceMap"
// cases (pkg/cel/environment_test.go; pkg/cel/environment.go ResolveResourceMap and
// formatResourceResult): quantities pass through, cpu is millicores rounded up to 10m, memory
// MiB rounded up to 16Mi, ephemeral-storage GiB and pid bare, neither rounded; failed and
// negative entries are left out.
func TestResolveReserved(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      map[string]string
		want    map[string]string
		wantErr string
	}{
		{"quantities pass through", map[string]string{"cpu": "100m", "memory": "256Mi"}, map[string]string{"cpu": "100m", "memory": "256Mi"}, ""},
		{"cpu in millicores", map[string]string{"cpu": "vcpus * 30"}, map[string]string{"cpu": "60m"}, ""},
		{"cpu max", map[string]string{"cpu": "max(60, vcpus * 30)"}, map[string]string{"cpu": "60m"}, ""},
		{"sub-core cpu", map[string]string{"cpu": "vcpus * 250"}, map[string]string{"cpu": "500m"}, ""},
		{"units per key", map[string]string{"memory": "max_pods * 11", "ephemeral-storage": "1 + 1", "pid": "max_pods * 10"},
			map[string]string{"memory": "224Mi", "ephemeral-storage": "2Gi", "pid": "200"}, ""},
		{"1% of memory", map[string]string{"memory": "memory_mib / 100"}, map[string]string{"memory": "96Mi"}, ""},
		{"exact power of two", map[string]string{"memory": "memory_mib / 64"}, map[string]string{"memory": "128Mi"}, ""},
		{"cpu rounded up to 10m", map[string]string{"cpu": "70 + vcpus"}, map[string]string{"cpu": "80m"}, ""},
		{"never rounded down", map[string]string{"cpu": "60 + vcpus - 1"}, map[string]string{"cpu": "70m"}, ""},
		{"memory rounded up to 16Mi", map[string]string{"memory": "max_pods + vcpus"}, map[string]string{"memory": "32Mi"}, ""},
		{"zero stays zero", map[string]string{"cpu": "vcpus - vcpus", "memory": "vcpus - vcpus"}, map[string]string{"cpu": "0m", "memory": "0Mi"}, ""},
		{"pid and storage not rounded", map[string]string{"pid": "70 + vcpus - 1", "ephemeral-storage": "vcpus + 1"}, map[string]string{"pid": "71", "ephemeral-storage": "3Gi"}, ""},
		{"double truncated", map[string]string{"memory": "double(memory_mib) * 0.5"}, map[string]string{"memory": "4096Mi"}, ""},
		{"negative dropped", map[string]string{"cpu": "vcpus - 100"}, map[string]string{}, "cpu: \"vcpus - 100\" evaluated to -98 for m5.large, which is negative"},
		{"failure dropped", map[string]string{"cpu": "100 / (vcpus - vcpus)"}, map[string]string{}, "cpu: evaluating"},
		{"others kept", map[string]string{"good": "vcpus * 30", "negative": "vcpus - 100", "literal": "128Mi"}, map[string]string{"good": "60", "literal": "128Mi"}, "negative:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := kubeletcel.CompileReserved("spec.kubelet.kubeReserved", tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Resolve(m5large)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Resolve = %v, want %v", got, tc.want)
			}
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
	// A near-MaxInt64 cpu must not round into a negative quantity (upstream: "should not
	// overflow into a negative quantity when rounding a near-max result").
	r, _ := kubeletcel.CompileReserved("f", map[string]string{"cpu": "9223372036854775807 - vcpus + 2"})
	got, err := r.Resolve(m5large)
	if err != nil {
		t.Fatal(err)
	}
	if q := resource.MustParse(got["cpu"]); q.Sign() <= 0 {
		t.Errorf("near-max cpu resolved to %s", got["cpu"])
	}
}

// TestCompileReservedNamesTheField: an invalid reservation expression is refused naming
// field[key].
func TestCompileReservedNamesTheField(t *testing.T) {
	r, err := kubeletcel.CompileReserved("spec.kubelet.systemReserved", map[string]string{"cpu": "100m", "memory": "nope * 2"})
	var fe *kubeletcel.FieldError
	if !errors.As(err, &fe) || fe.Field != "spec.kubelet.systemReserved[memory]" {
		t.Fatalf("error %v, want a FieldError on spec.kubelet.systemReserved[memory]", err)
	}
	if r.HasExpressions() {
		t.Error("the failed expression is kept")
	}
	if r, err := kubeletcel.CompileReserved("f", map[string]string{"cpu": "100m"}); err != nil || r.HasExpressions() {
		t.Errorf("quantities only: %v, %v", r.HasExpressions(), err)
	}
}

// TestConcurrentEval: compiled expressions and the compilation cache are shared by the
// builders of instance types, validation and launches (upstream: "concurrent use of the
// compilation cache"); run with -race.
func TestConcurrentEval(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 16*50)
	for g := range 16 {
		wg.Go(func() {
			for range 50 {
				for expr, want := range map[string]int64{"max(60, vcpus * 30)": 60, fmt.Sprintf("100 + %d", g): int64(100 + g)} {
					e, err := kubeletcel.Compile(expr)
					if err == nil {
						var got int64
						if got, err = e.Eval(m5large); err == nil && got != want {
							err = fmt.Errorf("%q = %d, want %d", expr, got, want)
						}
					}
					if err != nil {
						errs <- err
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
