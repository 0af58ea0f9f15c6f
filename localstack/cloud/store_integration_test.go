//go:build integration

package cloud_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/idempotency"
	"github.com/conclave-ai/conclave/shared/ids"
)

// A failed condition is explained from the item the failed write returns
// (ReturnValuesOnConditionCheckFailure ALL_OLD) as the engine returns it,
// and a conversation that moved on is conversations.ErrChanged.
func TestFailedConditionsAreExplainedByTheStore(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	team := mustTeam(t, e)
	mustAgent(t, e, team, "stale", nil)

	a, err := e.store.GetAgent(ctx, team, "stale")
	require.NoError(t, err)
	newer := a
	newer.Version, newer.Name = a.Version+1, "Newer"
	require.NoError(t, e.store.UpdateAgent(ctx, newer))
	stale := a
	stale.Version, stale.Name = a.Version+1, "Stale" // written from the old read
	err = e.store.UpdateAgent(ctx, stale)
	ae, ok := apperr.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, apperr.ECONFLICT, ae.Code)
	assert.Equal(t, newer.Version, ae.Details["current_version"])

	_, err = e.store.SetStatus(ctx, team, "stale", agents.StatusPaused, time.Now())
	require.NoError(t, err)
	err = e.store.SetDefault(ctx, team, "stale")
	ae, ok = apperr.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, apperr.ECONFLICT, ae.Code)
	assert.Equal(t, agents.StatusPaused, ae.Details["status"])
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(e.store.SetDefault(ctx, team, "nobody")))

	now := time.Now()
	rec, err := e.store.Begin(ctx, team, "k1", "h1", now)
	require.NoError(t, err)
	require.Nil(t, rec, "the first request claims the key")
	rec, err = e.store.Begin(ctx, team, "k1", "h2", now)
	require.NoError(t, err)
	assert.Equal(t, &idempotency.Record{Key: "k1", RequestHash: "h1", State: idempotency.StatePending}, rec)

	c := conversations.Conversation{TeamID: team, ID: ids.New("conv"), Title: "t", Status: conversations.StatusOpen, Version: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, e.store.CreateConversation(ctx, c, nil))
	require.NoError(t, e.store.CloseConversation(ctx, team, c, now))
	err = e.store.CloseConversation(ctx, team, c, now)
	assert.ErrorIs(t, err, conversations.ErrChanged)
	ae, ok = apperr.As(err)
	require.True(t, ok)
	assert.Equal(t, "ConversationChanged", ae.Reason)
}
