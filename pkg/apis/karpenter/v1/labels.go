package v1

// Labels Karpenter sets on the nodes it creates, and that NodePool requirements may name.
const (
	// NodePoolLabelKey names the NodePool a node or NodeClaim belongs to.
	NodePoolLabelKey = Group + "/nodepool"
	// CapacityTypeLabelKey says how an instance is bought: spot, on-demand or reserved.
	CapacityTypeLabelKey = Group + "/capacity-type"
	// NodeRegisteredLabelKey is set on a node once its NodeClaim has registered it.
	NodeRegisteredLabelKey = Group + "/registered"
	// NodeInitializedLabelKey is set on a node once it is ready and its startup taints are gone.
	NodeInitializedLabelKey = Group + "/initialized"
	// NodeDoNotSyncTaintsLabelKey stops Karpenter from syncing taints onto a registered node.
	NodeDoNotSyncTaintsLabelKey = Group + "/do-not-sync-taints"
)

// Values of CapacityTypeLabelKey.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// Annotations Karpenter reads or writes.
const (
	// DoNotDisruptAnnotationKey, set to "true" on a pod or node, blocks voluntary disruption.
	DoNotDisruptAnnotationKey = Group + "/do-not-disrupt"
	// DoNotRepairAnnotationKey, set to "true" on a node, keeps node repair off it, whatever its
	// conditions (Karpenter v1.15's repair disruption method).
	DoNotRepairAnnotationKey = Group + "/do-not-repair"
	// DisruptionCostAnnotationKey, an int32 on a pod, weighs its eviction when consolidation
	// orders nodes: higher costs more (see disruption.EvictionCost).
	DisruptionCostAnnotationKey = Group + "/disruption-cost"
	// NodePoolHashAnnotationKey holds the hash of a NodePool's static template fields, copied to
	// each NodeClaim at launch so drift can be detected.
	NodePoolHashAnnotationKey = Group + "/nodepool-hash"
	// NodePoolHashVersionAnnotationKey versions the hashing scheme of NodePoolHashAnnotationKey.
	NodePoolHashVersionAnnotationKey = Group + "/nodepool-hash-version"
	// NodeClaimTerminationTimestampAnnotationKey records when a draining node must be forcibly
	// terminated (deletion time plus terminationGracePeriod).
	NodeClaimTerminationTimestampAnnotationKey = Group + "/nodeclaim-termination-timestamp"
	// NodeClaimMinValuesRelaxedAnnotationKey says ("true" or "false") whether the scheduler
	// lowered the minValues of a NodeClaim's requirements to what its instance types meet
	// (minValuesPolicy BestEffort, MIN_VALUES_POLICY).
	NodeClaimMinValuesRelaxedAnnotationKey = Group + "/nodeclaim-min-values-relaxed"
	// RebootPreBootIDAnnotationKey holds, on a NodeClaim whose node repair reboots, the Node's
	// boot ID before the reboot was issued: a different boot ID means it happened (so it is
	// not issued again). Removed when the reboot ends.
	RebootPreBootIDAnnotationKey = Group + "/reboot-pre-boot-id"
	// RebootTerminationGracePeriodAnnotationKey bounds, on a NodeClaim to reboot, the drain
	// before the reboot (a duration; "0" reboots without draining); absent, the drain waits.
	RebootTerminationGracePeriodAnnotationKey = Group + "/reboot-termination-grace-period"
)

// Finalizers and taints.
const (
	// TerminationFinalizer holds NodeClaims and Nodes until their instance is terminated.
	TerminationFinalizer = Group + "/termination"
	// UnregisteredTaintKey is placed on nodes at boot and removed when Karpenter registers them.
	UnregisteredTaintKey = Group + "/unregistered"
	// DisruptedTaintKey cordons a node that Karpenter is disrupting.
	DisruptedTaintKey = Group + "/disrupted"
	// RebootingTaintKey (NoSchedule) keeps new pods off a node from when its reboot is
	// committed until it reports a new boot ID.
	RebootingTaintKey = Group + "/rebooting"
)

