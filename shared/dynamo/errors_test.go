package dynamo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/dispatch"
	"github.com/conclave-ai/conclave/shared/idempotency"
	"github.com/conclave-ai/conclave/shared/memory"
	"github.com/conclave-ai/conclave/shared/reports"
	"github.com/conclave-ai/conclave/shared/tasks"
)

// failingDB returns canned errors: it exists only to unit-test how DynamoDB
// errors map to domain errors. Behaviour is tested against the local cloud.
type failingDB struct {
	API
	err error
}

func (f failingDB) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, f.err
}
func (f failingDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, f.err
}
func (f failingDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}

func canceled(codes ...string) error {
	var rs []types.CancellationReason
	for _, c := range codes {
		rs = append(rs, types.CancellationReason{Code: aws.String(c)})
	}
	return &types.TransactionCanceledException{Message: aws.String("canceled"), CancellationReasons: rs}
}

func TestCreateAgentErrorMapping(t *testing.T) {
	a := agents.Agent{TeamID: "t", Slug: "luke"}
	cases := []struct {
		err    error
		code   string
		reason string
	}{
		{canceled("None", "ConditionalCheckFailed"), apperr.ECONFLICT, "DuplicateSlug"},
		{canceled("ConditionalCheckFailed", "None"), apperr.ENOTFOUND, ""},
		{errors.New("throttled"), apperr.EINTERNAL, ""},
	}
	for _, c := range cases {
		err := New(failingDB{err: c.err}, "tbl").CreateAgent(context.Background(), a)
		e, ok := apperr.As(err)
		require.True(t, ok)
		assert.Equal(t, c.code, e.Code)
		assert.Equal(t, c.reason, e.Reason)
	}
}

func TestSetStatusOnDefaultAgentIsConflict(t *testing.T) {
	_, err := New(failingDB{err: canceled("None", "ConditionalCheckFailed")}, "tbl").SetStatus(context.Background(), "t", "kyra", agents.StatusPaused, aws.ToTime(nil))
	e, ok := apperr.As(err)
	require.True(t, ok)
	assert.Equal(t, apperr.ECONFLICT, e.Code)
	assert.Equal(t, "DefaultAgent", e.Reason)
}

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

// fakeDB records what the store sends and answers with canned results; like
// failingDB it exists only for the error mapping, which needs no network.
type fakeDB struct {
	API
	txErr   error
	putErr  error
	gets    int
	lastTx  *dynamodb.TransactWriteItemsInput
	lastPut *dynamodb.PutItemInput
}

func (f *fakeDB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.lastTx = in
	return &dynamodb.TransactWriteItemsOutput{}, f.txErr
}

func (f *fakeDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.lastPut = in
	return &dynamodb.PutItemOutput{}, f.putErr
}

func (f *fakeDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.gets++
	return &dynamodb.GetItemOutput{}, nil
}

func (f *fakeDB) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return &dynamodb.DeleteItemOutput{}, nil
}

func (f *fakeDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return &dynamodb.UpdateItemOutput{}, nil
}

// canceledAt fails the condition of write i of n (with old as the item it
// returns), every other write "None".
func canceledAt(n, i int, old map[string]types.AttributeValue) error {
	rs := make([]types.CancellationReason, n)
	for j := range rs {
		rs[j] = types.CancellationReason{Code: aws.String("None")}
	}
	rs[i] = types.CancellationReason{Code: aws.String("ConditionalCheckFailed"), Item: old}
	return &types.TransactionCanceledException{Message: aws.String("canceled"), CancellationReasons: rs}
}

