package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/budget"
)

const contractMonth = "2026-11"

// budgetLimit: a month initialized with no budget takes every reservation;
// one given a budget takes what fits, up to the limit exactly, and refuses
// one nano more with the ledger as it was.
func budgetLimit(t *testing.T, f *fixture) {
	ctx := context.Background()
	_, err := f.Budgets.Reserve(ctx, f.team, contractMonth, 10)
	require.ErrorIs(t, err, budget.ErrNoLedger, "a month nothing touched")
	_, err = f.Budgets.GetBudget(ctx, f.team)
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "no budget yet")

	require.NoError(t, f.Budgets.InitMonth(ctx, f.team, contractMonth, nil))
	l, err := f.Budgets.Reserve(ctx, f.team, contractMonth, 400)
	require.NoError(t, err, "no limit")
	assert.False(t, l.Limited)
	require.NoError(t, f.Budgets.Settle(ctx, budget.Charge{TeamID: f.team, Month: contractMonth, Day: contractMonth + "-02", Reserved: 400, Cost: 300,
		InputTokens: 10, OutputTokens: 20, Attribution: budget.Attribution{Agent: "ann"}.Key()}))

	b := budget.Budget{Limit: 1000, WarnAt: 0.5, UpdatedAt: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)}
	require.NoError(t, f.Budgets.PutBudget(ctx, f.team, contractMonth, b))
	got, err := f.Budgets.GetBudget(ctx, f.team)
	require.NoError(t, err)
	assert.Equal(t, b.Limit, got.Limit)
	assert.InDelta(t, 0.5, got.WarnAt, 1e-12)
	assert.True(t, got.UpdatedAt.Equal(b.UpdatedAt))
	require.NoError(t, f.Budgets.InitMonth(ctx, f.team, contractMonth, nil), "a month initialized stays as it is")

	l, err = f.Budgets.Reserve(ctx, f.team, contractMonth, 600)
	require.NoError(t, err, "300 spent + 600 fits in 1000")
	assert.Equal(t, budget.Ledger{Initialized: true, Limited: true, Limit: 1000, WarnAt: 0.5, Spent: 300, Reserved: 600, Calls: 1}, l)
	_, err = f.Budgets.Reserve(ctx, f.team, contractMonth, 101)
	var ex *budget.Exhausted
	require.True(t, errors.As(err, &ex), "one past the limit: %v", err)
	assert.Equal(t, budget.Nanos(300), ex.Ledger.Spent)
	assert.Equal(t, budget.Nanos(600), ex.Ledger.Reserved)
	l, err = f.Budgets.Reserve(ctx, f.team, contractMonth, 100)
	require.NoError(t, err, "up to the limit exactly")
	assert.Equal(t, budget.Nanos(700), l.Reserved)

	require.NoError(t, f.Budgets.Release(ctx, f.team, contractMonth, 100))
	require.NoError(t, f.Budgets.Settle(ctx, budget.Charge{TeamID: f.team, Month: contractMonth, Day: contractMonth + "-03", Reserved: 600, Cost: 650,
		InputTokens: 1, OutputTokens: 2, Attribution: budget.Attribution{Agent: "bob", Model: "m", Conversation: "c1"}.Key()}))
	l, err = f.Budgets.GetLedger(ctx, f.team, contractMonth)
	require.NoError(t, err)
	assert.Equal(t, budget.Ledger{Initialized: true, Limited: true, Limit: 1000, WarnAt: 0.5, Spent: 950, Reserved: 0, Calls: 2}, l,
		"a call that cost more than it reserved is charged what it cost")
	_, err = f.Budgets.Reserve(ctx, f.team, contractMonth, 51)
	assert.True(t, errors.As(err, &ex), "50 left")

	require.NoError(t, f.Budgets.PutBudget(ctx, f.team, contractMonth, budget.Budget{Limit: 2000, WarnAt: 0.8}))
	_, err = f.Budgets.Reserve(ctx, f.team, contractMonth, 1050)
	require.NoError(t, err, "a raised limit applies at once: 950 spent + 1050")
	_, err = f.Budgets.Reserve(ctx, f.team, contractMonth, 1)
	assert.True(t, errors.As(err, &ex))
}

