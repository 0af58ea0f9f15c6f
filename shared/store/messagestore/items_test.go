package messagestore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
	"github.com/conclave-ai/conclave/shared/team/messaging"
)

func TestAgentMessageItemsKeepEveryStoredField(t *testing.T) {
	t.Run("agent message and inbox entry", func(t *testing.T) {
		m := dynamotest.Filled[messaging.Message](t)
		m.TeamID = ""         // the key holds it
		m.IdempotencyKey = "" // the reference item holds it (dynamo.IdemRef)
		m.Metadata = map[string]any{"n": 1.5, "list": []any{"a", true, nil}, "": map[string]any{"deep": "x"}}
		it, err := ToAgentMessageItem(m, "TEAM#t", dynamo.AgentMsgSK(m.ID), "agent_message")
		require.NoError(t, err)
		got, err := dynamotest.RoundTrip(t, it).toMessage()
		require.NoError(t, err)
		assert.Equal(t, m, got)
		entry := dynamotest.RoundTrip(t, InboxItem{Recipient: "luke", AgentMessageItem: it})
		assert.Equal(t, "luke", entry.Recipient)
		got, err = entry.toMessage()
		require.NoError(t, err)
		assert.Equal(t, m, got)
	})
}

func TestInboxItemKeys(t *testing.T) {
	inbox := dynamotest.MustItem(t, InboxItem{AgentMessageItem: AgentMessageItem{PK: "TEAM#t1", SK: dynamo.InboxSK("luke", "amsg_1")}})
	assert.NotContains(t, inbox, "read_at", "unread is attribute_not_exists(read_at)")
}
