package aws

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	kevents "github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/providers/interruption"
)

// UnhealthyThreshold is how long an instance or system status check must have been failing
// before the instance is handled, as Karpenter's. Scheduled events are handled at once.
const UnhealthyThreshold = 2 * time.Minute

// instanceStatusQueries are the filters of the DescribeInstanceStatus queries of a poll, one
// query each because EC2 ANDs filters of different names and a poll wants instances that fail
// either check or have a scheduled event: a failed instance status check, a failed system
// status check, an event of one of the codes that take the instance down. The attached EBS
// status check is not asked for, as in Karpenter: a failing volume may be a pod's, not the
// node's.
var instanceStatusQueries = [][]ec2types.Filter{
	{{Name: aws.String("instance-status.status"), Values: []string{string(ec2types.SummaryStatusImpaired)}}},
	{{Name: aws.String("system-status.status"), Values: []string{string(ec2types.SummaryStatusImpaired)}}},
	{{Name: aws.String("event.code"), Values: []string{
		string(ec2types.EventCodeInstanceReboot), string(ec2types.EventCodeSystemReboot), string(ec2types.EventCodeSystemMaintenance),
		string(ec2types.EventCodeInstanceRetirement), string(ec2types.EventCodeInstanceStop),
	}}},
}

// instanceStatusCategories are the categories of an unhealthy instance status, in the order
// they are handled, with the interruption kind of each.
var instanceStatusCategories = []struct {
	category string
	kind     interruption.Kind
}{
	{metrics.CategoryInstanceStatus, interruption.InstanceStatus},
	{metrics.CategorySystemStatus, interruption.SystemStatus},
	{metrics.CategoryEventStatus, interruption.EventStatus},
}

// unhealthyInstance is an instance DescribeInstanceStatus reports unhealthy, with the
// categories (metrics.Category*) it is unhealthy in.
type unhealthyInstance struct {
	id         string
	categories map[string]bool
}

// unhealthyInstances asks EC2 for the instances whose instance or system status check fails
// or that have a scheduled event (instanceStatusQueries, each paginated), each once, in the
// order EC2 gives them. An instance counts as unhealthy in the categories where a check has
// failed for UnhealthyThreshold or more, and in EventStatus when it has any event at all (EC2
// lists an event a while after it completed or was cancelled, and Karpenter acts on it
// still); checks that have not failed (initializing, insufficient data) do not count. The
// instances are everyone's in the region: the caller keeps the cluster's.
func (p *Provider) unhealthyInstances(ctx context.Context) ([]unhealthyInstance, error) {
	seen := map[string]bool{}
	var statuses []ec2types.InstanceStatus
	for _, filters := range instanceStatusQueries {
		pages := ec2.NewDescribeInstanceStatusPaginator(p.clients.EC2, &ec2.DescribeInstanceStatusInput{Filters: filters})
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing instance status: %w", err)
			}
			for _, s := range out.InstanceStatuses {
				if id := aws.ToString(s.InstanceId); !seen[id] {
					seen[id] = true
					statuses = append(statuses, s)
				}
			}
		}
	}
	now := p.opts.Clock.Now()
	failedLongEnough := func(summary *ec2types.InstanceStatusSummary) bool {
		if summary == nil {
			return false
		}
		for _, d := range summary.Details {
			// A failed detail without impairedSince has failed since ever, as in Karpenter.
			if d.Status == ec2types.StatusTypeFailed && now.Sub(aws.ToTime(d.ImpairedSince)) >= UnhealthyThreshold {
				return true
			}
		}
		return false
	}
	var out []unhealthyInstance
	for _, s := range statuses {
		categories := map[string]bool{}
		if failedLongEnough(s.InstanceStatus) {
			categories[metrics.CategoryInstanceStatus] = true
		}
		if failedLongEnough(s.SystemStatus) {
			categories[metrics.CategorySystemStatus] = true
		}
		if len(s.Events) > 0 {
			categories[metrics.CategoryEventStatus] = true
		}
		if len(categories) > 0 {
			out = append(out, unhealthyInstance{id: aws.ToString(s.InstanceId), categories: categories})
		}
	}
	return out, nil
}

