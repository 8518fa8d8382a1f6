// Package state owns Karpenter's view of the cluster: nodes and in-flight NodeClaims with the
// pods bound or nominated to them and their free room, the pods waiting for capacity, the
// daemonsets that will land on new nodes, and the NodePools.
//
// The objects come from an informer-backed client.Reader (the controller-runtime cache); this
// package adds what a cache cannot know yet and keeps it consistent under concurrent use:
// nominations (pods the provisioner placed on capacity that has not taken them yet), room
// reserved for the pods a ReplicaSet is still creating (reservations.go), which NodeClaims one
// pass launched together and may open to pods together (HoldsRegistration), NodeClaims just
// created but not yet seen by the cache (so a fast second batch cannot launch twice), and
// nodes marked for deletion by disruption.
//
// A pod that is not bound but has a status.nominatedNodeName (the kube-scheduler's, after a
// preemption, or one the provisioner had written) counts on that node, not as waiting: the
// kube-scheduler holds its room there.
//
// It is also the one adapter from that view to the scheduler's input (schedulerview.go): a
// StateNode's SchedulerNode (its room, its SchedulingTaints, the host ports of the daemonset
// pods it will run), the NodePools' instance types (LaunchableInstanceTypes), each NodePool as
// the scheduler sees it with what its limits still allow (SchedulerNodePools, counting each
// claim's LimitCapacity), and DaemonPods for new nodes. The provisioner, disruption's
// simulations and the simulate binder read the cluster through it.
package state
