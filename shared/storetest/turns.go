package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/dispatch"
	"github.com/conclave-ai/conclave/shared/ids"
)

// turnReplay: a turn under an Idempotency-Key writes a reference to its
// messages; a second turn under the key (the message sent again after its
// answer was lost, read from the conversation as the first left it) is
// Replayed naming the first turn's messages and stores nothing, also when
// six race; without a key, nothing is referenced.
func turnReplay(t *testing.T, f *fixture) {
	replays, ok := f.Conversations.(conversations.Replays)
	require.True(t, ok, "the conversations store reads turns back by key")
	ctx := context.Background()
	now := time.Now().UTC()
	conv := conversations.Conversation{ID: ids.New("conv"), TeamID: f.team, Title: "contract", Status: conversations.StatusOpen, Version: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, f.Conversations.CreateConversation(ctx, conv, nil))
	key := ids.New("key")
	turnOf := func(c conversations.Conversation, k string) conversations.Turn {
		next := c
		next.Version++
		next.MessageCount += 2
		user := conversations.Message{ID: ids.New("msg"), ConversationID: c.ID, Role: conversations.AuthorUser, Content: "hi", CreatedAt: now}
		reply := conversations.Message{ID: ids.New("msg"), ConversationID: c.ID, Role: conversations.AuthorAssistant, Agent: "ann", Content: "hello", CreatedAt: now, ReplyTo: user.ID}
		return conversations.Turn{Conversation: next, Messages: []conversations.Message{user, reply},
			Decision: dispatch.Decision{ID: ids.New("rdec"), ConversationID: c.ID}, IdempotencyKey: k}
	}
	first := turnOf(conv, key)
	require.NoError(t, f.Conversations.CommitTurn(ctx, f.team, first))
	want := []string{first.Messages[0].ID, first.Messages[1].ID}
	got, err := replays.TurnOf(ctx, f.team, key)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f.Conversations.CommitTurn(ctx, f.team, turnOf(first.Conversation, key))
			var r conversations.Replayed
			if assert.True(t, errors.As(err, &r), "%v", err) {
				assert.Equal(t, want, r.MessageIDs)
			}
		}()
	}
	wg.Wait()
	c, err := f.Conversations.GetConversation(ctx, f.team, conv.ID)
	require.NoError(t, err)
	assert.Equal(t, first.Conversation.Version, c.Version, "no repeat stored")
	msgs, err := f.Conversations.RecentMessages(ctx, f.team, conv.ID, 10)
	require.NoError(t, err)
	assert.Len(t, msgs, 2)

	none, err := replays.TurnOf(ctx, f.team, ids.New("key"))
	require.NoError(t, err)
	assert.Empty(t, none)
	require.NoError(t, f.Conversations.CommitTurn(ctx, f.team, turnOf(c, "")), "without a key, no reference")
	got, err = replays.TurnOf(ctx, "team_other_"+ids.New("t"), key)
	require.NoError(t, err)
	assert.Empty(t, got, "the key is the team's own")
}
