package stack_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/stack"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/routing"
)

// Prod's limits: the API throttled at the stage's rate with a JSON access
// log keyed by request id and team; reserved concurrency for the
// authorizer and the hot functions; queue triggers capped; source queues
// keeping messages 14 days with a visibility of at least six times their
// consumer's timeout.
func TestProdLimits(t *testing.T) {
	cfg, err := stack.Lookup("prod")
	require.NoError(t, err)
	_, m := synth(t, "prod")

	stages := resources(m, "AWS::ApiGatewayV2::Stage")
	require.Len(t, stages, 1)
	st := props(stages[0])
	route := st["DefaultRouteSettings"].(map[string]any)
	assert.EqualValues(t, cfg.APIRatePerSecond, route["ThrottlingRateLimit"])
	assert.EqualValues(t, cfg.APIBurst, route["ThrottlingBurstLimit"])
	format := st["AccessLogSettings"].(map[string]any)["Format"].(string)
	for _, field := range []string{`"request_id":"$context.requestId"`, `"team_id":"$context.authorizer.team_id"`, `"status":"$context.status"`} {
		assert.Contains(t, format, field)
	}
	assert.NotContains(t, strings.ToLower(format), "api-key", "the key never reaches the log")

	reserved := map[string]any{}
	for _, f := range resources(m, "AWS::Lambda::Function") {
		if n, ok := props(f)["ReservedConcurrentExecutions"]; ok {
			reserved[strings.TrimPrefix(props(f)["FunctionName"].(string), "conclave-prod-")] = n
		}
	}
	want := map[string]any{}
	for name, n := range cfg.ReservedConcurrency {
		want[name] = float64(n)
	}
	assert.Equal(t, want, reserved)
	assert.Contains(t, reserved, "authorizer", "nothing can starve the authorizer")
	assert.Contains(t, reserved, "a2a", "the public A2A routes (no authorizer) cannot take the account's concurrency")
	assert.Contains(t, reserved, "a2a-stream", "nor their streaming twin, which holds an invocation while it streams")
	assert.Contains(t, reserved, "streams", "long-lived listeners of the streaming API cannot take the capacity turns and tasks need")

	esms := resources(m, "AWS::Lambda::EventSourceMapping")
	require.NotEmpty(t, esms)
	for _, e := range esms {
		assert.Equal(t, map[string]any{"MaximumConcurrency": 5.0}, props(e)["ScalingConfig"])
	}

	queues := map[string]map[string]any{}
	for _, q := range resources(m, "AWS::SQS::Queue") {
		queues[props(q)["QueueName"].(string)] = props(q)
	}
	for _, f := range manifest.Functions {
		if f.Trigger != manifest.TriggerSQS {
			continue
		}
		q := queues["conclave-prod-"+f.Queue]
		require.NotNil(t, q, f.Queue)
		assert.GreaterOrEqual(t, q["VisibilityTimeout"], float64(6*f.Timeout), "%s: six times its consumer's timeout", f.Queue)
		assert.EqualValues(t, 14*24*3600, q["MessageRetentionPeriod"], f.Queue)
	}
}

// Dev may run in a new account (a concurrency limit of 10): nothing is
// reserved there.
func TestDevReservesNoConcurrency(t *testing.T) {
	_, m := synth(t, "dev")
	for _, f := range resources(m, "AWS::Lambda::Function") {
		assert.NotContains(t, props(f), "ReservedConcurrentExecutions", props(f)["FunctionName"])
	}
}

// Bedrock is granted on exactly the stage's models, in the stack's
// partition, with no wildcard model; streaming only to the functions whose
// entry grants it.
func TestBedrockGrantNamesTheStageModels(t *testing.T) {
	cfg, err := stack.Lookup("prod")
	require.NoError(t, err)
	_, m := synth(t, "prod")
	for _, f := range manifest.Functions {
		// (The Titan embedder's functions call Titan alone, and only in a
		// titan stage: TestATitanStageGrantsTheEmbedder.)
		if !slices.Contains(f.Grants, manifest.GrantModels) || slices.Contains(manifest.EmbedderGrants[f.Name], manifest.GrantModels) {
			continue
		}
		policy := policyOf(t, m, "conclave-prod-"+f.Name)
		assert.Contains(t, policy, `{"Ref":"AWS::Partition"}`, f.Name)
		assert.NotContains(t, policy, "foundation-model/*", f.Name)
		assert.NotContains(t, policy, "arn:aws:bedrock", "%s: the partition comes from the stack", f.Name)
		assert.Equal(t, slices.Contains(f.Grants, manifest.GrantModelsStream), strings.Contains(policy, "InvokeModelWithResponseStream"), f.Name)
		for _, id := range cfg.Models() {
			assert.Contains(t, policy, "foundation-model/"+id, f.Name)
		}
	}
	// A start whose name is taken asks for the execution's status
	// (shared/aws/executions); on execution ARNs only
	// (TestRolesAllowExactlyWhatIsCalled holds the resources).
	assert.Contains(t, policyOf(t, m, "conclave-prod-tasks"), "states:DescribeExecution")
}

