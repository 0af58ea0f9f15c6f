package reportstore

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/work/reports"
)

// A report that changed since it was read is reports.ErrChanged (Sync reads
// it again); another cancellation is a retryable conflict. With a memory
// the transaction holds the report, the memory, the epoch and one context
// drop per agent who may see it.
func TestSaveReportConflicts(t *testing.T) {
	r := reports.Report{TeamID: "t", ID: "rep_1", Version: 3, Status: reports.Completed}
	mem := &memory.Memory{ID: "mem_1", Author: "luke", Agents: []string{"kyra"}}
	err := New(&dynamotest.FakeDB{TxErr: dynamotest.CanceledAt(5, 0, nil)}, "tbl").SaveReport(context.Background(), r, mem)
	assert.ErrorIs(t, err, reports.ErrChanged)
	err = New(&dynamotest.FakeDB{TxErr: dynamotest.CanceledAt(5, 1, nil)}, "tbl").SaveReport(context.Background(), r, mem)
	assert.NotErrorIs(t, err, reports.ErrChanged)
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(err))

	db := &dynamotest.FakeDB{}
	require.NoError(t, New(db, "tbl").SaveReport(context.Background(), r, mem))
	require.Len(t, db.LastTx.TransactItems, 5)
	put := db.LastTx.TransactItems[0].Put
	assert.Equal(t, &types.AttributeValueMemberN{Value: "2"}, put.ExpressionAttributeValues[":0"], "conditioned on the version read")
	var deleted []string
	for _, w := range db.LastTx.TransactItems[3:] {
		deleted = append(deleted, w.Delete.Key["sk"].(*types.AttributeValueMemberS).Value)
	}
	assert.Equal(t, []string{"CTX#luke", "CTX#kyra"}, deleted)
	require.NoError(t, New(db, "tbl").SaveReport(context.Background(), r, nil))
	assert.Len(t, db.LastTx.TransactItems, 1, "without a memory, the report alone")
}
