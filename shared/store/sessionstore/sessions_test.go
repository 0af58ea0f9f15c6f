package sessionstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
	"github.com/conclave-ai/conclave/shared/work/sessions"
)

func changed(t *testing.T) (before, after sessions.Session) {
	t.Helper()
	now := time.Now().UTC()
	before = sessions.Session{TeamID: "t1", ID: "ses_1", Pattern: sessions.Brainstorm, Lead: "kyra", Status: sessions.Active, Version: 4, EventSeq: 6, CreatedAt: now, UpdatedAt: now}
	after = before
	after.Version, after.Status = 5, sessions.Synthesizing
	require.NoError(t, sessions.WithEvents(before, &after, now))
	return before, after
}

// A change with events is one transaction: the session conditioned on the
// version read, carrying its stream's new last number, and each event
// created where its number is free. One without is one PutItem, as
// before streams.
func TestPutSessionWritesItsEventsInItsTransaction(t *testing.T) {
	before, after := changed(t)
	db := &dynamotest.FakeDB{}
	s := New(db, "tbl")
	require.NoError(t, s.PutSession(context.Background(), after))
	require.NotNil(t, db.LastTx)
	assert.Nil(t, db.LastPut)
	assert.Equal(t, []string{"SES#ses_1", "EVT#session#ses_1#000000000007"}, dynamotest.TxKeys(db.LastTx))
	put := db.LastTx.TransactItems[0].Put
	assert.Equal(t, "7", put.Item["event_seq"].(*types.AttributeValueMemberN).Value)
	assert.Contains(t, aws.ToString(put.ConditionExpression), "=")
	assert.Equal(t, "4", put.ExpressionAttributeValues[":0"].(*types.AttributeValueMemberN).Value, "the version read")
	assert.Equal(t, "attribute_not_exists(pk)", aws.ToString(db.LastTx.TransactItems[1].Put.ConditionExpression))

	plain := before
	plain.Version, plain.Tokens = 5, 10
	db = &dynamotest.FakeDB{}
	require.NoError(t, New(db, "tbl").PutSession(context.Background(), plain))
	assert.Nil(t, db.LastTx, "no events: no transaction")
	require.NotNil(t, db.LastPut)
	assert.Equal(t, "6", db.LastPut.Item["event_seq"].(*types.AttributeValueMemberN).Value, "the number kept")
}

// The session's condition failing is ErrChanged (read again); an event's
// failing is a writer's error, not a race to retry; events not numbered
// up to the session's event_seq are refused before anything is sent.
func TestPutSessionRefusals(t *testing.T) {
	_, after := changed(t)
	err := New(&dynamotest.FakeDB{TxErr: dynamotest.Canceled("ConditionalCheckFailed", "None")}, "tbl").PutSession(context.Background(), after)
	assert.True(t, errors.Is(err, sessions.ErrChanged), "%v", err)
	err = New(&dynamotest.FakeDB{TxErr: dynamotest.Canceled("None", "ConditionalCheckFailed")}, "tbl").PutSession(context.Background(), after)
	assert.False(t, errors.Is(err, sessions.ErrChanged))
	assert.Equal(t, apperr.EINTERNAL, apperr.Code(err))

	db := &dynamotest.FakeDB{}
	after.EventSeq++
	err = New(db, "tbl").PutSession(context.Background(), after)
	assert.ErrorIs(t, err, streams.ErrNumbering)
	assert.Nil(t, db.LastTx)
}

// A session is created with its first event in one transaction; its id
// taken is ECONFLICT.
func TestCreateSessionWritesItsFirstEvent(t *testing.T) {
	now := time.Now().UTC()
	v := sessions.Session{TeamID: "t1", ID: "ses_2", Pattern: sessions.Brainstorm, Lead: "kyra", Status: sessions.Planning, Version: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, sessions.WithEvents(sessions.Session{}, &v, now))
	db := &dynamotest.FakeDB{}
	require.NoError(t, New(db, "tbl").CreateSession(context.Background(), v))
	assert.Equal(t, []string{"SES#ses_2", "EVT#session#ses_2#000000000001"}, dynamotest.TxKeys(db.LastTx))
	err := New(&dynamotest.FakeDB{TxErr: dynamotest.Canceled("ConditionalCheckFailed", "None")}, "tbl").CreateSession(context.Background(), v)
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(err))
}
