package kubeletcel

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Vars are the facts of one instance type an expression is evaluated against.
type Vars struct {
	// VCPUs is the type's default vCPU count (vcpus).
	VCPUs int64
	// MemoryMiB is the type's memory in MiB as EC2 reports it, before any VM overhead
	// (memory_mib).
	MemoryMiB int64
	// DefaultENIs is how many network interfaces the type's default network card takes
	// (default_enis).
	DefaultENIs int64
	// IPsPerENI is how many IPv4 addresses each interface takes (ips_per_eni).
	IPsPerENI int64
	// MaxPods is the type's pod limit (max_pods): for the maxPods expression itself the
	// default one (ENI-limited or 110, capped by podsPerCore), for the reservations the
	// resolved one.
	MaxPods int64
	// InstanceType is the type's name, such as m5.large (instance_type).
	InstanceType string
}

// variables are the expression variables: their CEL names, types and values.
var variables = []struct {
	name  string
	typ   *cel.Type
	value func(Vars) any
}{
	{"vcpus", cel.IntType, func(v Vars) any { return v.VCPUs }},
	{"memory_mib", cel.IntType, func(v Vars) any { return v.MemoryMiB }},
	{"default_enis", cel.IntType, func(v Vars) any { return v.DefaultENIs }},
	{"ips_per_eni", cel.IntType, func(v Vars) any { return v.IPsPerENI }},
	{"max_pods", cel.IntType, func(v Vars) any { return v.MaxPods }},
	{"instance_type", cel.StringType, func(v Vars) any { return v.InstanceType }},
}

// activation is the variables' values for v.
func (v Vars) activation() map[string]any {
	out := make(map[string]any, len(variables))
	for _, variable := range variables {
		out[variable.name] = variable.value(v)
	}
	return out
}

// environment is the CEL environment every expression compiles in; built once.
var environment = sync.OnceValues(newEnvironment)

// newEnvironment declares the variables and min and max over every pair of int and double
// (an int beside a double is taken as a double).
func newEnvironment() (*cel.Env, error) {
	opts := make([]cel.EnvOption, 0, len(variables)+2)
	for _, v := range variables {
		opts = append(opts, cel.Variable(v.name, v.typ))
	}
	opts = append(opts, minMax("max", func(l, r float64) bool { return l >= r }), minMax("min", func(l, r float64) bool { return l <= r }))
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("building the kubelet expression environment: %w", err)
	}
	return env, nil
}

// minMax declares the function name over two numbers, returning the left one when keepLeft
// says so: int for two ints, else double (an int beside a double counts as a double).
func minMax(name string, keepLeft func(l, r float64) bool) cel.EnvOption {
	asFloat := func(v ref.Val) float64 {
		if i, ok := v.(types.Int); ok {
			return float64(i)
		}
		return float64(v.(types.Double))
	}
	ints := func(lhs, rhs ref.Val) ref.Val {
		l, r := lhs.(types.Int), rhs.(types.Int)
		// Compared as ints: float64 would conflate ints above 2^53.
		if (name == "max") == (l >= r) || l == r {
			return l
		}
		return r
	}
	doubles := func(lhs, rhs ref.Val) ref.Val {
		l, r := asFloat(lhs), asFloat(rhs)
		if keepLeft(l, r) {
			return types.Double(l)
		}
		return types.Double(r)
	}
	return cel.Function(name,
		cel.Overload(name+"_int_int", []*cel.Type{cel.IntType, cel.IntType}, cel.IntType, cel.BinaryBinding(ints)),
		cel.Overload(name+"_double_double", []*cel.Type{cel.DoubleType, cel.DoubleType}, cel.DoubleType, cel.BinaryBinding(doubles)),
		cel.Overload(name+"_int_double", []*cel.Type{cel.IntType, cel.DoubleType}, cel.DoubleType, cel.BinaryBinding(doubles)),
		cel.Overload(name+"_double_int", []*cel.Type{cel.DoubleType, cel.IntType}, cel.DoubleType, cel.BinaryBinding(doubles)),
	)
}

// Expression is a compiled kubelet expression, safe for concurrent use.
type Expression struct {
	source  string
	program cel.Program
}

// String is the expression as written.
func (e *Expression) String() string { return e.source }

// compiled caches compilations by source: the same few expressions are compiled for every
// build of instance types, validation and launch. It is bounded by clearing.
var compiled = struct {
	sync.Mutex
	m map[string]*Expression
}{m: map[string]*Expression{}}

// maxCompiled bounds the compilation cache.
const maxCompiled = 1024

// Compile parses and type-checks an expression. It fails when the expression does not parse,
// names an unknown variable or function, or returns anything but an int or a double; the
// error says which, on one line.
func Compile(source string) (*Expression, error) {
	compiled.Lock()
	e, ok := compiled.m[source]
	compiled.Unlock()
	if ok {
		return e, nil
	}
	env, err := environment()
	if err != nil {
		return nil, err
	}
	ast, issues := env.Compile(source)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("compiling expression %q: %s", source, oneLine(issues.Err().Error()))
	}
	if t := ast.OutputType(); !t.IsExactType(cel.IntType) && !t.IsExactType(cel.DoubleType) {
		return nil, fmt.Errorf("expression %q returns %s, but must return an int or a double", source, t)
	}
	program, err := env.Program(ast)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", source, err)
	}
	e = &Expression{source: source, program: program}
	compiled.Lock()
	if len(compiled.m) >= maxCompiled {
		clear(compiled.m)
	}
	compiled.m[source] = e
	compiled.Unlock()
	return e, nil
}