// The stack's tier models are the router's.
func TestStageModelsIncludeTheRoutingTiers(t *testing.T) {
	cfg, err := stack.Lookup("prod")
	require.NoError(t, err)
	for _, id := range routing.DefaultTierModels {
		assert.Contains(t, cfg.Models(), id)
	}
}

// A queue consumer may send to its own queue's dead-letter queue and to no
// other queue, and is told its URL.
func TestConsumersMayDeadLetterTheirOwnQueueOnly(t *testing.T) {
	_, m := synth(t, "dev")
	for _, f := range manifest.Functions {
		policy := policyOf(t, m, "conclave-dev-"+f.Name)
		if !slices.Contains(f.Grants, manifest.GrantDeadLetter) {
			assert.NotContains(t, policy, "sqs:SendMessage", f.Name)
			continue
		}
		dlq := manifest.Queue{Name: f.Queue}.DLQName()
		assert.Contains(t, policy, "sqs:SendMessage", f.Name)
		assert.Contains(t, policy, logicalIDOfQueue(t, m, "conclave-dev-"+dlq), f.Name)
		for _, other := range manifest.Queues {
			if name := other.DLQName(); name != dlq && !other.DeadLetterOnly {
				assert.NotContains(t, policy, logicalIDOfQueue(t, m, "conclave-dev-"+name), "%s may not send to %s", f.Name, name)
			}
		}
		env, _ := json.Marshal(functionEnv(t, m, "conclave-dev-"+f.Name)["QUEUE_URLS"])
		assert.Contains(t, string(env), dlq+"=", f.Name)
	}
}

// synthJSON synthesizes one stage configuration (a deploy's context
// applied) and returns its template as JSON, the test's own copy.
func synthJSON(t *testing.T, cfg stack.EnvConfig) map[string]any {
	t.Helper()
	raw, err := json.Marshal(synthConfig(t, cfg, assetDir).ToJSON())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func functionEnv(t *testing.T, m map[string]any, name string) map[string]any {
	for _, f := range resources(m, "AWS::Lambda::Function") {
		if props(f)["FunctionName"] == name {
			return props(f)["Environment"].(map[string]any)["Variables"].(map[string]any)
		}
	}
	t.Fatalf("no function %s", name)
	return nil
}

// counts says whether the manifest declares the variable for f: the
// functions that count requests (the authorizer, and the A2A agent on
// both APIs, whose public routes check keys and rates themselves).
func counts(f, variable string) bool {
	return slices.Contains(manifest.Env[f], variable)
}

// A person's rate reaches every function that counts requests when the
// stage sets one (without USER_RATE_LIMIT they keep the default, a fifth
// of the team's), and no other; a stage that keeps the default sets
// nothing.
func TestCountersGetThePersonsRateWhenSet(t *testing.T) {
	cfg, err := configFrom(t, map[string]any{"env": "dev", "userRatePerSecond": "7"}, "")
	require.NoError(t, err)
	m := synthJSON(t, cfg)
	_, dev := synth(t, "dev")
	told := 0
	for _, f := range manifest.Functions {
		vars := functionEnv(t, m, "conclave-dev-"+f.Name)
		if counts(f.Name, settings.EnvUserRateLimit) {
			assert.Equal(t, "7", vars[settings.EnvUserRateLimit], f.Name)
			told++
		} else {
			assert.NotContains(t, vars, settings.EnvUserRateLimit, f.Name)
		}
		assert.NotContains(t, functionEnv(t, dev, "conclave-dev-"+f.Name), settings.EnvUserRateLimit, "%s: 0 is the default, not set", f.Name)
	}
	assert.Equal(t, 3, told, "the authorizer, a2a and a2a-stream")
}

// Every function that counts requests is told each stage's per-team rate:
// without TEAM_RATE_LIMIT it counts nothing and the limit is off in AWS,
// silently (the A2A agent's public routes were, until the rate reached
// them too). No other function counts requests, so none is told.
func TestCountersGetTheTeamRateLimit(t *testing.T) {
	for _, env := range []string{"dev", "prod"} {
		t.Run(env, func(t *testing.T) {
			cfg, err := stack.Lookup(env)
			require.NoError(t, err)
			require.Positive(t, cfg.TeamRatePerSecond, "the stage limits teams")
			_, m := synth(t, env)
			told := 0
			for _, f := range manifest.Functions {
				vars := functionEnv(t, m, "conclave-"+env+"-"+f.Name)
				if counts(f.Name, settings.EnvTeamRateLimit) {
					assert.Equal(t, strconv.Itoa(cfg.TeamRatePerSecond), vars[settings.EnvTeamRateLimit], f.Name)
					told++
					continue
				}
				assert.NotContains(t, vars, settings.EnvTeamRateLimit, f.Name)
			}
			assert.Equal(t, 3, told, "the authorizer, a2a and a2a-stream")
		})
	}
}
