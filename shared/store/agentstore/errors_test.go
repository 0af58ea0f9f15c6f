package agentstore

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

func TestCreateAgentErrorMapping(t *testing.T) {
	a := agents.Agent{TeamID: "t", Slug: "luke"}
	cases := []struct {
		err    error
		code   string
		reason string
	}{
		{dynamotest.Canceled("None", "ConditionalCheckFailed"), apperr.ECONFLICT, "DuplicateSlug"},
		{dynamotest.Canceled("ConditionalCheckFailed", "None"), apperr.ENOTFOUND, ""},
		{errors.New("throttled"), apperr.EINTERNAL, ""},
	}
	for _, c := range cases {
		err := New(dynamotest.FailingDB{Err: c.err}, "tbl").CreateAgent(context.Background(), a)
		e, ok := apperr.As(err)
		require.True(t, ok)
		assert.Equal(t, c.code, e.Code)
		assert.Equal(t, c.reason, e.Reason)
	}
}

func TestSetStatusOnDefaultAgentIsConflict(t *testing.T) {
	_, err := New(dynamotest.FailingDB{Err: dynamotest.Canceled("None", "ConditionalCheckFailed")}, "tbl").SetStatus(context.Background(), "t", "kyra", agents.StatusPaused, aws.ToTime(nil))
	e, ok := apperr.As(err)
	require.True(t, ok)
	assert.Equal(t, apperr.ECONFLICT, e.Code)
	assert.Equal(t, "DefaultAgent", e.Reason)
}

// A failed condition is explained from the item the write returns, with no
// second read.
func TestConditionFailuresAreExplainedFromTheOldItem(t *testing.T) {
	ctx := context.Background()
	stored := toAgentItem(agents.Agent{TeamID: "t", Slug: "luke", Status: agents.StatusPaused, Version: 7})

	db := &dynamotest.FakeDB{PutErr: &types.ConditionalCheckFailedException{Message: aws.String("failed"), Item: dynamotest.MustItem(t, stored)}}
	err := New(db, "tbl").UpdateAgent(ctx, agents.Agent{TeamID: "t", Slug: "luke", Version: 5})
	e, ok := apperr.As(err)
	require.True(t, ok)
	assert.Equal(t, apperr.ECONFLICT, e.Code)
	assert.Equal(t, 7, e.Details["current_version"])
	assert.Equal(t, types.ReturnValuesOnConditionCheckFailureAllOld, db.LastPut.ReturnValuesOnConditionCheckFailure)
	assert.Zero(t, db.Gets)

	db = &dynamotest.FakeDB{PutErr: &types.ConditionalCheckFailedException{Message: aws.String("failed")}}
	err = New(db, "tbl").UpdateAgent(ctx, agents.Agent{TeamID: "t", Slug: "luke", Version: 5})
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err), "no old item: the agent is gone")

	db = &dynamotest.FakeDB{TxErr: dynamotest.CanceledAt(2, 0, dynamotest.MustItem(t, stored))}
	err = New(db, "tbl").SetDefault(ctx, "t", "luke")
	e, ok = apperr.As(err)
	require.True(t, ok)
	assert.Equal(t, apperr.ECONFLICT, e.Code)
	assert.Equal(t, agents.StatusPaused, e.Details["status"])
	assert.Equal(t, `agent "luke" is paused; only an active agent can be the default`, e.Message)
	assert.Zero(t, db.Gets)

	err = New(&dynamotest.FakeDB{TxErr: dynamotest.CanceledAt(2, 0, nil)}, "tbl").SetDefault(ctx, "t", "luke")
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
	err = New(&dynamotest.FakeDB{TxErr: dynamotest.CanceledAt(2, 1, nil)}, "tbl").SetDefault(ctx, "t", "luke")
	assert.Equal(t, `team "t" not found`, err.(*apperr.Error).Message)
}
