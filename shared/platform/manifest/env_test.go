package manifest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// Every function declares its environment, each variable once and known to
// the contract, and nothing else is declared.
func TestEveryFunctionDeclaresItsEnvironment(t *testing.T) {
	assert.Len(t, manifest.Env, len(manifest.Functions))
	for _, f := range manifest.Functions {
		names, ok := manifest.Env[f.Name]
		if !assert.True(t, ok, "%s declares no environment (manifest.Env)", f.Name) {
			continue
		}
		seen := map[string]bool{}
		for _, n := range names {
			_, known := settings.Vars[n]
			assert.True(t, known, "%s: %s is not in settings.Vars", f.Name, n)
			assert.False(t, seen[n], "%s: %s declared twice", f.Name, n)
			seen[n] = true
		}
		assert.Len(t, manifest.EnvVars(f.Name), len(names))
	}
}
