package cloudprovider

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// NodeClaimNotFoundError says the instance behind a NodeClaim (or provider ID) does not exist
// or has terminated.
type NodeClaimNotFoundError struct {
	// Err is the underlying cause, if any.
	Err error
}

// NewNodeClaimNotFoundError returns a NodeClaimNotFoundError wrapping err (which may be nil).
func NewNodeClaimNotFoundError(err error) *NodeClaimNotFoundError {
	return &NodeClaimNotFoundError{Err: err}
}

// Error implements error.
func (e *NodeClaimNotFoundError) Error() string {
	if e.Err == nil {
		return "nodeclaim not found"
	}
	return "nodeclaim not found: " + e.Err.Error()
}

// Unwrap returns the underlying cause.
func (e *NodeClaimNotFoundError) Unwrap() error { return e.Err }

// IsNodeClaimNotFoundError reports whether err is, or wraps, a NodeClaimNotFoundError.
func IsNodeClaimNotFoundError(err error) bool {
	var target *NodeClaimNotFoundError
	return errors.As(err, &target)
}

// IgnoreNodeClaimNotFoundError returns nil when err is a NodeClaimNotFoundError and err
// otherwise; deleting something already gone is success.
func IgnoreNodeClaimNotFoundError(err error) error {
	if IsNodeClaimNotFoundError(err) {
		return nil
	}
	return err
}

// NodeRebootNotImplementedError says the cloud cannot reboot an instance in place, as
// Karpenter's: a reboot asked of it fails at once, and the node is replaced instead.
type NodeRebootNotImplementedError struct{}

// NewNodeRebootNotImplementedError returns a NodeRebootNotImplementedError.
func NewNodeRebootNotImplementedError() *NodeRebootNotImplementedError {
	return &NodeRebootNotImplementedError{}
}

// Error implements error.
func (e *NodeRebootNotImplementedError) Error() string {
	return "reboot is not implemented by this cloud provider"
}

// IsNodeRebootNotImplementedError reports whether err is, or wraps, a
// NodeRebootNotImplementedError.
func IsNodeRebootNotImplementedError(err error) bool {
	var target *NodeRebootNotImplementedError
	return errors.As(err, &target)
}

// NodeRebootFailedError says the cloud refused a reboot in a way retrying cannot fix, such as
// a missing permission: the reboot fails at once instead of after its issuance timeout.
type NodeRebootFailedError struct {
	// Err is the cloud's refusal.
	Err error
}

// NewNodeRebootFailedError returns a NodeRebootFailedError wrapping err.
func NewNodeRebootFailedError(err error) *NodeRebootFailedError {
	return &NodeRebootFailedError{Err: err}
}

// Error implements error.
func (e *NodeRebootFailedError) Error() string {
	if e.Err == nil {
		return "reboot failed"
	}
	return e.Err.Error()
}

// Unwrap returns the underlying cause.
func (e *NodeRebootFailedError) Unwrap() error { return e.Err }

// IsNodeRebootFailedError reports whether err is, or wraps, a NodeRebootFailedError.
func IsNodeRebootFailedError(err error) bool {
	var target *NodeRebootFailedError
	return errors.As(err, &target)
}

// OfferingID names one offering: an instance type in a zone bought as a capacity type; for
// reserved capacity the reservation, so that one reservation running out leaves its siblings
// of the same type and zone alone (as Karpenter's AWS provider v1.15.2 scopes its unavailable
// offerings by reservation ID); and for a launch into a placement group the group, and the
// partition it targets, so that running out there leaves the offering outside the group, and
// the group's other partitions, alone (as the AWS provider v1.15.2 scopes them:
// awscache.WithPlacementGroup, WithPlacementGroupPartition). UnavailableOfferings.IsUnavailable
// reads a group's offering as unavailable also when the group as a whole, or the offering
// outside any group, is.
type OfferingID struct {
	// InstanceType is the instance type's name.
	InstanceType string
	// Zone is the availability zone.
	Zone string
	// CapacityType is spot, on-demand or reserved.
	CapacityType string
	// ReservationID is the capacity reservation of a reserved offering; empty for others.
	ReservationID string
	// PlacementGroupID is the placement group of an offering in one; empty for others.
	PlacementGroupID string
	// PlacementPartition is the partition of an offering in a partition placement group; 0
	// for others, and for the group as a whole.
	PlacementPartition int32
}

// String returns instance-type/zone/capacity-type, then /reservation-id for reserved
// offerings, /placement-group-id for offerings in a placement group and /partition for those
// of one of its partitions.
func (o OfferingID) String() string {
	s := o.InstanceType + "/" + o.Zone + "/" + o.CapacityType
	if o.ReservationID != "" {
		s += "/" + o.ReservationID
	}
	if o.PlacementGroupID != "" {
		s += "/" + o.PlacementGroupID
	}
	if o.PlacementPartition != 0 {
		s += "/" + PartitionLabel(o.PlacementPartition)
	}
	return s
}

func (o OfferingID) less(p OfferingID) bool {
	if o.InstanceType != p.InstanceType {
		return o.InstanceType < p.InstanceType
	}
	if o.Zone != p.Zone {
		return o.Zone < p.Zone
	}
	if o.CapacityType != p.CapacityType {
		return o.CapacityType < p.CapacityType
	}
	if o.ReservationID != p.ReservationID {
		return o.ReservationID < p.ReservationID
	}
	if o.PlacementGroupID != p.PlacementGroupID {
		return o.PlacementGroupID < p.PlacementGroupID
	}
	return o.PlacementPartition < p.PlacementPartition
}

