package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/messaging"
)

// messageReplay: the reference from a request's Idempotency-Key is
// written with the message; a second message under the key (a request
// sent again after its answer was lost) is Replayed naming the first and
// stores nothing, also when eight race; another team's key is its own.
func messageReplay(t *testing.T, f *fixture) {
	ctx := context.Background()
	key := ids.New("key")
	msg := func(team string) messaging.Message {
		return messaging.Message{ID: ids.New("amsg"), TeamID: team, From: "ann", To: "bob", Channel: "direct", Type: "info",
			Content: "hello", Metadata: map[string]any{}, CreatedAt: time.Now().UTC(), IdempotencyKey: key}
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		stored   []string
		replayed []string
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := msg(f.team)
			err := f.Messages.PutAgentMessage(ctx, m)
			var r messaging.Replayed
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				stored = append(stored, m.ID)
			case errors.As(err, &r):
				replayed = append(replayed, r.ID)
			default:
				t.Errorf("unexpected: %v", err)
			}
		}()
	}
	wg.Wait()
	require.Len(t, stored, 1, "one message under the key")
	assert.Len(t, replayed, 7)
	for _, id := range replayed {
		assert.Equal(t, stored[0], id, "each replay names the stored message")
	}
	_, err := f.Messages.GetAgentMessage(ctx, f.team, stored[0])
	require.NoError(t, err)

	other := msg("team_other_" + ids.New("t"))
	assert.NoError(t, f.Messages.PutAgentMessage(ctx, other), "the key is the team's own")
	plain := msg(f.team)
	plain.IdempotencyKey = ""
	assert.NoError(t, f.Messages.PutAgentMessage(ctx, plain), "without a key, no reference")
}

// agentMessage is a new direct message from ann to to (not stored).
func (f *fixture) agentMessage(to, content string) messaging.Message {
	return messaging.Message{ID: ids.New("amsg"), TeamID: f.team, From: "ann", To: to, Channel: messaging.ChannelDirect, Type: "info",
		Content: content, Metadata: map[string]any{"about": "contract"}, CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
}

// messagesStored: a message is stored once under its id and reads back
// whole by its team only.
func messagesStored(t *testing.T, f *fixture) {
	ctx := context.Background()
	m := f.agentMessage("bob", "hello")
	require.NoError(t, f.Messages.PutAgentMessage(ctx, m))
	again := m
	again.Content = "written twice"
	refused(t, f.Messages.PutAgentMessage(ctx, again), apperr.ECONFLICT, "")
	got, err := f.Messages.GetAgentMessage(ctx, f.team, m.ID)
	require.NoError(t, err)
	assert.Equal(t, f.team, got.TeamID)
	assert.Equal(t, "hello", got.Content, "the message as first written")
	assert.Equal(t, m.Metadata, got.Metadata)
	assert.Equal(t, []string{"ann", "bob", messaging.ChannelDirect, "info"}, []string{got.From, got.To, got.Channel, got.Type})
	assert.True(t, got.CreatedAt.Equal(m.CreatedAt))
	assert.Nil(t, got.ReadAt)
	for _, miss := range []struct{ team, id string }{{f.team, ids.New("amsg")}, {f.otherTeam(), m.ID}} {
		_, err := f.Messages.GetAgentMessage(ctx, miss.team, miss.id)
		refused(t, err, apperr.ENOTFOUND, "")
	}
}

// inboxDelivered: a message is delivered to a recipient once (a
// redelivery writes nothing), unread; an inbox lists newest first, a page
// at a time, all or the unread only; a read is marked once per recipient
// (the first read's time kept), counting the entries it marked; another
// recipient's or team's inbox is its own.
func inboxDelivered(t *testing.T, f *fixture) {
	ctx := context.Background()
	m1, m2, m3 := f.agentMessage("bob", "first"), f.agentMessage("bob", "second"), f.agentMessage("bob", "third")
	read := time.Now().UTC().Truncate(time.Millisecond)
	m1.ReadAt = &read // a delivery is unread whatever the message says
	for _, m := range []messaging.Message{m1, m2, m3} {
		wrote, err := f.Messages.Deliver(ctx, f.team, "bob", m)
		require.NoError(t, err)
		assert.True(t, wrote)
	}
	changed := m1
	changed.Content = "delivered twice"
	wrote, err := f.Messages.Deliver(ctx, f.team, "bob", changed)
	require.NoError(t, err)
	assert.False(t, wrote, "a redelivered event writes nothing")
	wrote, err = f.Messages.Deliver(ctx, f.team, "cat", m1)
	require.NoError(t, err)
	assert.True(t, wrote, "another recipient's copy")

	inbox := func(agent string, unread bool) func(paging.Page) ([]messaging.Message, string, error) {
		return func(p paging.Page) ([]messaging.Message, string, error) {
			return f.Messages.ListInbox(ctx, f.team, agent, unread, p)
		}
	}
	key := func(m messaging.Message) string { return m.ID + ":" + m.Content }
	assert.Equal(t, []string{m3.ID + ":third", m2.ID + ":second", m1.ID + ":first"}, pages(t, 1, inbox("bob", false), key),
		"newest first, as first delivered")
	assert.Len(t, pages(t, 10, inbox("bob", true), key), 3, "all unread")

	n, err := f.Messages.MarkRead(ctx, f.team, "bob", []string{m1.ID, m3.ID, ids.New("amsg")}, read)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the unknown id is skipped")
	n, err = f.Messages.MarkRead(ctx, f.team, "bob", []string{m1.ID}, read.Add(time.Hour))
	require.NoError(t, err)
	assert.Zero(t, n, "read once")
	assert.Equal(t, []string{m2.ID + ":second"}, pages(t, 1, inbox("bob", true), key), "the unread only")
	all, _, err := f.Messages.ListInbox(ctx, f.team, "bob", false, paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, all, 3)
	require.NotNil(t, all[2].ReadAt)
	assert.True(t, all[2].ReadAt.Equal(read), "the first read's time: %v", all[2].ReadAt)
	assert.Equal(t, m1.Metadata, all[2].Metadata)
	assert.Equal(t, []string{m1.ID + ":first"}, pages(t, 10, inbox("cat", true), key), "cat's copy is unread")

	n, err = f.Messages.MarkRead(ctx, f.otherTeam(), "bob", []string{m2.ID}, read)
	require.NoError(t, err)
	assert.Zero(t, n, "another team marks nothing of ours")
	theirs, _, err := f.Messages.ListInbox(ctx, f.otherTeam(), "bob", false, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, theirs)
	boundToken(t, inbox("bob", false), inbox("bob", true))
}