// InstanceStatusController polls EC2's DescribeInstanceStatus every Interval, with or without
// an interruption queue, and hands each unhealthy instance of the cluster's NodeClaims to the
// interruption handler once per category, as Karpenter's interruption.instancestatus
// controller does: a status check failing for UnhealthyThreshold (InstanceStatus,
// SystemStatus) deletes the NodeClaim with its termination timestamp set to now, so the
// broken node is not drained gracefully; a scheduled event (EventStatus) deletes it as a
// scheduled change does, cordoning and draining the node. Each is recorded as InstanceUnhealthy
// Events and counted in karpenter_nodeclaims_disrupted_total with the reason instance_status,
// system_status or event_status; karpenter_interruption_instance_status_unhealthy_total counts
// each instance once per category until a poll no longer finds it unhealthy there.
//
// Instances without a NodeClaim (another cluster's, or anything else in the account) are left
// alone and not counted. Without the ec2:DescribeInstanceStatus permission the controller logs
// it once and stops polling until the process restarts, as Karpenter's does; other failures
// are retried with the exponential backoff of a controller-runtime controller (5ms doubling,
// at most 1000s).
type InstanceStatusController struct {
	provider *Provider
	handler  *interruption.Handler
	// seen are the instances and categories counted as unhealthy and found so again by every
	// poll since; only Poll touches it.
	seen map[unhealthyKey]bool
	// Interval is the time between polls (default one minute).
	Interval time.Duration
}

// unhealthyKey is an instance unhealthy in a category.
type unhealthyKey struct{ instanceID, category string }

// NewInstanceStatusController returns the controller; events may be nil.
func NewInstanceStatusController(p *Provider, events record.EventRecorder) *InstanceStatusController {
	handler := &interruption.Handler{Kube: p.opts.KubeClient, Unavailable: p.opts.Unavailable,
		Events: kevents.NewRecorder(events, p.opts.Clock), Clock: p.opts.Clock}
	return &InstanceStatusController{provider: p, handler: handler, seen: map[unhealthyKey]bool{}, Interval: time.Minute}
}

// Register runs the controller on the elected leader.
func (c *InstanceStatusController) Register(mgr manager.Manager) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		c.Run(ctx)
		return nil
	}))
}

// Run polls at once and then every Interval until ctx is done, or until EC2 refuses the
// permission to describe instance status.
func (c *InstanceStatusController) Run(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("aws.interruption.instancestatus")
	backoff := workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 1000*time.Second)
	for {
		wait := c.Interval
		if err := c.Poll(ctx); err != nil && ctx.Err() == nil {
			if errorCode(err) == "UnauthorizedOperation" {
				logger.Error(err, "ec2:DescribeInstanceStatus is not allowed: instance status checks are off until the IAM policy allows it and the controller restarts")
				return
			}
			logger.Error(err, "polling instance status")
			wait = backoff.When("poll")
		} else {
			backoff.Forget("poll")
		}
		timer := c.provider.opts.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
	}
}

// Poll finds the unhealthy instances and hands those of the cluster's NodeClaims to the
// interruption handler, each category of each instance in turn (InstanceStatus, SystemStatus,
// EventStatus); an instance whose handling fails is tried again at the next poll.
func (c *InstanceStatusController) Poll(ctx context.Context) error {
	unhealthy, err := c.provider.unhealthyInstances(ctx)
	if err != nil {
		return err
	}
	current := map[unhealthyKey]bool{}
	defer func() {
		// Forget what is healthy again, so that it counts when it fails anew.
		for k := range c.seen {
			if !current[k] {
				delete(c.seen, k)
			}
		}
	}()
	if len(unhealthy) == 0 {
		return nil
	}
	claims := &karpv1.NodeClaimList{}
	if err := c.provider.opts.KubeClient.List(ctx, claims); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	byInstance := map[string]*karpv1.NodeClaim{}
	for i := range claims.Items {
		if id, err := instanceIDOf(claims.Items[i].Status.ProviderID); err == nil {
			byInstance[id] = &claims.Items[i]
		}
	}
	var errs []error
	for _, inst := range unhealthy {
		claim := byInstance[inst.id]
		if claim == nil {
			continue // not the cluster's
		}
		for _, cat := range instanceStatusCategories {
			if !inst.categories[cat.category] {
				continue
			}
			if err := c.handler.Handle(ctx, cat.kind, claim, inst.id, ""); err != nil {
				errs = append(errs, fmt.Errorf("handling the %s of instance %s: %w", cat.category, inst.id, err))
				break
			}
			key := unhealthyKey{inst.id, cat.category}
			current[key] = true
			if !c.seen[key] {
				c.seen[key] = true
				log.FromContext(ctx).Info("detected unhealthy instance owned by cluster", "instance", inst.id, "category", cat.category, "nodeclaim", claim.Name)
				metrics.InstanceStatusUnhealthy(cat.category)
			}
		}
	}
	return errors.Join(errs...)
}
