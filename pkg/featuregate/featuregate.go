// Package featuregate is the one table of Karpenter's feature gates this project knows: their
// names, Karpenter's defaults, and what each does here. The controller (FEATURE_GATES,
// AWS_FEATURE_GATES), the Helm chart's settings.featureGates and the simulator's workload
// featureGates all read gates through it, so they accept and refuse the same things.
//
// A gate either switches working behaviour here, or its feature is not built here yet and
// turning it on is refused with a message naming it. No known gate is accepted and ignored. A
// name the table does not know is accepted and set nothing, as Karpenter accepts it (its own
// chart renders gates of newer releases); Gates.Unknown lists such names, for the caller to
// warn about.
package featuregate

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Support says what a gate does in this project.
type Support int

const (
	// Switches: the gate turns a feature that works here on or off.
	Switches Support = iota
	// NotBuilt: the feature does not exist here yet. Off is accepted (it is what runs);
	// on is refused.
	NotBuilt
)

// Gate is one feature gate.
type Gate struct {
	// Name is the gate's name in FEATURE_GATES, as Karpenter spells it.
	Name string
	// Default is Karpenter's default: the value when the gate is not set.
	Default bool
	// Stage is Karpenter's stability stage of the feature: Alpha or Beta.
	Stage string
	// Support is what the gate does here.
	Support Support
	// Here says what the gate does in this project, for messages and docs.
	Here string
}

// Karpenter's gate names (FEATURE_GATES), as in Karpenter v1.15.
const (
	NodeRepair                = "NodeRepair"
	ReservedCapacity          = "ReservedCapacity"
	SpotToSpotConsolidation   = "SpotToSpotConsolidation"
	NodeOverlay               = "NodeOverlay"
	StaticCapacity            = "StaticCapacity"
	CapacityBuffer            = "CapacityBuffer"
	TerminateFirstDrift       = "TerminateFirstDrift"
	TerminateFirstRepair      = "TerminateFirstRepair"
	PodDeletionCostManagement = "PodDeletionCostManagement"
)

// RepackConsolidation is this project's own gate, not Karpenter's: re-pack consolidation
// (package disruption, docs/repack.md). Off by default, so a fleet is disrupted only as
// Karpenter would disrupt it.
const RepackConsolidation = "RepackConsolidation"

// The gates of Karpenter's AWS provider (AWS_FEATURE_GATES), as in v1.15.2.
const (
	NodeClassCEL    = "NodeClassCEL"
	DRANVIDIAGPU    = "DRANVIDIAGPU"
	DRAEFA          = "DRAEFA"
	RebootForRepair = "RebootForRepair"
)

// Table is a set of gates read from one "Name=true,Other=false" setting.
type Table struct {
	// Setting names the flag and environment variable that carry the gates, for messages:
	// "--feature-gates (FEATURE_GATES)".
	Setting string
	// Gates are the known gates, in Karpenter's order.
	Gates []Gate
}

