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
)

// refused requires err to be the application error code, with reason
// when one is given: the refusal a domain service matches on.
func refused(t *testing.T, err error, code, reason string) {
	t.Helper()
	e, ok := apperr.As(err)
	require.True(t, ok, "want %s %s, got %v", code, reason, err)
	assert.Equal(t, code, e.Code, "%v", err)
	if reason != "" {
		assert.Equal(t, reason, e.Reason, "%v", err)
	}
}

// pages reads a listing to its end, size items a page, and checks what
// the domain relies on of paging: no page holds more than size, and a
// token continues exactly after the page it came with (every item once).
// It returns the items' keys in the order read.
func pages[T any](t *testing.T, size int, list func(paging.Page) ([]T, string, error), key func(T) string) []string {
	t.Helper()
	var out []string
	seen := map[string]bool{}
	p := paging.Page{Limit: size}
	for range 100 {
		items, next, err := list(p)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(items), size, "a page holds at most its limit")
		for _, it := range items {
			k := key(it)
			assert.False(t, seen[k], "%s read twice", k)
			seen[k] = true
			out = append(out, k)
		}
		if next == "" {
			return out
		}
		p.Token = next
	}
	t.Fatal("the listing never ended")
	return nil
}

// boundToken checks that a page token is valid for its listing only: the
// token of first's first page (of two items or more) continues other, a
// listing of another team or filter, as EINVALID.
func boundToken[T any](t *testing.T, first, other func(paging.Page) ([]T, string, error)) {
	t.Helper()
	_, next, err := first(paging.Page{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, next, "the first page of two or more items has a next token")
	_, _, err = other(paging.Page{Limit: 1, Token: next})
	refused(t, err, apperr.EINVALID, "")
}

func reversed(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[len(list)-1-i] = s
	}
	return out
}

// otherTeam is a team id no fixture has: what another team reads.
func (f *fixture) otherTeam() string { return "team_other_" + f.team }

// conversation is a new open conversation of the team; with a primary
// agent it is that agent's current one (and counted on its load).
func (f *fixture) conversation(t *testing.T, primary string) conversations.Conversation {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	c := conversations.Conversation{ID: ids.New("conv"), TeamID: f.team, Title: "contract " + primary, Status: conversations.StatusOpen,
		Version: 1, CreatedAt: now, UpdatedAt: now, PrimaryAgent: primary, CurrentAgent: primary}
	var p *conversations.Participant
	if primary != "" {
		p = &conversations.Participant{Agent: primary, Role: conversations.RolePrimary, JoinedAt: now}
	}
	require.NoError(t, f.Conversations.CreateConversation(context.Background(), c, p))
	return c
}

// conversationsListed: a conversation is created once; the team's are
// listed newest first, whole (their team included), a page at a time;
// another team reads none of them, and a page token is its listing's.
func conversationsListed(t *testing.T, f *fixture) {
	ctx := context.Background()
	var made []string
	for range 3 {
		made = append(made, f.conversation(t, "").ID)
	}
	first, err := f.Conversations.GetConversation(ctx, f.team, made[0])
	require.NoError(t, err)
	again := first
	again.Title = "written twice"
	refused(t, f.Conversations.CreateConversation(ctx, again, nil), apperr.ECONFLICT, "")
	got, err := f.Conversations.GetConversation(ctx, f.team, made[0])
	require.NoError(t, err)
	assert.Equal(t, first.Title, got.Title, "the conversation as first written")
	assert.Equal(t, f.team, got.TeamID)

	list := func(team string) func(paging.Page) ([]conversations.Conversation, string, error) {
		return func(p paging.Page) ([]conversations.Conversation, string, error) {
			return f.Conversations.ListConversations(ctx, team, "", p)
		}
	}
	key := func(c conversations.Conversation) string { return c.ID }
	assert.Equal(t, reversed(made), pages(t, 2, list(f.team), key), "newest first, each once")
	whole, _, err := f.Conversations.ListConversations(ctx, f.team, "", paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, whole, 3)
	for _, c := range whole {
		assert.Equal(t, f.team, c.TeamID, "a listed conversation names its team")
		assert.Equal(t, conversations.StatusOpen, c.Status)
		assert.Equal(t, 1, c.Version)
	}
	assert.Empty(t, pages(t, 10, list(f.otherTeam()), key), "another team's listing")
	_, err = f.Conversations.GetConversation(ctx, f.otherTeam(), made[0])
	refused(t, err, apperr.ENOTFOUND, "")
	boundToken(t, list(f.team), list(f.otherTeam()))
}

