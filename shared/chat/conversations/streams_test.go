package conversations_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/events"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/streams"
)

// Every message a conversation stores is an event of its stream, in the
// order they were stored, numbered 1 … n: the turns' messages and a
// handoff's note (MessagePosted), each the message as the API lists it;
// the conversation's event_seq is the last number. A conversation's
// stream starts with its first message: creating it writes none.
func TestEveryStoredMessageIsAnEventOfItsConversation(t *testing.T) {
	f := newFixture(t, collaborationOff)
	ctx := context.Background()
	c := f.create(t, "kyra")
	head, err := f.store.StreamHead(ctx, team, streams.Conversation(c.ID))
	require.NoError(t, err)
	assert.Zero(t, head)

	f.post(t, c.ID, "hello")
	_, err = f.svc.Handoff(ctx, team, c.ID, conversations.HandoffInput{To: "luke", Reason: "code"})
	require.NoError(t, err)
	f.post(t, c.ID, "please review worker.go")

	evs, err := f.store.StreamEvents(ctx, team, streams.Conversation(c.ID), 0, 100)
	require.NoError(t, err)
	stored := f.messages(t, c.ID)
	require.Len(t, evs, len(stored))
	for i, ev := range evs {
		assert.Equal(t, int64(i+1), ev.Seq)
		assert.Equal(t, conversations.MessagePostedType, ev.Type)
		require.NoError(t, events.Validate(ev.Type, ev.Detail), "%s", ev.Detail)
		var d conversations.MessagePosted
		require.NoError(t, json.Unmarshal(ev.Detail, &d))
		assert.Equal(t, team, d.TeamID)
		want, err := json.Marshal(stored[i])
		require.NoError(t, err)
		got, err := json.Marshal(d.Message)
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(got), "event %d is message %d as listed", i+1, i+1)
	}
	assert.Equal(t, conversations.AuthorSystem, stored[2].Role, "the handoff's note, in its place")
	assert.Equal(t, int64(len(evs)), f.get(t, c.ID).EventSeq)
}
