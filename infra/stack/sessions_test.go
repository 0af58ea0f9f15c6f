package stack_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The collaboration sessions in the dev stack: a machine per pattern wired
// to session-steps and the sessions dead-letter queue; the sessions
// function starts, stops and wakes those executions and nothing more; the
// steps function calls models and wakes waiting executions but starts
// none.
func TestDevStackRunsSessions(t *testing.T) {
	// GIVEN the dev environment WHEN the stack is synthesized
	tpl, m := synth(t, "dev")
	// THEN each pattern is a Standard machine calling session-steps
	steps := logicalIDOf(t, m, "conclave-dev-session-steps")
	for _, pattern := range []string{"supervisor_worker", "pipeline", "peer_review", "brainstorm", "consensus"} {
		var found map[string]any
		for _, sm := range resources(m, "AWS::StepFunctions::StateMachine") {
			if props(sm)["StateMachineName"] == "conclave-dev-"+pattern {
				found = props(sm)
			}
		}
		require.NotNil(t, found, pattern)
		subs, _ := json.Marshal(found["DefinitionSubstitutions"])
		assert.Contains(t, string(subs), steps, pattern)
		assert.Contains(t, string(subs), "DeadLetterQueueUrl", pattern)
	}
	// AND the sessions dead-letter queue exists
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"QueueName": "conclave-dev-session-dlq"})
	// AND the sessions function may start, stop and complete task tokens
	api := policyOf(t, m, "conclave-dev-sessions")
	for _, action := range []string{"states:StartExecution", "states:StopExecution", "states:SendTaskSuccess", "events:PutEvents"} {
		assert.Contains(t, api, action)
	}
	assert.NotContains(t, api, "bedrock:InvokeModel", "the API calls no model")
	// AND the steps function calls models and wakes executions, never starts one
	stepsPolicy := policyOf(t, m, "conclave-dev-session-steps")
	assert.Contains(t, stepsPolicy, "bedrock:InvokeModel")
	assert.Contains(t, stepsPolicy, "states:SendTaskSuccess")
	assert.False(t, strings.Contains(stepsPolicy, "states:StartExecution"))
	// AND the flag is on in dev
	fn := props(resourceNamed(t, m, "conclave-dev-sessions"))
	env := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
	assert.Contains(t, env["FEATURE_FLAGS"], "sessions=true")
}

func resourceNamed(t *testing.T, m map[string]any, functionName string) map[string]any {
	t.Helper()
	for _, f := range resources(m, "AWS::Lambda::Function") {
		if props(f)["FunctionName"] == functionName {
			return f
		}
	}
	t.Fatalf("no function %s", functionName)
	return nil
}
