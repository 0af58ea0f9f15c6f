// Package queues is the SQS adapter of the consumers: it sends a message
// that has used up its processing attempts to its queue's dead-letter queue
// (consumers.DeadLetters).
package queues

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
)

// DeadLetters sends to the dead-letter queue of a manifest queue.
type DeadLetters struct {
	Client *sqs.Client
	// URLs by manifest queue name (QUEUE_URLS); the dead-letter queue is
	// looked up under manifest.Queue.DLQName.
	URLs map[string]string
}

// FromConfig returns the adapter for cfg and the stage's queue URLs.
func FromConfig(cfg aws.Config, urls map[string]string) *DeadLetters {
	return &DeadLetters{Client: sqs.NewFromConfig(cfg), URLs: urls}
}

// maxErrorAttribute keeps the reason readable and well under SQS's limits.
const maxErrorAttribute = 1024

// DeadLetter implements consumers.DeadLetters. The body is kept as it was
// delivered (the whole event); why it is there goes in attributes, as
// SQS's own redrive would leave the body untouched.
func (d *DeadLetters) DeadLetter(ctx context.Context, queue string, m events.SQSMessage, attempts int, lastErr string) error {
	url := d.URLs[manifest.Queue{Name: queue}.DLQName()]
	if url == "" {
		return fmt.Errorf("no URL for the dead-letter queue of %q", queue)
	}
	if len(lastErr) > maxErrorAttribute {
		lastErr = lastErr[:maxErrorAttribute]
	}
	str := func(v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	attrs := map[string]types.MessageAttributeValue{
		"attempts":          {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(attempts))},
		"last_error":        str(lastErr),
		"source_message_id": str(m.MessageId),
		"source_queue":      str(queue),
	}
	// Whoever redrives it continues the trace of the attempts that failed.
	if tp := tracing.Traceparent(ctx); tp != "" {
		attrs[tracing.AttributeName] = str(tp)
	}
	_, err := d.Client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String(m.Body), MessageAttributes: attrs,
	})
	return err
}
