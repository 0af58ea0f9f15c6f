package cloud

import (
	"context"
	"encoding/json"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// RunEventSourceMappings polls every queue that triggers a function, as
// Lambda's SQS event source mappings do with ReportBatchItemFailures: the
// successful messages of a batch are deleted, failed ones become visible
// again after the visibility timeout and, past maxReceiveCount, move to the
// dead-letter queue through the queue's redrive policy. It returns when ctx ends.
func (e *Edge) RunEventSourceMappings(ctx context.Context, c *sqs.Client) {
	for _, f := range manifest.Functions {
		if f.Trigger != manifest.TriggerSQS {
			continue
		}
		go e.poll(ctx, c, f)
	}
}

func (e *Edge) poll(ctx context.Context, c *sqs.Client, f manifest.Function) {
	url := e.Resources.QueueURLs[f.Queue]
	arn := e.Resources.QueueARNs[f.Queue]
	for ctx.Err() == nil {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: int32(f.BatchSize), WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			if ctx.Err() == nil {
				e.Log.Warn("receive failed", "queue", f.Queue, "error", err.Error())
				time.Sleep(time.Second)
			}
			continue
		}
		if len(out.Messages) == 0 {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		e.deliver(ctx, c, f, url, arn, out.Messages)
	}
}

func (e *Edge) deliver(ctx context.Context, c *sqs.Client, f manifest.Function, url, arn string, msgs []types.Message) {
	ev := events.SQSEvent{}
	for _, m := range msgs {
		attrs := map[string]string{}
		for k, v := range m.Attributes {
			attrs[k] = v
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
			Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: attrs, EventSource: "aws:sqs", EventSourceARN: arn, AWSRegion: Region,
		})
	}
	payload, _ := json.Marshal(ev)
	out, err := e.Invoke(ctx, f.Name, payload)
	if err != nil {
		e.Log.Warn("batch failed; messages will be retried", "function", f.Name, "error", err.Error())
		e.retrySooner(ctx, c, url, msgs)
		return
	}
	var resp events.SQSEventResponse
	_ = json.Unmarshal(out, &resp)
	failed := map[string]bool{}
	for _, fi := range resp.BatchItemFailures {
		failed[fi.ItemIdentifier] = true
	}
	var entries []types.DeleteMessageBatchRequestEntry
	var retry []types.Message
	for _, m := range msgs {
		if !failed[aws.ToString(m.MessageId)] {
			entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: m.MessageId, ReceiptHandle: m.ReceiptHandle})
		} else {
			retry = append(retry, m)
		}
	}
	e.retrySooner(ctx, c, url, retry)
	if len(entries) == 0 {
		return
	}
	if _, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
		e.Log.Warn("delete failed", "function", f.Name, "error", err.Error())
	}
}

// RunSchedules invokes every scheduled function on its manifest schedule,
// as an EventBridge schedule rule would. It returns when ctx ends.
func (e *Edge) RunSchedules(ctx context.Context) {
	for _, f := range manifest.Functions {
		if f.Trigger != manifest.TriggerSchedule {
			continue
		}
		go func() {
			tick := time.NewTicker(time.Duration(f.EveryMinutes) * time.Minute)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case at := <-tick.C:
					ev, _ := json.Marshal(map[string]any{
						"version": "0", "source": "aws.events", "detail-type": "Scheduled Event",
						"time": at.UTC().Format(time.RFC3339), "detail": map[string]any{},
					})
					if _, err := e.Invoke(ctx, f.Name, ev); err != nil {
						e.Log.Warn("scheduled invocation failed", "function", f.Name, "error", err.Error())
					}
				}
			}
		}()
	}
}

// retrySooner makes failed messages visible again after RetryDelay instead
// of the queue's visibility timeout, when RetryDelay is set (the test run
// sets one second so a message's two retries and its move to the
// dead-letter queue take seconds, not minutes). The retries still count as
// receives and moto's redrive policy still moves the message, so the path
// is the one AWS takes, only faster; with RetryDelay 0 (make run) nothing
// changes.
func (e *Edge) retrySooner(ctx context.Context, c *sqs.Client, url string, msgs []types.Message) {
	if e.RetryDelay <= 0 || len(msgs) == 0 {
		return
	}
	var entries []types.ChangeMessageVisibilityBatchRequestEntry
	for _, m := range msgs {
		entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{Id: m.MessageId, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: int32(e.RetryDelay / time.Second)})
	}
	if _, err := c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
		e.Log.Warn("change visibility failed", "queue", url, "error", err.Error())
	}
}
