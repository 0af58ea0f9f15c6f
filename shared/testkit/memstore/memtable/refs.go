package memtable

import (
	"context"
	"slices"
	"strconv"

	"github.com/conclave-ai/conclave/shared/platform/idempotency"
)

var _ idempotency.Refs = (*Table)(nil)

// The references from a request's Idempotency-Key to what its create
// stored, as the DynamoDB stores write them in the create's transaction
// (dynamo.Txn.Keyed): RefTaken before a create's writes, RefSet with
// them, both with the table locked. A turn's reference names its
// messages (several ids), any other create's the one item it stored.

func refKey(teamID, kind, k string) Key { return Key{teamID, kind + "#" + k} }

// Ref returns the ids the create of kind under the Idempotency-Key k
// stored, and whether one did. Call with the table locked.
func Ref(tb *Table, teamID, kind, k string) ([]string, bool) {
	ids, ok := tb.refs[refKey(teamID, kind, k)]
	return slices.Clone(ids), ok
}

// SetRef records that the create of kind under the Idempotency-Key k
// stored ids. Call with the table locked.
func SetRef(tb *Table, teamID, kind, k string, ids ...string) {
	if tb.refs == nil {
		tb.refs = map[Key][]string{}
	}
	tb.refs[refKey(teamID, kind, k)] = slices.Clone(ids)
}

// RefTaken returns idempotency.Replayed when the request (ctx) is for a
// create of kind whose key already stored one. Call with the table locked.
func RefTaken(ctx context.Context, tb *Table, teamID, kind string) error {
	k := idempotency.KeyFor(ctx, kind)
	if k == "" {
		return nil
	}
	if ids, ok := Ref(tb, teamID, kind, k); ok && len(ids) > 0 {
		return idempotency.Replayed{Kind: kind, ID: ids[0]}
	}
	return nil
}

// RefSet records that the request's create of kind stored id (nothing
// without a key for kind). Call with the table locked.
func RefSet(ctx context.Context, tb *Table, teamID, kind, id string) {
	if k := idempotency.KeyFor(ctx, kind); k != "" {
		SetRef(tb, teamID, kind, k, id)
	}
}

// ReadRef implements idempotency.Refs.
func (tb *Table) ReadRef(_ context.Context, teamID, kind, k string) ([]string, error) {
	tb.Lock()
	defer tb.Unlock()
	ids, _ := Ref(tb, teamID, kind, k)
	if len(ids) == 0 {
		return nil, nil
	}
	return ids, nil
}

// CountRequest implements authorizer.RequestCounter: the team's requests
// in that second, this one included (the adapter's atomic ADD).
func (tb *Table) CountRequest(_ context.Context, teamID string, second int64) (int, error) {
	tb.Lock()
	defer tb.Unlock()
	if tb.rates == nil {
		tb.rates = map[string]int{}
	}
	k := teamID + "#" + strconv.FormatInt(second, 10)
	tb.rates[k]++
	return tb.rates[k], nil
}

// CountUserRequest implements authorizer.RequestCounter: one person's
// requests of the team in that second, this one included.
func (tb *Table) CountUserRequest(ctx context.Context, teamID, userID string, second int64) (int, error) {
	return tb.CountRequest(ctx, teamID+"#USER#"+userID, second)
}