// conversationParticipants: an agent joins once and keeps its first role
// and join time when it comes back; only an active participant leaves
// (ENOTFOUND naming it, and the change's other writes are not made); a
// closed or unknown conversation takes no change (ConversationClosed).
func conversationParticipants(t *testing.T, f *fixture) {
	ctx := context.Background()
	c := f.conversation(t, "ann")
	t0 := c.CreatedAt
	t1, t2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	bob := conversations.Participant{Agent: "bob", Role: conversations.RoleInvited, JoinedAt: t1}
	require.NoError(t, f.Conversations.SetParticipants(ctx, f.team, c.ID, []conversations.Participant{bob}, nil, t1))
	require.NoError(t, f.Conversations.SetParticipants(ctx, f.team, c.ID, nil, []string{"bob"}, t2))
	parts, err := f.Conversations.ListParticipants(ctx, f.team, c.ID)
	require.NoError(t, err)
	left := t2
	assert.Equal(t, []conversations.Participant{
		{Agent: "ann", Role: conversations.RolePrimary, JoinedAt: t0},
		{Agent: "bob", Role: conversations.RoleInvited, JoinedAt: t1, LeftAt: &left},
	}, parts, "by slug, the one that left with its time")

	cat := conversations.Participant{Agent: "cat", Role: conversations.RoleInvited, JoinedAt: t2}
	for _, gone := range []string{"bob", "nobody"} {
		err := f.Conversations.SetParticipants(ctx, f.team, c.ID, []conversations.Participant{cat}, []string{gone}, t2)
		refused(t, err, apperr.ENOTFOUND, "")
	}
	back := conversations.Participant{Agent: "bob", Role: conversations.RoleHandoffSource, JoinedAt: t2}
	require.NoError(t, f.Conversations.SetParticipants(ctx, f.team, c.ID, []conversations.Participant{back}, nil, t2))
	parts, err = f.Conversations.ListParticipants(ctx, f.team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, []conversations.Participant{
		{Agent: "ann", Role: conversations.RolePrimary, JoinedAt: t0},
		{Agent: "bob", Role: conversations.RoleInvited, JoinedAt: t1},
	}, parts, "cat was never added; bob is back with his first role and join time")
	none, err := f.Conversations.ListParticipants(ctx, f.otherTeam(), c.ID)
	require.NoError(t, err)
	assert.Empty(t, none, "another team's")

	require.NoError(t, f.Conversations.CloseConversation(ctx, f.team, c, t2))
	for _, id := range []string{c.ID, ids.New("conv")} {
		err := f.Conversations.SetParticipants(ctx, f.team, id, []conversations.Participant{cat}, nil, t2)
		refused(t, err, apperr.ECONFLICT, "ConversationClosed")
	}
}

// conversationClosed: a close is conditioned on the version read and the
// conversation open (ConversationChanged), and gives back its current
// agent's conversation; a refused close changes nothing.
func conversationClosed(t *testing.T, f *fixture) {
	ctx := context.Background()
	c := f.conversation(t, "cat")
	load := func() int {
		t.Helper()
		loads, err := f.Gate.AgentLoads(ctx, f.team)
		require.NoError(t, err)
		return loads.Of("cat").ActiveConversations
	}
	assert.Equal(t, 1, load(), "the primary's conversation is counted")
	stale := c
	stale.Version = 7
	err := f.Conversations.CloseConversation(ctx, f.team, stale, time.Now().UTC())
	refused(t, err, apperr.ECONFLICT, "ConversationChanged")
	assert.ErrorIs(t, err, conversations.ErrChanged, "what the service matches to read again")
	got, err := f.Conversations.GetConversation(ctx, f.team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, conversations.StatusOpen, got.Status, "a refused close changes nothing")
	assert.Equal(t, 1, load())

	at := time.Now().UTC().Truncate(time.Millisecond)
	require.NoError(t, f.Conversations.CloseConversation(ctx, f.team, got, at))
	closed, err := f.Conversations.GetConversation(ctx, f.team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, conversations.StatusClosed, closed.Status)
	assert.Equal(t, c.Version+1, closed.Version)
	assert.True(t, closed.UpdatedAt.Equal(at), "%v", closed.UpdatedAt)
	assert.Zero(t, load(), "closed: the agent's conversation given back")
	refused(t, f.Conversations.CloseConversation(ctx, f.team, closed, at), apperr.ECONFLICT, "ConversationChanged")
	refused(t, f.Conversations.CloseConversation(ctx, f.otherTeam(), closed, at), apperr.ECONFLICT, "ConversationChanged")
	refused(t, turnErr(f, closed), apperr.ECONFLICT, "ConversationChanged")
	assert.Zero(t, load(), "a refused close gives nothing back twice")
}

// turnErr commits a turn of one user message on c as read.
func turnErr(f *fixture, c conversations.Conversation) error {
	return f.Conversations.CommitTurn(context.Background(), f.team, turnWith(c, message(c.ID, conversations.AuthorUser, "", "hello?")))
}
