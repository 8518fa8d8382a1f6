package lowerbound

import (
	"errors"
	"fmt"
	"math"
)

// Conventional positions of the resource dimensions in Shape.Requests and
// InstanceType.Capacity. Further dimensions (GPUs, other extended resources)
// follow in any order the caller chooses, as long as shapes and instance types
// agree on it.
const (
	// CPU is the position of the CPU dimension, in millicores.
	CPU = 0
	// Memory is the position of the memory dimension, in bytes.
	Memory = 1
	// Pods is the position of the pod-slot dimension; every pod requests 1.
	Pods = 2
)

// Shape is a group of identical pods: Count pods, each requesting Requests.
type Shape struct {
	// Name identifies the shape in errors and in Solution.Assign; names must
	// be unique within one call.
	Name string
	// Requests is the per-pod request vector, indexed by dimension (see CPU,
	// Memory, Pods). A missing trailing entry means 0.
	Requests []float64
	// Count is the number of pods of this shape. Shapes with Count 0 are
	// ignored.
	Count int
}

// InstanceType is a node type that pods can be packed onto.
type InstanceType struct {
	// Name identifies the type in Solution.Nodes and breaks ties between
	// identical types in Prune; names must be unique within one call to Solve.
	Name string
	// Capacity is what pods may use on one node of this type (allocatable,
	// after system and daemonset overhead), indexed like Shape.Requests. A
	// missing trailing entry means 0.
	Capacity []float64
	// Price is the cost of one node in $/hour; it must be finite and >= 0.
	Price float64
}

// Errors returned by this package, wrapped with context; test with errors.Is.
var (
	// ErrInvalidInput reports a malformed argument: a negative, NaN or
	// infinite number, a negative count, or a duplicate name.
	ErrInvalidInput = errors.New("invalid input")
	// ErrInfeasible reports that the pods cannot be placed at all, e.g. a
	// shape that fits no instance type.
	ErrInfeasible = errors.New("infeasible")
	// ErrNumerical reports that the solver lost its way numerically (a
	// singular basis or an iteration limit). It is not expected on sane input.
	ErrNumerical = errors.New("numerical failure")
)

// validate checks the arguments and returns the number of dimensions, the
// longest of all request and capacity vectors.
func validate(shapes []Shape, types []InstanceType) (int, error) {
	dims := 0
	seen := make(map[string]struct{}, len(shapes))
	for _, s := range shapes {
		if _, dup := seen[s.Name]; dup {
			return 0, fmt.Errorf("duplicate shape name %q: %w", s.Name, ErrInvalidInput)
		}
		seen[s.Name] = struct{}{}
		if s.Count < 0 {
			return 0, fmt.Errorf("shape %q has negative count %d: %w", s.Name, s.Count, ErrInvalidInput)
		}
		for d, v := range s.Requests {
			if !finiteNonNeg(v) {
				return 0, fmt.Errorf("shape %q request %d is %v: %w", s.Name, d, v, ErrInvalidInput)
			}
		}
		dims = max(dims, len(s.Requests))
	}
	clear(seen)
	for _, t := range types {
		if _, dup := seen[t.Name]; dup {
			return 0, fmt.Errorf("duplicate instance type name %q: %w", t.Name, ErrInvalidInput)
		}
		seen[t.Name] = struct{}{}
		if !finiteNonNeg(t.Price) {
			return 0, fmt.Errorf("instance type %q price is %v: %w", t.Name, t.Price, ErrInvalidInput)
		}
		for d, v := range t.Capacity {
			if !finiteNonNeg(v) {
				return 0, fmt.Errorf("instance type %q capacity %d is %v: %w", t.Name, d, v, ErrInvalidInput)
			}
		}
		dims = max(dims, len(t.Capacity))
	}
	return dims, nil
}

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// at returns v[d], or 0 past the end of v.
func at(v []float64, d int) float64 {
	if d < len(v) {
		return v[d]
	}
	return 0
}

// fits reports whether a request vector fits within a capacity vector in each
// of the first dims dimensions.
func fits(req, capacity []float64, dims int) bool {
	for d := range dims {
		if at(req, d) > at(capacity, d) {
			return false
		}
	}
	return true
}

// share is the fraction of one node of capacity capacity that one pod
// requesting req occupies: max over dimensions of req/capacity, with 0/0
// counted as 0. The caller must have checked that req fits.
func share(req, capacity []float64, dims int) float64 {
	f := 0.0
	for d := range dims {
		r := at(req, d)
		if r > 0 {
			f = max(f, r/at(capacity, d))
		}
	}
	return f
}
