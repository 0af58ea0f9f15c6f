package stack_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestConsultationsFunctionGetsExactlyItsGrants(t *testing.T) {
	// GIVEN the dev environment WHEN the stack is synthesized
	_, m := synth(t, "dev")

	// THEN the consultations API writes the table (consultations, the
	// active counters, escalations, inbox entries, lesson memories), puts
	// events (ConsultationEscalated, MemoryShared) and calls the models,
	// and nothing else: the ExpertGate scores in process, so no Lambda
	// invoke, and the specialist answers within the request, so no
	// executions or queues
	api := policyOf(t, m, "conclave-dev-consultations")
	for _, action := range []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query", "events:PutEvents", "bedrock:InvokeModel"} {
		assert.Contains(t, api, action)
	}
	for _, action := range []string{"states:", "sqs:", "lambda:InvokeFunction"} {
		assert.NotContains(t, api, action)
	}
}
