package budget_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/budget"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/testkit/storetest"
)

// priced is a model listed in models.Pricing ($0.25 / $1.25 per MTok).
const priced = "anthropic.claude-3-haiku-20240307-v1:0"

// fakeModel answers every call with fixed token counts and counts calls.
type fakeModel struct {
	in, out int
	fail    bool
	calls   atomic.Int32
}

func (m *fakeModel) Converse(_ context.Context, req models.Request) (models.Response, error) {
	m.calls.Add(1)
	if m.fail {
		return models.Response{}, models.ErrModel
	}
	return models.Response{Text: "ok", InputTokens: m.in, OutputTokens: m.out, ModelID: req.ModelID}, nil
}

var now = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

type fixture struct {
	store *memstore.Store
	bus   *memstore.Publisher
	model *fakeModel
	guard *budget.Guard
	svc   *budget.Service
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{store: memstore.New(), bus: &memstore.Publisher{}, model: &fakeModel{in: 100, out: 100}}
	clock := func() time.Time { return now }
	f.guard = &budget.Guard{Model: f.model, Store: f.store, Bus: f.bus, Now: clock, DefaultModels: map[string]string{"": "local-deterministic"}}
	f.svc = &budget.Service{Store: f.store, Now: clock}
	return f
}

// request is a call of agent for team with 100 words of prompt (134
// estimated tokens) and an output bound of 100.
func request(team, agent string) models.Request {
	words := make([]byte, 0, 200)
	for range 100 {
		words = append(words, "w "...)
	}
	return models.Request{ModelID: priced, MaxTokens: 100, System: string(words),
		Metadata: map[string]string{models.MetadataTeamID: team, models.MetadataAgent: agent, models.MetadataConversationID: "conv_1"}}
}

func limit(v float64) *float64 { return &v }

func TestAReservationIsTheWorstCaseAtTheModelsPrice(t *testing.T) {
	f := newFixture(t)
	req := request("t1", "ann")
	want := budget.USDUp(models.Cost(priced, models.EstimateTokens(req.System), 100))
	assert.Equal(t, want, f.guard.WorstCase(req))
	req.ModelID = ""
	assert.Equal(t, budget.Nanos(0), f.guard.WorstCase(req), "the default provider's model: the local one, free")
	req.ModelID = "a-model-without-a-price"
	assert.Greater(t, f.guard.WorstCase(req), want, "an unlisted model: the highest listed price")
}

func TestTheCallThatWouldCrossTheLimitIsRefusedBeforeItIsMade(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	req := request("t1", "ann")
	worst := f.guard.WorstCase(req)
	cost := budget.USD(models.Cost(priced, 100, 100))
	// Room for two settled calls and one more worst case exactly.
	lim := (2*cost + worst).Dollars()
	_, err := f.svc.Put(ctx, "t1", budget.PutInput{MonthlyLimitUSD: &lim})
	require.NoError(t, err)
	for i := range 3 {
		_, err := f.guard.Converse(ctx, req)
		require.NoError(t, err, "call %d fits", i+1)
	}
	_, err = f.guard.Converse(ctx, req)
	require.Error(t, err)
	assert.True(t, budget.IsExhausted(err))
	e, _ := apperr.As(err)
	assert.Equal(t, apperr.EREJECTED, e.Code)
	assert.InDelta(t, lim, e.Details["monthly_limit_usd"], 1e-9)
	assert.InDelta(t, (3 * cost).Dollars(), e.Details["spent_usd"], 1e-9)
	assert.Equal(t, int32(3), f.model.calls.Load(), "the refused call was not made")

	st, err := f.svc.Get(ctx, "t1")
	require.NoError(t, err)
	assert.InDelta(t, (3 * cost).Dollars(), st.SpentUSD, 1e-12)
	assert.Zero(t, st.ReservedUSD, "every reservation settled")
	assert.Equal(t, "2026-11", st.Month)
}

func TestRacingCallsMakeExactlyThoseThatFit(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	req := request("t1", "ann")
	f.model.in, f.model.out = models.EstimateTokens(req.System), 100 // each costs its worst case
	worst := f.guard.WorstCase(req)
	lim := (7 * worst).Dollars()
	_, err := f.svc.Put(ctx, "t1", budget.PutInput{MonthlyLimitUSD: &lim})
	require.NoError(t, err)
	made, refused := storetest.RaceCalls(t, f.guard, 40, func(int) models.Request { return req })
	assert.Equal(t, 7, made)
	assert.Equal(t, 33, refused)
	assert.Equal(t, int32(7), f.model.calls.Load())
	st, err := f.svc.Get(ctx, "t1")
	require.NoError(t, err)
	assert.InDelta(t, lim, st.SpentUSD, 1e-12, "spent to the limit, not past it")
}