func mustItem(t *testing.T, v any) map[string]types.AttributeValue {
	t.Helper()
	m, err := marshal(v)
	require.NoError(t, err)
	return m
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
		{name: "first condition", err: canceledAt(3, 0, nil), role: "a"},
		{name: "a later condition, with the old item", err: canceledAt(3, 2, old), role: "c", old: old},
		{name: "the first failed condition wins", err: canceled("None", "ConditionalCheckFailed", "ConditionalCheckFailed"), role: "b"},
		{name: "no condition failed", err: canceled("None", "TransactionConflict", "None"), role: ""},
		{name: "not a cancellation", err: errors.New("throttled"), code: apperr.EINTERNAL},
		{name: "success", noError: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := New(&fakeDB{txErr: c.err}, "tbl").transact(context.Background(), items)
			if c.noError {
				require.NoError(t, err)
				return
			}
			cx, ok := asCanceled(err)
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

func TestConditionalTransactionWritesAskForTheOldItem(t *testing.T) {
	db := &fakeDB{}
	parent := tasks.Task{TeamID: "t", ID: "p", RootID: "r", Assignee: "luke", Status: tasks.Running}
	task := tasks.Task{TeamID: "t", ID: "c", RootID: "r", ParentID: "p", Assignee: "kyra", CreatedBy: tasks.Creator{Type: "agent", ID: "luke"}}
	require.NoError(t, New(db, "tbl").CreateTask(context.Background(), task, &parent, nil))
	require.NotNil(t, db.lastTx)
	for i, w := range db.lastTx.TransactItems {
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
		err := New(&fakeDB{txErr: canceledAt(len(want), i, nil)}, "tbl").CreateTask(context.Background(), task, &parent, events)
		var cf *tasks.ConditionFailed
		require.ErrorAs(t, err, &cf, "write %d", i)
		assert.Equal(t, item, cf.Item, "write %d", i)
	}

	err := New(&fakeDB{txErr: canceled("None", "TransactionConflict")}, "tbl").CreateTask(context.Background(), task, nil, nil)
	e, ok := apperr.As(err)
	require.True(t, ok)
	assert.Equal(t, apperr.ECONFLICT, e.Code)
	assert.Equal(t, "TransactionConflict", e.Reason)

	// A new task of the creator's own: the creator check is named.
	top := tasks.Task{TeamID: "t", ID: "c", RootID: "c", Assignee: "kyra", CreatedBy: tasks.Creator{Type: "agent", ID: "luke"}}
	err = New(&fakeDB{txErr: canceledAt(4, 3, nil)}, "tbl").CreateTask(context.Background(), top, nil, nil)
	var cf *tasks.ConditionFailed
	require.ErrorAs(t, err, &cf)
	assert.Equal(t, tasks.ItemCreator, cf.Item)
}

// A conversation that moved on is conversations.ErrChanged inside the same
// ECONFLICT the client saw before; other cancellations are not.
func TestConversationConflictsAreErrChanged(t *testing.T) {
	conv := conversations.Conversation{ID: "conv", Version: 2, Status: conversations.StatusOpen, CurrentAgent: "luke"}
	turn := conversations.Turn{Conversation: conv, PrevCurrent: "luke", Decision: dispatch.Decision{ID: "d"}}
	handoff := conversations.HandoffChange{Conversation: conv, PrevCurrent: "kyra", Handoff: conversations.Handoff{ID: "h", ConversationID: "conv"}}
	writes := map[string]func(s *Store) error{
		"turn": func(s *Store) error { return s.CommitTurn(context.Background(), "t", turn) },
		"handoff": func(s *Store) error {
			return s.CommitHandoff(context.Background(), "t", handoff)
		},
		"close": func(s *Store) error {
			return s.CloseConversation(context.Background(), "t", conv, time.Now())
		},
	}
	messages := map[string]string{
		"turn":    "the conversation changed during the turn",
		"handoff": "the conversation changed during the handoff",
		"close":   "the conversation changed; read it and try again",
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			err := write(New(&fakeDB{txErr: canceled("ConditionalCheckFailed", "None", "None")}, "tbl"))
			assert.ErrorIs(t, err, conversations.ErrChanged)
			e, ok := apperr.As(err)
			require.True(t, ok)
			assert.Equal(t, apperr.ECONFLICT, e.Code)
			assert.Equal(t, "ConversationChanged", e.Reason)
			assert.Equal(t, messages[name], e.Message)

			err = write(New(&fakeDB{txErr: errors.New("throttled")}, "tbl"))
			assert.NotErrorIs(t, err, conversations.ErrChanged)
			assert.Equal(t, apperr.EINTERNAL, apperr.Code(err))
		})
	}
	for _, name := range []string{"turn", "handoff"} {
		err := writes[name](New(&fakeDB{txErr: canceled("None", "TransactionConflict", "None")}, "tbl"))
		assert.NotErrorIs(t, err, conversations.ErrChanged, name)
		e, ok := apperr.As(err)
		require.True(t, ok)
		assert.Equal(t, "TransactionConflict", e.Reason, name)
	}
}

func TestSetParticipantsNamesTheParticipant(t *testing.T) {
	add := []conversations.Participant{{Agent: "nova", Role: conversations.RoleInvited}}
	remove := []string{"luke", "kyra"}
	cases := []struct {
		failed       int // write: 0 conversation, 1 join nova, 2 leave luke, 3 leave kyra
		code, reason string
		message      string
	}{
		{0, apperr.ECONFLICT, "ConversationClosed", "conversation is closed"},
		{2, apperr.ENOTFOUND, "", `participant "luke" not found`},
		{3, apperr.ENOTFOUND, "", `participant "kyra" not found`},
	}
	for _, c := range cases {
		err := New(&fakeDB{txErr: canceledAt(4, c.failed, nil)}, "tbl").SetParticipants(context.Background(), "t", "conv", add, remove, time.Now())
		e, ok := apperr.As(err)
		require.True(t, ok)
		assert.Equal(t, c.code, e.Code)
		assert.Equal(t, c.reason, e.Reason)
		assert.Equal(t, c.message, e.Message)
	}
}

