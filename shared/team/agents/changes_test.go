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

// bus records AgentsChanged events, and fails when told to.
type bus struct {
	events []string
	fail   error
}

func (b *bus) Publish(_ context.Context, detailType string, detail any) error {
	ev := detail.(agents.ChangedEvent)
	b.events = append(b.events, fmt.Sprintf("%s %s %s@%d %s", detailType, ev.TeamID, ev.Agent, ev.Version, ev.Change))
	return b.fail
}

// Every change routing reads is announced for the classifier-fitter:
// created, a new version, a status; nothing when an update changes
// nothing; and a failing bus loses no write.
func TestEveryAgentChangeIsAnnounced(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	require.NoError(t, store.CreateTeam(ctx, teams.Team{ID: "t1", Name: "T"}, teams.APIKey{ID: "k1"}, "h1"))
	b := &bus{fail: errors.New("eventbridge unavailable")}
	svc := agents.NewService(store)
	svc.Bus = b

	_, err := svc.Create(ctx, "t1", agents.CreateInput{Slug: "luke", Name: "Luke", Skills: []agents.Skill{{Name: "code-review", Description: "Review code"}}})
	require.NoError(t, err, "the agent is written whatever the bus says")
	examples := []agents.Skill{{Name: "code-review", Description: "Review code", Examples: []string{"is this loop right"}}}
	_, err = svc.Update(ctx, "t1", "luke", agents.UpdateInput{Skills: &examples})
	require.NoError(t, err)
	_, err = svc.Update(ctx, "t1", "luke", agents.UpdateInput{Skills: &examples})
	require.NoError(t, err)
	_, err = svc.SetStatus(ctx, "t1", "luke", agents.StatusPaused)
	require.NoError(t, err)
	_, err = svc.SetStatus(ctx, "t1", "nobody", agents.StatusPaused)
	require.Error(t, err)

	assert.Equal(t, []string{
		"AgentsChanged t1 luke@1 created",
		"AgentsChanged t1 luke@2 updated",
		"AgentsChanged t1 luke@3 status",
	}, b.events)
	got, err := svc.Get(ctx, "t1", "luke")
	require.NoError(t, err)
	assert.Equal(t, agents.StatusPaused, got.Status)
}

// failingCards answers every card fetch with an error.
type failingCards struct{}

func (failingCards) Fetch(context.Context, string, string) (agents.RemoteCard, error) {
	return agents.RemoteCard{}, errors.New("unreachable")
}

// A card checked again (the task-sweeper's refresh) is a new version of
// the agent, announced like any other write.
func TestACardCheckIsAnnounced(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	require.NoError(t, store.CreateTeam(ctx, teams.Team{ID: "t1", Name: "T"}, teams.APIKey{ID: "k1"}, "h1"))
	svc := agents.NewService(store)
	a, err := svc.Create(ctx, "t1", agents.CreateInput{Slug: "desk", Name: "Desk", Skills: []agents.Skill{{Name: "tax", Description: "Taxes"}}})
	require.NoError(t, err)
	b := &bus{}
	svc.Bus, svc.Cards = b, failingCards{}
	a.Remote = &agents.Remote{CardURL: "http://localhost:9/card"}
	checked, err := svc.RefreshCard(ctx, a, "")
	require.NoError(t, err)
	assert.Equal(t, []string{fmt.Sprintf("AgentsChanged t1 desk@%d updated", checked.Version)}, b.events)
}
