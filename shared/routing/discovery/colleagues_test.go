package discovery_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing/discovery"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// The gate answers who fits a need: best first, the asker left out, a
// paused agent that fits answered as paused, each with its load.
func TestFindColleaguesAsksTheGate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.busy(t, "sage", 2)
	f.setStatus(t, "luke", agents.StatusPaused)
	got, err := f.svc.FindColleagues(ctx, team, "kyra", "review this Go code for bugs and security vulnerabilities", 5)
	require.NoError(t, err)
	require.NotEmpty(t, got)
	assert.LessOrEqual(t, len(got), 5)
	by := map[string]discovery.Colleague{}
	for _, c := range got {
		by[c.Slug] = c
		assert.NotEqual(t, "kyra", c.Slug, "never the asker")
		assert.NotEmpty(t, c.Name)
		assert.NotNil(t, c.MatchingSkills)
		assert.GreaterOrEqual(t, c.Confidence, 0.0)
		assert.LessOrEqual(t, c.Confidence, 1.0)
	}
	require.Contains(t, by, "luke", "a paused agent whose skills fit is found")
	assert.Equal(t, agents.StatusPaused, by["luke"].Availability)
	require.Contains(t, by, "sage")
	assert.Equal(t, agents.StatusActive, by["sage"].Availability)
	assert.Equal(t, 2, by["sage"].ActiveTasks, "its load")

	one, err := f.svc.FindColleagues(ctx, team, "kyra", "review this Go code for bugs", 1)
	require.NoError(t, err)
	assert.Len(t, one, 1)

	for _, tc := range []struct {
		need  string
		limit int
		field string
	}{{"  ", 3, "need"}, {"x", 0, "max"}, {"x", 6, "max"}} {
		_, err := f.svc.FindColleagues(ctx, team, "kyra", tc.need, tc.limit)
		ae, ok := apperr.As(err)
		require.True(t, ok, err)
		assert.Equal(t, tc.field, ae.Field)
	}
}
