// Package repair replaces unhealthy nodes as Karpenter's legacy node.health controller does:
// Karpenter v1.15 runs it, under the NodeRepair feature gate, only with --legacy-node-repair
// (LEGACY_NODE_REPAIR); without it, repair is a disruption method (package disruption,
// MethodRepair). v1.14 ran this controller by default.
//
// # What is unhealthy
//
// The cloud provider declares repair policies (cloudprovider.RepairPolicyProvider): a Node
// condition, the status that is unhealthy, optionally a pattern its reason must match, and how
// long it is tolerated; as Karpenter's legacy controller, this one keeps only the policies
// that replace (ReplaceNode) and ignores their drain bounds and priorities. The operator gives
// it the cloud's legacy policies (cloudprovider.LegacyRepairPolicies): the AWS provider and
// the simulated cloud declare EC2's of v1.14 (cloudprovider.LegacyEC2RepairPolicies), as the
// AWS provider v1.15.2 does with --legacy-node-repair: Ready False or Unknown for 30 minutes,
// and the EKS node monitoring agent's AcceleratedHardwareReady False for 10, StorageReady,
// NetworkingReady, KernelReady and ContainerRuntimeReady False for 30, whatever the reason. A
// node whose condition has had such a status for longer than the policy's toleration, counted
// from the condition's lastTransitionTime, is beyond repair in place.
//
// # The flow
//
// Controller reconciles Nodes that have exactly one NodeClaim (by provider ID). For each:
//
//  1. Of the policies its conditions match, the one whose toleration runs out first decides.
//     None: nothing to do. Not run out yet: look again when it does.
//  2. The safety valve: when more than 20% of the nodes of the NodeClaim's NodePool (of the
//     cluster, for a NodeClaim without one) match a policy, whatever their toleration, the
//     failure is presumed to be the cluster's rather than the nodes' (a broken CNI, an
//     unreachable API server), and nothing is repaired: a NodeRepairBlocked Warning Event on
//     the Node, the NodeClaim and the NodePool says so, and the node is looked at again in 5
//     minutes. The percentage rounds up, so one unhealthy node in a NodePool of up to 5 is
//     repaired.
//  3. Forceful termination: the NodeClaim gets karpenter.sh/nodeclaim-termination-timestamp
//     set to now (an earlier timestamp is kept), so that its drain (package termination)
//     deletes its pods at once without waiting for PodDisruptionBudgets or
//     karpenter.sh/do-not-disrupt, and is deleted. Disruption budgets are not consulted.
//     The pods' controllers recreate them and the provisioner launches what they need.
//  4. The deletion is counted in karpenter_nodeclaims_disrupted_total (reason unhealthy),
//     karpenter_pods_disruption_initiated_total and
//     karpenter_nodeclaims_unhealthy_disrupted_total (by condition, NodePool, capacity type,
//     image and termination mode), and announced by DisruptionTerminating Events on the Node
//     and the NodeClaim ("Disrupting Node: Unhealthy").
//
// Reconcile reads and writes only through the client.Client it was given and takes all time
// from the injected clock, so `karpenter simulate` calls it directly on its in-memory cluster
// and virtual clock. Register wires it to a manager, watching Nodes launched from an
// EC2NodeClass, and their updates only when their conditions change.
package repair
