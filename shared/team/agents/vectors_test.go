package agents_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

// writes records what the service tells its VectorWriter, and fails when
// told to.
type writes struct {
	calls []string
	fail  error
}

func (w *writes) AgentWritten(_ context.Context, a agents.Agent, previous int) error {
	w.calls = append(w.calls, fmt.Sprintf("%s@%d→%d", a.Slug, previous, a.Version))
	return w.fail
}

// The hook hears of every agent created or updated to a new version, with
// the version it replaces; a failing hook loses no write.
func TestTheVectorWriterHearsOfEveryWrite(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	require.NoError(t, store.CreateTeam(ctx, teams.Team{ID: "t1", Name: "T"}, teams.APIKey{ID: "k1"}, "h1"))
	w := &writes{fail: errors.New("bedrock unavailable")}
	svc := agents.NewService(store)
	svc.Vectors = w

	// GIVEN a hook that fails every time
	// WHEN an agent is created, updated, and updated with nothing new
	a, err := svc.Create(ctx, "t1", agents.CreateInput{Slug: "luke", Name: "Luke", Skills: []agents.Skill{{Name: "code-review", Description: "Review code"}}})
	require.NoError(t, err, "the agent is written whatever the hook says")
	name := "Luke S."
	_, err = svc.Update(ctx, "t1", "luke", agents.UpdateInput{Name: &name})
	require.NoError(t, err)
	_, err = svc.Update(ctx, "t1", "luke", agents.UpdateInput{Name: &name})
	require.NoError(t, err)

	// THEN it heard of the creation and the one new version, each with
	// the version it replaces
	assert.Equal(t, []string{"luke@0→1", "luke@1→2"}, w.calls)
	// AND both writes are stored
	got, err := store.GetAgent(ctx, "t1", "luke")
	require.NoError(t, err)
	assert.Equal(t, 2, got.Version)
	assert.Equal(t, "Luke S.", got.Name)
	assert.Equal(t, 1, a.Version)

	// A failed write tells nobody.
	_, err = svc.Create(ctx, "t1", agents.CreateInput{Slug: "luke", Name: "Again"})
	require.Error(t, err)
	assert.Len(t, w.calls, 2)
}
