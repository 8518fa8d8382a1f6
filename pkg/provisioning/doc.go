// Package provisioning turns pods that cannot be scheduled into NodeClaims. A pod controller
// notices unschedulable pods and triggers the Batcher, which waits for a quiet moment (1s idle,
// at most 10s) so one decision covers a burst of pods. The Provisioner then takes a snapshot of
// the cluster (pkg/state), asks the scheduler (pkg/scheduler) where each pod goes
// and what to launch, creates the NodeClaims, nominates the pods to the capacity they will land
// on (so the next batch does not launch for them again), and writes an Event on every pod it
// could not place, with the reason per NodePool.
//
// Once the Node of a NodeClaim registers, the NominationController writes the plan onto the
// pods nominated to it (status.nominatedNodeName), so the kube-scheduler binds each pod to the
// node launched for it rather than to whichever node happens to become ready first; without
// that, a burst's pods land in a different packing than planned, some no longer fit, and a
// node is launched for them.
//
// Static NodePools (spec.replicas) are left to pkg/nodepool, and NodePools that are not Ready
// (their NodeClass missing or not ready) launch nothing.
package provisioning
