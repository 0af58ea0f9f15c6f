package stack_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
)

func TestReportFunctionsGetExactlyTheirGrants(t *testing.T) {
	// GIVEN the dev environment WHEN the stack is synthesized
	tpl, m := synth(t, "dev")

	// THEN the reports API writes the table, puts events and starts and
	// stops the executions of the tasks it creates, and nothing else
	api := policyOf(t, m, "conclave-dev-reports")
	for _, action := range []string{"dynamodb:PutItem", "dynamodb:Query", "events:PutEvents", "states:StartExecution", "states:StopExecution"} {
		assert.Contains(t, api, action)
	}
	for _, action := range []string{"bedrock:InvokeModel", "states:SendTaskSuccess", "sqs:", "lambda:InvokeFunction"} {
		assert.NotContains(t, api, action)
	}

	// AND the finalizer writes the table (reports, memories) and puts
	// events; it reads its queue through its event source mapping and
	// sends only to that queue's dead-letter queue (its last attempt,
	// TestConsumersMayDeadLetterTheirOwnQueueOnly)
	fin := policyOf(t, m, "conclave-dev-report-finalizer")
	for _, action := range []string{"dynamodb:PutItem", "dynamodb:DeleteItem", "events:PutEvents", "sqs:ReceiveMessage", "sqs:DeleteMessage"} {
		assert.Contains(t, fin, action)
	}
	for _, action := range []string{"states:", "bedrock:", "lambda:InvokeFunction"} {
		assert.NotContains(t, fin, action)
	}

	// AND every status change of a report's task, and nothing else,
	// reaches the finalizer's queue (its consumer dead-letters a failing
	// event after two retries; the redrive is the ceiling throttling
	// cannot reach)
	tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"Name": "conclave-dev-report-tasks",
		"EventPattern": assertions.Match_ObjectEquals(&map[string]any{"source": []any{"conclave"}, "detail-type": []any{"TaskStatusChanged"},
			"detail": map[string]any{"report_id": []any{map[string]any{"exists": true}}}}),
	})
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"QueueName": "conclave-dev-report-tasks", "VisibilityTimeout": 180,
		"RedrivePolicy": map[string]any{"maxReceiveCount": 10, "deadLetterTargetArn": assertions.Match_AnyValue()},
	})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"FunctionName":          map[string]any{"Ref": logicalIDOf(t, m, "conclave-dev-report-finalizer")},
		"FunctionResponseTypes": []any{"ReportBatchItemFailures"}, "BatchSize": 10,
	})

	// AND the worker, which serves request_report, needs no grant it did
	// not have: a report is a task
	worker := policyOf(t, m, "conclave-dev-task-worker")
	assert.True(t, strings.Contains(worker, "states:StartExecution") && strings.Contains(worker, "bedrock:InvokeModel"))
}
