package dynamo

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
)

// queryDB answers every Query with items and keeps the request.
type queryDB struct {
	dynamotest.FakeDB
	items []map[string]types.AttributeValue
	last  *dynamodb.QueryInput
}

func (q *queryDB) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	q.last = in
	return &dynamodb.QueryOutput{Items: q.items}, nil
}

// An event is stored whole, keyed by its stream and number, and expires
// streams.Retention after it happened.
func TestStreamEventItemRoundTrip(t *testing.T) {
	at := dynamotest.At
	ev := streams.Event{Seq: 12, Type: "SessionStatusChanged", At: at, Detail: json.RawMessage(`{"status":"active"}`)}
	it := toStreamEventItem("t1", "session#ses_1", ev)
	assert.Equal(t, "TEAM#t1", it.PK)
	assert.Equal(t, "EVT#session#ses_1#000000000012", it.SK)
	assert.Equal(t, at.Add(30*24*time.Hour).Unix(), it.ExpiresAt)
	back := dynamotest.RoundTrip(t, it).toEvent()
	assert.Equal(t, ev.Seq, back.Seq)
	assert.Equal(t, ev.Type, back.Type)
	assert.True(t, ev.At.Equal(back.At))
	assert.JSONEq(t, string(ev.Detail), string(back.Detail))
}

// A read after n is the stream's key range from n+1 in the team's
// partition, ascending and strongly consistent; the head is its last key.
func TestStreamReadsAreTheTeamsKeyRange(t *testing.T) {
	db := &queryDB{}
	s := New(db, "tbl")
	_, err := s.StreamEvents(context.Background(), "t1", "plan#plan_1", 3, 5000)
	require.NoError(t, err)
	in := db.last
	assert.Equal(t, "TEAM#t1", in.ExpressionAttributeValues[":pk"].(*types.AttributeValueMemberS).Value)
	assert.Equal(t, "EVT#plan#plan_1#000000000004", in.ExpressionAttributeValues[":from"].(*types.AttributeValueMemberS).Value)
	assert.Equal(t, "EVT#plan#plan_1#"+PrefixEnd, in.ExpressionAttributeValues[":end"].(*types.AttributeValueMemberS).Value)
	assert.True(t, aws.ToBool(in.ScanIndexForward))
	assert.True(t, aws.ToBool(in.ConsistentRead))
	assert.Equal(t, int32(1000), aws.ToInt32(in.Limit), "at most 1,000")

	_, err = s.StreamEvents(context.Background(), "t1", "plan#plan_1", -7, 0)
	require.NoError(t, err)
	assert.Equal(t, "EVT#plan#plan_1#000000000001", db.last.ExpressionAttributeValues[":from"].(*types.AttributeValueMemberS).Value)
	assert.Equal(t, int32(100), aws.ToInt32(db.last.Limit))

	db.items = []map[string]types.AttributeValue{dynamotest.MustItem(t, toStreamEventItem("t1", "plan#plan_1", streams.Event{Seq: 9, Type: "PlanStarted", At: dynamotest.At, Detail: json.RawMessage(`{}`)}))}
	head, err := s.StreamHead(context.Background(), "t1", "plan#plan_1")
	require.NoError(t, err)
	assert.Equal(t, int64(9), head)
	assert.False(t, aws.ToBool(db.last.ScanIndexForward))
	assert.Equal(t, int32(1), aws.ToInt32(db.last.Limit))
	assert.Equal(t, "EVT#plan#plan_1#", db.last.ExpressionAttributeValues[":p"].(*types.AttributeValueMemberS).Value)
}

// Events are created only where their number is free, and only when
// numbered up to the owner's new event_seq: otherwise the transaction is
// not sent.
func TestStreamEventsAreCreatedOnceAndNumberedUpToTheHead(t *testing.T) {
	db := &dynamotest.FakeDB{}
	s := New(db, "tbl")
	evs := []streams.Event{{Type: "A", At: dynamotest.At, Detail: json.RawMessage(`{}`)}, {Type: "B", At: dynamotest.At, Detail: json.RawMessage(`{}`)}}
	head := streams.Number(4, evs)
	tx := s.Txn()
	tx.StreamEvents("t1", "conv#c", head, evs)
	require.NoError(t, tx.Run(context.Background()))
	assert.Equal(t, []string{"EVT#conv#c#000000000005", "EVT#conv#c#000000000006"}, dynamotest.TxKeys(db.LastTx))
	for _, w := range db.LastTx.TransactItems {
		assert.Equal(t, *CondNew, aws.ToString(w.Put.ConditionExpression))
	}

	db.LastTx = nil
	tx = s.Txn()
	tx.StreamEvents("t1", "conv#c", head+1, evs)
	err := tx.Run(context.Background())
	assert.ErrorIs(t, err, streams.ErrNumbering)
	assert.Nil(t, db.LastTx, "nothing sent")
}
