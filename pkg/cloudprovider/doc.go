// Package cloudprovider owns the boundary between Karpenter's controllers and a cloud: the
// CloudProvider interface every cloud implements (the AWS provider in pkg/providers/aws,
// the simulated cloud in pkg/providers/sim), the typed errors that cross it, and the model
// of what a cloud sells — InstanceType (labels, capacity, overhead, allocatable) and its
// Offerings (zone × capacity type × price × availability).
//
// Controllers never talk to a cloud API directly. They launch, delete, get and list instances
// as NodeClaims, ask which instance types a NodePool may use, and ask whether a launched claim
// has drifted from its NodeClass, all through CloudProvider. Callers branch on the
// typed errors (NodeClaimNotFoundError, InsufficientCapacityError, NodeClassNotReadyError,
// CreateError) with the Is… helpers, which see through %w wrapping.
//
// The instance-type model is built for a scheduler that evaluates it millions of times:
// everything is computed once when the type is built (labels, capacity, overhead) or on first
// use and then memoized (Allocatable, AllocatableResources); offerings are plain structs with
// zone and capacity type as fields; the offering helpers do not allocate when nothing is
// filtered out. InstanceTypes are shared and must be treated as immutable once built.
//
// NewInstanceTypes builds instance types from the EC2 catalog (pkg/cloudprovider/catalog) with
// Karpenter's AWS overhead rules: VM memory overhead, ENI-limited pod density, kube-reserved,
// system-reserved and eviction thresholds, and kubelet overrides of each. Prices come from a
// Prices source (the catalog's, with modelled spot prices, unless the caller gives another),
// and WithPriceOverrides changes any price.
package cloudprovider
