package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	kevents "github.com/openkarpenter/karpenter/pkg/events"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/providers/interruption"
)

// Kinds of interruption message: the cloud provider's notice kinds, and MessageUnknown.
const (
	// MessageSpotInterruption is EventBridge's "EC2 Spot Instance Interruption Warning": the
	// instance is reclaimed in two minutes.
	MessageSpotInterruption = interruption.Spot
	// MessageRebalanceRecommendation is "EC2 Instance Rebalance Recommendation": the instance is
	// at elevated risk of interruption. Recorded, not acted on.
	MessageRebalanceRecommendation = interruption.Rebalance
	// MessageScheduledChange is an AWS Health scheduled change (retirement, maintenance) of the
	// instance.
	MessageScheduledChange = interruption.ScheduledChange
	// MessageStateChange is "EC2 Instance State-change Notification" to stopping, stopped,
	// shutting-down or terminated.
	MessageStateChange = interruption.StateChange
	// MessageUnknown is anything else; it is deleted without action.
	MessageUnknown interruption.Kind = "Unknown"
)

// eventBridgeMessage is the envelope EventBridge delivers to the queue.
type eventBridgeMessage struct {
	Source     string          `json:"source"`
	DetailType string          `json:"detail-type"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// InterruptionMessage is a parsed queue message: its kind and the instances it concerns.
type InterruptionMessage struct {
	// Kind is one of the Message* constants.
	Kind interruption.Kind
	// InstanceIDs are the affected instances.
	InstanceIDs []string
	// State is the new state of a state change.
	State string
	// Malformed says the body is not a JSON event at all. Such a message is deleted without
	// being counted as received, as Karpenter does.
	Malformed bool
}

// ParseInterruptionMessage reads an EventBridge message body.
func ParseInterruptionMessage(body string) InterruptionMessage {
	var m eventBridgeMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return InterruptionMessage{Kind: MessageUnknown, Malformed: body != ""}
	}
	var detail struct {
		InstanceID       string `json:"instance-id"`
		State            string `json:"state"`
		Service          string `json:"service"`
		Category         string `json:"eventTypeCategory"`
		AffectedEntities []struct {
			EntityValue string `json:"entityValue"`
		} `json:"affectedEntities"`
	}
	_ = json.Unmarshal(m.Detail, &detail)
	switch {
	case m.Source == "aws.ec2" && m.DetailType == "EC2 Spot Instance Interruption Warning" && detail.InstanceID != "":
		return InterruptionMessage{Kind: MessageSpotInterruption, InstanceIDs: []string{detail.InstanceID}}
	case m.Source == "aws.ec2" && m.DetailType == "EC2 Instance Rebalance Recommendation" && detail.InstanceID != "":
		return InterruptionMessage{Kind: MessageRebalanceRecommendation, InstanceIDs: []string{detail.InstanceID}}
	case m.Source == "aws.ec2" && m.DetailType == "EC2 Instance State-change Notification" && detail.InstanceID != "":
		switch detail.State {
		case "stopping", "stopped", "shutting-down", "terminated":
			return InterruptionMessage{Kind: MessageStateChange, InstanceIDs: []string{detail.InstanceID}, State: detail.State}
		}
	case m.Source == "aws.health" && m.DetailType == "AWS Health Event" && detail.Service == "EC2" && detail.Category == "scheduledChange":
		var ids []string
		for _, e := range detail.AffectedEntities {
			if strings.HasPrefix(e.EntityValue, "i-") {
				ids = append(ids, e.EntityValue)
			}
		}
		if len(ids) > 0 {
			return InterruptionMessage{Kind: MessageScheduledChange, InstanceIDs: ids}
		}
	}
	return InterruptionMessage{Kind: MessageUnknown}
}

// MessageType is the kind of the message as karpenter_interruption_received_messages_total
// labels it (Karpenter's names): a state change is instance_stopped or instance_terminated by
// its new state, anything not acted on no_op.
func (m InterruptionMessage) MessageType() string {
	return interruption.MessageType(m.Kind, m.State)
}

// InterruptionController polls the interruption queue and acts on each message before
// deleting it: for a spot interruption it marks the offering out of capacity (so the
// replacement goes elsewhere) and deletes the NodeClaim, which cordons and drains the node
// (evicted pods are provisioned at once) and terminates the instance; scheduled changes and
// stop or terminate state changes delete the NodeClaim too; rebalance recommendations are
// recorded as Events. A message whose action fails stays in the queue and is retried.
//
// It counts the messages received (by type) and deleted, and observes how long each message
// acted on was on the queue, from its SQS SentTimestamp (pkg/metrics).
type InterruptionController struct {
	provider *Provider
	handler  *interruption.Handler
	queueURL string
	// WaitTime is the long-poll wait of each receive (default 20s).
	WaitTime time.Duration
}

// NewInterruptionController returns the controller; events may be nil.
func NewInterruptionController(p *Provider, events record.EventRecorder) *InterruptionController {
	handler := &interruption.Handler{Kube: p.opts.KubeClient, Unavailable: p.opts.Unavailable,
		Events: kevents.NewRecorder(events, p.opts.Clock), Clock: p.opts.Clock}
	return &InterruptionController{provider: p, handler: handler, WaitTime: 20 * time.Second}
}

// Register runs the controller on the elected leader when a queue is configured.
func (c *InterruptionController) Register(mgr manager.Manager) error {
	if c.provider.opts.InterruptionQueue == "" {
		return nil
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		c.Run(ctx)
		return nil
	}))
}

// Run polls until ctx is done; failures are logged and retried after a pause.
func (c *InterruptionController) Run(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("aws.interruption")
	for ctx.Err() == nil {
		if _, err := c.Poll(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "polling the interruption queue", "queue", c.provider.opts.InterruptionQueue)
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
		}
	}
}

// Poll receives one batch of messages, acts on each and deletes those acted on. It returns the
// messages handled.
func (c *InterruptionController) Poll(ctx context.Context) ([]InterruptionMessage, error) {
	if c.queueURL == "" {
		out, err := c.provider.clients.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(c.provider.opts.InterruptionQueue)})
		if err != nil {
			return nil, fmt.Errorf("finding queue %s (--interruption-queue, INTERRUPTION_QUEUE): %w", c.provider.opts.InterruptionQueue, err)
		}
		c.queueURL = aws.ToString(out.QueueUrl)
	}
	out, err := c.provider.clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(c.queueURL),
		MaxNumberOfMessages: 10,
		WaitTimeSeconds:     int32(c.WaitTime / time.Second),
		VisibilityTimeout:   20,
		// When each message arrived on the queue, for its time on the queue.
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		return nil, fmt.Errorf("receiving interruption messages: %w", err)
	}
	if len(out.Messages) == 0 {
		return nil, nil
	}
	claims := &karpv1.NodeClaimList{}
	if err := c.provider.opts.KubeClient.List(ctx, claims); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	byInstance := map[string]*karpv1.NodeClaim{}
	for i := range claims.Items {
		if id, err := instanceIDOf(claims.Items[i].Status.ProviderID); err == nil {
			byInstance[id] = &claims.Items[i]
		}
	}
	var handled []InterruptionMessage
	var errs []error
	for _, m := range out.Messages {
		msg := ParseInterruptionMessage(aws.ToString(m.Body))
		if !msg.Malformed {
			metrics.InterruptionMessageReceived(msg.MessageType())
		}
		if err := c.act(ctx, msg, byInstance); err != nil {
			errs = append(errs, err)
			continue
		}
		if sent, ok := sentTime(m); ok && !msg.Malformed {
			metrics.ObserveInterruptionMessageQueueDuration(c.provider.opts.Clock.Since(sent))
		}
		if err := c.delete(ctx, m); err != nil {
			errs = append(errs, err)
			continue
		}
		handled = append(handled, msg)
	}
	if err := errors.Join(errs...); err != nil {
		return handled, fmt.Errorf("handling interruption messages: %w", err)
	}
	return handled, nil
}

func (c *InterruptionController) delete(ctx context.Context, m sqstypes.Message) error {
	_, err := c.provider.clients.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(c.queueURL), ReceiptHandle: m.ReceiptHandle})
	if err != nil {
		return fmt.Errorf("deleting message %s: %w", aws.ToString(m.MessageId), err)
	}
	metrics.InterruptionMessageDeleted()
	return nil
}

// sentTime is when the message arrived on the queue: its SentTimestamp attribute (epoch
// milliseconds), when SQS gave it.
func sentTime(m sqstypes.Message) (time.Time, bool) {
	ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// act does what a message asks of the claims of its instances (interruption.Handler).
func (c *InterruptionController) act(ctx context.Context, msg InterruptionMessage, byInstance map[string]*karpv1.NodeClaim) error {
	if msg.Kind == MessageUnknown {
		return nil
	}
	for _, id := range msg.InstanceIDs {
		claim := byInstance[id]
		if claim == nil {
			continue // not ours, or already gone
		}
		if err := c.handler.Handle(ctx, msg.Kind, claim, id, msg.State); err != nil {
			return err
		}
	}
	return nil
}
