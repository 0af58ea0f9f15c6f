package evaluationstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing/evaluations"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
)

func TestEvaluationItemsKeepEveryStoredField(t *testing.T) {
	e := dynamotest.Filled[evaluations.Evaluation](t)
	it, err := toEvaluationItem(e)
	require.NoError(t, err)
	got, err := dynamotest.RoundTrip(t, it).toEvaluation(e.TeamID)
	require.NoError(t, err)
	assert.Equal(t, e, got)

	e.Messages[0].ExpectedAgent, e.Result, e.CompletedAt, e.Given = nil, nil, nil, nil
	it, err = toEvaluationItem(e)
	require.NoError(t, err)
	assert.Contains(t, it.Doc, `"expected_agent":null`, "a message nobody should take")
	got, err = dynamotest.RoundTrip(t, it).toEvaluation(e.TeamID)
	require.NoError(t, err)
	assert.Equal(t, e, got, "nil stays nil")
}

func TestEvaluationItemKeys(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	done := created.Add(time.Minute)
	it, err := toEvaluationItem(evaluations.Evaluation{ID: "reval_1", TeamID: "t1", Status: evaluations.StatusCompleted, Count: 3,
		Threshold: 0.7, CreatedAt: created, CompletedAt: &done})
	require.NoError(t, err)
	assert.Equal(t, []string{"TEAM#t1", "REVAL#reval_1", "evaluation", "completed"}, []string{it.PK, it.SK, it.Type, it.Status})
	assert.Equal(t, created.Add(30*24*time.Hour).Unix(), it.ExpiresAt, "kept 30 days from its creation")
	assert.Equal(t, []any{3, 0.7, created, &done}, []any{it.MessageCount, it.Threshold, it.CreatedAt, it.CompletedAt})
	assert.NotContains(t, it.Doc, "t1", "the team is the key's")

	m := dynamotest.MustItem(t, it)
	assert.Equal(t, &types.AttributeValueMemberN{Value: "1769915045"}, m["expires_at"], "2026-02-01T03:04:05Z, epoch seconds")
	it.CompletedAt = nil
	assert.NotContains(t, dynamotest.MustItem(t, it), "completed_at", "absent while running")
}

// <, > and & take one byte each in the doc, and a doc over an item's
// room is refused before any write.
func TestEvaluationDocSize(t *testing.T) {
	e := evaluations.Evaluation{ID: "reval_1", TeamID: "t1", Messages: []evaluations.Message{{Content: "if a < b && c > d"}}}
	it, err := toEvaluationItem(e)
	require.NoError(t, err)
	assert.Contains(t, it.Doc, `"if a < b && c > d"`)
	assert.NotContains(t, it.Doc, "\n")

	e.Messages[0].Content = strings.Repeat("x", maxDocBytes)
	_, err = toEvaluationItem(e)
	assert.Error(t, err)
	db := &finishDB{}
	err = New(db, "tbl").CreateEvaluation(context.Background(), e)
	assert.Equal(t, apperr.EINTERNAL, apperr.Code(err))
	assert.Zero(t, db.puts, "nothing written")
}

// finishDB holds one stored item and answers a put's condition with
// putErr (a *types.ConditionalCheckFailedException, for instance).
type finishDB struct {
	dynamo.API
	stored  map[string]types.AttributeValue
	putErr  error
	puts    int
	lastPut *dynamodb.PutItemInput
}

func (d *finishDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{Item: d.stored}, nil
}

func (d *finishDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	d.puts++
	d.lastPut = in
	return &dynamodb.PutItemOutput{}, d.putErr
}

// A finish puts the stored evaluation back with the outcome, conditioned
// on status = running, and explains a failed condition by the item it
// returns: none is ENOTFOUND, one that ended is ECONFLICT.
func TestFinishEvaluation(t *testing.T) {
	ctx := context.Background()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	running := evaluations.Evaluation{ID: "reval_1", TeamID: "t1", Status: evaluations.StatusRunning, Count: 1, CreatedAt: created,
		Messages: []evaluations.Message{{Content: "hello"}}}
	item := func(e evaluations.Evaluation) map[string]types.AttributeValue {
		it, err := toEvaluationItem(e)
		require.NoError(t, err)
		return dynamotest.MustItem(t, it)
	}
	done := created.Add(time.Minute)
	finish := evaluations.Evaluation{ID: "reval_1", TeamID: "t1", Status: evaluations.StatusCompleted, CompletedAt: &done,
		Result: &evaluations.Result{InScope: 1}}

	db := &finishDB{stored: item(running)}
	require.NoError(t, New(db, "tbl").FinishEvaluation(ctx, finish))
	require.NotNil(t, db.lastPut.ConditionExpression)
	assert.Equal(t, types.ReturnValuesOnConditionCheckFailureAllOld, db.lastPut.ReturnValuesOnConditionCheckFailure)
	var put evaluationItem
	require.NoError(t, dynamo.Unmarshal(db.lastPut.Item, &put))
	got, err := put.toEvaluation("t1")
	require.NoError(t, err)
	want := running
	want.Status, want.CompletedAt, want.Result = evaluations.StatusCompleted, &done, finish.Result
	assert.Equal(t, want, got, "the messages kept though the finish carries none")
	assert.Equal(t, "completed", put.Status)
	assert.Equal(t, created.Add(evaluations.Retention).Unix(), put.ExpiresAt, "the TTL unmoved")

	db = &finishDB{stored: item(running), putErr: &types.ConditionalCheckFailedException{}}
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(New(db, "tbl").FinishEvaluation(ctx, finish)), "deleted between the read and the put")
	ended := running
	ended.Status = evaluations.StatusFailed
	db = &finishDB{stored: item(running), putErr: &types.ConditionalCheckFailedException{Item: item(ended)}}
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(New(db, "tbl").FinishEvaluation(ctx, finish)), "finished in between")

	db = &finishDB{stored: item(ended)}
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(New(db, "tbl").FinishEvaluation(ctx, finish)))
	assert.Zero(t, db.puts, "an ended evaluation is not written")
	db = &finishDB{}
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(New(db, "tbl").FinishEvaluation(ctx, finish)))
	assert.Zero(t, db.puts)
}
