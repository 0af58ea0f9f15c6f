//go:build integration

// Team budgets (the CostGuard, docs/operations.md "Team budgets"): the
// guard on DynamoDB Local holds the limit under 40 racing calls and to
// the nano at its boundary; over HTTP a budget refuses the chat turn that
// would cross it (422 TeamBudgetExhausted), warns once, and the usage by
// agent sums to the team's total.
package cloud_test

import (
	"context"
	"encoding/json"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/store/budgetstore"
	"github.com/conclave-ai/conclave/shared/team/activity"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/budget"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/storetest"
)

// pricedModel is a listed model ($0.25 / $1.25 per million tokens). The
// local model answers for it (an agent's Model.ID with the local
// provider) and reports it, so its calls cost what that model's would:
// the scripted model's own id, local-deterministic, is free.
const pricedModel = "anthropic.claude-3-haiku-20240307-v1:0"

// exactModel answers every call with the tokens of its worst case, so
// each call costs exactly what it reserved.
type exactModel struct{ calls atomic.Int32 }

func (m *exactModel) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	m.calls.Add(1)
	time.Sleep(5 * time.Millisecond) // calls in flight overlap
	return models.Response{Text: "ok", ModelID: req.ModelID, InputTokens: guardInput(req), OutputTokens: req.MaxTokens}, nil
}

// guardInput is the guard's input estimate for the requests of these
// tests (a system prompt, no messages or tools).
func guardInput(req models.Request) int { return models.EstimateTokens(req.System) }

func budgetRequest(team, agent string) models.Request {
	return models.Request{ModelID: pricedModel, MaxTokens: 200, System: "You answer budget tests with one short sentence each time.",
		Metadata: map[string]string{models.MetadataTeamID: team, models.MetadataAgent: agent}}
}

func newGuard(e env) (*budget.Guard, *exactModel, *budget.Service) {
	store := budgetstore.New(e.db.core.DB, e.db.core.Table)
	g := &budget.Guard{Store: store}
	m := &exactModel{}
	g.Model = m
	return g, m, &budget.Service{Store: store}
}

func TestTeamBudgetHoldsUnderFortyRacingCalls(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	team := mustTeam(t, e)
	g, m, svc := newGuard(e)
	req := budgetRequest(team, "ann")
	worst := g.WorstCase(req)
	require.Positive(t, worst)
	const fit = 9
	limit := (fit * worst).Dollars()
	_, err := svc.Put(ctx, team, budget.PutInput{MonthlyLimitUSD: &limit})
	require.NoError(t, err)

	made, refused := storetest.RaceCalls(t, g, 40, func(i int) models.Request { return budgetRequest(team, []string{"ann", "bob"}[i%2]) })
	assert.Equal(t, fit, made, "exactly the calls that fit")
	assert.Equal(t, 40-fit, refused)
	assert.Equal(t, int32(fit), m.calls.Load(), "a refused call is never made")

	st, err := svc.Get(ctx, team)
	require.NoError(t, err)
	assert.Equal(t, budget.USD(limit), budget.USD(st.SpentUSD), "spent to the limit and not past it")
	assert.Zero(t, st.ReservedUSD, "every reservation settled")
	assert.EqualValues(t, fit, st.Calls, "each call charged once")
	rep, err := svc.Usage(ctx, team, budget.UsageQuery{GroupBy: budget.ByAgent})
	require.NoError(t, err)
	assert.EqualValues(t, fit, rep.Total.Calls)
	assert.InDelta(t, st.SpentUSD, rep.Total.USD, 1e-12, "usage sums to the month's spend")
	var sum float64
	var calls int64
	for _, it := range rep.Items {
		sum += it.USD
		calls += it.Calls
	}
	assert.InDelta(t, rep.Total.USD, sum, 1e-12, "usage by agent sums to the team's total")
	assert.EqualValues(t, fit, calls)
}