func TestAFailedCallReleasesItsReservationAndCostsNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.model.fail = true
	_, err := f.guard.Converse(ctx, request("t1", "ann"))
	require.ErrorIs(t, err, models.ErrModel)
	st, err := f.svc.Get(ctx, "t1")
	require.NoError(t, err)
	assert.Zero(t, st.SpentUSD)
	assert.Zero(t, st.ReservedUSD)
	assert.Nil(t, st.MonthlyLimitUSD, "no budget: no limit")
}

// warningFixture is a team whose limit is ten calls' cost, warned at
// warnAt, and the call.
func warningFixture(t *testing.T, warnAt float64) (*fixture, models.Request, budget.Nanos) {
	t.Helper()
	f := newFixture(t)
	cost := budget.USD(models.Cost(priced, 100, 100))
	lim := (10 * cost).Dollars()
	_, err := f.svc.Put(context.Background(), "t1", budget.PutInput{MonthlyLimitUSD: &lim, WarnAt: limit(warnAt)})
	require.NoError(t, err)
	return f, request("t1", "ann"), cost
}

// calls makes n calls of req, each one allowed.
func (f *fixture) calls(t *testing.T, req models.Request, n int) {
	t.Helper()
	for range n {
		_, err := f.guard.Converse(context.Background(), req)
		require.NoError(t, err)
	}
}

func TestCrossingTheWarningShareWarnsOncePerMonth(t *testing.T) {
	f, req, cost := warningFixture(t, 0.25)
	f.calls(t, req, 2)
	assert.Empty(t, f.bus.OfType(budget.EvWarning), "20% spent")
	f.calls(t, req, 4)
	ev := f.bus.OfType(budget.EvWarning)
	require.Len(t, ev, 1, "30% spent and more: once")
	w := ev[0].Detail.(budget.Warning)
	assert.Equal(t, "t1", w.TeamID)
	assert.Equal(t, "2026-11", w.Month)
	assert.InDelta(t, (3 * cost).Dollars(), w.SpentUSD, 1e-12, "the call that crossed it")
}

func TestUsageByEveryGroupSumsToTheTotal(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, agent := range []string{"ann", "ann", "bob", ""} {
		_, err := f.guard.Converse(ctx, request("t1", agent))
		require.NoError(t, err)
	}
	_, err := f.guard.Converse(ctx, request("t2", "ann"))
	require.NoError(t, err)
	cost := models.Cost(priced, 100, 100)
	rep, err := f.svc.Usage(ctx, "t1", budget.UsageQuery{GroupBy: budget.ByAgent})
	require.NoError(t, err)
	assert.Equal(t, "2026-11-01", rep.From)
	assert.Equal(t, "2026-11-26", rep.To)
	require.Len(t, rep.Items, 3)
	assert.Equal(t, budget.UsageLine{Key: "ann", Calls: 2, InputTokens: 200, OutputTokens: 200, USD: budget.USD(2 * cost).Dollars()}, rep.Items[0])
	assert.ElementsMatch(t, []string{"ann", "bob", budget.KeySystem}, []string{rep.Items[0].Key, rep.Items[1].Key, rep.Items[2].Key})
	assert.Equal(t, int64(4), rep.Total.Calls, "the other team's call is not counted")
	for _, g := range []string{budget.ByModel, budget.ByConversation, budget.BySession, budget.ByDay} {
		r, err := f.svc.Usage(ctx, "t1", budget.UsageQuery{From: "2026-11-26", To: "2026-11-26", GroupBy: g})
		require.NoError(t, err, g)
		require.Len(t, r.Items, 1, g)
		assert.Equal(t, rep.Total, r.Total, g)
		assert.Equal(t, r.Total.USD, r.Items[0].USD, g)
	}
	r, _ := f.svc.Usage(ctx, "t1", budget.UsageQuery{GroupBy: budget.BySession})
	assert.Equal(t, budget.KeyNone, r.Items[0].Key)
	r, _ = f.svc.Usage(ctx, "t1", budget.UsageQuery{From: "2026-11-27", To: "2026-11-30"})
	assert.Empty(t, r.Items)
	assert.Zero(t, r.Total.Calls)
}

func TestBadInputNamesTheFieldAndChangesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, c := range []struct {
		in    budget.PutInput
		field string
	}{
		{budget.PutInput{}, "monthly_limit_usd"},
		{budget.PutInput{MonthlyLimitUSD: limit(0)}, "monthly_limit_usd"},
		{budget.PutInput{MonthlyLimitUSD: limit(-5)}, "monthly_limit_usd"},
		{budget.PutInput{MonthlyLimitUSD: limit(budget.MaxMonthlyLimitUSD + 1)}, "monthly_limit_usd"},
		{budget.PutInput{MonthlyLimitUSD: limit(10), WarnAt: limit(0)}, "warn_at"},
		{budget.PutInput{MonthlyLimitUSD: limit(10), WarnAt: limit(1.5)}, "warn_at"},
	} {
		_, err := f.svc.Put(ctx, "t1", c.in)
		e, ok := apperr.As(err)
		require.True(t, ok, "%+v", c.in)
		assert.Equal(t, apperr.EINVALID, e.Code)
		assert.Equal(t, c.field, e.Field)
	}
	st, err := f.svc.Get(ctx, "t1")
	require.NoError(t, err)
	assert.Nil(t, st.MonthlyLimitUSD)
	st, err = f.svc.Put(ctx, "t1", budget.PutInput{MonthlyLimitUSD: limit(25)})
	require.NoError(t, err)
	assert.InDelta(t, budget.DefaultWarnAt, *st.WarnAt, 1e-12)

	for _, c := range []struct {
		q     budget.UsageQuery
		field string
	}{
		{budget.UsageQuery{GroupBy: "team"}, "group_by"},
		{budget.UsageQuery{From: "2026-13-01"}, "from"},
		{budget.UsageQuery{To: "yesterday"}, "to"},
		{budget.UsageQuery{From: "2026-11-10", To: "2026-11-09"}, "to"},
		{budget.UsageQuery{From: "2026-01-01", To: "2026-04-03"}, "to"},
	} {
		_, err := f.svc.Usage(ctx, "t1", c.q)
		e, ok := apperr.As(err)
		require.True(t, ok, "%+v", c.q)
		assert.Equal(t, c.field, e.Field, "%+v", c.q)
	}
	_, err = f.svc.Usage(ctx, "t1", budget.UsageQuery{From: "2026-01-01", To: "2026-04-02"})
	assert.NoError(t, err, "92 days")
}

// A call without an output bound reserves DefaultMaxTokens of output, the
// most a provider answers it with; 0 is no bound.
func TestACallWithoutAnOutputBoundReservesTheDefault(t *testing.T) {
	f := newFixture(t)
	bounded, unbounded := request("t1", "ann"), request("t1", "ann")
	bounded.MaxTokens, unbounded.MaxTokens = budget.DefaultMaxTokens, 0
	assert.Equal(t, f.guard.WorstCase(bounded), f.guard.WorstCase(unbounded))
	assert.Greater(t, f.guard.WorstCase(unbounded), f.guard.WorstCase(request("t1", "ann")), "more than a bound of 100")
}

// A call that names no model is priced as the model its provider would
// pick: the provider's default when the provider is named and has one,
// else the stage's.
func TestACallWithoutAModelIsPricedAsItsProvidersDefault(t *testing.T) {
	f := newFixture(t)
	f.guard.DefaultModels = map[string]string{"": priced, "openai": "anthropic.claude-3-5-sonnet-20240620-v1:0"}
	viaStage, viaProvider, named := request("t1", "ann"), request("t1", "ann"), request("t1", "ann")
	viaStage.ModelID, viaProvider.ModelID, viaProvider.Provider = "", "", "openai"
	named.ModelID = "anthropic.claude-3-5-sonnet-20240620-v1:0"
	assert.Equal(t, f.guard.WorstCase(request("t1", "ann")), f.guard.WorstCase(viaStage), "the stage's default")
	assert.Equal(t, f.guard.WorstCase(named), f.guard.WorstCase(viaProvider), "the provider's own default")
	assert.Greater(t, f.guard.WorstCase(viaProvider), f.guard.WorstCase(viaStage))
}