// A failed condition is explained from the item the write returns, with no
// second read.
func TestConditionFailuresAreExplainedFromTheOldItem(t *testing.T) {
	ctx := context.Background()
	stored := toAgentItem(agents.Agent{TeamID: "t", Slug: "luke", Status: agents.StatusPaused, Version: 7})

	db := &fakeDB{putErr: &types.ConditionalCheckFailedException{Message: aws.String("failed"), Item: mustItem(t, stored)}}
	err := New(db, "tbl").UpdateAgent(ctx, agents.Agent{TeamID: "t", Slug: "luke", Version: 5})
	e, ok := apperr.As(err)
	require.True(t, ok)
	assert.Equal(t, apperr.ECONFLICT, e.Code)
	assert.Equal(t, 7, e.Details["current_version"])
	assert.Equal(t, types.ReturnValuesOnConditionCheckFailureAllOld, db.lastPut.ReturnValuesOnConditionCheckFailure)
	assert.Zero(t, db.gets)

	db = &fakeDB{putErr: &types.ConditionalCheckFailedException{Message: aws.String("failed")}}
	err = New(db, "tbl").UpdateAgent(ctx, agents.Agent{TeamID: "t", Slug: "luke", Version: 5})
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err), "no old item: the agent is gone")

	db = &fakeDB{txErr: canceledAt(2, 0, mustItem(t, stored))}
	err = New(db, "tbl").SetDefault(ctx, "t", "luke")
	e, ok = apperr.As(err)
	require.True(t, ok)
	assert.Equal(t, apperr.ECONFLICT, e.Code)
	assert.Equal(t, agents.StatusPaused, e.Details["status"])
	assert.Equal(t, `agent "luke" is paused; only an active agent can be the default`, e.Message)
	assert.Zero(t, db.gets)

	err = New(&fakeDB{txErr: canceledAt(2, 0, nil)}, "tbl").SetDefault(ctx, "t", "luke")
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
	err = New(&fakeDB{txErr: canceledAt(2, 1, nil)}, "tbl").SetDefault(ctx, "t", "luke")
	assert.Equal(t, `team "t" not found`, err.(*apperr.Error).Message)

	done := idemItem{PK: "TEAM#t", SK: "IDEMP#k", Key: "k", RequestHash: "h", State: idempotency.StateDone, StatusCode: 201, Body: `{"id":"x"}`}
	db = &fakeDB{putErr: &types.ConditionalCheckFailedException{Message: aws.String("failed"), Item: mustItem(t, done)}}
	rec, err := New(db, "tbl").Begin(ctx, "t", "k", "h", time.Now())
	require.NoError(t, err)
	assert.Equal(t, &idempotency.Record{Key: "k", RequestHash: "h", State: idempotency.StateDone, StatusCode: 201, Body: `{"id":"x"}`}, rec)
	assert.Zero(t, db.gets)
}

// A report that changed since it was read is reports.ErrChanged (Sync reads
// it again); another cancellation is a retryable conflict. With a memory
// the transaction holds the report, the memory, the epoch and one context
// drop per agent who may see it.
func TestSaveReportConflicts(t *testing.T) {
	r := reports.Report{TeamID: "t", ID: "rep_1", Version: 3, Status: reports.Completed}
	mem := &memory.Memory{ID: "mem_1", Author: "luke", Agents: []string{"kyra"}}
	err := New(&fakeDB{txErr: canceledAt(5, 0, nil)}, "tbl").SaveReport(context.Background(), r, mem)
	assert.ErrorIs(t, err, reports.ErrChanged)
	err = New(&fakeDB{txErr: canceledAt(5, 1, nil)}, "tbl").SaveReport(context.Background(), r, mem)
	assert.NotErrorIs(t, err, reports.ErrChanged)
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(err))

	db := &fakeDB{}
	require.NoError(t, New(db, "tbl").SaveReport(context.Background(), r, mem))
	require.Len(t, db.lastTx.TransactItems, 5)
	put := db.lastTx.TransactItems[0].Put
	assert.Equal(t, &types.AttributeValueMemberN{Value: "2"}, put.ExpressionAttributeValues[":0"], "conditioned on the version read")
	var deleted []string
	for _, w := range db.lastTx.TransactItems[3:] {
		deleted = append(deleted, w.Delete.Key["sk"].(*types.AttributeValueMemberS).Value)
	}
	assert.Equal(t, []string{"CTX#luke", "CTX#kyra"}, deleted)
	require.NoError(t, New(db, "tbl").SaveReport(context.Background(), r, nil))
	assert.Len(t, db.lastTx.TransactItems, 1, "without a memory, the report alone")
}
