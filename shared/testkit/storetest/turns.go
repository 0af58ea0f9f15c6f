package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
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
		next.EventSeq += 2
		user := conversations.Message{ID: ids.New("msg"), ConversationID: c.ID, Role: conversations.AuthorUser, Content: "hi", CreatedAt: now}
		reply := conversations.Message{ID: ids.New("msg"), ConversationID: c.ID, Role: conversations.AuthorAssistant, Agent: "ann", Content: "hello", CreatedAt: now, ReplyTo: user.ID}
		return conversations.Turn{Conversation: next, Messages: []conversations.Message{user, reply},
			Decision: cascade.Decision{ID: ids.New("rdec"), ConversationID: c.ID}, IdempotencyKey: k}
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

// keyedCreates: a session, task or consultation created for a request
// with an Idempotency-Key (scoped to its kind) writes a reference with
// it; a second create under the key is idempotency.Replayed naming the
// first and writes nothing, also when six sessions race; a key scoped to
// another kind (a turn's delegation) takes no reference.
func keyedCreates(t *testing.T, f *fixture) {
	refs, ok := f.Sessions.(idempotency.Refs)
	require.True(t, ok, "the stores read their references back")
	key := ids.New("key")
	scoped := func(kind string) context.Context {
		return idempotency.Scope(idempotency.WithKey(context.Background(), key), kind)
	}
	replayed := func(err error, kind, id string) {
		t.Helper()
		var r idempotency.Replayed
		if assert.True(t, errors.As(err, &r), "%v", err) {
			assert.Equal(t, idempotency.Replayed{Kind: kind, ID: id}, r)
		}
	}

	keyedSessions(t, f, refs, key, scoped, replayed)

	// Tasks: the slot is not taken twice.
	first := another(f.queued(t, "cat"))
	require.NoError(t, f.Tasks.CreateTask(scoped(tasks.RefKind), first, nil, nil))
	second := another(first)
	replayed(f.Tasks.CreateTask(scoped(tasks.RefKind), second, nil, nil), tasks.RefKind, first.ID)
	f.absent(t, second.ID)
	delegated := another(first)
	require.NoError(t, f.Tasks.CreateTask(scoped("turn"), delegated, nil, nil), "a key scoped to another create is not the task's")

	// Consultations: the requester's counter is not moved twice.
	c := f.consultation("bob")
	require.NoError(t, f.Consultations.CreateConsultation(scoped(consultations.RefKind), c, consultations.MaxActivePerAgent))
	again := f.consultation("bob")
	replayed(f.Consultations.CreateConsultation(scoped(consultations.RefKind), again, consultations.MaxActivePerAgent), consultations.RefKind, c.ID)
	active, err := f.Consultations.ActiveConsultations(context.Background(), f.team, "bob")
	require.NoError(t, err)
	assert.Equal(t, []string{c.ID}, active)
}

// keyedSessions: one of six racing session creates under the key is
// stored; the others are Replayed naming it and write nothing.
func keyedSessions(t *testing.T, f *fixture, refs idempotency.Refs, key string, scoped func(string) context.Context, replayed func(error, string, string)) {
	ses := func() sessions.Session {
		now := time.Now().UTC()
		s := sessions.Session{TeamID: f.team, ID: ids.New("ses"), Pattern: sessions.Brainstorm, Lead: "ann", Goal: "keyed",
			Participants: []sessions.Participant{{Agent: "bob", Role: "contributor"}}, MaxDurationSeconds: 600, MaxCostUSD: 0.5,
			MaxRounds: 5, Approval: "none", Status: sessions.Planning, StageOutputs: []sessions.StageOutput{}, Runs: 1,
			CreatedBy: "user:key_contract", Version: 1, CreatedAt: now, UpdatedAt: now, Deadline: ptrTime(now.Add(10 * time.Minute))}
		// As the service creates one: with its first event.
		require.NoError(t, sessions.WithEvents(sessions.Session{}, &s, now))
		return s
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		stored  []string
		refused []error
		tried   []string
	)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := ses()
			err := f.Sessions.CreateSession(scoped(sessions.RefKind), s)
			mu.Lock()
			defer mu.Unlock()
			tried = append(tried, s.ID)
			if err == nil {
				stored = append(stored, s.ID)
			} else {
				refused = append(refused, err)
			}
		}()
	}
	wg.Wait()
	require.Len(t, stored, 1, "one session under the key")
	for _, err := range refused {
		replayed(err, sessions.RefKind, stored[0])
	}
	for _, id := range tried {
		_, err := f.Sessions.GetSession(context.Background(), f.team, id)
		if id == stored[0] {
			assert.NoError(t, err)
		} else {
			assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err), "a refused create writes nothing")
		}
		if f.Streams != nil {
			head, err := f.Streams.StreamHead(context.Background(), f.team, streams.Session(id))
			require.NoError(t, err)
			if id == stored[0] {
				assert.Equal(t, int64(1), head, "the create's event")
			} else {
				assert.Zero(t, head, "a refused create writes no event either")
			}
		}
	}
	got, err := refs.ReadRef(context.Background(), f.team, sessions.RefKind, key)
	require.NoError(t, err)
	assert.Equal(t, stored, got)

}
