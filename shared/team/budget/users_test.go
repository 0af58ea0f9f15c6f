package budget_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/team/budget"
	"github.com/conclave-ai/conclave/shared/testkit/storetest"
)

func as(user, role string) context.Context {
	return authctx.WithCaller(context.Background(), authctx.Caller{UserID: user, Role: role})
}

// per_user_usd is validated like the team's limit, and at most it.
func TestPerUserIsValidatedAndAtMostTheTeams(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, bad := range []float64{0, -1, 10.000001, budget.MaxMonthlyLimitUSD + 1} {
		_, err := f.svc.Put(ctx, "t1", budget.PutInput{MonthlyLimitUSD: limit(10), PerUserUSD: limit(bad)})
		e, ok := apperr.As(err)
		require.True(t, ok, "%v", bad)
		assert.Equal(t, apperr.EINVALID, e.Code)
		assert.Equal(t, "per_user_usd", e.Field, "%v", bad)
	}
	st, err := f.svc.Get(ctx, "t1")
	require.NoError(t, err)
	assert.Nil(t, st.MonthlyLimitUSD, "nothing stored")
	st, err = f.svc.Put(ctx, "t1", budget.PutInput{MonthlyLimitUSD: limit(10), PerUserUSD: limit(10)})
	require.NoError(t, err, "the team's limit exactly")
	assert.InDelta(t, 10, *st.PerUserUSD, 1e-12)
	st, err = f.svc.Put(ctx, "t1", budget.PutInput{MonthlyLimitUSD: limit(10)})
	require.NoError(t, err)
	assert.Nil(t, st.PerUserUSD, "left out: no per-person limit")
}

// A person's calls fit their per_user limit exactly; the next is refused
// naming the user limit and not made, while another person and a key's
// own calls go on.
func TestAPersonsBudgetAtItsBoundary(t *testing.T) {
	f := newFixture(t)
	req := request("t1", "ann")
	f.model.in, f.model.out = models.EstimateTokens(req.System), 100 // each costs its worst case
	worst := f.guard.WorstCase(req)
	team, perUser := (10 * worst).Dollars(), (3 * worst).Dollars()
	_, err := f.svc.Put(context.Background(), "t1", budget.PutInput{MonthlyLimitUSD: &team, PerUserUSD: &perUser})
	require.NoError(t, err)
	alice := as("alice", authctx.RoleMember)
	for i := range 3 {
		_, err := f.guard.Converse(alice, req)
		require.NoError(t, err, "alice's call %d fits", i+1)
	}
	_, err = f.guard.Converse(alice, req)
	require.True(t, budget.IsExhausted(err), "%v", err)
	e, _ := apperr.As(err)
	assert.Equal(t, apperr.EREJECTED, e.Code)
	assert.Equal(t, budget.ReasonUserExhausted, e.Reason)
	assert.Equal(t, "alice", e.Details["user_id"])
	assert.InDelta(t, perUser, e.Details["per_user_usd"], 1e-9)
	assert.Equal(t, int32(3), f.model.calls.Load(), "the refused call was not made")

	_, err = f.guard.Converse(as("bob", authctx.RoleMember), req)
	assert.NoError(t, err, "bob's month is his own")
	_, err = f.guard.Converse(context.Background(), req)
	assert.NoError(t, err, "a key's own call has the team's limit only")
	byMeta := request("t1", "ann")
	byMeta.Metadata[models.MetadataUserID] = "alice"
	_, err = f.guard.Converse(context.Background(), byMeta)
	assert.True(t, budget.IsExhausted(err), "the user named in the request's metadata is alice too")
}

// A person's racing calls make exactly those their limit holds.
func TestAPersonsRacingCallsMakeExactlyThoseThatFit(t *testing.T) {
	f := newFixture(t)
	req := request("t1", "ann")
	req.Metadata[models.MetadataUserID] = "alice"
	f.model.in, f.model.out = models.EstimateTokens(req.System), 100
	worst := f.guard.WorstCase(req)
	team, perUser := (100 * worst).Dollars(), (4 * worst).Dollars()
	_, err := f.svc.Put(context.Background(), "t1", budget.PutInput{MonthlyLimitUSD: &team, PerUserUSD: &perUser})
	require.NoError(t, err)
	made, refused := storetest.RaceCalls(t, f.guard, 20, func(int) models.Request { return req })
	assert.Equal(t, 4, made)
	assert.Equal(t, 16, refused)
	u, err := f.store.GetUserLedger(context.Background(), "t1", "2026-11", "alice")
	require.NoError(t, err)
	assert.Equal(t, 4*worst, u.Spent)
	assert.Zero(t, u.Reserved)
}