// Karpenter is the table of Karpenter's own gates (FEATURE_GATES), with Karpenter v1.15's
// defaults (sigs.k8s.io/karpenter pkg/operator/options).
var Karpenter = Table{
	Setting: "--feature-gates (FEATURE_GATES)",
	Gates: []Gate{
		{Name: NodeRepair, Stage: "Alpha", Support: Switches,
			Here: "a node whose condition matches one of the cloud provider's repair policies (Ready False or Unknown, or a node monitoring agent's condition) for longer than it tolerates is repaired as a disruption method, as in Karpenter v1.15: within its NodePool's Unhealthy budget, its replacement launched first, its drain bounded, unless karpenter.sh/do-not-repair or more than 20% of its NodePool unhealthy stops it; --legacy-node-repair runs Karpenter's legacy node.health controller instead"},
		{Name: ReservedCapacity, Default: true, Stage: "Beta", Support: Switches,
			Here: "as the AWS provider v1.15.2, on EC2 (--cloud-provider aws): an EC2NodeClass's capacityReservationSelectorTerms (id, or tags with ownerID and instanceMatchCriteria) resolve every minute to status.capacityReservations (condition CapacityReservationsReady, part of Ready); each active reservation with a free slot is a reserved offering of its instance type in its zone, priced at the on-demand price / 10,000,000 and carrying karpenter.k8s.aws/capacity-reservation-id, -type and -interruptible; a claim that allows reserved capacity launches into one first through a launch template targeting it (capacity-reservations-only; Capacity Blocks and interruptible reservations with their market type), its node labelled karpenter.sh/capacity-type: reserved and with the reservation's labels; a full reservation falls back to spot or on-demand as the claim allows (a claim allowing reserved only fails with insufficient capacity); other launches opt out of open reservations (preference none). Off, the terms are ignored and nothing is reserved, as there. the scheduler counts each reservation's slots within a batch (ReservationManager) and pins the claims it plans into one; the NodeClaims of a Capacity Block within 40 minutes of its end are deleted (capacityreservation.expiration); the simulated cloud and simulate sell the reservations a workload declares under cloud.reservations. When an On-Demand Capacity Reservation ends, its nodes are relabelled on-demand (capacityreservation.capacitytype); consolidation prices a reserved node at its reservation, as Karpenter's"},
		{Name: SpotToSpotConsolidation, Stage: "Alpha", Support: Switches,
			Here: "consolidation may replace a spot node with cheaper spot capacity"},
		{Name: NodeOverlay, Stage: "Alpha", Support: Switches,
			Here: "NodeOverlays (karpenter.sh/v1alpha1) adjust the prices and add extended resources to the capacity of the instance types they select, for scheduling, consolidation, static NodePools, launches and the cost metrics; with the gate off they are not read, as in Karpenter"},
		{Name: StaticCapacity, Stage: "Alpha", Support: Switches,
			Here: "NodePools that set spec.replicas are kept at that many nodes; with the gate off they get no nodes, as in Karpenter, and each gets a Warning event saying why"},
		{Name: CapacityBuffer, Stage: "Alpha", Support: Switches,
			Here: "CapacityBuffers (autoscaling.x-k8s.io/v1beta1) keep spare capacity: their pods are placed as pending ones (nodes launch for them) but never created, consolidation keeps their room, and real pods take it at once"},
		{Name: TerminateFirstDrift, Stage: "Alpha", Support: Switches,
			Here: "drift terminates a drifted node before its replacement when the replacement cannot launch first, as Karpenter v1.15: a node of a static NodePool at its limits.nodes (the static NodePool controller refills it); Karpenter's other case, a node in a full capacity reservation, is not built yet (disruption's rules for reserved nodes); off, such a node is blocked"},
		{Name: TerminateFirstRepair, Stage: "Alpha", Support: Switches,
			Here: "node repair terminates an unhealthy node before its replacement when the replacement cannot launch first, as Karpenter v1.15: a node of a static NodePool at its limits.nodes (the static NodePool controller refills it); Karpenter's other case, a node in a full capacity reservation, is not built yet (disruption's rules for reserved nodes); off, such a node is blocked; the simulator honours it too, and refuses it only with the workload's legacyNodeRepair (the legacy controller never stages a replacement)"},
		{Name: PodDeletionCostManagement, Stage: "Alpha", Support: Switches,
			Here: "as Karpenter v1.15, every minute the pods a ReplicaSet controls get controller.kubernetes.io/pod-deletion-cost from their node's rank, so a scale-down removes first the pods of the nodes consolidation would disrupt first: the lowest int32 on nodes being disrupted, then -n to -1 over the drifted and consolidatable nodes in consolidation's order within their NodePools' budgets; the annotation is removed on the other nodes (a user's value is overwritten), and consolidation no longer reads it as a pod's cost; the simulator accepts the gate but only that last part applies there (its pods have no ReplicaSet, and its scale-down removes the newest pods)"},
		{Name: RepackConsolidation, Stage: "Alpha", Support: Switches,
			Here: "this project's own gate, not Karpenter's: when Karpenter's consolidation finds nothing and a NodePool's nodes cost 1.10x or more the lower bound of their pods packed from scratch, re-pack consolidation replaces its most wasteful nodes by cheaper ones, within budgets, PodDisruptionBudgets and do-not-disrupt (docs/repack.md)"},
	},
}

// AWS is the table of the AWS provider's gates (AWS_FEATURE_GATES), with Karpenter's defaults.
var AWS = Table{
	Setting: "--aws-feature-gates (AWS_FEATURE_GATES)",
	Gates: []Gate{
		{Name: NodeClassCEL, Stage: "Alpha", Support: Switches,
			Here: "an EC2NodeClass's spec.kubelet may hold CEL expressions, evaluated per instance type as in Karpenter's AWS provider v1.15.2: maxPods as a string, kubeReserved and systemReserved values that are not quantities (cpu in millicores, memory in MiB, ephemeral-storage in GiB), over vcpus, memory_mib, default_enis, ips_per_eni, max_pods and instance_type; the results size the instance types (pods, allocatable) and reach the nodes' user data; an expression that does not compile or fails for an instance type leaves the NodeClass not Ready (KubeletExpressionInvalid, KubeletExpressionEvaluationFailed); off, a NodeClass with one is not Ready (KubeletExpressionsDisabled); on the simulated cloud and in simulate too (featureGates: {NodeClassCEL: true})"},
		{Name: DRANVIDIAGPU, Stage: "Alpha", Support: Switches,
			Here: "as in the AWS provider v1.15.2 with IGNORE_DRA_REQUESTS=true, Karpenter's default and the only setting here (DRA scheduling is not built): scheduling does not change, and an EC2NodeClass's karpenter.k8s.aws/nvidia-consumable-capacity annotation may ask for GPU sharing (off, such a NodeClass is not Ready: DRADisabled; a value the driver does not take: NVIDIAConsumableCapacityInvalid)"},
		{Name: DRAEFA, Stage: "Alpha", Support: Switches,
			Here: "as in the AWS provider v1.15.2 with IGNORE_DRA_REQUESTS=true, Karpenter's default and the only setting here (DRA scheduling is not built): the gate changes nothing, since the EFA devices it describes are read only by DRA scheduling"},
		{Name: RebootForRepair, Stage: "Alpha", Support: Switches,
			Here: "with NodeRepair, a node whose GPU reports a fault a reboot clears (the node monitoring agent's AcceleratedHardwareReady False with a known XID) is rebooted in place instead of replaced, as the AWS provider v1.15.2: drained (at most 5 minutes), its instance rebooted (ec2:RebootInstances, or the simulated cloud's), and back once it reports a new boot ID and Ready; a reboot that fails, or a third fault within 24 hours, replaces the node"},
	},
}

