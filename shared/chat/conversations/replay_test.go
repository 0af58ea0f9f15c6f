package conversations_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

// lostAnswerStore's commit applies, then hangs until its context ends: the
// turn is stored and its answer lost (a 503 OutcomeUnknown).
type lostAnswerStore struct{ *memstore.Store }

func (s lostAnswerStore) CommitTurn(ctx context.Context, teamID string, t conversations.Turn) error {
	if err := s.Store.CommitTurn(context.WithoutCancel(ctx), teamID, t); err != nil {
		return err
	}
	<-ctx.Done()
	return fmt.Errorf("dynamodb TransactWriteItems failed: %w", ctx.Err())
}

// keyed is the context of a POST …/messages with Idempotency-Key key.
func keyed(key string) context.Context {
	return idempotency.Scope(idempotency.WithKey(context.Background(), key), conversations.RefKind)
}

// lostTurn posts under key a turn whose commit applies and whose answer
// is lost, and returns the conversation.
func lostTurn(t *testing.T, f *fixture, key string) conversations.Conversation {
	t.Helper()
	f.cfg.CommitReserve = time.Second
	f.rebuild()
	c := f.create(t, "kyra")
	f.cfg.Store = lostAnswerStore{f.store}
	f.rebuild()
	ctx, cancel := context.WithTimeout(keyed(key), 2500*time.Millisecond)
	defer cancel()
	_, err := f.svc.Post(ctx, team, c.ID, conversations.PostInput{Content: "hello"})
	requireAppErr(t, err, apperr.EINTERNAL, "")
	f.cfg.Store = f.store
	f.rebuild()
	require.Len(t, f.messages(t, c.ID), 2, "the turn was stored all the same")
	return c
}

// A message sent again under the key of a turn whose answer was lost is
// answered with that turn, read back before any agent is asked: one user
// message, one reply, one model call, the same decision.
func TestATurnSentAgainAfterItsAnswerWasLostIsAnsweredWithTheStoredTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, collaborationOff)
		f.cfg.Replays = f.store
		f.rebuild()
		c := lostTurn(t, f, "key-1")
		stored := f.messages(t, c.ID)
		require.Len(t, f.model.requests, 1)

		res, err := f.svc.Post(keyed("key-1"), team, c.ID, conversations.PostInput{Content: "hello"})
		require.NoError(t, err)
		assert.Equal(t, stored[0], res.UserMessage)
		assert.Equal(t, stored[1:], res.Replies)
		assert.Equal(t, stored[0].DecisionID, res.Routing.ID)
		assert.Equal(t, []string{"kyra"}, res.Routing.AnsweredBy, "the stored decision, read back")
		assert.Len(t, f.model.requests, 1, "no agent was asked again")
		assert.Len(t, f.messages(t, c.ID), 2, "nothing stored twice")
		assert.Equal(t, 2, f.get(t, c.ID).MessageCount)

		// Another key is another message.
		_, err = f.svc.Post(keyed("key-2"), team, c.ID, conversations.PostInput{Content: "hello"})
		require.NoError(t, err)
		assert.Len(t, f.messages(t, c.ID), 4)
	})
}

// Without the read-back (or when the first turn commits while the repeat
// runs) the commit itself refuses the repeat: the agents' second answers
// are dropped and the stored turn answers.
func TestTheCommitRefusesASecondTurnUnderOneKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, collaborationOff)
		c := lostTurn(t, f, "key-1")
		stored := f.messages(t, c.ID)

		res, err := f.svc.Post(keyed("key-1"), team, c.ID, conversations.PostInput{Content: "hello"})
		require.NoError(t, err)
		assert.Len(t, f.model.requests, 2, "asked again: nothing read the key back first")
		assert.Equal(t, stored[0].ID, res.UserMessage.ID, "answered with the stored turn")
		assert.Equal(t, stored[1:], res.Replies)
		assert.Len(t, f.messages(t, c.ID), 2, "nothing stored twice")
	})
}
