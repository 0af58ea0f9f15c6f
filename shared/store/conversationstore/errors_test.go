package conversationstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
)

// A conversation that moved on is conversations.ErrChanged inside the same
// ECONFLICT the client saw before; other cancellations are not.
func TestConversationConflictsAreErrChanged(t *testing.T) {
	conv := conversations.Conversation{ID: "conv", Version: 2, Status: conversations.StatusOpen, CurrentAgent: "luke"}
	turn := conversations.Turn{Conversation: conv, PrevCurrent: "luke", Decision: cascade.Decision{ID: "d"}}
	noted := conv
	noted.EventSeq = 1 // the note's event
	handoff := conversations.HandoffChange{Conversation: noted, PrevCurrent: "kyra", Handoff: conversations.Handoff{ID: "h", ConversationID: "conv"}}
	writes := map[string]func(s *Store) error{
		"turn": func(s *Store) error { return s.CommitTurn(context.Background(), "t", turn) },
		"handoff": func(s *Store) error {
			return s.CommitHandoff(context.Background(), "t", handoff)
		},
		"close": func(s *Store) error {
			return s.CloseConversation(context.Background(), "t", conv, time.Now())
		},
	}
	messages := map[string]string{
		"turn":    "the conversation changed during the turn",
		"handoff": "the conversation changed during the handoff",
		"close":   "the conversation changed; read it and try again",
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			err := write(New(&dynamotest.FakeDB{TxErr: dynamotest.Canceled("ConditionalCheckFailed", "None", "None")}, "tbl"))
			assert.ErrorIs(t, err, conversations.ErrChanged)
			e, ok := apperr.As(err)
			require.True(t, ok)
			assert.Equal(t, apperr.ECONFLICT, e.Code)
			assert.Equal(t, "ConversationChanged", e.Reason)
			assert.Equal(t, messages[name], e.Message)

			err = write(New(&dynamotest.FakeDB{TxErr: errors.New("throttled")}, "tbl"))
			assert.NotErrorIs(t, err, conversations.ErrChanged)
			assert.Equal(t, apperr.EINTERNAL, apperr.Code(err))
		})
	}
	for _, name := range []string{"turn", "handoff"} {
		err := writes[name](New(&dynamotest.FakeDB{TxErr: dynamotest.Canceled("None", "TransactionConflict", "None")}, "tbl"))
		assert.NotErrorIs(t, err, conversations.ErrChanged, name)
		e, ok := apperr.As(err)
		require.True(t, ok)
		assert.Equal(t, "TransactionConflict", e.Reason, name)
	}
}

func TestSetParticipantsNamesTheParticipant(t *testing.T) {
	add := []conversations.Participant{{Agent: "nova", Role: conversations.RoleInvited}}
	remove := []string{"luke", "kyra"}
	cases := []struct {
		failed       int // write: 0 conversation, 1 join nova, 2 leave luke, 3 leave kyra
		code, reason string
		message      string
	}{
		{0, apperr.ECONFLICT, "ConversationClosed", "conversation is closed"},
		{2, apperr.ENOTFOUND, "", `participant "luke" not found`},
		{3, apperr.ENOTFOUND, "", `participant "kyra" not found`},
	}
	for _, c := range cases {
		err := New(&dynamotest.FakeDB{TxErr: dynamotest.CanceledAt(4, c.failed, nil)}, "tbl").SetParticipants(context.Background(), "t", "conv", add, remove, time.Now())
		e, ok := apperr.As(err)
		require.True(t, ok)
		assert.Equal(t, c.code, e.Code)
		assert.Equal(t, c.reason, e.Reason)
		assert.Equal(t, c.message, e.Message)
	}
}
