package nodeclaim

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// liveness deletes a claim that did not launch, or did not register, within the registration
// TTL of its creation, and otherwise asks to be called again when the TTL runs out.
func (c *LifecycleController) liveness(ctx context.Context, claim *karpv1.NodeClaim, res *result) error {
	if isTrue(claim, karpv1.ConditionTypeLaunched) && isTrue(claim, karpv1.ConditionTypeRegistered) {
		return nil
	}
	if claim.CreationTimestamp.IsZero() {
		// A store that does not stamp creation times gives nothing to measure from.
		return nil
	}
	ttl := c.opts.RegistrationTTL
	age := c.clock.Since(claim.CreationTimestamp.Time)
	if age < ttl {
		res.requeue(ttl - age)
		return nil
	}
	what := "registered"
	if !isTrue(claim, karpv1.ConditionTypeLaunched) {
		what = "launched"
	}
	if err := c.registrationFailed(ctx, claim); err != nil {
		return err
	}
	log.FromContext(ctx).Info("nodeclaim not "+what+" within the registration ttl, deleting it", "ttl", ttl.String())
	c.events.warning(claim, EventReasonLivenessExpired, "Deleting: not %s within %s", what, ttl)
	res.deleted = true
	if err := c.deleteClaim(ctx, claim); err != nil {
		return err
	}
	metrics.NodeClaimDisrupted(metrics.ReasonLiveness, claim.Labels[karpv1.NodePoolLabelKey], claim.Labels[karpv1.CapacityTypeLabelKey], "", metrics.TerminationMode(claim))
	return nil
}

// registrationFailed tells the NodePool's registration health that the claim is deleted
// without having registered. Claims that waited for their NodeClass do not count: Karpenter
// deletes those at once, without counting them.
func (c *LifecycleController) registrationFailed(ctx context.Context, claim *karpv1.NodeClaim) error {
	if c.opts.RegistrationHealth == nil {
		return nil
	}
	if launched := meta.FindStatusCondition(claim.Status.Conditions, karpv1.ConditionTypeLaunched); launched != nil && launched.Reason == ReasonNodeClassNotReady {
		return nil
	}
	return c.opts.RegistrationHealth.RegistrationFailed(ctx, claim)
}