// budgetConcurrent: 40 racing reservations of 100 on a limit of 1000 take
// exactly ten.
func budgetConcurrent(t *testing.T, f *fixture) {
	ctx := context.Background()
	require.NoError(t, f.Budgets.PutBudget(ctx, f.team, contractMonth, budget.Budget{Limit: 1000, WarnAt: 0.8}))
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			_, err := f.Budgets.Reserve(ctx, f.team, contractMonth, 100)
			var ex *budget.Exhausted
			switch {
			case err == nil:
				ok.Add(1)
			case errors.As(err, &ex):
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(10), ok.Load())
	assert.Equal(t, int32(30), refused.Load())
	l, err := f.Budgets.GetLedger(ctx, f.team, contractMonth)
	require.NoError(t, err)
	assert.Equal(t, budget.Nanos(1000), l.Reserved)
}

// budgetUsage: counters add up per (day, attribution), a range is
// inclusive, another team's are never read, and the warned flag is set
// once.
func budgetUsage(t *testing.T, f *fixture) {
	ctx := context.Background()
	require.NoError(t, f.Budgets.InitMonth(ctx, f.team, contractMonth, nil))
	ann := budget.Attribution{Agent: "ann", Model: "m1"}.Key()
	for _, c := range []struct {
		day  string
		attr budget.Attribution
		cost budget.Nanos
	}{
		{"2026-11-01", ann, 10}, {"2026-11-01", ann, 15}, {"2026-11-02", budget.Attribution{}.Key(), 7}, {"2026-11-03", ann, 1000},
	} {
		require.NoError(t, f.Budgets.Settle(ctx, budget.Charge{TeamID: f.team, Month: contractMonth, Day: c.day, Cost: c.cost,
			InputTokens: 3, OutputTokens: 4, Attribution: c.attr}))
	}
	rows, err := f.Budgets.Usage(ctx, f.team, "2026-11-01", "2026-11-02")
	require.NoError(t, err)
	require.Len(t, rows, 2)
	byDay := map[string]budget.UsageRow{}
	for _, r := range rows {
		byDay[r.Day] = r
	}
	assert.Equal(t, budget.UsageRow{Day: "2026-11-01", Attribution: ann, Usage: budget.Usage{Calls: 2, InputTokens: 6, OutputTokens: 8, Cost: 25}}, byDay["2026-11-01"])
	assert.Equal(t, budget.KeySystem, byDay["2026-11-02"].Agent)
	assert.Equal(t, budget.KeyNone, byDay["2026-11-02"].Conversation)
	other, err := f.Budgets.Usage(ctx, "team_someone_else", "2026-11-01", "2026-11-30")
	require.NoError(t, err)
	assert.Empty(t, other)

	first, err := f.Budgets.MarkWarned(ctx, f.team, contractMonth)
	require.NoError(t, err)
	assert.True(t, first)
	again, err := f.Budgets.MarkWarned(ctx, f.team, contractMonth)
	require.NoError(t, err)
	assert.False(t, again, "once per month")
}

// RaceCalls makes n model calls through g at once (the i-th with req(i))
// and counts those made and those the team's budget refused; any other
// error fails t. The CostGuard's race tests share it: on the in-memory
// store (shared/team/budget) and on DynamoDB Local (localstack/cloud).
func RaceCalls(t *testing.T, g *budget.Guard, n int, req func(i int) models.Request) (made, refused int) {
	t.Helper()
	var ok, no atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := g.Converse(context.Background(), req(i))
			switch {
			case err == nil:
				ok.Add(1)
			case budget.IsExhausted(err):
				no.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	return int(ok.Load()), int(no.Load())
}
