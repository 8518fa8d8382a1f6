package fake

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

type queue struct {
	name     string
	messages []*message
}

type message struct {
	id             string
	body           string
	sent           time.Time
	firstReceive   time.Time
	receiveCount   int
	invisibleUntil time.Time
	handles        []string
}

// CreateQueue seeds an SQS queue (a no-op if it exists) and returns its URL.
func (a *AWS) CreateQueue(name string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.queues[name]; !ok {
		a.queues[name] = &queue{name: name}
	}
	return a.queueURL(name)
}

// SendMessage enqueues a message on the named queue, creating the queue if needed, and wakes
// long polls.
func (a *AWS) SendMessage(queueName, body string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q, ok := a.queues[queueName]
	if !ok {
		q = &queue{name: queueName}
		a.queues[queueName] = q
	}
	q.messages = append(q.messages, &message{id: a.uuidLocked(), body: body, sent: a.now()})
	a.wakeLocked()
}

func (a *AWS) wakeLocked() {
	close(a.msgNotify)
	a.msgNotify = make(chan struct{})
}

// QueueMessages is the number of messages on the queue not yet deleted, in flight or not.
func (a *AWS) QueueMessages(queueName string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if q, ok := a.queues[queueName]; ok {
		return len(q.messages)
	}
	return 0
}

func (a *AWS) serveSQS(j *jsonCall) {
	if a.countCall(j.action) {
		j.fail(http.StatusForbidden, "RequestThrottled", "Request is throttled.")
		return
	}
	if j.action == "GetQueueUrl" || j.action == "ReceiveMessage" || j.action == "DeleteMessage" {
		a.authorize(j.r, "sqs:"+j.action, a.queueARN(j), nil, nil)
	}
	switch j.action {
	case "GetQueueUrl":
		a.getQueueURL(j)
	case "ReceiveMessage":
		a.receiveMessage(j)
	case "DeleteMessage":
		a.deleteMessage(j)
	default:
		j.fail(http.StatusBadRequest, "UnsupportedOperation;AWS.SimpleQueueService.UnsupportedOperation", fmt.Sprintf("the fake does not serve AmazonSQS.%s", j.action))
	}
}

const nonExistentQueue = "QueueDoesNotExist;AWS.SimpleQueueService.NonExistentQueue"

func (a *AWS) getQueueURL(j *jsonCall) {
	var in struct {
		QueueName              *string
		QueueOwnerAWSAccountId *string
	}
	if !j.decode(&in) {
		return
	}
	if in.QueueName == nil || *in.QueueName == "" {
		j.fail(http.StatusBadRequest, "MissingParameter", "The request must contain the parameter QueueName.")
		return
	}
	a.mu.Lock()
	_, ok := a.queues[*in.QueueName]
	a.mu.Unlock()
	if !ok || (in.QueueOwnerAWSAccountId != nil && *in.QueueOwnerAWSAccountId != a.opts.AccountID) {
		j.fail(http.StatusBadRequest, nonExistentQueue, "The specified queue does not exist.")
		return
	}
	j.respond(map[string]string{"QueueUrl": a.queueURL(*in.QueueName)})
}

