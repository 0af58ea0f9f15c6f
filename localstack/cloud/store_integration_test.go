//go:build integration

package cloud_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// A failed condition is explained from the item the failed write returns
// (ReturnValuesOnConditionCheckFailure ALL_OLD) as the engine returns it,
// and a conversation that moved on is conversations.ErrChanged.
func TestFailedConditionsAreExplainedByTheStore(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	team := mustTeam(t, e)
	mustAgent(t, e, team, "stale", nil)

	a, err := e.db.agents.GetAgent(ctx, team, "stale")
	require.NoError(t, err)
	newer := a
	newer.Version, newer.Name = a.Version+1, "Newer"
	require.NoError(t, e.db.agents.UpdateAgent(ctx, newer))
	stale := a
	stale.Version, stale.Name = a.Version+1, "Stale" // written from the old read
	err = e.db.agents.UpdateAgent(ctx, stale)
	ae, ok := apperr.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, apperr.ECONFLICT, ae.Code)
	assert.Equal(t, newer.Version, ae.Details["current_version"])

	_, err = e.db.agents.SetStatus(ctx, team, "stale", agents.StatusPaused, time.Now())
	require.NoError(t, err)
	err = e.db.agents.SetDefault(ctx, team, "stale")
	ae, ok = apperr.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, apperr.ECONFLICT, ae.Code)
	assert.Equal(t, agents.StatusPaused, ae.Details["status"])
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(e.db.agents.SetDefault(ctx, team, "nobody")))

	now := time.Now()
	claim := func(hash string, at time.Time) (*idempotency.Record, error) {
		return e.db.core.Begin(ctx, team, "k1", hash, at, at.Add(idempotency.PendingTTL))
	}
	rec, err := claim("h1", now)
	require.NoError(t, err)
	require.Nil(t, rec, "the first request claims the key")
	rec, err = claim("h2", now)
	require.NoError(t, err)
	assert.Equal(t, &idempotency.Record{Key: "k1", RequestHash: "h1", State: idempotency.StatePending}, rec)
	// A claim left pending (its request cut off or crashed) is taken
	// over once it has lapsed, not a second before; a done record stays
	// for its day.
	rec, err = claim("h1", now.Add(idempotency.PendingTTL))
	require.NoError(t, err)
	require.NotNil(t, rec, "at its lapse exactly the claim still holds")
	rec, err = claim("h1", now.Add(idempotency.PendingTTL+time.Second))
	require.NoError(t, err)
	assert.Nil(t, rec, "taken over")
	require.NoError(t, e.db.core.Complete(ctx, team, idempotency.Record{Key: "k1", RequestHash: "h1", StatusCode: 201, Body: "{}"}, now))
	rec, err = claim("h1", now.Add(time.Hour))
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, idempotency.StateDone, rec.State)

	c := conversations.Conversation{TeamID: team, ID: ids.New("conv"), Title: "t", Status: conversations.StatusOpen, Version: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, e.db.convs.CreateConversation(ctx, c, nil))
	require.NoError(t, e.db.convs.CloseConversation(ctx, team, c, now))
	err = e.db.convs.CloseConversation(ctx, team, c, now)
	assert.ErrorIs(t, err, conversations.ErrChanged)
	ae, ok = apperr.As(err)
	require.True(t, ok)
	assert.Equal(t, "ConversationChanged", ae.Reason)
}

// A turn writes the markers of the results its reply carries, in its
// transaction and as PostResult writes them, on DynamoDB Local: a result
// the stored reply carries is never posted again, and a result posted
// first (by a turn that gave up on a commit still in flight) refuses the
// commit, with nothing of it stored. Together they keep a result in its
// conversation exactly once.
func TestATurnWritesTheMarkersOfTheResultsItsReplyCarries(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	team := mustTeam(t, e)
	now := time.Now().UTC()
	c := conversations.Conversation{TeamID: team, ID: ids.New("conv"), Title: "t", Status: conversations.StatusOpen, Version: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, e.db.convs.CreateConversation(ctx, c, nil))
	turn := func(c conversations.Conversation, marker string) conversations.Turn {
		next := c
		next.Version++
		next.MessageCount++
		next.EventSeq++ // the reply's event
		next.UpdatedAt = time.Now().UTC()
		reply := conversations.Message{ID: ids.New("msg"), ConversationID: c.ID, Role: conversations.AuthorAssistant, Agent: "kyra", Content: "carried " + marker, CreatedAt: next.UpdatedAt}
		return conversations.Turn{Conversation: next, Messages: []conversations.Message{reply},
			Decision: cascade.Decision{ID: ids.New("dec"), ConversationID: c.ID, MessageID: reply.ID, CreatedAt: next.UpdatedAt},
			Carried:  []conversations.CarriedResult{{Marker: marker, MessageID: reply.ID}}}
	}
	posted := func(marker string) conversations.Message {
		return conversations.Message{ID: ids.New("msg"), ConversationID: c.ID, Role: conversations.AuthorAssistant, Agent: "luke", Content: "posted " + marker, CreatedAt: time.Now().UTC()}
	}
	messages := func() []string {
		list, _, err := e.db.convs.ListMessages(ctx, team, c.ID, paging.Page{Limit: 50})
		require.NoError(t, err)
		var out []string
		for _, m := range list {
			out = append(out, m.Content)
		}
		return out
	}

	carried := ids.New("task")
	first := turn(c, carried)
	require.NoError(t, e.db.convs.CommitTurn(ctx, team, first))
	ok, err := e.db.results.PostResult(ctx, team, posted(carried), carried)
	require.NoError(t, err)
	assert.False(t, ok, "the turn's marker: the result is not posted again")

	early := ids.New("task")
	ok, err = e.db.results.PostResult(ctx, team, posted(early), early)
	require.NoError(t, err)
	require.True(t, ok)
	cur, err := e.db.convs.GetConversation(ctx, team, c.ID)
	require.NoError(t, err)
	late := turn(cur, early)
	err = e.db.convs.CommitTurn(ctx, team, late)
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(err), "%v", err)
	assert.Equal(t, []string{"carried " + carried, "posted " + early}, messages(), "nothing of the refused turn")
	after, err := e.db.convs.GetConversation(ctx, team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, cur.Version, after.Version)
}
