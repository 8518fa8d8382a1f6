package metrics

import (
	"regexp"
	"strings"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// Namespace prefixes every metric name.
const Namespace = "karpenter"

// Label names, as Karpenter spells them.
const (
	// LabelNodePool is the name of the NodePool that owns a NodeClaim or node.
	LabelNodePool = "nodepool"
	// LabelReason is why a NodeClaim was created or disrupted, or why a disruption decision
	// was made (see the Reason* constants and DisruptionReason).
	LabelReason = "reason"
	// LabelCapacityType is the karpenter.sh/capacity-type: spot, on-demand or reserved.
	LabelCapacityType = "capacity_type"
	// LabelZone is the topology.kubernetes.io/zone.
	LabelZone = "zone"
	// LabelRegion is the topology.kubernetes.io/region.
	LabelRegion = "region"
	// LabelInstanceType is the node.kubernetes.io/instance-type.
	LabelInstanceType = "instance_type"
	// LabelArch is the kubernetes.io/arch.
	LabelArch = "arch"
	// LabelOS is the kubernetes.io/os.
	LabelOS = "os"
	// LabelResourceType is a resource name in snake case: cpu, memory, pods,
	// ephemeral_storage, nvidia.com/gpu, … (see ResourceType).
	LabelResourceType = "resource_type"
	// LabelNodeName is the name of a Node.
	LabelNodeName = "node_name"
	// LabelDecision is what a disruption decision does: DecisionDelete, DecisionReplace or
	// DecisionTerminateFirst.
	LabelDecision = "decision"
	// LabelTerminateFirstReason is why a terminate-first decision could not launch its
	// replacement first, as Karpenter's TerminateFirstReason: static-at-limit.
	LabelTerminateFirstReason = "terminate_first_reason"
	// LabelConsolidationType is the consolidation method of a decision: empty, single or
	// multi; empty for drift and expiration.
	LabelConsolidationType = "consolidation_type"
	// LabelController is the controller that made a call or ran the scheduler.
	LabelController = "controller"
	// LabelMethod is the CloudProvider method called: Create, Delete, Get, List,
	// GetInstanceTypes or IsDrifted.
	LabelMethod = "method"
	// LabelProvider is the cloud provider's name (CloudProvider.Name): sim or aws.
	LabelProvider = "provider"
	// LabelError is the type of a cloud provider error, such as InsufficientCapacityError;
	// empty for errors of no known type.
	LabelError = "error"
	// LabelLaunched is "true" when the node a pod was nominated to was launched for it.
	LabelLaunched = "launched"
	// LabelName is a pod's name.
	LabelName = "name"
	// LabelNamespace is a pod's namespace.
	LabelNamespace = "namespace"
	// LabelOwner is the API path of a pod's first owner, such as
	// /apis/apps/v1/namespaces/default/replicasets/web-5d8f9; empty for a pod without owner.
	LabelOwner = "owner"
	// LabelNode is the name of the node a pod is bound to; empty while it is not bound.
	LabelNode = "node"
	// LabelPhase is a pod's phase: Pending, Running, Succeeded, Failed or Unknown.
	LabelPhase = "phase"
	// LabelManaged says whether Karpenter manages a node, or a pod's node ("true" or "false").
	LabelManaged = "managed"
	// LabelWindowsBuild is a node's node.kubernetes.io/windows-build label.
	LabelWindowsBuild = "windows_build"
	// LabelMinValuesRelaxed says whether a NodeClaim was created with its minValues relaxed.
	LabelMinValuesRelaxed = "min_values_relaxed"
	// LabelConsolidationPolicy is the NodePool's consolidation policy in snake case
	// (when_empty, when_empty_or_underutilized) for disruptions by consolidation, else empty.
	LabelConsolidationPolicy = "consolidation_policy"
	// LabelPolicy is a NodePool's consolidation policy as written (Balanced, WhenEmpty, …).
	LabelPolicy = "policy"
	// LabelTerminationMode is how a disrupted NodeClaim's drain is bounded: TerminationMode.
	LabelTerminationMode = "termination_mode"
	// LabelCode is an HTTP response code.
	LabelCode = "code"
	// LabelCondition is the Node condition node repair replaced a node for, in snake case
	// (ready, kernel_ready, accelerated_hardware_ready: see ConditionLabel).
	LabelCondition = "condition"
	// LabelImageID is the image a NodeClaim's instance booted (its status.imageID).
	LabelImageID = "image_id"
	// LabelVersion, LabelGoVersion, LabelGoArch and LabelCommit describe the build.
	LabelVersion   = "version"
	LabelGoVersion = "goversion"
	LabelGoArch    = "goarch"
	LabelCommit    = "commit"
)

// Values of LabelTerminationMode, as Karpenter's: a NodeClaim without a
// terminationGracePeriod drains gracefully (for as long as it takes), one with a positive one
// eventually (forced at its end), one with zero forcefully.
const (
	TerminationModeGraceful = "graceful"
	TerminationModeEventual = "eventual"
	TerminationModeForceful = "forceful"
)

// ReasonForcefulTermination is PodsDrainedTotal's reason for pods of a node with no disruption
// reason (deleted by a user or for liveness), as Karpenter's.
const ReasonForcefulTermination = "Forceful Termination"

// TerminationMode is the LabelTerminationMode of a claim.
func TerminationMode(claim *karpv1.NodeClaim) string {
	switch g := claim.Spec.TerminationGracePeriod; {
	case g == nil:
		return TerminationModeGraceful
	case g.Duration <= 0:
		return TerminationModeForceful
	}
	return TerminationModeEventual
}

// ConsolidationPolicy is a NodePool's consolidation policy as LabelConsolidationPolicy gives it:
// in Karpenter's snake case (when_empty, when_empty_or_underutilized).
func ConsolidationPolicy(p karpv1.ConsolidationPolicy) string { return snakeCase(string(p)) }

// Values of LabelReason for karpenter_nodeclaims_created_total besides the disruption reasons
// (a replacement is created with the reason of the disruption it is for).
const (
	// ReasonProvisioned: created by the provisioner for pending pods.
	ReasonProvisioned = "provisioned"
	// ReasonStatic: created to keep a static NodePool at its replica count.
	ReasonStatic = "static"
)

// Values of LabelReason for karpenter_nodeclaims_disrupted_total besides the disruption reasons.
const (
	// ReasonLaunchTimeout: the NodeClaim did not launch within the launch timeout.
	ReasonLaunchTimeout = "launch_timeout"
	// ReasonRegistrationTimeout: the NodeClaim's node did not register within the registration
	// timeout.
	ReasonRegistrationTimeout = "registration_timeout"
	// ReasonNodeClassNotReady: the NodeClaim's NodeClass was not ready when it launched.
	ReasonNodeClassNotReady = "nodeclass_not_ready"
	// ReasonGarbageCollected: the NodeClaim's instance no longer exists in the cloud.
	ReasonGarbageCollected = "garbage_collected"
	// ReasonUnhealthy: node repair replaced the node, whose condition matched a repair policy
	// for longer than the policy tolerates.
	ReasonUnhealthy = "unhealthy"
	// An interrupted NodeClaim's reason is its interruption message's kind (MessageType*).
)

// Values of LabelDecision.
const (
	// DecisionDelete: the nodes are removed and nothing replaces them.
	DecisionDelete = "delete"
	// DecisionReplace: replacements are launched before the nodes are removed.
	DecisionReplace = "replace"
	// DecisionTerminateFirst: the nodes are removed before their replacement can launch
	// (TerminateFirstRepair), as Karpenter's TerminateFirstDecision.
	DecisionTerminateFirst = "terminate-first"
	// DecisionReboot: node repair reboots the nodes in place (the RebootForRepair gate), as
	// Karpenter's RebootDecision.
	DecisionReboot = "reboot"
)

// Values of LabelConsolidationType.
const (
	// ConsolidationTypeEmpty: emptiness, the removal of nodes with no pods to move.
	ConsolidationTypeEmpty = "empty"
	// ConsolidationTypeSingle: single-node consolidation.
	ConsolidationTypeSingle = "single"
	// ConsolidationTypeMulti: multi-node consolidation.
	ConsolidationTypeMulti = "multi"
)

// Values of LabelController for karpenter_scheduler_scheduling_duration_seconds and the cloud
// provider metrics; the NodeClaim and NodePool controllers use their controller names.
const (
	// ControllerProvisioner is the provisioner.
	ControllerProvisioner = "provisioner"
	// ControllerDisruption is the disruption controller.
	ControllerDisruption = "disruption"
	// ControllerMetrics is the collector of the state gauges (it reads instance types).
	ControllerMetrics = "metrics"
)

// DisruptionReason is the LabelReason value of a disruption reason: the reason in lower case
// (empty, underutilized, drifted, expired, interrupted).
func DisruptionReason(r karpv1.DisruptionReason) string { return strings.ToLower(string(r)) }

// ResourceType is the LabelResourceType value of a resource name: lower case, with dashes
// turned into underscores (ephemeral-storage becomes ephemeral_storage).
func ResourceType(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "-", "_")
}

// Karpenter's snake case (its pretty.ToSnakeCase): a capital that starts a word, then a
// capital after a lower-case letter or digit, gets an underscore before it.
var (
	wordStart   = regexp.MustCompile("(.)([A-Z][a-z]+)")
	capitalJoin = regexp.MustCompile("([a-z0-9])([A-Z])")
)

// snakeCase is s in Karpenter's snake case: KernelReady becomes kernel_ready, EBSReady
// ebs_ready.
func snakeCase(s string) string {
	return strings.ToLower(capitalJoin.ReplaceAllString(wordStart.ReplaceAllString(s, "${1}_${2}"), "${1}_${2}"))
}

// ConditionLabel is the LabelCondition value of a Node condition type, in snake case as
// Karpenter writes it: KernelReady becomes kernel_ready, AcceleratedHardwareReady
// accelerated_hardware_ready, Ready ready.
func ConditionLabel(conditionType string) string { return snakeCase(conditionType) }
