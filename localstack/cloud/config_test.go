package cloud_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// resources are provisioned names, as Provision returns them.
func resources() cloud.Resources {
	names := manifest.Names{Stage: "local"}
	res := cloud.Resources{Names: names, QueueURLs: map[string]string{}, StateMachines: map[string]string{}}
	for _, q := range manifest.Queues {
		res.QueueURLs[q.Name] = "http://127.0.0.1:1/" + names.Queue(q.Name)
		if !q.DeadLetterOnly {
			res.QueueURLs[q.DLQName()] = "http://127.0.0.1:1/" + names.Queue(q.DLQName())
		}
	}
	for _, sm := range manifest.StateMachines {
		res.StateMachines[sm.Name] = "arn:aws:states:us-east-1:123456789012:stateMachine:" + names.StateMachine(sm.Name)
	}
	return res
}

// The local cloud sets every variable a function requires: each starts
// with its declared configuration, as in AWS.
func TestEveryFunctionStartsWithTheLocalEnvironment(t *testing.T) {
	for _, name := range []string{settings.EnvFlags, settings.EnvModelProvider, settings.EnvTeamRateLimit, settings.EnvUserRateLimit,
		settings.EnvOpenAIBaseURL, settings.EnvOpenAIAPIKey} {
		t.Setenv(name, "")
	}
	res := resources()
	for _, f := range manifest.Functions {
		cfg, err := res.FunctionConfig(f.Name)
		require.NoError(t, err, f.Name)
		if slices.Contains(manifest.Env[f.Name], settings.EnvTable) { // all but the console, which reads no table
			assert.Equal(t, res.Names.Table(), cfg.TableName, f.Name)
		}
	}
	cfg, err := res.FunctionConfig("authorizer")
	require.NoError(t, err)
	assert.Equal(t, 2000, cfg.TeamRateLimit)
	assert.Empty(t, cfg.BusName, "the authorizer declares no bus")
}

// A developer's override is checked as in AWS: a malformed one stops the
// start, naming the variable.
func TestAMalformedOverrideStopsTheLocalStart(t *testing.T) {
	t.Setenv(settings.EnvTeamRateLimit, "abc")
	_, err := resources().FunctionConfig("authorizer")
	assert.EqualError(t, err, `TEAM_RATE_LIMIT: not a number: "abc"`)
	_, err = resources().FunctionConfig("tasks")
	assert.NoError(t, err, "the tasks function does not read it")
}

// The A2A agent's card lists its streaming endpoint under the local
// streaming API's URL; no other function reads it.
func TestTheA2AAgentLearnsTheStreamingAPIsURL(t *testing.T) {
	res := resources()
	res.StreamURL = "http://127.0.0.1:14580"
	for _, name := range []string{"a2a", "a2a-stream"} {
		cfg, err := res.FunctionConfig(name)
		require.NoError(t, err, name)
		assert.Equal(t, res.StreamURL, cfg.StreamURL, name)
	}
	cfg, err := res.FunctionConfig("tasks")
	require.NoError(t, err)
	assert.Empty(t, cfg.StreamURL)
}
