package dynamo

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// Roles of the writes in a transaction: a cancellation names the role whose
// condition failed, and each method maps roles to its domain errors. The
// task roles are the tasks.Item* constants (the domain names them).
const (
	RoleTeam         = "team"
	RoleAPIKey       = "api key"
	RoleOldAPIKey    = "old api key"
	RoleAgent        = "agent"
	RoleTeamDefault  = "team default agent"
	RoleConversation = "conversation"
	RoleMessage      = "message"
	RoleParticipant  = "participant"
	RoleLeave        = "leave " // + the slug of the participant leaving
	RoleCounter      = "counter"
	RoleDecision     = "decision"
	RoleHandoff      = "handoff"
	RoleMemory       = "memory"
	RoleFeedback     = "feedback"
	RoleEpoch        = "memory epoch"
	RoleContext      = "memory context"
	RoleRelease      = "release"
	RoleCharge       = "charge"
)

// txItem is one write of a transaction and the role it plays in it.
type txItem struct {
	role  string
	write types.TransactWriteItem
}

// canceledError is a transaction DynamoDB canceled. Role is the role of the
// first write whose condition failed, or "" when none did (the transaction
// lost to a concurrent one, or was throttled). Old is that write's item as it
// was before (every conditional write in a transaction asks for ALL_OLD), nil
// when it did not exist.
type canceledError struct {
	Role string
	Old  map[string]types.AttributeValue
	err  error
}

func (e *canceledError) Error() string {
	if e.Role == "" {
		return "transaction canceled: " + e.err.Error()
	}
	return "transaction canceled: condition failed on " + e.Role
}

func (e *canceledError) Unwrap() error { return e.err }

// transact is the one way this package runs a transaction: it writes items
// in one TransactWriteItems and returns nil, a *canceledError naming the role
// that failed, or an EINTERNAL error.
func (s *Store) transact(ctx context.Context, items []txItem) error {
	in := &dynamodb.TransactWriteItemsInput{TransactItems: make([]types.TransactWriteItem, len(items))}
	for i, it := range items {
		in.TransactItems[i] = it.write
	}
	_, err := s.DB.TransactWriteItems(ctx, in)
	if err == nil {
		return nil
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return Internal(err, "TransactWriteItems")
	}
	c := &canceledError{err: err}
	for i, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" && i < len(items) {
			c.Role, c.Old = items[i].role, r.Item
			break
		}
	}
	return c
}

// CancellationCodes returns the code of every write of the canceled
// transaction err is (or wraps), in write order: "None" for a write that
// would have succeeded, "ConditionalCheckFailed", "TransactionConflict"…
func CancellationCodes(err error) ([]string, bool) {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil, false
	}
	out := make([]string, len(tce.CancellationReasons))
	for i, r := range tce.CancellationReasons {
		out[i] = aws.ToString(r.Code)
	}
	return out, true
}

// AsCanceled returns the canceled transaction err is (or wraps).
func AsCanceled(err error) (*canceledError, bool) {
	var c *canceledError
	ok := errors.As(err, &c)
	return c, ok
}

// RetryConflict is the error of a transaction no condition of its own
// canceled: it lost to a concurrent one and can simply be tried again.
func RetryConflict(err error, msg string) error {
	return apperr.Wrap(apperr.ECONFLICT, err, "%s", msg).WithReason("TransactionConflict")
}

// Txn gathers the writes of one transaction, each with its role. The first
// write that fails to build (a programming error: an item or value the
// encoder cannot marshal) is kept and returned by Run, so a method reads as
// the list of its writes.
type Txn struct {
	Store *Store
	items []txItem
	err   error
}

// Txn starts a transaction on s; Store is exported for the stores that
// write a raw TransactWriteItem (a Delete) with Add.
func (s *Store) Txn() *Txn { return &Txn{Store: s} }

// Add appends a raw write w in role.
func (t *Txn) Add(role string, w types.TransactWriteItem) { t.items = append(t.items, txItem{role, w}) }

func (t *Txn) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

// Create puts item (an item struct) if its key is free.
func (t *Txn) Create(role string, item any) {
	m, err := Marshal(item)
	if err != nil {
		t.fail(err)
		return
	}
	t.Add(role, types.TransactWriteItem{Put: &types.Put{
		TableName: &t.Store.Table, Item: m, ConditionExpression: CondNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}})
}

// Put puts item (an item struct) if cond holds (the zero builder: always).
func (t *Txn) Put(role string, item any, cond expression.ConditionBuilder) {
	m, err := Marshal(item)
	if err != nil {
		t.fail(err)
		return
	}
	p := &types.Put{TableName: &t.Store.Table, Item: m}
	if cond.IsSet() {
		e, err := Build(nil, cond)
		if err != nil {
			t.fail(err)
			return
		}
		p.ConditionExpression, p.ExpressionAttributeNames, p.ExpressionAttributeValues = e.Condition(), e.Names(), e.Values()
		p.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	t.Add(role, types.TransactWriteItem{Put: p})
}

// Update applies u to the item at k if cond holds (the zero builder: always).
func (t *Txn) Update(role string, k map[string]types.AttributeValue, u expression.UpdateBuilder, cond expression.ConditionBuilder) {
	e, err := Build(&u, cond)
	if err != nil {
		t.fail(err)
		return
	}
	up := &types.Update{
		TableName: &t.Store.Table, Key: k, UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}
	if cond.IsSet() {
		up.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	t.Add(role, types.TransactWriteItem{Update: up})
}

// Delete deletes the item at k if cond holds.
func (t *Txn) Delete(role string, k map[string]types.AttributeValue, cond expression.ConditionBuilder) {
	e, err := Build(nil, cond)
	if err != nil {
		t.fail(err)
		return
	}
	t.Add(role, types.TransactWriteItem{Delete: &types.Delete{
		TableName: &t.Store.Table, Key: k, ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}})
}

// Check conditions the transaction on the item at k.
func (t *Txn) Check(role string, k map[string]types.AttributeValue, cond expression.ConditionBuilder) {
	e, err := Build(nil, cond)
	if err != nil {
		t.fail(err)
		return
	}
	t.Add(role, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: &t.Store.Table, Key: k, ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}})
}

// Exists conditions the transaction on the item at k existing.
func (t *Txn) Exists(role string, k map[string]types.AttributeValue) {
	t.Add(role, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: &t.Store.Table, Key: k, ConditionExpression: condExists,
	}})
}

// Run writes the gathered items through transact.
func (t *Txn) Run(ctx context.Context) error {
	if t.err != nil {
		return Internal(t.err, "marshal")
	}
	return t.Store.transact(ctx, t.items)
}

// conflictRuns bounds runConflicting's attempts.
const conflictRuns = 3

// RunConflicting is run, run again (up to conflictRuns times in all) while
// DynamoDB cancels the transaction only because a concurrent one touched
// one of its items (no condition of its own failed): a canceled
// transaction wrote nothing, so running it again is safe. For the
// transactions that touch items many writers share, such as the team's
// memory epoch.
func (t *Txn) RunConflicting(ctx context.Context) error {
	var err error
	for range conflictRuns {
		err = t.Run(ctx)
		if c, ok := AsCanceled(err); !ok || c.Role != "" {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(5+rand.IntN(20)) * time.Millisecond):
		}
	}
	return err
}
