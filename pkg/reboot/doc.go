// Package reboot carries out the reboots node repair commits, as Karpenter v1.15.0's reboot
// controller (pkg/controllers/nodeclaim/reboot): node repair (package disruption, a policy
// whose action is RebootNode, under the AWS provider's RebootForRepair gate) commits a reboot
// by setting a NodeClaim's Rebooting condition True with reason RebootRequested, and this
// package takes it from there to an end:
//
//  1. Requested: the Node gets the karpenter.sh/rebooting:NoSchedule taint, so no new pod
//     lands on it, and is drained through the Eviction API, as the termination drain does
//     (package termination), for at least MinDrainTime (late bindings) and at most the drain
//     bound the NodeClaim's karpenter.sh/reboot-termination-grace-period annotation gives:
//     past it the pods left ride the reboot, none is deleted; without the annotation the drain
//     waits as long as it takes; "0" skips it. Then the Node's boot ID is kept in the
//     karpenter.sh/reboot-pre-boot-id annotation and the cloud asked to reboot the instance
//     (cloudprovider.InstanceRebooter), retried for IssuanceTimeout.
//  2. Issued: the condition's reason becomes RebootIssued, the NodeClaim's Initialized
//     condition Unknown (reason Rebooting) and the Node loses its karpenter.sh/initialized
//     label: initialization holds for one boot. Once the Node reports another boot ID the
//     taint goes (a RebootObserved Event), and once it is Ready again the reboot has
//     succeeded: Rebooting False (RebootSucceeded), and the NodeClaim's lifecycle initializes
//     it afresh.
//  3. A reboot the cloud refuses for good (it cannot reboot, a missing permission, the
//     instance is gone), that is not issued within IssuanceTimeout, or whose node does not
//     rejoin within ObservationWindow of its issue, has failed: the node is replaced (its
//     NodeClaim deleted, its drain bounded as the reboot's was) and a RebootFailed Event says
//     why. A malformed drain bound fails the reboot without replacing the node.
//
// Every end is counted in karpenter_nodes_reboots_total and timed in
// karpenter_nodes_reboot_duration_seconds (and, for a success,
// karpenter_nodes_reboot_recovery_duration_seconds). The controller runs whatever the gates
// say, so a reboot under way finishes after they change, as Karpenter's.
package reboot
