// Package lowerbound owns the cost lower bound for packing a batch of pods
// onto cloud instance types: the optimum of the LP relaxation of the packing
// problem, solved exactly (to about 1e-9 relative) with its own simplex code.
// Tests and benchmarks of the scheduler compare the scheduler's $/hour with
// it ("within 5% of the bound"). It knows nothing of Kubernetes objects or of
// the cloud provider (only of pkg/scheduling's resource vector): callers turn
// pods into Shapes and instance types (with
// capacity net of system and daemonset overhead) into InstanceTypes, through
// Model, the one layout of the dimensions (resources, pod classes, extended
// resources) that the scheduler's plan, the packing ratio and the benchmarks
// share.
//
// # The LP
//
// Pod shapes s, each with a request vector r_s (CPU millicores, memory bytes,
// pod slots = 1, optionally more dimensions such as GPUs) and a count c_s;
// instance types t, each with a capacity vector a_t and a price p_t ($/hour).
// Nodes are fractional, but every pod's resources land on one type:
//
//	minimize   Σ_t p_t·n_t
//	subject to Σ_t y_{s,t} = c_s                     for every shape s
//	           Σ_s r_{s,d}·y_{s,t} ≤ a_{t,d}·n_t       for every type t and dimension d
//	           n ≥ 0,  y ≥ 0,  y_{s,t} only where r_s ≤ a_t in every dimension.
//
// Any real packing (whole nodes, whole pods) is a feasible point, so its cost
// is at least the LP optimum. The LP is not the integer optimum: it lets a
// node be partly bought and a pod's requests be spread over nodes of one type.
//
// # The numbers
//
//   - Solution.Cost: the LP optimum, the true lower bound this package exists
//     for. Solution.Bound is the same number seen from the dual side (a
//     certified lower bound, equal to Cost within the solver tolerance).
//   - AggregateBound (Solution.Aggregate): the cheapest fleet whose total
//     capacity covers the batch's total requests, ignoring which pod fits
//     where. A weaker lower bound: Aggregate ≤ Cost. It is far below Cost
//     when big pods only fit dear types.
//   - PerPodBound (Solution.PerPod): each pod alone on the cheapest fraction
//     of a node it fits. NOT a lower bound in general: complementary pods
//     (CPU-heavy with memory-heavy) sharing a balanced type cost less. It is
//     the cost of one feasible LP solution, so Cost ≤ PerPod.
//
// # The algorithm
//
// Solve drops the dimensions no pod requests, prunes dominated instance
// types (see Prune) on the remaining ones, and solves the LP by column
// generation (Dantzig-Wolfe decomposition by instance type). A column is a
// load pattern, one node of type t holding x_s pods of each shape, and the
// master problem is a covering LP over patterns with one row per shape,
// solved by a revised primal simplex with an explicit basis inverse and
// periodic refactorization. The pricing problem for type t, the best pattern
// at the master's shape values u, is a packing LP with one row per dimension,
// solved by a small dense tableau simplex. Both simplex codes use Dantzig's
// rule and fall back to Bland's rule on runs of degenerate pivots, so they
// cannot cycle. Generation starts from the per-pod solution and stops when
// no pattern improves, or when the master objective is within 1e-10 relative
// of Farley's Lagrangian bound. The last pricing round's duals, scaled to be
// exactly feasible, give Solution.Bound and the certificate in
// Solution.ShapeValues and Solution.ResourcePrices.
//
// Solution.Patterns exposes the optimal basis's columns (type, pods per
// shape on one node, fractional node count): the plan a packer rounds into
// whole nodes (the scheduler does, see its lpplan.go).
//
// Everything is sequential and iterates in input order, so results are
// deterministic.
package lowerbound
