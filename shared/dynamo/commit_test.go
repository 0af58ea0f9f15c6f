package dynamo

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/dispatch"
	"github.com/conclave-ai/conclave/shared/memory"
)

// countingDB counts the calls a method makes beside its transaction.
type countingDB struct {
	fakeDB
	updates, deletes int
}

func (c *countingDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.updates++
	return &dynamodb.UpdateItemOutput{}, nil
}

func (c *countingDB) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.deletes++
	return &dynamodb.DeleteItemOutput{}, nil
}

func txKeys(in *dynamodb.TransactWriteItemsInput) []string {
	var out []string
	for _, w := range in.TransactItems {
		var k map[string]types.AttributeValue
		switch {
		case w.Put != nil:
			k = w.Put.Item
		case w.Update != nil:
			k = w.Update.Key
		case w.Delete != nil:
			k = w.Delete.Key
		case w.ConditionCheck != nil:
			k = w.ConditionCheck.Key
		}
		out = append(out, k[attrSK].(*types.AttributeValueMemberS).Value)
	}
	return out
}

// A turn that returns the conversation is one transaction: the agents'
// counters and latencies (each load item once), the return's memory and
// the two cached contexts dropped with it; nothing is written after it.
func TestATurnIsOneTransactionTouchingEachItemOnce(t *testing.T) {
	db := &countingDB{}
	s := New(db, "tbl")
	turn := conversations.Turn{
		Conversation: conversations.Conversation{ID: "conv", Version: 3, CurrentAgent: "kyra"},
		PrevCurrent:  "luke",
		Messages:     []conversations.Message{{ID: "m1", ConversationID: "conv"}},
		Decision:     dispatch.Decision{ID: "d"},
		Handoff:      &conversations.Handoff{ID: "h", ConversationID: "conv", From: "luke", To: "kyra"},
		Memory:       &memory.Memory{ID: "mem", Author: "luke", Agents: []string{"kyra"}},
		Latency:      map[string]float64{"kyra": 120, "dana": 80},
	}
	require.NoError(t, s.CommitTurn(context.Background(), "t", turn))
	require.NotNil(t, db.lastTx)
	keys := txKeys(db.lastTx)
	seen := map[string]int{}
	for _, k := range keys {
		seen[k]++
	}
	for k, n := range seen {
		assert.Equal(t, 1, n, "%s is written %d times in one transaction", k, n)
	}
	for _, k := range []string{"LOAD#kyra", "LOAD#luke", "LOAD#dana", "MEMEPOCH", "CTX#kyra", "CTX#luke", "MEM#mem", "CONV#conv"} {
		assert.Contains(t, seen, k)
	}
	assert.Zero(t, db.updates+db.deletes, "nothing is written after the transaction")
	for _, w := range db.lastTx.TransactItems {
		if w.Update != nil && w.Update.Key[attrSK].(*types.AttributeValueMemberS).Value == "LOAD#kyra" {
			var names []string
			for _, n := range w.Update.ExpressionAttributeNames {
				names = append(names, n)
			}
			assert.Contains(t, names, "active_conversations")
			assert.Contains(t, names, "latency_ms")
		}
	}
}

// seqTxDB answers its transactions with errs in turn (nil after them).
type seqTxDB struct {
	countingDB
	errs []error
	txs  []*dynamodb.TransactWriteItemsInput
}

func (s *seqTxDB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	s.txs = append(s.txs, in)
	var err error
	if len(s.errs) > 0 {
		err, s.errs = s.errs[0], s.errs[1:]
	}
	return &dynamodb.TransactWriteItemsOutput{}, err
}

// Marking a page read is one transaction; entries read meanwhile cancel it
// and the rest are marked in a second one, never one update per entry.
func TestMarkReadIsOneTransactionPerPage(t *testing.T) {
	db := &seqTxDB{}
	n, err := New(db, "tbl").MarkRead(context.Background(), "t", "dana", []string{"a", "b", "c"}, time.Now())
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	require.Len(t, db.txs, 1)
	assert.Len(t, db.txs[0].TransactItems, 3)
	assert.Zero(t, db.updates)

	db = &seqTxDB{errs: []error{canceled("None", "ConditionalCheckFailed", "None")}}
	n, err = New(db, "tbl").MarkRead(context.Background(), "t", "dana", []string{"a", "b", "c"}, time.Now())
	require.NoError(t, err)
	assert.Equal(t, 2, n, "b was read already")
	require.Len(t, db.txs, 2)
	assert.Equal(t, []string{"INBOX#dana#a", "INBOX#dana#c"}, txKeys(db.txs[1]))
	assert.Zero(t, db.updates)

	db = &seqTxDB{}
	n, err = New(db, "tbl").MarkRead(context.Background(), "t", "dana", []string{"a"}, time.Now())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Empty(t, db.txs, "one entry is one plain update")
	assert.Equal(t, 1, db.updates)
}
