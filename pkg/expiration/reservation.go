package expiration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/requeue"
)

// ReservationControllerName names the reservation expiry controller in logs: the AWS
// provider's.
const ReservationControllerName = "capacityreservation.expiration"

// ReservationInterval is how often the reservation expiry controller looks, as the AWS
// provider v1.15.2's.
const ReservationInterval = time.Minute

// ExpiringReservations is a cloud whose capacity reservations can expire: a Capacity Block is
// expiring from 40 minutes before its end, 10 minutes before EC2 starts reclaiming its
// instances.
type ExpiringReservations interface {
	// ExpiringReservations returns which of the reservation IDs are expiring.
	ExpiringReservations(ctx context.Context, ids []string) (map[string]bool, error)
}

// ReservationController deletes the NodeClaims launched into expiring capacity reservations,
// as the AWS provider v1.15.2's capacityreservation.expiration controller
// (pkg/controllers/capacityreservation/expiration): every minute it reads the reservations of
// the NodeClaims that carry karpenter.k8s.aws/capacity-reservation-id and deletes those whose
// reservation is expiring, so their pods move before EC2 reclaims the instances. Like expiry,
// the deletion is forceful: no budget paces it.
type ReservationController struct {
	kube      client.Client
	cloud     ExpiringReservations
	clock     clock.Clock
	observers []func(Expiry)
}

// NewReservationController returns the controller over the cloud's reservations, taking time
// from clk (the real clock when nil).
func NewReservationController(kube client.Client, cloud ExpiringReservations, clk clock.Clock) *ReservationController {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &ReservationController{kube: kube, cloud: cloud, clock: clk}
}

// Observe adds fn to the functions told of each deletion. Call it before the controller runs.
func (c *ReservationController) Observe(fn func(Expiry)) { c.observers = append(c.observers, fn) }

// Register runs the controller under mgr, a pass every ReservationInterval.
func (c *ReservationController) Register(mgr manager.Manager) error {
	return requeue.Periodic(mgr, ReservationControllerName, "deleting nodeclaims of expiring capacity reservations", c.clock, ReservationInterval, c.Step)
}

// Step does one pass: it deletes the NodeClaims whose reservation is expiring. It goes on past
// individual failures and returns them joined.
func (c *ReservationController) Step(ctx context.Context) error {
	claims := &karpv1.NodeClaimList{}
	if err := c.kube.List(ctx, claims); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	var ids []string
	for i := range claims.Items {
		if id := claims.Items[i].Labels[awsv1.LabelCapacityReservationID]; id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	expiring, err := c.cloud.ExpiringReservations(ctx, ids)
	if err != nil {
		return fmt.Errorf("reading capacity reservations: %w", err)
	}
	var errs []error
	for i := range claims.Items {
		claim := &claims.Items[i]
		id := claim.Labels[awsv1.LabelCapacityReservationID]
		if !expiring[id] || claim.DeletionTimestamp != nil {
			continue
		}
		if err := c.kube.Delete(ctx, claim, client.Preconditions{UID: &claim.UID}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", claim.Name, err))
			continue
		}
		log.FromContext(ctx).Info("deleting nodeclaim for expiring capacity reservation", "NodeClaim", claim.Name,
			"capacity-reservation-id", id)
		e := Expiry{NodeClaim: claim.Name, Node: claim.Status.NodeName, NodePool: claim.Labels[karpv1.NodePoolLabelKey], Reservation: id}
		for _, fn := range c.observers {
			fn(e)
		}
	}
	return errors.Join(errs...)
}
