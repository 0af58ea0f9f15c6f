package conversationstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
)

// Each store's items keep every field of the domain type they hold.
func TestConversationItemsKeepEveryStoredField(t *testing.T) {
	t.Run("conversation", func(t *testing.T) {
		c := dynamotest.Filled[conversations.Conversation](t)
		c.Participants = nil // items of their own
		assert.Equal(t, c, dynamotest.RoundTrip(t, toConvItem(c)).toConversation())
		c.LastHandoff = nil
		assert.Equal(t, c, dynamotest.RoundTrip(t, toConvItem(c)).toConversation())
	})
	t.Run("participant", func(t *testing.T) {
		p := dynamotest.Filled[conversations.Participant](t)
		p.SetRole = false // a write instruction, not state
		it := participantItem{Agent: p.Agent, Role: p.Role, JoinedAt: p.JoinedAt, LeftAt: p.LeftAt}
		assert.Equal(t, p, dynamotest.RoundTrip(t, it).toParticipant())
	})
	t.Run("message", func(t *testing.T) {
		m := dynamotest.Filled[conversations.Message](t)
		it, err := dynamo.Marshal(ToMessageItem("t", m))
		require.NoError(t, err)
		got, err := fromMessageItem(it)
		require.NoError(t, err)
		assert.Equal(t, m, got)
	})
	t.Run("handoff", func(t *testing.T) {
		h := dynamotest.Filled[conversations.Handoff](t)
		assert.Equal(t, h, dynamotest.RoundTrip(t, toHandoffItem("t", h)).toHandoff())
	})
	t.Run("feedback", func(t *testing.T) {
		f := dynamotest.Filled[conversations.Feedback](t)
		r := dynamotest.RoundTrip(t, toFeedbackItem("t", "luke", f)).ToRating()
		assert.Equal(t, []any{"luke", f.Rating, f.Query, f.RatedAt}, []any{r.Agent, r.Rating, r.Query, r.At})
	})
}
