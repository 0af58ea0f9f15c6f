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

	"github.com/conclave-ai/conclave/shared/apperr"
)

// Roles of the writes in a transaction: a cancellation names the role whose
// condition failed, and each method maps roles to its domain errors. The
// task roles are the tasks.Item* constants (the domain names them).
const (
	roleTeam         = "team"
	roleAPIKey       = "api key"
	roleOldAPIKey    = "old api key"
	roleAgent        = "agent"
	roleTeamDefault  = "team default agent"
	roleConversation = "conversation"
	roleMessage      = "message"
	roleParticipant  = "participant"
	roleLeave        = "leave " // + the slug of the participant leaving
	roleCounter      = "counter"
	roleDecision     = "decision"
	roleHandoff      = "handoff"
	roleMemory       = "memory"
	roleFeedback     = "feedback"
	roleEpoch        = "memory epoch"
	roleContext      = "memory context"
	roleRelease      = "release"
	roleCharge       = "charge"
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
		return internal(err, "TransactWriteItems")
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

// cancellationCodes returns the code of every write of the canceled
// transaction err is (or wraps), in write order: "None" for a write that
// would have succeeded, "ConditionalCheckFailed", "TransactionConflict"…
func cancellationCodes(err error) ([]string, bool) {
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

// asCanceled returns the canceled transaction err is (or wraps).
func asCanceled(err error) (*canceledError, bool) {
	var c *canceledError
	ok := errors.As(err, &c)
	return c, ok
}

// retryConflict is the error of a transaction no condition of its own
// canceled: it lost to a concurrent one and can simply be tried again.
func retryConflict(err error, msg string) error {
	return apperr.Wrap(apperr.ECONFLICT, err, "%s", msg).WithReason("TransactionConflict")
}

// txn gathers the writes of one transaction, each with its role. The first
// write that fails to build (a programming error: an item or value the
// encoder cannot marshal) is kept and returned by run, so a method reads as
// the list of its writes.
type txn struct {
	s     *Store
	items []txItem
	err   error
}

func (s *Store) txn() *txn { return &txn{s: s} }

func (t *txn) add(role string, w types.TransactWriteItem) { t.items = append(t.items, txItem{role, w}) }

func (t *txn) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

// create puts item (an item struct) if its key is free.
func (t *txn) create(role string, item any) {
	m, err := marshal(item)
	if err != nil {
		t.fail(err)
		return
	}
	t.add(role, types.TransactWriteItem{Put: &types.Put{
		TableName: &t.s.Table, Item: m, ConditionExpression: condNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}})
}

// put puts item (an item struct) if cond holds (the zero builder: always).
func (t *txn) put(role string, item any, cond expression.ConditionBuilder) {
	m, err := marshal(item)
	if err != nil {
		t.fail(err)
		return
	}
	p := &types.Put{TableName: &t.s.Table, Item: m}
	if cond.IsSet() {
		e, err := build(nil, cond)
		if err != nil {
			t.fail(err)
			return
		}
		p.ConditionExpression, p.ExpressionAttributeNames, p.ExpressionAttributeValues = e.Condition(), e.Names(), e.Values()
		p.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	t.add(role, types.TransactWriteItem{Put: p})
}

// update applies u to the item at k if cond holds (the zero builder: always).
func (t *txn) update(role string, k map[string]types.AttributeValue, u expression.UpdateBuilder, cond expression.ConditionBuilder) {
	e, err := build(&u, cond)
	if err != nil {
		t.fail(err)
		return
	}
	up := &types.Update{
		TableName: &t.s.Table, Key: k, UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}
	if cond.IsSet() {
		up.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	t.add(role, types.TransactWriteItem{Update: up})
}

// check conditions the transaction on the item at k.
func (t *txn) check(role string, k map[string]types.AttributeValue, cond expression.ConditionBuilder) {
	e, err := build(nil, cond)
	if err != nil {
		t.fail(err)
		return
	}
	t.add(role, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: &t.s.Table, Key: k, ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}})
}

// exists conditions the transaction on the item at k existing.
func (t *txn) exists(role string, k map[string]types.AttributeValue) {
	t.add(role, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: &t.s.Table, Key: k, ConditionExpression: condExists,
	}})
}

// run writes the gathered items through transact.
func (t *txn) run(ctx context.Context) error {
	if t.err != nil {
		return internal(t.err, "marshal")
	}
	return t.s.transact(ctx, t.items)
}

// conflictRuns bounds runConflicting's attempts.
const conflictRuns = 3

// runConflicting is run, run again (up to conflictRuns times in all) while
// DynamoDB cancels the transaction only because a concurrent one touched
// one of its items (no condition of its own failed): a canceled
// transaction wrote nothing, so running it again is safe. For the
// transactions that touch items many writers share, such as the team's
// memory epoch.
func (t *txn) runConflicting(ctx context.Context) error {
	var err error
	for range conflictRuns {
		err = t.run(ctx)
		if c, ok := asCanceled(err); !ok || c.Role != "" {
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
