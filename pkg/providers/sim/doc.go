// Package sim owns the simulated cloud: a complete, deterministic implementation of
// cloudprovider.CloudProvider that `karpenter simulate`, local development and the end-to-end
// tests run on, and the kubelet stand-in that turns its instances into Nodes.
//
// # The cloud
//
// Cloud sells the EC2 catalog (pkg/cloudprovider/catalog) in one region's zones, as spot and
// on-demand, at the catalog's prices (modelled spot prices included) unless overridden. It reuses
// EC2NodeClass as its NodeClass, so users' manifests apply unchanged: the kubelet settings,
// AMI family and disks of the NodeClass shape capacity and overhead exactly as on AWS
// (cloudprovider.OptionsFromNodeClass).
//
// Create behaves like EC2's launch: it returns at once with the instance pending; the instance
// is running once the launch latency (plus jitter) has passed on the injected clock. It picks,
// among the instance types and offerings the claim's requirements and resource requests allow,
// the preferred capacity type (reserved, then spot, then on-demand, of those the claim allows)
// and within it the cheapest offering; ties go to the instance type name, then the zone. When
// that offering's capacity pool is empty or switched off by the fault plan it falls through to
// the next one, and when none can launch it returns an InsufficientCapacityError naming every
// offering it tried. The claim's name is the idempotency key: creating again for a claim that
// already has an instance returns that instance, so a restarted controller never launches twice.
//
// Provider IDs have the form
//
//	sim:///<zone>/<instance-id>      e.g. sim:///us-east-1a/i-0b7c2e1f4a9d3c5e8
//
// mirroring the AWS provider's aws:///<zone>/<instance-id>. Instance IDs are 17 hex digits
// derived from the seed and a launch counter; image IDs are derived from the NodeClass's
// amiSelectorTerms (an id term is used as is) and the instance's architecture.
//
// # Faults
//
// The fault plan injects what real clouds do: a rate of transient launch errors, API throttling
// (a share of calls refused with a *ThrottlingError, EC2's RequestLimitExceeded), insufficient
// capacity per offering (switchable at run time with SetOfferingAvailable), finite capacity
// pools (SetCapacity), extra launch latency jitter, instances lost out of band at a rate per
// instance-hour (their loss time drawn at launch and stored with them, so a restored cloud
// agrees), and spot interruptions, either requested (Interrupt) or drawn at launch from a rate. An interrupted instance gets a two-minute notice,
// visible through Interruptions, and is terminated when the notice runs out. Nodes fall ill the
// same two ways: MakeUnhealthy makes an instance's Node report a condition (Ready Unknown, a
// node monitoring agent's KernelReady False, …) from a given time, and a failure rate draws
// each instance's failure time at launch. The cloud's RepairPolicies are EC2's as Karpenter's
// AWS provider v1.15.2 declares them (cloudprovider.EC2RepairPolicies; its LegacyRepairPolicies
// those of v1.14, for --legacy-node-repair), so node repair replaces such nodes as it would on
// AWS.
//
// # Determinism
//
// All randomness comes from one math/rand source seeded by Options.Seed, and all time from the
// injected clock; the cloud starts no goroutines. Time-driven changes (instances becoming
// running, interruption deadlines) are applied lazily, at the clock's current time, by every
// call. The same options and the same sequence of calls give the same instances, IDs, prices
// and errors.
//
// # The kubelet stand-in
//
// Kubelet plays the parts of a cluster that a cloud provides and a bare API server lacks: for
// every running instance it registers a Node (named by the instance's private DNS name, with its
// provider ID, labels, capacity and the karpenter.sh/unregistered, NodeClaim and not-ready
// taints), marks it Ready after a delay (or reports its faults: see Kubelet), lifts the NodeClaim's startup taints a while later (as
// the agents they wait for, such as Cilium, would), optionally marks the pods bound to it
// Running, and deletes Nodes whose instances are gone (as the cloud node-lifecycle controller
// does, honouring finalizers). Step does one pass, for simulations on a virtual clock; Run steps
// periodically.
//
// # The NodeClass resolver
//
// NodeClassStatusController plays the AWS provider's EC2NodeClass controller: it resolves a
// NodeClass's selector terms to the cloud's subnets (one per zone), security groups, images
// (one per architecture, the same IDs Create boots) and instance profile, and marks it Ready.
// The cloud does not depend on it: a NodeClass without conditions is usable, and one whose
// Ready condition is False is not.
package sim