// The budget takes the call whose worst case reaches the limit exactly and
// refuses it one nano-dollar short.
func TestTeamBudgetBoundaryToTheNano(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	for _, c := range []struct {
		short budget.Nanos
		made  int
	}{{0, 3}, {1, 2}} {
		team := mustTeam(t, e)
		g, m, svc := newGuard(e)
		req := budgetRequest(team, "ann")
		limit := (3*g.WorstCase(req) - c.short).Dollars()
		_, err := svc.Put(ctx, team, budget.PutInput{MonthlyLimitUSD: &limit})
		require.NoError(t, err)
		for i := range c.made {
			_, err := g.Converse(ctx, req)
			require.NoError(t, err, "call %d", i+1)
		}
		_, err = g.Converse(ctx, req)
		require.True(t, budget.IsExhausted(err), "the call that would cross it: %v", err)
		assert.Equal(t, int32(c.made), m.calls.Load())
	}
}

// budgetTeam is a fresh team whose agent penny answers with a priced model
// (the local model standing in for it), and its API client.
func budgetTeam(t *testing.T, e env) demoTeam {
	t.Helper()
	ctx := context.Background()
	tm, k, err := teams.NewService(e.db.teams).CreateTeam(ctx, "budget")
	require.NoError(t, err)
	mustAgent(t, e, tm.ID, "penny", &agents.Model{Provider: "local", ID: pricedModel})
	_, err = agents.NewService(e.db.agents).SetDefault(ctx, tm.ID, "penny")
	require.NoError(t, err)
	return demoTeam{id: tm.ID, key: k.Secret, t: t}
}

func num(t *testing.T, m map[string]any, k string) float64 {
	t.Helper()
	v, ok := m[k].(float64)
	require.True(t, ok, "%s in %v", k, m)
	return v
}