// Gates are the value of every gate of a table: the ones set, and the defaults of the others.
type Gates struct {
	table   *Table
	values  map[string]bool
	unknown []string
}

// Unknown are the names set that the table does not know, in name order: accepted, and
// setting nothing.
func (g Gates) Unknown() []string { return g.unknown }

// Names are the table's gate names, in order.
func (t *Table) Names() []string {
	names := make([]string, len(t.Gates))
	for i, g := range t.Gates {
		names[i] = g.Name
	}
	return names
}

// Lookup returns the gate of that name.
func (t *Table) Lookup(name string) (Gate, bool) {
	for _, g := range t.Gates {
		if g.Name == name {
			return g, true
		}
	}
	return Gate{}, false
}

// Defaults are the table's gates at Karpenter's defaults.
func (t *Table) Defaults() Gates {
	g := Gates{table: t, values: map[string]bool{}}
	for _, gate := range t.Gates {
		g.values[gate.Name] = gate.Default
	}
	return g
}

// Parse reads "Name=true,Other=false" (spaces around items are ignored; an empty string sets
// nothing) into the table's gates, the unset ones at their defaults. A malformed item or a gate
// turned on whose feature is not built here is an error naming it and the setting; an unknown
// name is accepted (see Gates.Unknown).
func (t *Table) Parse(s string) (Gates, error) {
	set := map[string]bool{}
	var errs []error
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, value, ok := strings.Cut(item, "=")
		enabled, err := strconv.ParseBool(strings.TrimSpace(value))
		if !ok || err != nil {
			errs = append(errs, fmt.Errorf("%q: want Name=true or Name=false", item))
			continue
		}
		set[strings.TrimSpace(name)] = enabled
	}
	gates, err := t.FromMap(set)
	if err := errors.Join(append(errs, err)...); err != nil {
		return Gates{}, fmt.Errorf("%s: %w", t.Setting, err)
	}
	return gates, nil
}

// FromMap checks gates given as a map (a YAML mapping such as the simulator's featureGates),
// as Parse does its items, without naming the setting: the caller names the field. Each error
// names its gate; they are reported in name order.
func (t *Table) FromMap(set map[string]bool) (Gates, error) {
	gates := t.Defaults()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(set)) {
		if _, known := t.Lookup(name); !known {
			gates.unknown = append(gates.unknown, name)
			continue
		}
		if err := t.Check(name, set[name]); err != nil {
			errs = append(errs, err)
			continue
		}
		gates.values[name] = set[name]
	}
	if err := errors.Join(errs...); err != nil {
		return Gates{}, err
	}
	return gates, nil
}

// Check says whether the gate may be set to enabled here: an unknown name is an error listing
// the known ones (for callers that refuse names they do not know, such as the simulator's
// workload file), and turning on a gate whose feature is not built is an error saying so.
func (t *Table) Check(name string, enabled bool) error {
	gate, ok := t.Lookup(name)
	if !ok {
		return fmt.Errorf("unknown feature gate %q: the known gates are %s", name, strings.Join(t.Names(), ", "))
	}
	if enabled && gate.Support == NotBuilt {
		return fmt.Errorf("feature gate %s=true: %s, so it cannot be enabled; remove it or set it to false", name, gate.Here)
	}
	return nil
}

// Enabled says whether the named gate is on. It panics on a name the table does not have: a
// programming error, not input.
func (g Gates) Enabled(name string) bool {
	v, ok := g.values[name]
	if !ok {
		panic(fmt.Sprintf("featuregate: %q is not a gate of these Gates", name))
	}
	return v
}

// String renders the gates as FEATURE_GATES does, "Name=true,Other=false", in the table's
// order.
func (g Gates) String() string {
	if g.table == nil {
		return ""
	}
	items := make([]string, len(g.table.Gates))
	for i, gate := range g.table.Gates {
		items[i] = fmt.Sprintf("%s=%t", gate.Name, g.values[gate.Name])
	}
	return strings.Join(items, ",")
}
