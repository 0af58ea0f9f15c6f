package manifest_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

func TestManifestIsConsistent(t *testing.T) {
	require.NoError(t, manifest.Validate())
}

// Every functions/ directory is in the manifest and the reverse, and each
// main wires the function of its own name.
func TestFunctionDirectoriesMatchManifest(t *testing.T) {
	entries, err := os.ReadDir("../../../functions")
	require.NoError(t, err)
	var dirs, listed []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
			src, err := os.ReadFile(filepath.Join("../../../functions", e.Name(), "main.go"))
			require.NoError(t, err, "functions/%s has no main.go", e.Name())
			assert.Contains(t, string(src), `lambdafn.Main("`+e.Name()+`", `, "functions/%s wires another function", e.Name())
		}
	}
	for _, f := range manifest.Functions {
		listed = append(listed, f.Name)
	}
	sort.Strings(dirs)
	sort.Strings(listed)
	assert.Equal(t, listed, dirs)
}

func TestRoutesAreVersionedAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, rt := range manifest.Routes() {
		// The A2A agent's routes live under /a2a/, public (the protocol
		// fixes its card's path and its errors' shape), and the console's
		// under /console (a page loads before anyone signs in); the API's
		// under /v1/, behind the authorizer.
		if rt.Public {
			assert.True(t, strings.HasPrefix(rt.Route.Path, "/a2a/") || rt.Route.Path == "/console" || strings.HasPrefix(rt.Route.Path, "/console/"), rt.Route.Key())
		} else {
			assert.True(t, strings.HasPrefix(rt.Route.Path, "/v1/"), rt.Route.Key())
		}
		assert.False(t, seen[rt.Route.Key()], "duplicate %s", rt.Route.Key())
		seen[rt.Route.Key()] = true
	}
}

func TestQueuesRetryTwiceBeforeDeadLetter(t *testing.T) {
	for _, q := range manifest.Queues {
		if !q.DeadLetterOnly {
			assert.Equal(t, 3, q.MaxAttempts, "%s: one delivery and two retries", q.Name)
			assert.GreaterOrEqual(t, q.MaxReceiveCount, 10, "%s: throttled receives cannot use up the attempts", q.Name)
		}
	}
	// Whoever consumes a queue counts its attempts and may dead-letter.
	for _, f := range manifest.Functions {
		if f.Trigger == manifest.TriggerSQS {
			assert.Contains(t, f.Grants, manifest.GrantDeadLetter, f.Name)
		} else {
			assert.NotContains(t, f.Grants, manifest.GrantDeadLetter, f.Name)
		}
	}
}

func TestNamesAreStageScoped(t *testing.T) {
	n := manifest.Names{Stage: "dev"}
	assert.Equal(t, "conclave-dev-agents", n.Function("agents"))
	assert.Equal(t, "conclave-dev-main", n.Table())
	assert.Equal(t, "conclave-dev-bus", n.Bus())
}

func TestParseRef(t *testing.T) {
	for in, want := range map[string]manifest.Ref{
		"bus": {Kind: manifest.RefBus}, "table": {Kind: manifest.RefTable},
		"function:task-worker": {Kind: manifest.RefFunction, Name: "task-worker"},
		"queue:task-dlq":       {Kind: manifest.RefQueue, Name: "task-dlq"},
	} {
		got, err := manifest.ParseRef(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "function:", "queue", "topic:x", "bus:x"} {
		_, err := manifest.ParseRef(bad)
		assert.Error(t, err, bad)
	}
}

// Every gated route names a flag the stages can set.
func TestRouteFlagsNameKnownFlags(t *testing.T) {
	known := map[string]bool{}
	for _, f := range settings.FlagNames {
		known[f] = true
	}
	for key, flag := range manifest.RouteFlags {
		assert.True(t, known[flag], "%s is gated by unknown flag %q", key, flag)
	}
	old := manifest.RouteFlags
	t.Cleanup(func() { manifest.RouteFlags = old })
	manifest.RouteFlags = map[string]string{"POST /v1/nowhere": "collaboration"}
	assert.ErrorContains(t, manifest.Validate(), "no function serves")
}

// Lambda refuses a function description over 256 characters (the CDK
// fails the synth): every description fits.
func TestFunctionDescriptionsFitLambda(t *testing.T) {
	for _, f := range manifest.Functions {
		assert.LessOrEqual(t, len([]rune(f.Description)), 256, f.Name)
	}
}
