package sessionasl_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/statemachines"
	"github.com/conclave-ai/conclave/statemachines/sessionasl"
)

// Every committed session machine is exactly what its source composes:
// an edit made to a generated file, or to a source without running
// `go generate ./statemachines`, fails here.
func TestCommittedMachinesAreTheComposedOnes(t *testing.T) {
	for _, p := range sessionasl.Patterns() {
		want, err := sessionasl.Compose(p)
		require.NoError(t, err, p)
		got, err := statemachines.Definition(sessionasl.File(p))
		require.NoError(t, err, p)
		assert.Equal(t, string(want), got, "%s differs from its source: edit statemachines/sessionasl/%s.json or shared.json and run go generate ./statemachines", sessionasl.File(p), p)
	}
}

// The sources are the session machines of the manifest: every machine
// but delegation and plan, which are not collaboration patterns.
func TestEverySessionMachineHasASource(t *testing.T) {
	var sessions []string
	for _, sm := range manifest.StateMachines {
		if sm.Name != "delegation" && sm.Name != "plan" {
			sessions = append(sessions, sm.Name)
		}
	}
	assert.ElementsMatch(t, sessions, sessionasl.Patterns())
}

// The frame is shared: each machine starts at Begin, which goes on to the
// pattern's first own state and names the pattern as its machine.
func TestComposeFillsTheFrame(t *testing.T) {
	asl, err := sessionasl.Compose("pipeline")
	require.NoError(t, err)
	s := string(asl)
	assert.True(t, strings.HasPrefix(s, "{\n  \"Comment\": "))
	assert.NotContains(t, s, "{{", "no placeholder of the source is left")
	assert.Contains(t, s, `"machine": "pipeline"`)
	assert.Contains(t, s, `"Next": "Stages"`)
	assert.Contains(t, s, "${StepsFunctionArn}", "deploy-time substitutions stay")

	_, err = sessionasl.Compose("nope")
	assert.Error(t, err)
}
