package dynamo

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
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
)

func TestPageTokensAreBoundToTheirListing(t *testing.T) {
	lek := map[string]types.AttributeValue{"pk": str("TEAM#a"), "sk": str("AGENT#luke")}
	tok, err := encodeToken("agents:a", lek)
	require.NoError(t, err)
	got, err := decodeToken("agents:a", tok)
	require.NoError(t, err)
	assert.Equal(t, lek, got)

	for _, bad := range []string{tok + "x", "not-base64!", "e30"} {
		_, err := decodeToken("agents:a", bad)
		assert.Equal(t, apperr.EINVALID, apperr.Code(err), bad)
	}
	_, err = decodeToken("agents:b", tok)
	assert.Equal(t, apperr.EINVALID, apperr.Code(err), "another team's token is refused")
}

func TestTransactNamesTheRoleThatFailed(t *testing.T) {
	items := []txItem{{role: "a"}, {role: "b"}, {role: "c"}}
	old := map[string]types.AttributeValue{"pk": str("x")}
	cases := []struct {
		name    string
		err     error
		role    string
		old     map[string]types.AttributeValue
		code    string // of a non-cancellation
		noError bool
	}{
		{name: "first condition", err: dynamotest.CanceledAt(3, 0, nil), role: "a"},
		{name: "a later condition, with the old item", err: dynamotest.CanceledAt(3, 2, old), role: "c", old: old},
		{name: "the first failed condition wins", err: dynamotest.Canceled("None", "ConditionalCheckFailed", "ConditionalCheckFailed"), role: "b"},
		{name: "no condition failed", err: dynamotest.Canceled("None", "TransactionConflict", "None"), role: ""},
		{name: "not a cancellation", err: errors.New("throttled"), code: apperr.EINTERNAL},
		{name: "success", noError: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := New(&dynamotest.FakeDB{TxErr: c.err}, "tbl").transact(context.Background(), items)
			if c.noError {
				require.NoError(t, err)
				return
			}
			cx, ok := AsCanceled(err)
			if c.code != "" {
				require.False(t, ok)
				assert.Equal(t, c.code, apperr.Code(err))
				return
			}
			require.True(t, ok, "%v", err)
			assert.Equal(t, c.role, cx.Role)
			assert.Equal(t, c.old, cx.Old)
			assert.ErrorIs(t, err, c.err, "the SDK error stays in the chain (logs)")
		})
	}
}

// A replayed request is explained from the record the claim returns, with
// no second read.
func TestBeginExplainsFromTheOldRecord(t *testing.T) {
	ctx := context.Background()
	done := idemItem{PK: "TEAM#t", SK: "IDEMP#k", Key: "k", RequestHash: "h", State: idempotency.StateDone, StatusCode: 201, Body: `{"id":"x"}`}
	db := &dynamotest.FakeDB{PutErr: &types.ConditionalCheckFailedException{Message: aws.String("failed"), Item: dynamotest.MustItem(t, done)}}
	rec, err := New(db, "tbl").Begin(ctx, "t", "k", "h", time.Now(), time.Now().Add(idempotency.PendingTTL))
	require.NoError(t, err)
	assert.Equal(t, &idempotency.Record{Key: "k", RequestHash: "h", State: idempotency.StateDone, StatusCode: 201, Body: `{"id":"x"}`}, rec)
	assert.Zero(t, db.Gets)
}
