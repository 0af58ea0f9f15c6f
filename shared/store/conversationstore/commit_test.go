package conversationstore

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
	"github.com/conclave-ai/conclave/shared/team/memory"
)

// A turn that returns the conversation is one transaction: the agents'
// counters and latencies (each load item once), the return's memory and
// the two cached contexts dropped with it; nothing is written after it.
func TestATurnIsOneTransactionTouchingEachItemOnce(t *testing.T) {
	db := &dynamotest.CountingDB{}
	s := New(db, "tbl")
	turn := conversations.Turn{
		Conversation: conversations.Conversation{ID: "conv", Version: 3, EventSeq: 5, CurrentAgent: "kyra"},
		PrevCurrent:  "luke",
		Messages:     []conversations.Message{{ID: "m1", ConversationID: "conv"}},
		Decision:     cascade.Decision{ID: "d"},
		Handoff:      &conversations.Handoff{ID: "h", ConversationID: "conv", From: "luke", To: "kyra"},
		Memory:       &memory.Memory{ID: "mem", Author: "luke", Agents: []string{"kyra"}},
		Latency:      map[string]float64{"kyra": 120, "dana": 80},
	}
	require.NoError(t, s.CommitTurn(context.Background(), "t", turn))
	require.NotNil(t, db.LastTx)
	keys := dynamotest.TxKeys(db.LastTx)
	seen := map[string]int{}
	for _, k := range keys {
		seen[k]++
	}
	for k, n := range seen {
		assert.Equal(t, 1, n, "%s is written %d times in one transaction", k, n)
	}
	for _, k := range []string{"LOAD#kyra", "LOAD#luke", "LOAD#dana", "MEMEPOCH", "CTX#kyra", "CTX#luke", "MEM#mem", "CONV#conv", "EVT#conv#conv#000000000005"} {
		assert.Contains(t, seen, k)
	}
	assert.Zero(t, db.Updates+db.Deletes, "nothing is written after the transaction")
	for _, w := range db.LastTx.TransactItems {
		if w.Update != nil && w.Update.Key[dynamo.AttrSK].(*types.AttributeValueMemberS).Value == "LOAD#kyra" {
			var names []string
			for _, n := range w.Update.ExpressionAttributeNames {
				names = append(names, n)
			}
			assert.Contains(t, names, "active_conversations")
			assert.Contains(t, names, "latency_ms")
		}
	}
}
