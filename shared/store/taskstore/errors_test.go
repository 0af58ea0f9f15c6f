package taskstore

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

func TestConditionalTransactionWritesAskForTheOldItem(t *testing.T) {
	db := &dynamotest.FakeDB{}
	parent := tasks.Task{TeamID: "t", ID: "p", RootID: "r", Assignee: "luke", Status: tasks.Running}
	task := tasks.Task{TeamID: "t", ID: "c", RootID: "r", ParentID: "p", Assignee: "kyra", CreatedBy: tasks.Creator{Type: "agent", ID: "luke"}}
	require.NoError(t, New(db, "tbl").CreateTask(context.Background(), task, &parent, nil))
	require.NotNil(t, db.LastTx)
	for i, w := range db.LastTx.TransactItems {
		switch {
		case w.Put != nil:
			assert.Equal(t, types.ReturnValuesOnConditionCheckFailureAllOld, w.Put.ReturnValuesOnConditionCheckFailure, i)
		case w.Update != nil && w.Update.ConditionExpression != nil:
			assert.Equal(t, types.ReturnValuesOnConditionCheckFailureAllOld, w.Update.ReturnValuesOnConditionCheckFailure, i)
		case w.ConditionCheck != nil:
			assert.Equal(t, types.ReturnValuesOnConditionCheckFailureAllOld, w.ConditionCheck.ReturnValuesOnConditionCheckFailure, i)
		}
	}
}

// The task transactions keep tasks.ConditionFailed's contract: the failed
// write's item, by the domain's names.
func TestTaskTransactionsNameTheFailedItem(t *testing.T) {
	parent := tasks.Task{TeamID: "t", ID: "p", RootID: "r", Assignee: "luke", Status: tasks.Running}
	task := tasks.Task{TeamID: "t", ID: "c", RootID: "r", ParentID: "p", Assignee: "kyra", CreatedBy: tasks.Creator{Type: "agent", ID: "luke"}}
	events := []tasks.Event{{Seq: 1, Type: "created"}}
	// task, event, slot, assignee, parent, root
	want := []string{tasks.ItemTask, tasks.ItemTask, tasks.ItemSlot, tasks.ItemAssignee, tasks.ItemParent, tasks.ItemRoot}
	for i, item := range want {
		err := New(&dynamotest.FakeDB{TxErr: dynamotest.CanceledAt(len(want), i, nil)}, "tbl").CreateTask(context.Background(), task, &parent, events)
		var cf *tasks.ConditionFailed
		require.ErrorAs(t, err, &cf, "write %d", i)
		assert.Equal(t, item, cf.Item, "write %d", i)
	}

	err := New(&dynamotest.FakeDB{TxErr: dynamotest.Canceled("None", "TransactionConflict")}, "tbl").CreateTask(context.Background(), task, nil, nil)
	e, ok := apperr.As(err)
	require.True(t, ok)
	assert.Equal(t, apperr.ECONFLICT, e.Code)
	assert.Equal(t, "TransactionConflict", e.Reason)

	// A new task of the creator's own: the creator check is named.
	top := tasks.Task{TeamID: "t", ID: "c", RootID: "c", Assignee: "kyra", CreatedBy: tasks.Creator{Type: "agent", ID: "luke"}}
	err = New(&dynamotest.FakeDB{TxErr: dynamotest.CanceledAt(4, 3, nil)}, "tbl").CreateTask(context.Background(), top, nil, nil)
	var cf *tasks.ConditionFailed
	require.ErrorAs(t, err, &cf)
	assert.Equal(t, tasks.ItemCreator, cf.Item)

	// A work item (no parent, not executed) is refused on its queue, not
	// on a slot: task, event, queue, assignee.
	item := tasks.Task{TeamID: "t", ID: "w", RootID: "w", Assignee: "kyra", CreatedBy: tasks.Creator{Type: "user", ID: "key"}, Status: tasks.Queued}
	for i, want := range []string{tasks.ItemTask, tasks.ItemTask, tasks.ItemQueue, tasks.ItemAssignee} {
		err = New(&dynamotest.FakeDB{TxErr: dynamotest.CanceledAt(4, i, nil)}, "tbl").CreateTask(context.Background(), item, nil, events)
		require.ErrorAs(t, err, &cf, "write %d", i)
		assert.Equal(t, want, cf.Item, "write %d", i)
	}
}