// GET /v1/usage?group_by=user: each person's line, and the key's own
// calls under "(none)"; a member reads their own usage only.
func TestUsageByUserAndAMembersOwn(t *testing.T) {
	f := newFixture(t)
	req := request("t1", "ann")
	for _, ctx := range []context.Context{as("alice", authctx.RoleMember), as("alice", authctx.RoleMember), as("bob", authctx.RoleAdmin), context.Background()} {
		_, err := f.guard.Converse(ctx, req)
		require.NoError(t, err)
	}
	rep, err := f.svc.Usage(context.Background(), "t1", budget.UsageQuery{GroupBy: budget.ByUser})
	require.NoError(t, err)
	keys := map[string]int64{}
	for _, it := range rep.Items {
		keys[it.Key] = it.Calls
	}
	assert.Equal(t, map[string]int64{"alice": 2, "bob": 1, budget.KeyNone: 1}, keys)
	assert.Equal(t, int64(4), rep.Total.Calls)
	assert.Empty(t, rep.UserID)

	own, err := f.svc.Usage(as("alice", authctx.RoleMember), "t1", budget.UsageQuery{GroupBy: budget.ByAgent})
	require.NoError(t, err)
	assert.Equal(t, "alice", own.UserID)
	assert.Equal(t, int64(2), own.Total.Calls, "alice's own calls only")
	require.Len(t, own.Items, 1)
	assert.Equal(t, int64(2), own.Items[0].Calls)
}

// Each bound is accepted at its value (the value one past it is refused in
// TestBadInputNamesTheFieldAndChangesNothing and
// TestPerUserIsValidatedAndAtMostTheTeams): the largest monthly limit, a
// warning at the whole limit, and a person's limit equal to the largest.
func TestEveryBudgetBoundIsAcceptedAtItsValue(t *testing.T) {
	f := newFixture(t)
	st, err := f.svc.Put(context.Background(), "t1", budget.PutInput{MonthlyLimitUSD: limit(budget.MaxMonthlyLimitUSD), WarnAt: limit(1),
		PerUserUSD: limit(budget.MaxMonthlyLimitUSD)})
	require.NoError(t, err)
	assert.InDelta(t, budget.MaxMonthlyLimitUSD, *st.MonthlyLimitUSD, 1e-9)
	assert.InDelta(t, 1, *st.WarnAt, 1e-12)
	assert.InDelta(t, budget.MaxMonthlyLimitUSD, *st.PerUserUSD, 1e-9)
}

// The warning comes with the call whose spend reaches the share exactly,
// not one call later.
func TestTheWarningComesAtTheShareExactly(t *testing.T) {
	f, req, _ := warningFixture(t, 0.5)
	f.calls(t, req, 4)
	assert.Empty(t, f.bus.OfType(budget.EvWarning), "40% spent")
	f.calls(t, req, 1)
	require.Len(t, f.bus.OfType(budget.EvWarning), 1, "50% spent: the share itself")
}

// A person's failed call gives back what it held on their month too: with
// room for exactly one call, the call after a failed one is made.
func TestAPersonsFailedCallReleasesTheirHold(t *testing.T) {
	f := newFixture(t)
	ctx := as("alice", authctx.RoleMember)
	one := f.guard.WorstCase(request("t1", "ann")).Dollars()
	_, err := f.svc.Put(context.Background(), "t1", budget.PutInput{MonthlyLimitUSD: limit(10), PerUserUSD: &one})
	require.NoError(t, err)
	f.model.fail = true
	_, err = f.guard.Converse(ctx, request("t1", "ann"))
	require.ErrorIs(t, err, models.ErrModel)
	f.model.fail = false
	_, err = f.guard.Converse(ctx, request("t1", "ann"))
	require.NoError(t, err, "the failed call's hold was given back")
	u, err := f.store.GetUserLedger(context.Background(), "t1", "2026-11", "alice")
	require.NoError(t, err)
	assert.Zero(t, u.Reserved, "every hold settled")
	assert.EqualValues(t, 1, u.Calls, "the made call alone is charged")
}

// Usage lines are most expensive first, then by key; a member's report
// holds their own calls, not everyone else's.
func TestUsageOrderAndAMembersOwnAgainstTheRest(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		ctx   context.Context
		agent string
	}{{as("alice", authctx.RoleMember), "zed"}, {as("alice", authctx.RoleMember), "zed"}, {as("alice", authctx.RoleMember), "cid"},
		{as("bob", authctx.RoleMember), "bob"}, {context.Background(), "zed"}} {
		_, err := f.guard.Converse(c.ctx, request("t1", c.agent))
		require.NoError(t, err)
	}
	rep, err := f.svc.Usage(context.Background(), "t1", budget.UsageQuery{GroupBy: budget.ByAgent})
	require.NoError(t, err)
	var keys []string
	for _, it := range rep.Items {
		keys = append(keys, it.Key)
	}
	// zed, last by name, first by cost: a sort by name alone fails.
	assert.Equal(t, []string{"zed", "bob", "cid"}, keys, "three calls first, then the ties by key")
	own, err := f.svc.Usage(as("alice", authctx.RoleMember), "t1", budget.UsageQuery{GroupBy: budget.ByAgent})
	require.NoError(t, err)
	assert.EqualValues(t, 3, own.Total.Calls, "alice's three calls, not the other two")
}
