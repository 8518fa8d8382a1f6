package disruption

import (
	"errors"
	"fmt"
	"time"

	"github.com/openkarpenter/karpenter/pkg/health"
)

// Defaults of Options.
const (
	// DefaultPollInterval is the time between two passes of Start.
	DefaultPollInterval = 10 * time.Second
	// DefaultFollowInterval is the time between two passes while a command is in flight.
	DefaultFollowInterval = time.Second
	// DefaultValidationDelay is how long a consolidation decision waits before it is confirmed on
	// a fresh snapshot and carried out.
	DefaultValidationDelay = 15 * time.Second
	// DefaultReplacementTimeout is how long replacements may take to initialize before the
	// command is abandoned.
	DefaultReplacementTimeout = 10 * time.Minute
	// DefaultMaxMultiNodeCandidates bounds the candidates multi-node consolidation considers.
	DefaultMaxMultiNodeCandidates = 100
	// BalancedThreshold is the least ratio of cost share saved to reschedule cost share
	// disrupted at which the Balanced policy consolidates underutilized nodes (1/balancedK).
	BalancedThreshold = 1.0 / balancedK
	// balancedK is Karpenter's BalancedK.
	balancedK = 2
)

// Options tune disruption. The zero value is Karpenter's behaviour.
type Options struct {
	// SpotToSpotConsolidation allows a spot node to be replaced by a cheaper spot node (the
	// feature gate of the same name). Off, a spot node is only deleted or replaced by on-demand.
	SpotToSpotConsolidation bool
	// PollInterval is the time between passes of Start; zero means DefaultPollInterval.
	PollInterval time.Duration
	// FollowInterval is the time between passes while a command is in flight: following it
	// costs a few reads, and its candidates go as soon as its replacements are initialized, as
	// Karpenter's orchestration queue (which runs apart from its disruption loop) deletes
	// them. Zero means DefaultFollowInterval.
	FollowInterval time.Duration
	// ValidationDelay is the wait before a consolidation decision is confirmed; zero means
	// DefaultValidationDelay.
	ValidationDelay time.Duration
	// ReplacementTimeout bounds how long replacements may take to initialize; zero means
	// DefaultReplacementTimeout.
	ReplacementTimeout time.Duration
	// MaxMultiNodeCandidates bounds multi-node consolidation; zero means
	// DefaultMaxMultiNodeCandidates.
	MaxMultiNodeCandidates int
	// PackingInterval is how often the controller re-packs the fleet from scratch (PackingOf)
	// for the packing metrics and re-pack consolidation; zero means DefaultPackingInterval.
	PackingInterval time.Duration
	// Repack turns re-pack consolidation (ours, the RepackConsolidation gate) on. Off, the
	// packing is still measured, but only Karpenter's consolidation methods act.
	Repack bool
	// Repair turns node repair as a disruption method (MethodRepair) on: the cloud provider's
	// repair policies, compiled (health.NewMatcher). Karpenter v1.15 runs it under the
	// NodeRepair gate unless --legacy-node-repair runs the legacy controller (package repair)
	// instead. Nil: no repair here.
	Repair *health.Matcher
	// TerminateFirstRepair lets repair terminate a node before its replacement when the
	// replacement cannot launch first (the TerminateFirstRepair gate): here, a node of a static
	// NodePool at its limits.nodes, which is otherwise blocked.
	TerminateFirstRepair bool
	// TerminateFirstDrift lets drift terminate a node before its replacement when the
	// replacement cannot launch first (the TerminateFirstDrift gate): here, a drifted node of a
	// static NodePool at its limits.nodes, which is otherwise blocked.
	TerminateFirstDrift bool
	// PodDeletionCostManagement is the gate of that name: Karpenter writes
	// controller.kubernetes.io/pod-deletion-cost itself (package deletioncost), so a pod's
	// eviction cost no longer reads it (ManagedEvictionCost), as in Karpenter v1.15.
	PodDeletionCostManagement bool
}

// Validate reports the first invalid option.
func (o Options) Validate() error {
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"poll interval", o.PollInterval}, {"follow interval", o.FollowInterval}, {"validation delay", o.ValidationDelay}, {"replacement timeout", o.ReplacementTimeout}, {"packing interval", o.PackingInterval}} {
		if d.d < 0 {
			return fmt.Errorf("%s %s is negative", d.name, d.d)
		}
	}
	if o.MaxMultiNodeCandidates < 0 {
		return errors.New("multi-node candidate bound must not be negative")
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.FollowInterval == 0 {
		o.FollowInterval = DefaultFollowInterval
	}
	if o.ValidationDelay == 0 {
		o.ValidationDelay = DefaultValidationDelay
	}
	if o.ReplacementTimeout == 0 {
		o.ReplacementTimeout = DefaultReplacementTimeout
	}
	if o.MaxMultiNodeCandidates == 0 {
		o.MaxMultiNodeCandidates = DefaultMaxMultiNodeCandidates
	}
	if o.PackingInterval == 0 {
		o.PackingInterval = DefaultPackingInterval
	}
	return o
}