func TestTeamBudgetOverHTTP(t *testing.T) {
	e := mustEnv(t)
	d := budgetTeam(t, e)
	other := budgetTeam(t, e)

	st, b := d.call("GET", "/v1/budget", nil)
	require.Equal(t, 200, st, b)
	assert.Nil(t, b["monthly_limit_usd"], "no budget: no limit")
	assert.Zero(t, num(t, b, "spent_usd"))
	month := b["month"].(string)
	assert.Equal(t, time.Now().UTC().Format("2006-01"), month)

	// Without a budget the team's calls are charged, never refused.
	conv := d.conversation("penny")
	d.post(conv, map[string]any{"content": "What does a budget protect us from?"})
	_, b = d.call("GET", "/v1/budget", nil)
	spent := num(t, b, "spent_usd")
	require.Positive(t, spent, "the priced model's call is charged")
	assert.Zero(t, num(t, b, "reserved_usd"))

	// A budget whose warning share the spend has reached: the next call
	// warns, once.
	st, b = d.call("PUT", "/v1/budget", map[string]any{"monthly_limit_usd": 1, "warn_at": spent})
	require.Equal(t, 200, st, b)
	assert.EqualValues(t, 1, b["monthly_limit_usd"])
	assert.InDelta(t, spent, num(t, b, "spent_usd"), 1e-12)
	st, again := d.call("PUT", "/v1/budget", map[string]any{"monthly_limit_usd": 1, "warn_at": spent})
	require.Equal(t, 200, st)
	assert.Equal(t, b["monthly_limit_usd"], again["monthly_limit_usd"], "the same PUT again: the same budget")
	assert.Equal(t, b["spent_usd"], again["spent_usd"], "and nothing charged")
	d.post(conv, map[string]any{"content": "And what happens when we reach its warning share?"})
	d.post(conv, map[string]any{"content": "And after that?"})
	w := waitActivity(t, e, d.id, func(en activity.Entry) bool { return en.DetailType == budget.EvWarning })
	var warning budget.Warning
	require.NoError(t, json.Unmarshal(w.Detail, &warning))
	assert.Equal(t, month, warning.Month)
	assert.GreaterOrEqual(t, warning.SpentUSD, spent)
	_, b = d.call("GET", "/v1/budget", nil)
	assert.Equal(t, true, b["warned"])

	// A limit just above what is spent: the next turn's call does not fit.
	spent = num(t, b, "spent_usd")
	st, _ = d.call("PUT", "/v1/budget", map[string]any{"monthly_limit_usd": spent + 0.000001})
	require.Equal(t, 200, st)
	resp := d.do("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": "One more question, please."})
	require.Equal(t, 422, resp.Status, string(resp.Body))
	code, _, reason := resp.ErrorFields(t)
	assert.Equal(t, "rejected", code)
	assert.Equal(t, budget.ReasonExhausted, reason)
	details := resp.JSON(t)["error"].(map[string]any)["details"].(map[string]any)
	assert.InDelta(t, spent+0.000001, num(t, details, "monthly_limit_usd"), 1e-12)
	assert.InDelta(t, spent, num(t, details, "spent_usd"), 1e-12)
	_, b = d.call("GET", "/v1/budget", nil)
	assert.InDelta(t, spent, num(t, b, "spent_usd"), 1e-12, "the refused call cost nothing")
	assert.Zero(t, num(t, b, "reserved_usd"))
	warnings := 0
	list, _, err := e.db.activity.List(context.Background(), d.id, paging.Page{Limit: 100})
	require.NoError(t, err)
	for _, en := range list {
		if en.DetailType == budget.EvWarning {
			warnings++
		}
	}
	assert.Equal(t, 1, warnings, "warned once this month")

	// Usage: by agent it sums to the total, which is the month's spend.
	st, u := d.call("GET", "/v1/usage?group_by=agent", nil)
	require.Equal(t, 200, st, u)
	total := u["total"].(map[string]any)
	assert.InDelta(t, spent, num(t, total, "usd"), 1e-12)
	var sum float64
	keys := map[string]bool{}
	for _, it := range u["items"].([]any) {
		sum += num(t, it.(map[string]any), "usd")
		keys[it.(map[string]any)["key"].(string)] = true
	}
	assert.InDelta(t, num(t, total, "usd"), sum, 1e-12, "usage by agent sums to the team's total")
	assert.True(t, keys["penny"], "%v", keys)
	for group, key := range map[string]string{"model": pricedModel, "conversation": conv, "day": time.Now().UTC().Format(time.DateOnly)} {
		st, u := d.call("GET", "/v1/usage?group_by="+group, nil)
		require.Equal(t, 200, st, u)
		var found bool
		for _, it := range u["items"].([]any) {
			found = found || it.(map[string]any)["key"] == key
		}
		assert.True(t, found, "%s %s in %v", group, key, u["items"])
		assert.InDelta(t, num(t, total, "usd"), num(t, u["total"].(map[string]any), "usd"), 1e-12, group)
	}

	// Isolation: the other team sees its own budget and usage only.
	_, ob := other.call("GET", "/v1/budget", nil)
	assert.Nil(t, ob["monthly_limit_usd"])
	assert.Zero(t, num(t, ob, "spent_usd"))
	_, ou := other.call("GET", "/v1/usage?group_by=conversation", nil)
	assert.Empty(t, ou["items"])

	// Bad input names the field and changes nothing.
	for _, bad := range []struct {
		method, path string
		body         any
		field        string
	}{
		{"PUT", "/v1/budget", map[string]any{}, "monthly_limit_usd"},
		{"PUT", "/v1/budget", map[string]any{"monthly_limit_usd": 0}, "monthly_limit_usd"},
		{"PUT", "/v1/budget", map[string]any{"monthly_limit_usd": -3}, "monthly_limit_usd"},
		{"PUT", "/v1/budget", map[string]any{"monthly_limit_usd": 2e6}, "monthly_limit_usd"},
		{"PUT", "/v1/budget", map[string]any{"monthly_limit_usd": "10"}, "monthly_limit_usd"},
		{"PUT", "/v1/budget", map[string]any{"monthly_limit_usd": 10, "warn_at": 1.5}, "warn_at"},
		{"PUT", "/v1/budget", map[string]any{"monthly_limit_usd": 10, "warn_at": 0}, "warn_at"},
		{"PUT", "/v1/budget", map[string]any{"monthly_limit_usd": 10, "extra": true}, "extra"},
		{"GET", "/v1/usage?group_by=team", nil, "group_by"},
		{"GET", "/v1/usage?from=2026-02-30", nil, "from"},
		{"GET", "/v1/usage?from=2026-03-10&to=2026-03-01", nil, "to"},
		{"GET", "/v1/usage?from=2026-01-01&to=2026-06-01", nil, "to"},
	} {
		resp := d.do(bad.method, bad.path, bad.body)
		require.Equal(t, 400, resp.Status, "%s %s %v: %s", bad.method, bad.path, bad.body, resp.Body)
		_, field, _ := resp.ErrorFields(t)
		assert.Equal(t, bad.field, field, "%s %v", bad.path, bad.body)
	}
	_, b = d.call("GET", "/v1/budget", nil)
	assert.InDelta(t, spent+0.000001, num(t, b, "monthly_limit_usd"), 1e-12, "a refused PUT changes nothing")
}

