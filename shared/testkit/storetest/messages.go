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
	"github.com/conclave-ai/conclave/shared/team/memory"
)

// chat commits turns of a user message and ann's reply on a new
// conversation and returns the conversation as they left it and the
// messages in order.
func (f *fixture) chat(t *testing.T, turns int) (conversations.Conversation, []conversations.Message) {
	t.Helper()
	ctx := context.Background()
	c := f.conversation(t, "")
	var msgs []conversations.Message
	for i := range turns {
		user := message(c.ID, conversations.AuthorUser, "", "question")
		reply := message(c.ID, conversations.AuthorAssistant, "ann", "answer")
		reply.ReplyTo, reply.Query = user.ID, "question"
		turn := turnWith(c, user, reply)
		turn.Decision.MessageID = reply.ID
		require.NoError(t, f.Conversations.CommitTurn(ctx, f.team, turn), "turn %d", i)
		c = turn.Conversation
		msgs = append(msgs, user, reply)
	}
	return c, msgs
}

func msgIDs(list []conversations.Message) []string {
	out := []string{}
	for _, m := range list {
		out = append(out, m.ID)
	}
	return out
}

// conversationMessages: a message reads back by its conversation and id;
// the tail after an id is the later messages oldest first, a page at a
// time (its token bound to that tail); the last n are the newest n,
// oldest first; another team or conversation reads none of them.
func conversationMessages(t *testing.T, f *fixture) {
	ctx := context.Background()
	c, msgs := f.chat(t, 3)
	got, err := f.Conversations.GetMessage(ctx, f.team, c.ID, msgs[1].ID)
	require.NoError(t, err)
	assert.Equal(t, msgs[1].Content, got.Content)
	assert.Equal(t, conversations.AuthorAssistant, got.Role)
	assert.Equal(t, "ann", got.Agent)
	assert.Equal(t, msgs[0].ID, got.ReplyTo)
	assert.Equal(t, "question", got.Query, "the query an agent reply answered is kept with it")
	assert.True(t, got.CreatedAt.Equal(msgs[1].CreatedAt))
	for _, miss := range []struct{ team, conv, id string }{
		{f.team, c.ID, ids.New("msg")}, {f.team, ids.New("conv"), msgs[1].ID}, {f.otherTeam(), c.ID, msgs[1].ID},
	} {
		_, err := f.Conversations.GetMessage(ctx, miss.team, miss.conv, miss.id)
		refused(t, err, apperr.ENOTFOUND, "")
	}

	tail, ok := f.Conversations.(conversations.MessageTail)
	require.True(t, ok, "the conversations store reads a conversation's tail")
	after := func(id string) func(paging.Page) ([]conversations.Message, string, error) {
		return func(p paging.Page) ([]conversations.Message, string, error) {
			return tail.ListMessagesAfter(ctx, f.team, c.ID, id, p)
		}
	}
	key := func(m conversations.Message) string { return m.ID }
	assert.Equal(t, msgIDs(msgs[2:]), pages(t, 1, after(msgs[1].ID), key), "after an id: the later ones, oldest first")
	assert.Equal(t, msgIDs(msgs), pages(t, 4, after(""), key), "after nothing: all")
	assert.Empty(t, pages(t, 4, after(msgs[5].ID), key), "after the last: none")
	boundToken(t, after(msgs[0].ID), after(msgs[1].ID))
	all := pages(t, 2, func(p paging.Page) ([]conversations.Message, string, error) {
		return f.Conversations.ListMessages(ctx, f.team, c.ID, p)
	}, key)
	assert.Equal(t, msgIDs(msgs), all, "a conversation's messages oldest first")

	last, err := f.Conversations.RecentMessages(ctx, f.team, c.ID, 2)
	require.NoError(t, err)
	assert.Equal(t, msgIDs(msgs[4:]), msgIDs(last), "the last two, oldest first")
	none, err := f.Conversations.RecentMessages(ctx, f.otherTeam(), c.ID, 2)
	require.NoError(t, err)
	assert.Empty(t, none)
}

