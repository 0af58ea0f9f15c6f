package stack_test

import (
	"strings"
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
	// (stopped, started again, a waiting parent woken); it invokes the
	// expert-gate function, which ranks the specialist as it ranks a chat
	// turn's agent, and no other function; no queues
	api := policyOf(t, m, "conclave-dev-consultations")
	for _, action := range []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:ConditionCheckItem", "events:PutEvents", "bedrock:InvokeModel",
		"states:StartExecution", "states:StopExecution", "states:SendTaskSuccess", "lambda:InvokeFunction"} {
		assert.Contains(t, api, action)
	}
	assert.Equal(t, 1, strings.Count(api, "lambda:InvokeFunction"))
	assert.Contains(t, api, "FunctionsExpertGateFunction", "the invoke is the gate's")
	assert.NotContains(t, api, "sqs:")
}