// A scripted workload of every kind of model call (chat turns, an
// executed task, a report, a consultation, a collaboration session), all
// on a priced model: the usage the CostGuard counted is, to the cent,
// what each of them recorded (the routing decision log, the task's usage,
// the report's, the consultation's and the session's cost), and by agent
// it sums to the team's total.
func TestTeamUsageReconcilesWithEveryRecordedCost(t *testing.T) {
	e := mustEnv(t)
	d := budgetTeam(t, e)
	for _, slug := range []string{"quinn", "rhea"} {
		mustAgent(t, e, d.id, slug, &agents.Model{Provider: "local", ID: pricedModel})
	}
	recorded := map[string]float64{}

	conv := d.conversation("")
	for _, q := range []string{"Can you review this Go function for bugs?", "What should we test first?"} {
		turn := d.post(conv, map[string]any{"content": q})
		st, dec := d.call("GET", "/v1/routing/decisions/"+turn["routing"].(map[string]any)["id"].(string), nil)
		require.Equal(t, 200, st, dec)
		recorded["decision log"] += num(t, dec, "actual_cost")
	}

	st, task := d.call("POST", "/v1/tasks", map[string]any{"assignee": "quinn", "title": "Summarize the release notes", "execute": true,
		"instructions": "Summarize the release notes in three lines."})
	require.Equal(t, 201, st, task)
	st, task = d.call("GET", "/v1/tasks/"+task["id"].(string)+"?wait=25", nil)
	require.Equal(t, 200, st)
	require.Equal(t, "completed", task["status"], task)
	recorded["task usage"] += num(t, task, "cost_usd")

	rep := d.waitReport(d.report(map[string]any{"type": "research_summary", "to": "rhea", "from": "penny", "title": "JWT",
		"parameters": reportParams["research_summary"]})["id"].(string))
	require.Equal(t, "completed", rep["status"], rep)
	recorded["report"] += num(t, rep, "cost_usd")

	c := d.consult(map[string]any{"requesting_agent": "penny", "question": "What should the release checklist hold?", "suggested_agent": "quinn"})
	st, c = d.call("GET", "/v1/consultations/"+c["collaboration_id"].(string), nil)
	require.Equal(t, 200, st, c)
	recorded["consultation"] += num(t, c, "cost_usd")

	st, ses := d.call("POST", "/v1/sessions", map[string]any{"pattern": "brainstorm", "lead": "penny", "goal": "Name the release",
		"participants": twoContributors("quinn", "rhea")})
	require.Equal(t, 201, st, ses)
	ses = d.waitSession(ses["id"].(string), 90*time.Second)
	require.Equal(t, "completed", ses["status"], ses)
	recorded["session"] += num(t, ses, "total_cost_usd")

	var want float64
	for what, usd := range recorded {
		require.Positive(t, usd, "%s recorded a cost", what)
		want += usd
	}
	st, u := d.call("GET", "/v1/usage?group_by=agent", nil)
	require.Equal(t, 200, st, u)
	total := num(t, u["total"].(map[string]any), "usd")
	assert.Equal(t, math.Round(want*100), math.Round(total*100), "usage %v and the recorded costs %v, to the cent", total, recorded)
	assert.InDelta(t, want, total, 1e-6, "and to the micro-dollar")
	var sum float64
	for _, it := range u["items"].([]any) {
		sum += num(t, it.(map[string]any), "usd")
	}
	assert.InDelta(t, total, sum, 1e-9, "usage by agent sums to the team's total")
	_, b := d.call("GET", "/v1/budget", nil)
	assert.InDelta(t, total, num(t, b, "spent_usd"), 1e-9, "the month's spend")
	t.Logf("recorded %v; usage total %.9f by agent %v", recorded, total, u["items"])
}