// messageRatings: only an agent's reply is rated (ENOTFOUND naming it for
// a user's message or a missing one, and nothing is written); the rating
// is on the reply and, per contributing agent, in the expert gate's
// ratings (with the person who rated): newest reply first, a later
// rating replacing an earlier one, at most the limit, the team's own.
func messageRatings(t *testing.T, f *fixture) {
	ctx := context.Background()
	since := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	c, msgs := f.chat(t, 2)
	rate := func(msg conversations.Message, rating int, agents ...string) error {
		return f.Conversations.RateMessage(ctx, f.team, conversations.Feedback{ConversationID: c.ID, MessageID: msg.ID, Rating: rating,
			Comment: "contract", Agents: agents, Query: "question", RatedAt: time.Now().UTC(), UserID: "auth0|alice"})
	}
	refused(t, rate(msgs[0], 5, "ann"), apperr.ENOTFOUND, "")
	refused(t, rate(message(c.ID, conversations.AuthorAssistant, "ann", "never stored"), 5, "ann"), apperr.ENOTFOUND, "")
	ratings := func(limit int) []string {
		t.Helper()
		list, err := f.Gate.RecentRatings(ctx, f.team, since, limit)
		require.NoError(t, err)
		var out []string
		for _, r := range list {
			assert.Equal(t, "question", r.Query)
			assert.Equal(t, "auth0|alice", r.UserID, "the person who rated")
			out = append(out, r.Agent+"="+string(rune('0'+r.Rating)))
		}
		return out
	}
	assert.Empty(t, ratings(10), "a refused rating writes none")

	require.NoError(t, rate(msgs[1], 2, "ann"))
	require.NoError(t, rate(msgs[3], 4, "ann", "bob"))
	require.NoError(t, rate(msgs[1], 5, "ann"), "rated again")
	got, err := f.Conversations.GetMessage(ctx, f.team, c.ID, msgs[1].ID)
	require.NoError(t, err)
	assert.Equal(t, 5, got.Rating, "the later rating")
	user, err := f.Conversations.GetMessage(ctx, f.team, c.ID, msgs[0].ID)
	require.NoError(t, err)
	assert.Zero(t, user.Rating)
	assert.Equal(t, []string{"bob=4", "ann=4", "ann=5"}, ratings(10), "newest reply first, one per agent, the later rating")
	assert.Len(t, ratings(2), 2, "at most the limit")
	other, err := f.Gate.RecentRatings(ctx, f.otherTeam(), since, 10)
	require.NoError(t, err)
	assert.Empty(t, other, "another team's")
}

// conversationHandoffs: a handoff is stored with its note and the
// conversation's new version in one write, listed oldest first; with a
// memory, the memory is stored and the cached contexts of the agents who
// may see it end; a handoff from a stale read, or whose memory id is
// taken, writes nothing.
func conversationHandoffs(t *testing.T, f *fixture) {
	ctx := context.Background()
	c := f.conversation(t, "ann")
	hand := func(from conversations.Conversation, to string, mem *memory.Memory) (conversations.HandoffChange, error) {
		next := from
		next.Version++
		next.MessageCount++
		next.EventSeq++
		next.CurrentAgent, next.PreviousAgent, next.HandoffActive = to, from.CurrentAgent, true
		note := message(from.ID, conversations.AuthorSystem, "", from.CurrentAgent+" handed off to "+to)
		h := conversations.HandoffChange{Conversation: next, PrevCurrent: from.CurrentAgent, Note: note, Memory: mem,
			Handoff: conversations.Handoff{ID: ids.New("hoff"), ConversationID: from.ID, From: from.CurrentAgent, To: to,
				Kind: conversations.KindHandoff, Reason: "contract", CreatedAt: note.CreatedAt},
			Roles: []conversations.Participant{{Agent: to, Role: conversations.RoleInvited, JoinedAt: note.CreatedAt}}}
		return h, f.Conversations.CommitHandoff(ctx, f.team, h)
	}
	first, err := hand(c, "bob", nil)
	require.NoError(t, err)
	f.cacheContext(t, "bob")
	mem := f.memory("bob", "handoff notes")
	mem.Agents = []string{"cat"}
	second, err := hand(first.Conversation, "cat", &mem)
	require.NoError(t, err)
	_, hit, err := f.Memories.GetContext(ctx, f.team, "bob")
	require.NoError(t, err)
	assert.False(t, hit, "the memory's author's cached context ended with the handoff")
	assert.Contains(t, f.memoryIDs(t), mem.ID, "the handoff's memory")

	_, err = hand(first.Conversation, "ann", nil)
	refused(t, err, apperr.ECONFLICT, "ConversationChanged")
	assert.ErrorIs(t, err, conversations.ErrChanged)
	taken := f.memory("cat", "again")
	taken.ID = mem.ID
	_, err = hand(second.Conversation, "ann", &taken)
	refused(t, err, apperr.ECONFLICT, "")

	list, err := f.Conversations.ListHandoffs(ctx, f.team, c.ID)
	require.NoError(t, err)
	require.Len(t, list, 2, "the refused handoffs wrote no record")
	assert.Equal(t, []string{first.Handoff.ID, second.Handoff.ID}, []string{list[0].ID, list[1].ID}, "oldest first")
	assert.Equal(t, "cat", list[1].To)
	got, err := f.Conversations.GetConversation(ctx, f.team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, second.Conversation.Version, got.Version, "nor moved the conversation")
	assert.Equal(t, "cat", got.CurrentAgent)
	msgs, err := f.Conversations.RecentMessages(ctx, f.team, c.ID, 10)
	require.NoError(t, err)
	assert.Equal(t, []string{first.Note.ID, second.Note.ID}, msgIDs(msgs), "nor stored a note")
	none, err := f.Conversations.ListHandoffs(ctx, f.otherTeam(), c.ID)
	require.NoError(t, err)
	assert.Empty(t, none)
}
