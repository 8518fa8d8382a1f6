// Package scheduler decides where pending pods go and which instances to launch for them. It is
// pure: it takes a snapshot (pods, existing nodes and in-flight claims with their free room,
// NodePools with their instance types and remaining limits) and returns placements, new claims
// and a reason for every pod it could not place. No I/O, no goroutines, no clock, no map-order
// dependence: the same input gives the same output.
//
// The flow, for each pod in a fixed order (higher priority first, then pods with node-level
// topology constraints, then larger requests):
//
//  1. Existing nodes and in-flight claims: the first whose labels, taints, free room, host
//     ports, topology spread and pod (anti-)affinity all admit the pod.
//  2. Claims opened earlier in this batch: the first that admits the pod at no extra cost;
//     failing that, the one whose upgrade to a larger instance type costs least, if that is no
//     more than the pod's worth at market prices.
//  3. A new claim on the highest-weight NodePool that admits the pod. Its target instance type
//     is the one that would hold the pending pods most cheaply per unit of value (a greedy
//     look-ahead over the remaining pods), valued with per-resource market prices derived from
//     the instance types (the dual of covering the batch's total demand).
//
// Pods that fit nowhere are retried with their preferences relaxed one at a time (preferred node
// affinity, preferred pod (anti-)affinity, ScheduleAnyway spread), as Karpenter does, unless the
// options say to ignore preferences. A claim finally keeps every compatible instance type that
// fits its pods, cheapest offering first, so the launch can fall back.
//
// Speed comes from grouping pods into shapes (identical requests and constraints): the checks
// of a shape against NodePools and instance types are made once, not once per pod.
package scheduler
