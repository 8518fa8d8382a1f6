package sim

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	kevents "github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/providers/interruption"
)

// InterruptionController hands the simulated cloud's interruption notices to the interruption
// handler as each is given, as the SQS queue does for EC2: at the warning, two minutes before
// the instance is reclaimed, the NodeClaim is deleted, so the node is cordoned and drained and
// its pods get a replacement while the instance still runs.
type InterruptionController struct {
	cloud   *Cloud
	kube    client.Client
	handler *interruption.Handler
	// handled are the notices acted on, by provider ID and notice time.
	handled map[string]time.Time
	// Interval is how often Run polls the cloud (default 2s).
	Interval time.Duration
}

// NewInterruptionController returns the controller; unavailable and events may be nil.
func NewInterruptionController(cloud *Cloud, kube client.Client, unavailable *cloudprovider.UnavailableOfferings, events record.EventRecorder) *InterruptionController {
	return &InterruptionController{
		cloud: cloud, kube: kube, handled: map[string]time.Time{}, Interval: 2 * time.Second,
		handler: &interruption.Handler{Kube: kube, Unavailable: unavailable, Events: kevents.NewRecorder(events, cloud.Clock())},
	}
}

// Step acts on every notice not acted on yet. A notice whose action failed is tried again at
// the next step.
func (c *InterruptionController) Step(ctx context.Context) error {
	var errs []error
	notices := c.cloud.Interruptions()
	current := make(map[string]bool, len(notices))
	for _, n := range notices {
		current[n.ProviderID] = true
		if c.handled[n.ProviderID].Equal(n.NoticeTime) {
			continue
		}
		claim := &karpv1.NodeClaim{}
		err := c.kube.Get(ctx, client.ObjectKey{Name: n.NodeClaimName}, claim)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, err)
			continue
		default:
			if err := c.handler.Handle(ctx, interruption.Spot, claim, n.InstanceID, ""); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		c.handled[n.ProviderID] = n.NoticeTime
	}
	for id := range c.handled {
		if !current[id] {
			delete(c.handled, id) // the instance is gone
		}
	}
	return errors.Join(errs...)
}

// Start polls the cloud every Interval until ctx is done; it makes the controller a
// controller-runtime manager.Runnable.
func (c *InterruptionController) Start(ctx context.Context) error {
	for {
		if err := c.Step(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "handling simulated interruptions")
		}
		timer := c.cloud.clock.NewTimer(c.Interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C():
		}
	}
}