// InsufficientCapacityError says the cloud could not launch because the offerings tried are
// out of capacity. Callers mark those offerings unavailable for a while and try others.
type InsufficientCapacityError struct {
	// Offerings are the offerings that ran out, sorted.
	Offerings []OfferingID
	// Err is the underlying cause, if any.
	Err error
}

// NewInsufficientCapacityError returns an InsufficientCapacityError for the offerings that ran
// out, wrapping err (which may be nil). The offerings are copied, sorted and de-duplicated.
func NewInsufficientCapacityError(err error, offerings ...OfferingID) *InsufficientCapacityError {
	return &InsufficientCapacityError{Offerings: sortOfferingIDs(append([]OfferingID(nil), offerings...)), Err: err}
}

// Error implements error. It names at most five offerings.
func (e *InsufficientCapacityError) Error() string {
	var b strings.Builder
	b.WriteString("insufficient capacity")
	if n := len(e.Offerings); n > 0 {
		b.WriteString(" for ")
		for i, o := range e.Offerings {
			if i == 5 {
				fmt.Fprintf(&b, " and %d more", n-5)
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(o.String())
		}
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *InsufficientCapacityError) Unwrap() error { return e.Err }

// IsInsufficientCapacityError reports whether err is, or wraps, an InsufficientCapacityError.
func IsInsufficientCapacityError(err error) bool {
	var target *InsufficientCapacityError
	return errors.As(err, &target)
}

// InsufficientCapacityOfferings returns every offering named by the InsufficientCapacityErrors
// in err's tree (through %w wrapping and errors.Join), sorted and de-duplicated.
func InsufficientCapacityOfferings(err error) []OfferingID {
	var out []OfferingID
	walk(err, func(e error) {
		if ice, ok := e.(*InsufficientCapacityError); ok {
			out = append(out, ice.Offerings...)
		}
	})
	return sortOfferingIDs(out)
}

// walk calls fn on err and every error it wraps, depth first.
func walk(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), fn)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, fn)
		}
	}
}

func sortOfferingIDs(ids []OfferingID) []OfferingID {
	if len(ids) == 0 {
		return nil
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].less(ids[j]) })
	out := ids[:1]
	for _, id := range ids[1:] {
		if id != out[len(out)-1] {
			out = append(out, id)
		}
	}
	return out
}

// NodeClassNotReadyError says a NodePool's NodeClass is missing or not ready (its subnets,
// security groups, images or instance profile are not resolved), so nothing can be launched
// from it yet.
type NodeClassNotReadyError struct {
	// Err is the underlying cause, if any.
	Err error
}

// NewNodeClassNotReadyError returns a NodeClassNotReadyError wrapping err (which may be nil).
func NewNodeClassNotReadyError(err error) *NodeClassNotReadyError {
	return &NodeClassNotReadyError{Err: err}
}

// Error implements error.
func (e *NodeClassNotReadyError) Error() string {
	if e.Err == nil {
		return "nodeclass not ready"
	}
	return "nodeclass not ready: " + e.Err.Error()
}

// Unwrap returns the underlying cause.
func (e *NodeClassNotReadyError) Unwrap() error { return e.Err }

// IsNodeClassNotReadyError reports whether err is, or wraps, a NodeClassNotReadyError.
func IsNodeClassNotReadyError(err error) bool {
	var target *NodeClassNotReadyError
	return errors.As(err, &target)
}

// CreateError is a launch failure other than insufficient capacity. ConditionReason and
// ConditionMessage are what the NodeClaim's Launched condition should say. A terminal error
// will not succeed on retry (the claim should be deleted); a retryable one may.
type CreateError struct {
	// Err is the underlying cause.
	Err error
	// ConditionReason is a CamelCase reason for the Launched condition, such as
	// "LaunchTemplateNotFound".
	ConditionReason string
	// ConditionMessage is a human-readable message for the Launched condition.
	ConditionMessage string
	// Terminal says retrying the same claim cannot succeed.
	Terminal bool
}

// NewCreateError returns a retryable CreateError.
func NewCreateError(err error, reason, message string) *CreateError {
	return &CreateError{Err: err, ConditionReason: reason, ConditionMessage: message}
}

// NewTerminalCreateError returns a CreateError that retrying cannot fix.
func NewTerminalCreateError(err error, reason, message string) *CreateError {
	return &CreateError{Err: err, ConditionReason: reason, ConditionMessage: message, Terminal: true}
}

// Error implements error.
func (e *CreateError) Error() string {
	msg := "creating instance"
	if e.ConditionMessage != "" {
		msg += ": " + e.ConditionMessage
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying cause.
func (e *CreateError) Unwrap() error { return e.Err }

// IsCreateError reports whether err is, or wraps, a CreateError.
func IsCreateError(err error) bool {
	var target *CreateError
	return errors.As(err, &target)
}

// IsTerminalCreateError reports whether err is, or wraps, a terminal CreateError.
func IsTerminalCreateError(err error) bool {
	var target *CreateError
	return errors.As(err, &target) && target.Terminal
}

// IsRetryable reports whether a Create error may succeed when retried: any error except a
// terminal CreateError. (Insufficient capacity is retryable, on other offerings.)
func IsRetryable(err error) bool {
	return err != nil && !IsTerminalCreateError(err)
}
