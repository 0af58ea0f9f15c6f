package conversations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

// New refuses a config without one of its required parts, naming it.
func TestNewNamesAMissingRequiredPart(t *testing.T) {
	store := memstore.New()
	for _, c := range []struct {
		name    string
		cfg     conversations.Config
		missing string
	}{
		{"no store", conversations.Config{Agents: store, Router: &cascade.Router{}}, "Store"},
		{"no agents", conversations.Config{Store: store, Router: &cascade.Router{}}, "Agents"},
		{"no router", conversations.Config{Store: store, Agents: store}, "Router"},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc, err := conversations.New(c.cfg)
			require.Error(t, err)
			assert.Nil(t, svc)
			assert.Contains(t, err.Error(), c.missing)
			assert.Panics(t, func() { conversations.MustNew(c.cfg) })
		})
	}
}

// A service built without a model keeps conversations and routes (the
// A2A function's), but answers no turn: Post refuses before it reads or
// stores anything.
func TestAServiceWithoutAModelAnswersNoTurn(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	require.NoError(t, demo.Seed(ctx, store))
	svc, err := conversations.New(conversations.Config{Store: store, Agents: store, Router: &cascade.Router{}})
	require.NoError(t, err)
	c, err := svc.Create(ctx, team, conversations.CreateInput{Title: "routing only", Agent: "kyra"})
	require.NoError(t, err)
	agent, err := svc.Choose(ctx, team, c.ID, "hello")
	require.NoError(t, err)
	assert.Equal(t, "kyra", agent)

	_, err = svc.Post(ctx, team, c.ID, conversations.PostInput{Content: "hello"})
	assert.Equal(t, apperr.EINTERNAL, apperr.Code(err), "%v", err)
	list, _, err := svc.Messages(ctx, team, c.ID, paging.Page{})
	require.NoError(t, err)
	assert.Empty(t, list)
}

// A service built without a work listing (Config.Work) refuses GET …/work
// as its own fault (EINTERNAL), and lists conversations by agent all the
// same (the Store's).
func TestAServiceWithoutAWorkListing(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	require.NoError(t, demo.Seed(ctx, store))
	svc := conversations.MustNew(conversations.Config{Store: store, Agents: store, Router: &cascade.Router{}})
	c, err := svc.Create(ctx, team, conversations.CreateInput{Title: "no work", Agent: "kyra"})
	require.NoError(t, err)
	_, _, err = svc.Work(ctx, team, c.ID, paging.Page{})
	assert.Equal(t, apperr.EINTERNAL, apperr.Code(err), "%v", err)
	list, _, err := svc.AgentConversations(ctx, team, "kyra", paging.Page{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, c.ID, list[0].ID)
}
