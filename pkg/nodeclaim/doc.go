// Package nodeclaim owns a NodeClaim's life after the provisioner creates it: launching its
// instance, registering the Node that instance's kubelet creates, deciding when that Node is
// initialized, giving up on claims that never get there, and terminating the instance when the
// claim is deleted. It also garbage-collects instances and claims that lost each other.
//
// # The lifecycle
//
// LifecycleController reconciles one NodeClaim at a time, in this order:
//
//  1. Finalization is not done here: a deleting claim is left to the termination controller
//     (package termination), which drains its Node and then calls
//     LifecycleController.Finalize: the Node is deleted, the cloud provider is asked to
//     terminate the instance until it reports the instance gone (the InstanceTerminating
//     condition says it is waiting), and then the karpenter.sh/termination finalizer is
//     removed from the Node and from the claim.
//  2. The karpenter.sh/termination finalizer is added, so that no claim disappears while its
//     instance runs.
//  3. Launch. A claim without a provider ID is handed to CloudProvider.Create. The launched
//     instance's labels are merged into the claim's labels, and its provider ID, image,
//     capacity and allocatable into the claim's status, with Launched=True. Insufficient
//     capacity marks the offerings that ran out unavailable and deletes the claim, so the
//     provisioner's next batch asks for something else; a NodeClass that is not ready, or a
//     terminal create error, deletes the claim; any other error sets Launched=Unknown with
//     its reason, as Karpenter's, and is returned for controller-runtime to retry with
//     backoff. A
//     claim is never launched twice: the provider ID on the claim, a per-process cache of
//     launches whose status write has not been seen yet, and the cloud provider's idempotency
//     by claim name each prevent it.
//  4. Registration. The Node whose spec.providerID is the claim's is found (through the
//     ProviderIDIndex field index when the client has it, else by listing Nodes), and handed
//     to the BeforeRegister hook (the provisioner points the claim's pods at it). It gets the
//     claim's labels plus karpenter.sh/registered=true, the claim's taints and startup taints
//     it lacks, loses the karpenter.sh/unregistered taint, gains the termination finalizer and
//     a (non-controller) owner reference to the claim; then the claim records status.nodeName
//     and Registered=True. A registered claim whose Node is deleted (or gone) is left to the
//     termination controller, which deletes it, so that the instance is terminated through
//     the claim.
//  5. Initialization. Once the Node is Ready, none of the claim's startup taints remain and
//     every extended resource in the claim's capacity is allocatable on the Node, the Node is
//     labelled karpenter.sh/initialized=true and the claim gets Initialized=True.
//  6. Ready is the conjunction of Launched, Registered and Initialized, as Karpenter's root
//     condition: False (UnhealthyDependents) when one of them is False, Unknown
//     (ReconcilingDependents) while one is Unknown, its message naming those not True.
//     Conditions are written through the status subresource, only when they change, with
//     transition times from the injected clock.
//  7. Liveness. A claim not Launched within LaunchTimeout of its creation, or not Registered
//     within the registration TTL, is deleted (Karpenter measures from the conditions'
//     transitions, which it stamps with the creation time when it first sets them and keeps
//     through failed launches: the same times).
//
// LifecycleOptions.RegistrationHealth hears of each registration, and of each claim deleted
// without having registered (liveness, or a launch error retrying cannot fix), for the
// NodePools' NodeRegistrationHealthy condition.
//
// Events on the NodeClaim announce launches, launch failures, registration, initialization,
// deletions for liveness, and termination; those of transitions recorded in
// the status are emitted only once the status write succeeded. A write that loses an
// optimistic-concurrency race (a stale read from a cache) is retried after a second instead of
// being reported as an error.
//
// # Consistency
//
// ConsistencyController checks, at most every ConsistencyScanPeriod per claim, that a launched
// claim's Node is what the claim expected (its capacity, for the resources the claim's pods
// requested), as Karpenter's consistency controller does, and records the outcome in the
// ConsistentStateFound condition and FailedConsistencyCheck Events.
//
// # Garbage collection
//
// GarbageCollector periodically compares the cloud with the cluster: instances whose NodeClaim
// no longer exists (after a grace period, so a launch whose claim the cache has not seen yet
// is spared) are terminated, and launched claims whose instance the cloud no longer has are
// deleted.
//
// Every reconciler here takes its time from an injected clock and reads and writes only through
// a client.Client, so `karpenter simulate` drives the very same code on an in-memory cluster
// and a virtual clock, without a manager.
package nodeclaim
