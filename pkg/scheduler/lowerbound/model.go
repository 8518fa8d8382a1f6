package lowerbound

import (
	"fmt"

	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// Model is the LP of packing one batch, built shape by shape and type by type: the one model
// the scheduler's plan, the packing ratio (package packing) and the scheduler's benchmarks
// solve. Its dimensions are, in order: cpu (millicores), memory (bytes), pod slots and ephemeral
// storage (bytes); one per class of pods past the first; one per extended resource.
//
// A class is a set of pods that may go only to some of the instance types (a node selector of
// their own, say). Class 0 is the pods with no such restriction and the types every pod may
// use. A pod of class k > 0 requests 1 of class k's dimension, of which only the types added
// for class k hold as many as their pod slots, so the LP puts pods of class k only on nodes of
// class k's types, and pods of class 0 anywhere.
type Model struct {
	classes  int
	extended int
	shapes   []Shape
	types    []InstanceType
}

// NewModel starts a model of the given number of pod classes (at least 1) and extended
// resources.
func NewModel(classes, extended int) *Model {
	return &Model{classes: max(classes, 1), extended: extended}
}

// dims is the length of every vector of the model.
func (m *Model) dims() int { return 4 + m.classes - 1 + m.extended }

// vector lays out r, the class's amount and the extended amounts in the model's dimensions.
func (m *Model) vector(r scheduling.Resources, class int, classAmount float64, extended []float64) []float64 {
	if class < 0 || class >= m.classes || len(extended) > m.extended {
		panic(fmt.Sprintf("lowerbound.Model: class %d of %d, %d extended resources of %d", class, m.classes, len(extended), m.extended))
	}
	v := make([]float64, m.dims())
	v[CPU], v[Memory], v[Pods], v[3] = float64(r.MilliCPU), float64(r.Memory), float64(r.Pods), float64(r.EphemeralStorage)
	if class > 0 {
		v[3+class] = classAmount
	}
	copy(v[3+m.classes:], extended)
	return v
}

// AddShape adds count pods of the class, each requesting r and the extended resources in the
// model's order (nil for none; missing trailing ones are 0). A class or more extended resources
// than the model has is a programming error, and panics. Shapes are solved in the order they are added, and named by
// name, which must be unique.
func (m *Model) AddShape(name string, class int, r scheduling.Resources, extended []float64, count int) {
	m.shapes = append(m.shapes, Shape{Name: name, Requests: m.vector(r, class, 1, extended), Count: count})
}

// AddType adds an instance type for the class's pods: room is what one node holds for pods
// (allocatable net of daemonsets), extended its extended resources in the model's order,
// price its $/hour. Names must be unique; Solution.Patterns index types in the order added.
func (m *Model) AddType(name string, class int, room scheduling.Resources, extended []float64, price float64) {
	m.types = append(m.types, InstanceType{Name: name, Capacity: m.vector(room, class, float64(room.Pods), extended), Price: price})
}

// Shapes are the shapes added, in order.
func (m *Model) Shapes() []Shape { return m.shapes }

// Types are the instance types added, in order.
func (m *Model) Types() []InstanceType { return m.types }

// Solve solves the model (Solve).
func (m *Model) Solve() (*Solution, error) { return Solve(m.shapes, m.types) }
