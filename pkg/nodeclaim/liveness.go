package nodeclaim

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// liveness deletes a claim that did not launch within LaunchTimeout of its creation, or did not
// register within the registration TTL, as Karpenter v1.15.0's lifecycle Liveness (5 and 15
// minutes, counted in karpenter_nodeclaims_disrupted_total as launch_timeout and
// registration_timeout), and otherwise asks to be called again when the next one runs out.
func (c *LifecycleController) liveness(ctx context.Context, claim *karpv1.NodeClaim, res *result) error {
	if isTrue(claim, karpv1.ConditionTypeLaunched) && isTrue(claim, karpv1.ConditionTypeRegistered) {
		return nil
	}
	if claim.CreationTimestamp.IsZero() {
		// A store that does not stamp creation times gives nothing to measure from.
		return nil
	}
	what, ttl, reason := "registered", c.opts.RegistrationTTL, metrics.ReasonRegistrationTimeout
	if !isTrue(claim, karpv1.ConditionTypeLaunched) {
		what, ttl, reason = "launched", LaunchTimeout, metrics.ReasonLaunchTimeout
	}
	// The API server stamps creation in whole seconds on its own clock, which may run ahead of
	// ours: a claim that seems created in the future is taken as created now.
	if age := max(c.clock.Since(claim.CreationTimestamp.Time), 0); age < ttl {
		res.requeue(ttl - age)
		return nil
	}
	if err := c.registrationFailed(ctx, claim); err != nil {
		return err
	}
	log.FromContext(ctx).Info("nodeclaim not "+what+" in time, deleting it", "timeout", ttl.String(), "reason", reason)
	c.events.warning(claim, EventReasonLivenessExpired, "Deleting: not %s within %s", what, ttl)
	res.deleted = true
	if err := c.deleteClaim(ctx, claim); err != nil {
		return err
	}
	metrics.NodeClaimDisrupted(reason, claim.Labels[karpv1.NodePoolLabelKey], claim.Labels[karpv1.CapacityTypeLabelKey], "", metrics.TerminationMode(claim))
	return nil
}

// registrationFailed tells the NodePool's registration health that the claim is deleted
// without having registered.
func (c *LifecycleController) registrationFailed(ctx context.Context, claim *karpv1.NodeClaim) error {
	if c.opts.RegistrationHealth == nil {
		return nil
	}
	return c.opts.RegistrationHealth.RegistrationFailed(ctx, claim)
}
