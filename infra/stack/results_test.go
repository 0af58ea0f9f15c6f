package stack_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
)

func TestResultPosterGetsExactlyItsGrantsAndItsEvents(t *testing.T) {
	// GIVEN the dev environment WHEN the stack is synthesized
	tpl, m := synth(t, "dev")

	// THEN the result-poster reads and writes the table (the work's
	// record; the marker, the message and the conversation in one
	// transaction), reads its queue through its event source mapping and
	// sends only to that queue's dead-letter queue (its last attempt,
	// TestConsumersMayDeadLetterTheirOwnQueueOnly); it publishes nothing
	// and runs nothing
	poster := policyOf(t, m, "conclave-dev-result-poster")
	for _, action := range []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:SendMessage"} {
		assert.Contains(t, poster, action)
	}
	for _, action := range []string{"events:PutEvents", "states:", "bedrock:", "lambda:InvokeFunction"} {
		assert.NotContains(t, poster, action)
	}

	// AND the ends of tasks, reports and sessions linked to a
	// conversation reach its queue, and nothing else (its consumer
	// dead-letters a failing event after two retries; the redrive is the
	// ceiling throttling cannot reach)
	tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"Name": "conclave-dev-conversation-results",
		"EventPattern": assertions.Match_ObjectEquals(&map[string]any{"source": []any{"conclave"},
			"detail-type": []any{"TaskStatusChanged", "ReportFinished", "SessionStatusChanged", "PlanCompleted"},
			"detail":      map[string]any{"conversation_id": []any{map[string]any{"exists": true}}}}),
	})
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"QueueName": "conclave-dev-conversation-results", "VisibilityTimeout": 60,
		"RedrivePolicy": map[string]any{"maxReceiveCount": 10, "deadLetterTargetArn": assertions.Match_AnyValue()},
	})
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"QueueName": "conclave-dev-conversation-results-dlq"})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"FunctionName":          map[string]any{"Ref": logicalIDOf(t, m, "conclave-dev-result-poster")},
		"FunctionResponseTypes": []any{"ReportBatchItemFailures"}, "BatchSize": 10,
	})
}
