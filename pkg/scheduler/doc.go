// Package scheduler decides where pending pods go and which instances to launch for them. It is
// pure: it takes a snapshot (pods, existing nodes and in-flight claims with their free room,
// NodePools with their instance types and remaining limits) and returns placements, new claims
// and a reason for every pod it could not place. No I/O, no goroutines, no clock, no map-order
// dependence: the same input gives the same output.
//
// # Feasibility: one pipeline
//
// Every target a pod is tried on (an existing node or in-flight claim, a claim opened earlier
// in the batch, a new claim on a NodePool, and the prospective node the look-ahead sizes) goes
// through one ordered list of feasibility stages (stages.go). A stage that does not apply to a
// kind of target passes it; the first that refuses ends the trial and says why. The stages, in
// order:
//
//   - avoid: an existing node or in-flight claim the pod avoids, as it turned the pod away
//     before.
//   - room: free cpu, memory, pods, ephemeral storage and extended resources on a node; on a
//     claim holding pods, the room its NodePool's largest instance type would leave.
//   - taints: the node's or the NodePool's taints, tolerated by the pod.
//   - requirements: the pod's node selector, required node affinity (and the preferences
//     still held) and volume zones, against a node's labels or a claim's requirements, which
//     they narrow.
//   - host ports: the host ports in use on the node or by the claim's pods.
//   - topology: topology spread, pod affinity and anti-affinity, and other pods'
//     anti-affinity, in a domain the target has or, for a claim, can still choose.
//   - instance type: claims only: an instance type that holds the claim's pods with this one
//     beside the daemonsets, within the NodePool's limits and minValues. As Karpenter's
//     subtractMax, a claim opening is charged, against the limits, the most any type it may
//     launch as has, and its types stay within that charge: a batch never takes a NodePool
//     over its limits whichever types launch, and what a limit no longer allows goes to the
//     next NodePool in the same batch.
//
// Cheap and selective stages come first; topology is last of the shared checks because it is
// costly and stateful, and the instance type search last because it needs what the others
// narrowed. Outside a solve, CheckNode runs the node stages that need no other pending pod
// (room, taints, requirements, host ports) for one pod on one node: provisioning judges with
// it why a nominated node turned its pod away. Each refusal is counted per NodePool (existing nodes under "") and stage in
// Results.Refusals; a pod that stays unplaced gets an UnschedulableError saying how many
// existing nodes refused it for which reasons, then why each NodePool could not take it.
//
// # Ranking and the flow
//
// For each pod in a fixed order (higher priority first, then pods with node-level topology
// constraints, then larger requests):
//
//  1. Existing nodes and in-flight claims: the first the pipeline admits the pod on.
//  2. Claims opened earlier in this batch: a claim that was promised a pod of its size first;
//     then the first that admits the pod at no extra cost (on a claim the LP plan opened, only
//     in the room its promises leave); failing that, the one whose upgrade to a larger
//     instance type costs least, if that is no more than the pod's worth at market prices.
//  3. A new claim on the highest-weight NodePool that admits the pod (equal weights: the name
//     that sorts last, as Karpenter's OrderByWeight). Where the LP plan applies
//     (the pod has no node-level constraints and no host ports; the NodePool has no minValues;
//     its limits, if any, still allow the node's type), the claim is the next node of the plan
//     that holds a pod of its size
//     (lpplan.go): the LP relaxation of packing the NodePool's pending pods
//     (pkg/scheduler/lowerbound), its load patterns rounded down to whole nodes; the claim
//     targets the pattern's type and is promised the pattern's other pods. Otherwise, or when
//     no plan node is left after a few replans, its target instance type is the one that would
//     hold the pending pods most cheaply per unit of value (a greedy look-ahead over the
//     remaining pods the pipeline admits on such a node), valued with per-resource market
//     prices derived from the instance types (the dual of covering the batch's total demand).
//
// Once every pod is tried, the claims of each NodePool that share their requirements (their
// zone, above all) are repacked, each claim's pods kept together, into fewer nodes where that
// costs no more (mergeClaims): sized one at a time, pods that find few partners, such as a zonal
// spread catching up in one zone, would otherwise make many small nodes. Finally the batch is
// solved again as Karpenter does (Options.GrowClaims: a pod joins the first open claim some
// instance type still fits; in our order of pods, and for batches of up to bothOrdersUpTo pods
// also in Karpenter's, cpu then memory descending, with its claims tried fewest pods first as
// Karpenter sorts them), and the cheapest answer is kept, so a batch never costs more than
// Karpenter's packing of it. A pod only selected by other pods' preferred pod affinity or
// ScheduleAnyway spread does not narrow its claim's domain, as Karpenter's topology records
// only known domains. Growing claims, a pod whose zone anti-affinity (its own, or another
// pod's that selects it) is all that binds its domain leaves its claim every domain that
// admits it, and is counted in all of them, as Karpenter's nextDomainAntiAffinity and
// Topology.Record: a pod joining later may still narrow the claim to where a type for both
// is offered, and the launch takes the cheapest of what is left. An
// answer that leaves pods unplaced gives way to Karpenter's if that places any of them: in our
// order a small pod with zonal anti-affinity, placed first, can shut a larger one out of the
// only zone it may use. When the batch has pods the kube-scheduler places on its own (a
// DoNotSchedule topology spread, whose nominations are not announced), Karpenter's packing,
// one node per domain, is kept if it costs at most 5% more, because a zone's share split over
// several nodes does not land as planned.
//
// # Topology domains
//
// A spread's domains are those of the existing nodes its node inclusion policies count (the
// owner's node selector and required node affinity, never its volumes' zones or held
// preferences; taints under nodeTaintsPolicy Honor), and those new claims could land in. A
// pod placed in the batch counts only where its node is counted, as Karpenter's
// TopologyGroup.Counts. Deliberate difference: Karpenter registers every zone of every
// NodePool's instance types; here a zone counts only where an instance type has room for the
// least any pod of the batch asks (extended resources included), since no node appears in the
// others and the kube-scheduler counts the zones of nodes that exist. GPU pods spread over the
// zones GPU types are offered in, not held at maxSkew against a zone only CPU types reach.
//
// Pods that fit nowhere are retried with their preferences relaxed one at a time (preferred node
// affinity, preferred pod (anti-)affinity, ScheduleAnyway spread), as Karpenter does, unless the
// options say to ignore preferences. A claim finally keeps every compatible instance type that
// fits its pods, cheapest offering first, so the launch can fall back.
//
// Speed comes from grouping pods into shapes (identical requests and constraints): the checks
// of a shape against NodePools and instance types are made once, not once per pod.
package scheduler
