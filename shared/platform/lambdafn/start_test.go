package lambdafn_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
)

// The cold start of a real function binary (the authorizer) with a
// crafted environment: a malformed or a missing required variable stops
// it with exit status 1 and one log line naming the variable; a good
// environment gets past the configuration to the Lambda runtime (which,
// outside Lambda, is missing: the start fails there, and says so).
func TestAFunctionWithABadVariableRefusesToStart(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "authorizer")
	build := exec.Command("go", "build", "-o", bin, "github.com/conclave-ai/conclave/functions/authorizer")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	cases := []struct {
		name     string
		env      []string
		variable string
		error    string
	}{
		{"malformed rate limit", []string{"TABLE_NAME=t", "TEAM_RATE_LIMIT=abc"}, "TEAM_RATE_LIMIT", `not a number: "abc"`},
		{"negative rate limit", []string{"TABLE_NAME=t", "TEAM_RATE_LIMIT=-1"}, "TEAM_RATE_LIMIT", "negative: -1"},
		{"no table", []string{"TEAM_RATE_LIMIT=20"}, "TABLE_NAME", "required, not set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stderr, code := run(t, bin, c.env)
			assert.Equal(t, 1, code)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			require.Len(t, lines, 1, stderr)
			var line map[string]any
			require.NoError(t, json.Unmarshal([]byte(lines[0]), &line), stderr)
			assert.Equal(t, "ERROR", line["level"])
			assert.Equal(t, "configuration", line["msg"])
			assert.Equal(t, "authorizer", line["function"])
			assert.Equal(t, c.variable, line["variable"])
			assert.Equal(t, c.error, line["error"])
		})
	}
	t.Run("good environment", func(t *testing.T) {
		// (An absent TEAM_RATE_LIMIT takes its default: no limit.)
		stderr, code := run(t, bin, []string{"TABLE_NAME=t", "AWS_REGION=us-east-1"})
		assert.NotContains(t, stderr, `"configuration"`)
		assert.Contains(t, stderr, "AWS_LAMBDA_RUNTIME_API", "it reached the Lambda runtime")
		assert.NotEqual(t, 0, code)
	})
}

// run runs bin with exactly env and returns its stderr and exit status.
func run(t *testing.T, bin string, env []string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return stderr.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return stderr.String(), 0
}

// LoadConfig reads only what the function declares, and a function the
// manifest does not know has nothing to load.
func TestLoadConfigIsTheFunctionsDeclaration(t *testing.T) {
	env := map[string]string{"TABLE_NAME": "t", "TEAM_RATE_LIMIT": "7", "EVENT_BUS_NAME": "b"}
	get := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := lambdafn.LoadConfig("authorizer", get)
	require.NoError(t, err)
	assert.Equal(t, "t", cfg.TableName)
	assert.Equal(t, 7, cfg.TeamRateLimit)
	assert.Empty(t, cfg.BusName, "the authorizer declares no bus")

	_, err = lambdafn.LoadConfig("no-such-function", get)
	assert.ErrorContains(t, err, "declares no environment")

	var buf bytes.Buffer
	env["TEAM_RATE_LIMIT"], env["TABLE_NAME"] = "abc", ""
	_, err = lambdafn.LoadConfig("authorizer", get)
	lambdafn.LogConfigError(slog.New(slog.NewJSONHandler(&buf, nil)), err)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2, "one line per wrong variable")
	assert.Contains(t, lines[0], `"variable":"TABLE_NAME"`)
	assert.Contains(t, lines[1], `"variable":"TEAM_RATE_LIMIT"`)
}
