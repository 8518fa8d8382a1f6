// Package termination terminates NodeClaims safely: it cordons their Node, drains it through
// the Eviction API so that PodDisruptionBudgets are honoured, bounds the drain by the claim's
// terminationGracePeriod, and only then hands the claim to a Finalizer that deletes the Node,
// terminates the instance and removes the finalizers.
//
// # The flow
//
// Controller reconciles NodeClaims. For one that is being deleted and still holds the
// karpenter.sh/termination finalizer, each reconcile:
//
//  1. Finds its Nodes: those with its provider ID and the one status.nodeName names. A claim
//     whose Node never registered has none and goes straight to step 6.
//  2. Records the deadline. When spec.terminationGracePeriod is set, the annotation
//     karpenter.sh/nodeclaim-termination-timestamp is written as deletionTimestamp plus the
//     grace period (RFC 3339); an annotation already there is kept.
//  3. Cordons: the karpenter.sh/disrupted:NoSchedule taint is added to each Node (nothing
//     else: the Node is not marked unschedulable), announced by a Draining Event.
//  4. Drains, before the deadline. The pods bound to the Nodes are sorted by namespace and
//     name and grouped: pods that are terminal, owned by a DaemonSet, static or mirror pods
//     (owned by the Node or annotated kubernetes.io/config.mirror), or that tolerate the
//     disrupted taint are left alone; the others are non-critical, or critical when their
//     priority class is system-cluster-critical or system-node-critical or their priority is
//     at least 2000000000. As Kubernetes does on shutdown, the critical group is drained only
//     once the non-critical group is gone. In the group at work, pods already terminating are
//     waited for (unless stuck: their deletionTimestamp passed more than
//     Options.StuckTerminatingTimeout ago), pods annotated karpenter.sh/do-not-disrupt "true",
//     or a duration not yet run out since they started, are waited for (a FailedDraining Event
//     says so; the drain looks again when the duration ends), and every other pod is evicted through
//     the eviction subresource, with its UID as a precondition. An eviction refused with 429
//     TooManyRequests (a budget allows no disruption) records FailedDraining naming the
//     budget ("pdb default/web blocks eviction of pod x") and is retried with backoff: after
//     EvictionRetryBase, doubling with each pass that evicts nothing, at most
//     Options.EvictionRetry; otherwise the drain looks again after Options.DrainPoll.
//     Before the deadline, a pod the drain would wait for (or evict) is deleted directly once
//     the deadline less its own terminationGracePeriodSeconds has come, with its deletion's
//     grace period clamped to the time left, so that it gets its full grace period before the
//     node goes (Karpenter does the same).
//  5. Once the deadline has passed, the pods the drain would still wait for are deleted
//     directly, ignoring budgets and do-not-disrupt, and the claim goes on to step 6 without
//     waiting for them: the grace period bounds the node's life.
//  6. When nothing is left to drain, Finalizer.Finalize is called (and called again as its
//     result asks). When it has removed the claim's finalizer, a Terminated Event is recorded
//     on the claim and its Nodes.
//
// A claim that is not being deleted whose Node, managed by Karpenter (holding the termination
// finalizer), is being deleted — a user deleted the Node directly — is deleted, and then
// terminated by the same flow, so that the Node is drained and its instance terminated, as
// Karpenter's node termination controller does; so is a registered claim whose Node is gone.
// This controller alone deletes a claim for its Node, and alone finalizes deleting claims:
// the lifecycle controller of package nodeclaim leaves them to it, and the
// *nodeclaim.LifecycleController is the Finalizer it calls once drained.
//
// Reconcile reads and writes only through the client.Client it was given and takes all time
// from the injected clock, so `karpenter simulate` calls it directly on its in-memory cluster
// and virtual clock. Register wires it to a manager, watching NodeClaims and the Nodes mapped
// to them; IndexFields adds the pod index it lists through.
package termination
