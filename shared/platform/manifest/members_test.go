package manifest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// Every route a member may call is a route a function serves behind the
// authorizer: a key naming no route (a typo, a renamed path) would
// silently leave the real route forbidden to members.
func TestMemberRoutesNameRealRoutes(t *testing.T) {
	served := map[string]bool{}
	for _, rt := range append(manifest.Routes(), manifest.StreamRoutes()...) {
		if !rt.Public {
			served[rt.Route.Key()] = true
		}
	}
	for key, on := range manifest.MemberRoutes {
		assert.True(t, on, "%s: list only the routes a member may call", key)
		assert.True(t, served[key], "MemberRoutes names %q, which no function serves behind the authorizer", key)
	}
}