// oneLine joins CEL's multi-line diagnostics (message, source line, caret) with spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Eval evaluates the expression for an instance type. A double result is truncated towards
// zero; a runtime error (an integer division by zero, an overflow) and a result that is not
// a finite number in the range of int64 are errors. A negative result is returned as is: what
// it means is the caller's to say.
func (e *Expression) Eval(v Vars) (int64, error) {
	out, _, err := e.program.Eval(v.activation())
	if err != nil {
		return 0, fmt.Errorf("evaluating %q for %s: %w", e.source, v.InstanceType, err)
	}
	switch x := out.Value().(type) {
	case int64:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x >= math.MaxInt64 || x < math.MinInt64 {
			return 0, fmt.Errorf("evaluating %q for %s: %v is not a finite number in the range of int64", e.source, v.InstanceType, x)
		}
		return int64(x), nil
	default:
		return 0, fmt.Errorf("evaluating %q for %s: returned %T, not an int or a double", e.source, v.InstanceType, x)
	}
}

// Rounding of reservation results, always upwards so that a node never reserves less than its
// expression asked for: cpu to 10 millicores, memory to 16 MiB, the granularity reservations
// are written at. ephemeral-storage (whole GiB) and pid (a count) are not rounded.
const (
	cpuStepMilli = 10
	memoryStepMi = 16
)

// FormatReserved renders an expression's result for a reservation key as a quantity in the
// unit the key's expressions are written in: cpu in millicores ("480m", rounded up to 10m),
// memory in MiB ("640Mi", rounded up to 16Mi), ephemeral-storage in GiB ("3Gi"), and any
// other key (pid) bare. result must not be negative.
func FormatReserved(key string, result int64) string {
	switch corev1.ResourceName(key) {
	case corev1.ResourceCPU:
		return fmt.Sprintf("%dm", roundUp(result, cpuStepMilli))
	case corev1.ResourceMemory:
		return fmt.Sprintf("%dMi", roundUp(result, memoryStepMi))
	case corev1.ResourceEphemeralStorage:
		return fmt.Sprintf("%dGi", result)
	}
	return fmt.Sprint(result)
}

// roundUp rounds v up to a multiple of step; zero, exact multiples, and values too close to
// MaxInt64 to round without overflowing stay as they are.
func roundUp(v, step int64) int64 {
	if v <= 0 || v%step == 0 || v > math.MaxInt64-step {
		return v
	}
	return (v/step + 1) * step
}

// IsExpression reports whether a kubeReserved or systemReserved value is an expression: it
// is not a resource quantity.
func IsExpression(value string) bool {
	_, err := resource.ParseQuantity(value)
	return err != nil
}

// Reserved is a kubeReserved or systemReserved map with its expressions compiled.
type Reserved struct {
	values      map[string]string
	expressions map[string]*Expression
}

// CompileReserved compiles the expressions of a reservation map (the values that are not
// quantities). Each error names its entry as field[key] (field such as
// spec.kubelet.kubeReserved); they are in key order.
func CompileReserved(field string, values map[string]string) (Reserved, error) {
	r := Reserved{values: values}
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(values)) {
		if !IsExpression(values[key]) {
			continue
		}
		e, err := Compile(values[key])
		if err != nil {
			errs = append(errs, &FieldError{Field: fmt.Sprintf("%s[%s]", field, key), Err: err})
			continue
		}
		if r.expressions == nil {
			r.expressions = map[string]*Expression{}
		}
		r.expressions[key] = e
	}
	return r, joined(errs)
}

// HasExpressions reports whether any value is an expression.
func (r Reserved) HasExpressions() bool { return len(r.expressions) > 0 }

// Resolve returns the map with each expression replaced by its result for the instance type
// (FormatReserved); quantities pass through. An entry whose expression fails or returns a
// negative number is left out, and reported in the error, in key order, each naming its key.
// Without expressions the map is returned as is.
func (r Reserved) Resolve(v Vars) (map[string]string, error) {
	if len(r.expressions) == 0 {
		return r.values, nil
	}
	out := make(map[string]string, len(r.values))
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(r.values)) {
		e, ok := r.expressions[key]
		if !ok {
			out[key] = r.values[key]
			continue
		}
		result, err := e.Eval(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		case result < 0:
			errs = append(errs, fmt.Errorf("%s: %q evaluated to %d for %s, which is negative", key, e, result, v.InstanceType))
		default:
			out[key] = FormatReserved(key, result)
		}
	}
	return out, joined(errs)
}

// joined is errs as one error whose message joins theirs with "; " (a condition message stays
// on one line); nil when there are none. errors.Is and errors.As see each.
func joined(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return joinedErrors(errs)
}

type joinedErrors []error

func (e joinedErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e joinedErrors) Unwrap() []error { return e }

// FieldError is an expression refused at a field of spec.kubelet.
type FieldError struct {
	// Field is the path, such as spec.kubelet.maxPods or spec.kubelet.kubeReserved[cpu].
	Field string
	// Err is why.
	Err error
}

// Error implements error as "<field>: <why>".
func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }
