package demo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

func TestSeedIsIdempotentAndMakesBothTeams(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	require.NoError(t, demo.Seed(ctx, store))
	require.NoError(t, demo.Seed(ctx, store), "seeding again keeps what exists")

	svc := teams.NewService(store)
	for secret, teamID := range map[string]string{demo.APIKey: demo.TeamID, demo.OtherAPIKey: demo.OtherTeamID} {
		k, err := svc.Authenticate(ctx, secret)
		require.NoError(t, err)
		assert.Equal(t, teamID, k.TeamID)
	}

	active, err := store.ActiveAgents(ctx, demo.TeamID)
	require.NoError(t, err)
	assert.Len(t, active, len(demo.Agents))
	def, err := store.DefaultAgent(ctx, demo.TeamID)
	require.NoError(t, err)
	assert.Equal(t, demo.DefaultAgent, def)

	other, err := store.ActiveAgents(ctx, demo.OtherTeamID)
	require.NoError(t, err)
	assert.Empty(t, other, "the other team is empty, for isolation checks")
}

func TestTheDemoAgentsAreValid(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	require.NoError(t, demo.Seed(ctx, store))
	seen := map[string]bool{}
	for _, in := range demo.Agents {
		assert.False(t, seen[in.Slug], "duplicate slug %s", in.Slug)
		seen[in.Slug] = true
		a, err := agents.NewService(store).Get(ctx, demo.TeamID, in.Slug)
		require.NoError(t, err, in.Slug)
		assert.Equal(t, in.Name, a.Name)
		assert.NotEmpty(t, a.Skills, in.Slug)
	}
	assert.True(t, seen[demo.DefaultAgent])
}
