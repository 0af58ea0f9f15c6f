package resultstore

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
)

// convDB answers the conversation's read with conv and its transactions
// with errs in turn.
type convDB struct {
	dynamotest.SeqTxDB
	conv map[string]types.AttributeValue
}

func (c *convDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.Gets++
	return &dynamodb.GetItemOutput{Item: c.conv}, nil
}

// updateOf is the conversation's update in tx: its values by name.
func updateOf(t *testing.T, tx *dynamodb.TransactWriteItemsInput) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, w := range tx.TransactItems {
		if w.Update == nil {
			continue
		}
		for ph, v := range w.Update.ExpressionAttributeValues {
			if n, ok := v.(*types.AttributeValueMemberN); ok {
				out[ph] = n.Value
			}
		}
		out["cond"] = *w.Update.ConditionExpression
	}
	return out
}

// A result is posted on the conversation as read: its version the
// condition, its next number the event's and the new event_seq. A round
// that lost to a concurrent change is tried again on the conversation the
// cancellation returned, with no second read; a marker posted before
// posts nothing.
func TestPostResultNumbersItsEventUnderTheVersionRead(t *testing.T) {
	db := &convDB{conv: dynamotest.MustItem(t, convHead{Version: 3, EventSeq: 8})}
	moved := dynamotest.MustItem(t, convHead{Version: 5, EventSeq: 11})
	db.Errs = []error{dynamotest.CanceledAt(4, 1, moved)}
	s := New(db, "tbl")
	m := conversations.Message{ID: "msg_1", ConversationID: "conv_1", Role: "assistant", Agent: "bob", Content: "done", CreatedAt: time.Now(),
		ResultOf: &conversations.WorkRef{Type: "task", ID: "task_1", Status: "completed"}}
	posted, err := s.PostResult(context.Background(), "t1", m, "task_1")
	require.NoError(t, err)
	assert.True(t, posted)
	assert.Equal(t, 1, db.Gets, "the conversation is read once")
	require.Len(t, db.Txs, 2)
	assert.Equal(t, []string{"RESULT#task_1", "CONV#conv_1", "MSG#conv_1#msg_1", "EVT#conv#conv_1#000000000009"}, dynamotest.TxKeys(db.Txs[0]))
	assert.Equal(t, []string{"RESULT#task_1", "CONV#conv_1", "MSG#conv_1#msg_1", "EVT#conv#conv_1#000000000012"}, dynamotest.TxKeys(db.Txs[1]),
		"numbered after the conversation as the cancellation returned it")
	vals := updateOf(t, db.Txs[1])
	assert.Subset(t, valuesOf(vals), []string{"5", "6", "12"}, "conditioned on version 5, setting 6 and event_seq 12: %v", vals)

	db = &convDB{conv: dynamotest.MustItem(t, convHead{Version: 3, EventSeq: 8})}
	db.Errs = []error{dynamotest.CanceledAt(4, 0, nil)}
	posted, err = New(db, "tbl").PostResult(context.Background(), "t1", m, "task_1")
	require.NoError(t, err)
	assert.False(t, posted, "posted before: nothing")
	assert.Len(t, db.Txs, 1)

	_, err = New(&convDB{}, "tbl").PostResult(context.Background(), "t1", m, "task_1")
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
}

func valuesOf(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
