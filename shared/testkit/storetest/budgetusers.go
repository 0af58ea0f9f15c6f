package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/budget"
)

// budgetUserLimit: a person's reservations fit their per_user limit up to
// the nano and the next is refused with their month as it was, nothing
// written on either month; another person has a month of their own; the
// team's limit still binds; a release and a settlement move the person's
// month as the team's.
func budgetUserLimit(t *testing.T, f *fixture) {
	ctx := context.Background()
	_, err := f.Budgets.ReserveUser(ctx, f.team, contractMonth, "alice", 500, 10)
	require.ErrorIs(t, err, budget.ErrNoLedger, "a month nothing touched")
	b := budget.Budget{Limit: 1000, WarnAt: 0.8, PerUser: 500}
	require.NoError(t, f.Budgets.PutBudget(ctx, f.team, contractMonth, b))
	got, err := f.Budgets.GetBudget(ctx, f.team)
	require.NoError(t, err)
	assert.Equal(t, budget.Nanos(500), got.PerUser, "stored with the team's budget")

	l, err := f.Budgets.ReserveUser(ctx, f.team, contractMonth, "alice", 500, 300)
	require.NoError(t, err)
	assert.Equal(t, budget.Nanos(300), l.Reserved, "the team's month holds it too")
	l, err = f.Budgets.ReserveUser(ctx, f.team, contractMonth, "alice", 500, 200)
	require.NoError(t, err, "up to the person's limit exactly")
	assert.Equal(t, budget.Nanos(500), l.Reserved)
	_, err = f.Budgets.ReserveUser(ctx, f.team, contractMonth, "alice", 500, 1)
	var ux *budget.UserExhausted
	require.True(t, errors.As(err, &ux), "one nano past the person's limit: %v", err)
	assert.Equal(t, budget.UserLedger{UserID: "alice", Limit: 500, Reserved: 500}, ux.Ledger)
	_, err = f.Budgets.ReserveUser(ctx, f.team, contractMonth, "alice", 500, 501)
	require.True(t, errors.As(err, &ux), "more than the limit itself")
	l, err = f.Budgets.GetLedger(ctx, f.team, contractMonth)
	require.NoError(t, err)
	assert.Equal(t, budget.Nanos(500), l.Reserved, "a refused person's reservation wrote nothing on the team's month")

	l, err = f.Budgets.ReserveUser(ctx, f.team, contractMonth, "bob", 500, 500)
	require.NoError(t, err, "bob's month is his own")
	assert.Equal(t, budget.Nanos(1000), l.Reserved)
	require.NoError(t, f.Budgets.Release(ctx, f.team, contractMonth, 500))
	require.NoError(t, f.Budgets.ReleaseUser(ctx, f.team, contractMonth, "bob", 500))
	_, err = f.Budgets.Reserve(ctx, f.team, contractMonth, 500)
	require.NoError(t, err, "a key's call takes the team's last 500")
	_, err = f.Budgets.ReserveUser(ctx, f.team, contractMonth, "bob", 500, 1)
	var ex *budget.Exhausted
	require.True(t, errors.As(err, &ex), "bob has room, the team has none: %v", err)
	bob, err := f.Budgets.GetUserLedger(ctx, f.team, contractMonth, "bob")
	require.NoError(t, err)
	assert.Equal(t, budget.UserLedger{UserID: "bob"}, bob, "the team's refusal wrote nothing on bob's month")

	require.NoError(t, f.Budgets.Settle(ctx, budget.Charge{TeamID: f.team, Month: contractMonth, Day: contractMonth + "-04", Reserved: 300, Cost: 250,
		UserReserved: 300, Attribution: budget.Attribution{Agent: "ann", User: "alice"}.Key()}))
	alice, err := f.Budgets.GetUserLedger(ctx, f.team, contractMonth, "alice")
	require.NoError(t, err)
	assert.Equal(t, budget.UserLedger{UserID: "alice", Spent: 250, Reserved: 200, Calls: 1}, alice)
	rows, err := f.Budgets.Usage(ctx, f.team, contractMonth+"-04", contractMonth+"-04")
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "alice", rows[0].User, "usage counters name the person")
	_, err = f.Budgets.GetUserLedger(ctx, f.otherTeam(), contractMonth, "alice")
	require.NoError(t, err)
}

// budgetUserConcurrent: 12 racing reservations of 100 by one person with
// a per_user limit of 500 (the team's 10 000) take exactly five, however
// the transactions interleave (a client tries again on a conflict, as
// the API tells it to).
func budgetUserConcurrent(t *testing.T, f *fixture) {
	ctx := context.Background()
	require.NoError(t, f.Budgets.PutBudget(ctx, f.team, contractMonth, budget.Budget{Limit: 10_000, WarnAt: 0.8, PerUser: 500}))
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			for {
				_, err := f.Budgets.ReserveUser(ctx, f.team, contractMonth, "alice", 500, 100)
				var ux *budget.UserExhausted
				switch {
				case err == nil:
					ok.Add(1)
				case errors.As(err, &ux):
					refused.Add(1)
				case apperr.Is(err, apperr.ECONFLICT):
					continue
				default:
					t.Error(err)
				}
				return
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(5), ok.Load())
	assert.Equal(t, int32(7), refused.Load())
	u, err := f.Budgets.GetUserLedger(ctx, f.team, contractMonth, "alice")
	require.NoError(t, err)
	assert.Equal(t, budget.Nanos(500), u.Reserved)
	l, err := f.Budgets.GetLedger(ctx, f.team, contractMonth)
	require.NoError(t, err)
	assert.Equal(t, budget.Nanos(500), l.Reserved, "the team's month holds exactly the person's")
}
