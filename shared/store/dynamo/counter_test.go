package dynamo

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/store/dynamotest"
)

// counterDB answers an UpdateItem with count as attr's new value and keeps
// the request.
type counterDB struct {
	dynamotest.FakeDB
	attr  string
	count string
	in    *dynamodb.UpdateItemInput
}

func (c *counterDB) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.in = in
	return &dynamodb.UpdateItemOutput{Attributes: map[string]types.AttributeValue{c.attr: &types.AttributeValueMemberN{Value: c.count}}}, nil
}

// Both expiring counters are one ADD of 1 with expires_at set only when
// absent, answered with the new count.
func TestExpiringCountersAddOneAndKeepTheFirstExpiry(t *testing.T) {
	ctx := context.Background()
	db := &counterDB{attr: "requests", count: "3"}
	n, err := New(db, "tbl").CountRequest(ctx, "t1", 1000)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assertCounter(t, db.in, "requests", "TEAM#t1", "RATE#1000", 1000+rateWindowTTL)

	db = &counterDB{attr: "attempts", count: "2"}
	before := time.Now()
	n, err = New(db, "tbl").Failed(ctx, "q", "m1")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assertCounter(t, db.in, "attempts", "QATTEMPT#q#m1", "ATTEMPTS", 0)
	var exp int64
	require.NoError(t, attributevalue.Unmarshal(db.in.ExpressionAttributeValues[":1"], &exp))
	assert.InDelta(t, before.Add(attemptsRetention).Unix(), exp, 2)

	_, err = New(&counterDB{attr: "other", count: "1"}, "tbl").Failed(ctx, "q", "m1")
	require.Error(t, err, "an answer without the counter is an error")
}

func assertCounter(t *testing.T, in *dynamodb.UpdateItemInput, attr, pk, sk string, expires int64) {
	t.Helper()
	require.NotNil(t, in)
	assert.Equal(t, "tbl", *in.TableName)
	assert.Equal(t, Key(pk, sk), in.Key)
	assert.Equal(t, "ADD #0 :0\nSET #1 = if_not_exists(#1, :1)\n", *in.UpdateExpression)
	assert.Equal(t, map[string]string{"#0": attr, "#1": "expires_at"}, in.ExpressionAttributeNames)
	assert.Equal(t, &types.AttributeValueMemberN{Value: "1"}, in.ExpressionAttributeValues[":0"])
	if expires != 0 {
		assert.Equal(t, &types.AttributeValueMemberN{Value: strconv.FormatInt(expires, 10)}, in.ExpressionAttributeValues[":1"])
	}
	assert.Equal(t, types.ReturnValueUpdatedNew, in.ReturnValues)
	assert.Nil(t, in.ConditionExpression)
}