// The phases of a reboot, as the reason of a NodeClaim's Rebooting condition: Requested when
// node repair commits it, Issued once the cloud accepted it (True while under way), then
// Succeeded or Failed (False).
const (
	RebootReasonRequested = "RebootRequested"
	RebootReasonIssued    = "RebootIssued"
	RebootReasonSucceeded = "RebootSucceeded"
	RebootReasonFailed    = "RebootFailed"
	// RebootReasonRebooting is the reason of the Initialized condition, Unknown, while the
	// node reboots: initialization holds for one boot.
	RebootReasonRebooting = "Rebooting"
)

// RestrictedLabelDomains are label domains users may not set in NodePool templates, except for
// the keys in WellKnownKarpenterLabels.
var RestrictedLabelDomains = []string{Group, "karpenter.k8s.aws"}

// DisruptionReason says why Karpenter disrupts a node. Underutilized, Empty, Drifted and
// Unhealthy may appear in a disruption budget's reasons.
type DisruptionReason string

// The disruption reasons.
const (
	DisruptionReasonUnderutilized DisruptionReason = "Underutilized"
	DisruptionReasonEmpty         DisruptionReason = "Empty"
	DisruptionReasonDrifted       DisruptionReason = "Drifted"
	DisruptionReasonExpired       DisruptionReason = "Expired"
	DisruptionReasonInterrupted   DisruptionReason = "Interrupted"
	// DisruptionReasonUnhealthy: node repair replaces a node whose condition says it is
	// unhealthy (the NodeRepair feature gate).
	DisruptionReasonUnhealthy DisruptionReason = "Unhealthy"
)

// NodeClaim and NodePool condition types.
const (
	// ConditionTypeLaunched: the cloud provider created the instance.
	ConditionTypeLaunched = "Launched"
	// ConditionTypeRegistered: a Node with the claim's providerID joined the cluster.
	ConditionTypeRegistered = "Registered"
	// ConditionTypeInitialized: the node is Ready, startup taints are gone and its extended
	// resources are registered.
	ConditionTypeInitialized = "Initialized"
	// ConditionTypeDrifted: the claim no longer matches its NodePool or NodeClass.
	ConditionTypeDrifted = "Drifted"
	// ConditionTypeConsolidatable: the node may be considered for consolidation.
	ConditionTypeConsolidatable = "Consolidatable"
	// ConditionTypeDisruptionReason: the node is being disrupted; the reason says why.
	ConditionTypeDisruptionReason = "DisruptionReason"
	// ConditionTypeDrained: the node's drain completed (its pods evicted, or deleted at the
	// termination grace period's end).
	ConditionTypeDrained = "Drained"
	// ConditionTypeVolumesDetached: the VolumeAttachments of the draining node's volumes are
	// gone (False when the termination grace period ran out first).
	ConditionTypeVolumesDetached = "VolumesDetached"
	// ConditionTypeInstanceTerminating: the instance is being terminated.
	ConditionTypeInstanceTerminating = "InstanceTerminating"
	// ConditionTypeConsistentStateFound: the claim's Node passed the consistency checks (its
	// capacity is what the claim expected); False when one failed.
	ConditionTypeConsistentStateFound = "ConsistentStateFound"
	// ConditionTypeRebooting: node repair rebooting the node in place; True while the reboot
	// is under way, False once it ended (its reason says how).
	ConditionTypeRebooting = "Rebooting"
	// ConditionTypeReady is the roll-up condition of NodeClaims, NodePools and NodeClasses.
	ConditionTypeReady = "Ready"
	// ConditionTypeNodeClassReady: the NodePool's NodeClass exists and is ready.
	ConditionTypeNodeClassReady = "NodeClassReady"
	// ConditionTypeValidationSucceeded: the NodePool passed the checks the schema cannot make.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
	// ConditionTypeNodeRegistrationHealthy: the NodePool's recent NodeClaims launched and
	// registered (False when too many failed to, which calls for a look at its configuration;
	// Unknown after the NodePool or its NodeClass changed, until a claim tells).
	ConditionTypeNodeRegistrationHealthy = "NodeRegistrationHealthy"
)
