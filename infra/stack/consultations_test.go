package stack_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestConsultationsFunctionGetsExactlyItsGrants(t *testing.T) {
	// GIVEN the dev environment WHEN the stack is synthesized
	_, m := synth(t, "dev")

	// THEN the consultations API writes the table (consultations, the
	// active counters, escalations, inbox entries, lesson memories, and
	// the task of a task_overdue escalation it resolves), puts events
	// (ConsultationEscalated, MemoryShared, TaskStatusChanged) and calls
	// the models; the only executions it touches are a resolved task's
	// (stopped, started again, a waiting parent woken): no Lambda invoke
	// (the ExpertGate scores in process) and no queues
	api := policyOf(t, m, "conclave-dev-consultations")
	for _, action := range []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:ConditionCheckItem", "events:PutEvents", "bedrock:InvokeModel",
		"states:StartExecution", "states:StopExecution", "states:SendTaskSuccess"} {
		assert.Contains(t, api, action)
	}
	for _, action := range []string{"sqs:", "lambda:InvokeFunction"} {
		assert.NotContains(t, api, action)
	}
}