// queueFromURL finds the queue a QueueUrl names: .../<account>/<name>.
func (a *AWS) queueFromURLLocked(queueURL string) *queue {
	u, err := url.Parse(queueURL)
	if err != nil {
		return nil
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 2 || parts[0] != a.opts.AccountID {
		return nil
	}
	name, err := url.PathUnescape(parts[1])
	if err != nil {
		return nil
	}
	return a.queues[name]
}

var sqsSystemAttributes = []string{"SenderId", "SentTimestamp", "ApproximateReceiveCount", "ApproximateFirstReceiveTimestamp"}

func (a *AWS) receiveMessage(j *jsonCall) {
	var in struct {
		QueueUrl                    *string
		MaxNumberOfMessages         *int
		WaitTimeSeconds             *int
		VisibilityTimeout           *int
		AttributeNames              []string
		MessageSystemAttributeNames []string
	}
	if !j.decode(&in) {
		return
	}
	if in.QueueUrl == nil {
		j.fail(http.StatusBadRequest, "MissingParameter", "The request must contain the parameter QueueUrl.")
		return
	}
	maxN, wait, visibility := 1, 0, -1
	if in.MaxNumberOfMessages != nil {
		maxN = *in.MaxNumberOfMessages
		if maxN < 1 || maxN > 10 {
			j.fail(http.StatusBadRequest, "InvalidParameterValue", fmt.Sprintf("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", maxN))
			return
		}
	}
	if in.WaitTimeSeconds != nil {
		wait = *in.WaitTimeSeconds
		if wait < 0 || wait > 20 {
			j.fail(http.StatusBadRequest, "InvalidParameterValue", fmt.Sprintf("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", wait))
			return
		}
	}
	if in.VisibilityTimeout != nil {
		visibility = *in.VisibilityTimeout
		if visibility < 0 || visibility > 43200 {
			j.fail(http.StatusBadRequest, "InvalidParameterValue", fmt.Sprintf("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= 43200, if provided.", visibility))
			return
		}
	}
	attrs := append(slices.Clone(in.AttributeNames), in.MessageSystemAttributeNames...)
	if slices.Contains(attrs, "All") {
		attrs = sqsSystemAttributes
	}
	ctx := j.r.Context()
	deadline := a.now().Add(time.Duration(wait) * time.Second)
	for {
		a.mu.Lock()
		q := a.queueFromURLLocked(*in.QueueUrl)
		if q == nil {
			a.mu.Unlock()
			j.fail(http.StatusBadRequest, nonExistentQueue, "The specified queue does not exist.")
			return
		}
		now := a.now()
		var out []map[string]any
		nextVisible := time.Time{}
		for _, m := range q.messages {
			if len(out) == maxN {
				break
			}
			if m.invisibleUntil.After(now) {
				if nextVisible.IsZero() || m.invisibleUntil.Before(nextVisible) {
					nextVisible = m.invisibleUntil
				}
				continue
			}
			vis := a.opts.VisibilityTimeout
			if visibility >= 0 {
				vis = time.Duration(visibility) * time.Second
			}
			m.invisibleUntil = now.Add(vis)
			m.receiveCount++
			if m.firstReceive.IsZero() {
				m.firstReceive = now
			}
			handle := a.hexIDLocked("AQEB", 64)
			m.handles = append(m.handles, handle)
			sum := md5.Sum([]byte(m.body))
			msg := map[string]any{"MessageId": m.id, "ReceiptHandle": handle, "MD5OfBody": hex.EncodeToString(sum[:]), "Body": m.body}
			if len(attrs) > 0 {
				values := map[string]string{"SenderId": "AIDAFAKEFAKEFAKEFAKE", "SentTimestamp": strconv.FormatInt(m.sent.UnixMilli(), 10),
					"ApproximateReceiveCount": strconv.Itoa(m.receiveCount), "ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.firstReceive.UnixMilli(), 10)}
				am := map[string]string{}
				for _, n := range attrs {
					if v, ok := values[n]; ok {
						am[n] = v
					}
				}
				msg["Attributes"] = am
			}
			out = append(out, msg)
		}
		notify := a.msgNotify
		a.mu.Unlock()
		if len(out) > 0 || !now.Before(deadline) {
			if len(out) == 0 {
				j.respond(map[string]any{})
			} else {
				j.respond(map[string]any{"Messages": out})
			}
			return
		}
		d := deadline.Sub(now)
		if !nextVisible.IsZero() && nextVisible.Sub(now) < d {
			d = nextVisible.Sub(now)
		}
		timer := a.clock.NewTimer(d)
		select {
		case <-notify:
		case <-timer.C():
		case <-ctx.Done():
			timer.Stop()
			return
		}
		timer.Stop()
	}
}

func (a *AWS) deleteMessage(j *jsonCall) {
	var in struct {
		QueueUrl      *string
		ReceiptHandle *string
	}
	if !j.decode(&in) {
		return
	}
	if in.QueueUrl == nil || in.ReceiptHandle == nil {
		j.fail(http.StatusBadRequest, "MissingParameter", "The request must contain the parameters QueueUrl and ReceiptHandle.")
		return
	}
	a.mu.Lock()
	code := a.deleteMessageLocked(*in.QueueUrl, *in.ReceiptHandle)
	a.mu.Unlock()
	switch code {
	case "":
		j.respond(map[string]any{})
	case nonExistentQueue:
		j.fail(http.StatusBadRequest, nonExistentQueue, "The specified queue does not exist.")
	default:
		j.fail(http.StatusNotFound, code, fmt.Sprintf("The input receipt handle \"%s\" is not a valid receipt handle.", *in.ReceiptHandle))
	}
}

// deleteMessageLocked deletes the message a receipt handle names and returns the error code
// of the failure, if any.
func (a *AWS) deleteMessageLocked(queueURL, handle string) string {
	q := a.queueFromURLLocked(queueURL)
	if q == nil {
		return nonExistentQueue
	}
	for i, m := range q.messages {
		if slices.Contains(m.handles, handle) {
			q.messages = slices.Delete(q.messages, i, i+1)
			return ""
		}
	}
	if strings.HasPrefix(handle, "AQEB") && len(handle) == 68 {
		// A handle of a message already deleted: SQS accepts it.
		return ""
	}
	return "ReceiptHandleIsInvalid"
}

// queueARN is the ARN of the queue a request names by QueueUrl or QueueName.
func (a *AWS) queueARN(j *jsonCall) string {
	var in struct {
		QueueUrl, QueueName string
	}
	_ = json.Unmarshal(j.body, &in)
	name := in.QueueName
	if in.QueueUrl != "" {
		if u, err := url.Parse(in.QueueUrl); err == nil {
			name = path.Base(u.Path)
		}
	}
	return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", a.opts.Region, a.opts.AccountID, name)
}
