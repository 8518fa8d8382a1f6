// Package disruption removes and replaces Karpenter's nodes when they are no longer wanted:
// unhealthy (node repair), drifted from their NodePool, empty, or underutilized. It is Karpenter's disruption
// controller, cut into a pure decision core and a thin orchestrator. Expiry is not a
// disruption method, as in Karpenter v1.15: package expiration deletes expired NodeClaims.
//
// # The flow of one pass (Controller.Step)
//
//  1. Follow every command in flight (its replacements are launching): once every
//     replacement is Initialized, delete the candidates' NodeClaims (the termination controller
//     drains them); when a replacement fails or ReplacementTimeout passes, abandon the command
//     and unmark its nodes. As Karpenter's orchestration queue, many commands are in flight at
//     once: each pass decides anew, the nodes of commands in flight marked (not candidates)
//     and counted against their NodePools' budgets, so one NodePool's drift does not wait for
//     another's replacement.
//  2. Take a snapshot of the cluster (state.Cluster), the PodDisruptionBudgets, each NodePool's
//     instance types and the cloud provider's drift verdict per NodeClaim, and call Decide.
//  3. Decide (pure, deterministic) evaluates every initialized NodeClaim of a dynamic NodePool
//     (those of static NodePools only for static drift):
//     its Consolidatable and Drifted conditions, and whether it is protected (nominated for
//     pods, as Karpenter's StateNode.Nominated: a provisioning pass placed pods on it or a
//     disruption command moved pods to it within the nomination window, or a pod nominated to
//     it waits; a karpenter.sh/do-not-disrupt annotation on its Node or NodeClaim; a
//     do-not-disrupt pod; a pod behind a PodDisruptionBudget that allows 0 disruptions). Consolidation never touches
//     a protected node; drift does only when the protection is its pods' and its NodeClaim has
//     a terminationGracePeriod (the drain honours the pods until it ends). Then it tries the
//     methods in order and returns the first command found:
//     repair, with Options.Repair (repair.go: a node a repair policy finds unhealthy past its
//     toleration, most urgent first, within its NodePool's Unhealthy budget, unless
//     karpenter.sh/do-not-repair or more than 20% of its NodePool unhealthy stops it; replaced
//     as drift replaces, its drain bounded by its policy) →
//     Emptiness (delete; a node is empty when its pods' eviction costs add nothing, as
//     Karpenter's Candidate.IsEmpty) → static drift (a drifted node of a static NodePool,
//     replaced by a NodeClaim of its template launched first) → Drift (replace) →
//     multi-node consolidation (delete or replace many by at most one cheaper node, largest
//     prefix found by binary search, candidates ordered by savings ratio: price over reschedule
//     cost, 1 plus their pods' EvictionCost, as Karpenter orders them) → single-node consolidation (delete,
//     or replace by a strictly cheaper node, trying one node of each NodePool in turn) →
//     re-pack consolidation, ours (repack.go, docs/repack.md): while a NodePool costs 1.10×
//     or more the lower bound of its pods packed from scratch (Input.Packing, measured by the
//     controller every Options.PackingInterval and served as karpenter_cluster_packing_ratio),
//     replace its most wasteful nodes by fewer new ones, never of their own types, saving at
//     least 10% of their price.
//     As Karpenter's, the two consolidation searches are bounded in time on the controller's
//     clock: multi-node consolidation returns the best command found within a minute, and
//     single-node consolidation gives up after three minutes, to try first next pass the
//     NodePools it had not reached; each time counts in
//     karpenter_voluntary_disruption_consolidation_timeouts_total.
//     Every simulation runs the provisioning scheduler (scheduler.Solve) with the command's
//     nodes removed and their pods to place, so a pod is never left with nowhere to go. As
//     Karpenter's SimulateScheduling, it places the pending pods and the pods of nodes being
//     deleted beside them (the room they take is not promised twice; a pending pod that fits
//     nowhere blocks nothing), and a candidate whose pods would need a node still launching is
//     not consolidated ("would schedule against uninitialized nodeclaim/…"). When the pending
//     and deleting pods alone need more new nodes than the method may create, every what-if
//     of the pass is refused at once ("Can't remove without creating N candidates").
//     As Karpenter's, emptiness, multi-node and single-node consolidation each skip a pass in
//     which nothing they count changed since one of their own found nothing (a pod bound or
//     deleted, a node or claim created, deleted, initialized or marked for deletion, a
//     NodePool changed), looking again at least every 5 minutes (consolidationState); on
//     purpose, what changes which nodes they may act on counts as a change here too (a node
//     becoming consolidatable, a budget window, a PodDisruptionBudget allowing disruptions
//     again, pending pods: Decision.NextChange and Decision.Eligibility), where Karpenter
//     waits for the 5-minute refresh.
//  4. The controller writes the conditions, and carries out the command: drift at once; consolidation (Empty, Underutilized) only after it has been decided again, the same,
//     on a fresh snapshot at least ValidationDelay later.
//  5. Carrying out a command: taint its nodes karpenter.sh/disrupted, create the replacement
//     NodeClaims, then mark its nodes in state.Cluster, as Karpenter's queue (the provisioner
//     places no pod on a marked node and places a marked node's pods, which find the
//     replacements' room; a static NodePool's node, drifted or repaired, is marked first, for
//     the static NodePool controller), and continue at step 1; the DisruptionReason condition
//     and the Events come as the candidates are deleted (a repaired node's NodeClaim first
//     gets its termination timestamp, its drain bound from now).
//
// # Budgets
//
// Each NodePool's disruption.budgets bound how many of its nodes may be disrupting at once, per
// reason (Empty, Underutilized, Drifted, and Unhealthy for repair); the most restrictive active
// budget wins, a percentage is of the NodePool's initialized nodes (rounded up), those being
// deleted or NotReady count against it (for Unhealthy, those being deleted only), and a budget with a cron schedule is active for its duration
// after each firing (UTC; see ParseSchedule).
//
// # Cost rules
//
// A replacement is strictly cheaper than the nodes it replaces (their prices read from the
// instance type's offering in the node's zone and capacity type, cloudprovider.NodePrice), never the same instance type
// as the single node it replaces, and on-demand when it replaces a spot node unless
// Options.SpotToSpotConsolidation allows spot. The Balanced policy acts on underutilized nodes
// only when the share of the NodePools' cost saved is at least half the share of their pods
// moved.
//
// # Files
//
// decide.go holds Decide and the methods' table; each method is a file of its own (repair.go,
// emptiness.go, drift.go, consolidation.go, repack.go), reading one decision's state
// (decider.go) and asking the what-if simulator (simulator.go). The controller (controller.go)
// reads the cluster, decides and carries the command out. Golden scenarios
// (testdata/scenarios, TestScenarios, -update) play a cluster's decisions command by command.
package disruption
