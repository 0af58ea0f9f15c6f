package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
)

// decided commits a turn of one user message on *c, routed by a decision
// of strategy choosing selected (a fallback when fallback), and moves *c
// on. It returns the decision as written.
func (f *fixture) decided(t *testing.T, c *conversations.Conversation, strategy routing.Strategy, fallback bool, selected ...string) cascade.Decision {
	t.Helper()
	user := message(c.ID, conversations.AuthorUser, "", "route me")
	turn := turnWith(*c, user)
	turn.Decision = cascade.Decision{ID: ids.New("rdec"), ConversationID: c.ID, MessageID: user.ID, Query: "route me", Strategy: strategy,
		Reason: "contract", SelectedAgents: selected, AnsweredBy: selected, Confidence: 0.75, Threshold: 0.7, Fallback: fallback,
		Tier: "small", Model: "local-deterministic", Outcome: "answered", CreatedAt: user.CreatedAt}
	require.NoError(t, f.Conversations.CommitTurn(context.Background(), f.team, turn))
	*c = turn.Conversation
	return turn.Decision
}

func decisionIDs(list []cascade.Decision) []string {
	out := []string{}
	for _, d := range list {
		out = append(out, d.ID)
	}
	return out
}

// decisionsLogged: a turn's decision reads back whole by id (from the
// routing log and from the conversations' store, which replays a turn's
// reply with it); the log lists the team's newest first, a page at a time,
// by conversation, strategy, selected agent, fallback and time; the
// recent ones are those since a time, up to a limit; another team reads
// none.
func decisionsLogged(t *testing.T, f *fixture) {
	ctx := context.Background()
	c1, c2 := f.conversation(t, ""), f.conversation(t, "")
	d1 := f.decided(t, &c1, routing.Top1, false, "ann")
	d2 := f.decided(t, &c2, routing.Ensemble, false, "ann", "bob")
	time.Sleep(5 * time.Millisecond) // ids sort by the millisecond: d3 and d4 are made after mid
	mid := time.Now()
	time.Sleep(5 * time.Millisecond)
	d3 := f.decided(t, &c1, routing.Top1, true, "bob")
	d4 := f.decided(t, &c2, routing.Cascade, false, "cat")

	got, err := f.Decisions.GetDecision(ctx, f.team, d2.ID)
	require.NoError(t, err)
	assert.Equal(t, d2.ConversationID, got.ConversationID)
	assert.Equal(t, d2.MessageID, got.MessageID)
	assert.Equal(t, d2.Strategy, got.Strategy)
	assert.Equal(t, d2.SelectedAgents, got.SelectedAgents)
	assert.InDelta(t, d2.Confidence, got.Confidence, 1e-12)
	assert.True(t, got.CreatedAt.Equal(d2.CreatedAt))
	replays, ok := f.Conversations.(conversations.Replays)
	require.True(t, ok)
	again, err := replays.GetDecision(ctx, f.team, d3.ID)
	require.NoError(t, err)
	assert.True(t, again.Fallback)
	for _, miss := range []struct{ team, id string }{{f.team, ids.New("rdec")}, {f.otherTeam(), d1.ID}} {
		_, err := f.Decisions.GetDecision(ctx, miss.team, miss.id)
		refused(t, err, apperr.ENOTFOUND, "")
		_, err = replays.GetDecision(ctx, miss.team, miss.id)
		refused(t, err, apperr.ENOTFOUND, "")
	}

	list := func(filter cascade.DecisionFilter) func(paging.Page) ([]cascade.Decision, string, error) {
		return func(p paging.Page) ([]cascade.Decision, string, error) {
			return f.Decisions.ListDecisions(ctx, f.team, filter, p)
		}
	}
	key := func(d cascade.Decision) string { return d.ID }
	yes, no := true, false
	for _, c := range []struct {
		name   string
		filter cascade.DecisionFilter
		want   []cascade.Decision
	}{
		{"all", cascade.DecisionFilter{}, []cascade.Decision{d4, d3, d2, d1}},
		{"one conversation's", cascade.DecisionFilter{ConversationID: c1.ID}, []cascade.Decision{d3, d1}},
		{"a strategy", cascade.DecisionFilter{Strategy: string(routing.Top1)}, []cascade.Decision{d3, d1}},
		{"an agent among those selected", cascade.DecisionFilter{Agent: "bob"}, []cascade.Decision{d3, d2}},
		{"fallbacks", cascade.DecisionFilter{Fallback: &yes}, []cascade.Decision{d3}},
		{"not fallbacks, of a conversation", cascade.DecisionFilter{Fallback: &no, ConversationID: c2.ID}, []cascade.Decision{d4, d2}},
		{"since a time", cascade.DecisionFilter{Since: mid}, []cascade.Decision{d4, d3}},
	} {
		assert.Equal(t, decisionIDs(c.want), pages(t, 1, list(c.filter), key), "%s, newest first, a page at a time", c.name)
	}
	recent, err := f.Decisions.RecentDecisions(ctx, f.team, mid, 10)
	require.NoError(t, err)
	assert.Equal(t, []string{d4.ID, d3.ID}, decisionIDs(recent))
	recent, err = f.Decisions.RecentDecisions(ctx, f.team, time.Time{}, 3)
	require.NoError(t, err)
	assert.Equal(t, []string{d4.ID, d3.ID, d2.ID}, decisionIDs(recent), "up to the limit")
	theirs, err := f.Decisions.RecentDecisions(ctx, f.otherTeam(), time.Time{}, 10)
	require.NoError(t, err)
	assert.Empty(t, theirs)
	boundToken(t, list(cascade.DecisionFilter{}), list(cascade.DecisionFilter{ConversationID: c1.ID}))
}
