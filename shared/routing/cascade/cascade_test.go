package cascade_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

var team = []agents.Agent{
	{Slug: "kyra", Name: "Kyra", Status: agents.StatusActive, Skills: []agents.Skill{{Name: "general-assistance", Description: "Answer general questions", Keywords: []string{"help", "plan"}}}},
	{Slug: "luke", Name: "Luke", Status: agents.StatusActive, Skills: []agents.Skill{{Name: "code-review", Description: "Review code for bugs", Domains: []string{"code"}, Actions: []string{"review"}, Keywords: []string{"code", "review", "bug", "function"}}}},
	{Slug: "dana", Name: "Dana", Status: agents.StatusActive, Skills: []agents.Skill{{Name: "data-analysis", Description: "Analyze metrics", Keywords: []string{"data", "metrics"}}}},
}

// gate returns fixed scores, or fails.
type gate struct {
	scores []routing.ExpertScore
	err    error
	calls  int
	got    expertgate.Request
}

func (g *gate) Score(_ context.Context, req expertgate.Request) (expertgate.Response, error) {
	g.calls++
	g.got = req
	if g.err != nil {
		return expertgate.Response{}, g.err
	}
	return expertgate.Response{Scores: g.scores, Complexity: routing.ComplexityOf(req.Query, 1), Tier: routing.TierChoice{Tier: "tier_2", ModelID: "big", EstimatedCost: 0.01},
		Loads: routing.LoadsOf(map[string]routing.Load{"luke": {LatencyMS: 120}}), GateLatencyMS: 4}, nil
}

func request(query string) cascade.Request {
	return cascade.Request{TeamID: "team_1", ConversationID: "conv_1", MessageID: "msg_1", Query: query, CurrentAgent: "kyra",
		Active: team, DefaultAgent: "kyra", Options: cascade.Options{Strategy: routing.Top1, Threshold: routing.DefaultThreshold},
		Start: time.Now(), At: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
}

func TestTheFlagCascadeDecidesWhoAnswers(t *testing.T) {
	scores := []routing.ExpertScore{{AgentSlug: "luke", AgentName: "Luke", Overall: 0.9, Confidence: 0.9, Label: "code review"}, {AgentSlug: "dana", AgentName: "Dana", Overall: 0.7, Confidence: 0.7}}
	on := cascade.Flags{Collaboration: true, ExpertGate: true, Ensemble: true}
	for _, tc := range []struct {
		name     string
		flags    cascade.Flags
		gate     *gate
		edit     func(*cascade.Request)
		strategy routing.Strategy
		reason   string
		agents   []string
		fallback bool
		note     bool
	}{
		{name: "collaboration off: the conversation's agent", flags: cascade.Flags{ExpertGate: true}, gate: &gate{scores: scores},
			edit: func(r *cascade.Request) { r.Query = "@dana review this function" }, strategy: routing.Direct, reason: routing.ReasonDirect, agents: []string{"kyra"}},
		{name: "collaboration off, agent paused: the default", edit: func(r *cascade.Request) { r.CurrentAgent = "wren" },
			strategy: routing.Direct, reason: routing.ReasonDefault, agents: []string{"kyra"}, fallback: true, note: true},
		{name: "a mention wins over the gate", flags: on, gate: &gate{scores: scores}, edit: func(r *cascade.Request) { r.Query = "@dana review this function" },
			strategy: routing.Mentioned, reason: routing.ReasonMention, agents: []string{"dana"}},
		{name: "a handed-off conversation stays with its agent", flags: on, gate: &gate{scores: scores},
			edit:     func(r *cascade.Request) { r.CurrentAgent, r.HandoffActive = "dana", true },
			strategy: routing.HandedOff, reason: routing.ReasonHandoff, agents: []string{"dana"}},
		{name: "gate off: the AgentRouter", flags: cascade.Flags{Collaboration: true}, gate: &gate{scores: scores},
			strategy: routing.Router, reason: routing.ReasonSkill, agents: []string{"luke"}},
		{name: "gate off, nobody's skill confident, not even the conversation's agent: the default", flags: cascade.Flags{Collaboration: true}, gate: &gate{scores: scores},
			edit:     func(r *cascade.Request) { r.Options.Threshold, r.CurrentAgent = 0.95, "dana" },
			strategy: routing.Router, reason: routing.ReasonDefault, agents: []string{"kyra"}, fallback: true},
		{name: "gate off, the conversation's agent confident: it stays", flags: cascade.Flags{Collaboration: true}, gate: &gate{scores: scores},
			edit:     func(r *cascade.Request) { r.CurrentAgent = "dana" },
			strategy: routing.Router, reason: routing.ReasonCurrent, agents: []string{"dana"}},
		{name: "gate off and the gate failing: the words-only AgentRouter", flags: cascade.Flags{Collaboration: true}, gate: &gate{err: errors.New("boom")},
			strategy: routing.Router, reason: routing.ReasonSkill, agents: []string{"luke"}},
		{name: "gate failed: the AgentRouter, and the decision says so", flags: on, gate: &gate{err: errors.New("boom")},
			strategy: routing.Router, reason: routing.ReasonSkill + " (expert gate unavailable)", agents: []string{"luke"}},
		{name: "gate on: the selector", flags: on, gate: &gate{scores: scores}, edit: func(r *cascade.Request) { r.Options.Strategy = routing.Ensemble },
			strategy: routing.Ensemble, reason: routing.ReasonGate, agents: []string{"luke", "dana"}},
		{name: "gate on, nobody confident, a new conversation: the default with a note", flags: on, gate: &gate{scores: scores},
			edit:     func(r *cascade.Request) { r.Options.Threshold, r.CurrentAgent = 0.95, "" },
			strategy: routing.Top1, reason: routing.ReasonFallback, agents: []string{"kyra"}, fallback: true, note: true},
		{name: "gate on, nobody confident, in a conversation: its agent keeps the turn", flags: on, gate: &gate{scores: scores},
			edit:     func(r *cascade.Request) { r.Options.Threshold, r.CurrentAgent = 0.95, "dana" },
			strategy: routing.Top1, reason: routing.ReasonCurrent, agents: []string{"dana"}},
		{name: "small talk: no scoring, the conversation's agent", flags: on, gate: &gate{scores: scores},
			edit:     func(r *cascade.Request) { r.Query, r.CurrentAgent = "Thanks a lot!", "luke" },
			strategy: routing.Greeting, reason: routing.ReasonGreeting, agents: []string{"luke"}},
		{name: "small talk in a new conversation: the default agent", flags: on, gate: &gate{scores: scores},
			edit:     func(r *cascade.Request) { r.Query, r.CurrentAgent = "hi there", "" },
			strategy: routing.Greeting, reason: routing.ReasonGreeting, agents: []string{"kyra"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request("Can you review this Go function for bugs?")
			if tc.edit != nil {
				tc.edit(&req)
			}
			r := &cascade.Router{Flags: tc.flags, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if tc.gate != nil {
				r.Gate = tc.gate
			}
			p, err := r.Route(context.Background(), req)
			require.NoError(t, err)
			d := p.Decision()
			assert.Equal(t, tc.strategy, d.Strategy)
			assert.Equal(t, tc.reason, d.Reason)
			assert.Equal(t, tc.agents, d.SelectedAgents)
			assert.Equal(t, tc.fallback, d.Fallback)
			assert.Equal(t, tc.note, p.Note != "", p.Note)
			assert.Equal(t, p.Skills[d.SelectedAgents[0]], d.Skill, "the decision names the skill that chose its first agent")
			if tc.fallback || tc.reason == routing.ReasonCurrent || tc.reason == routing.ReasonGreeting {
				assert.Empty(t, d.Skill, "no skill chose it")
			}
			assert.NotEmpty(t, d.Tier)
			assert.Len(t, d.Dimensions, 5)
			if tc.gate != nil && (!tc.flags.Collaboration || tc.strategy == routing.Mentioned || tc.strategy == routing.HandedOff || tc.strategy == routing.Greeting) {
				assert.Zero(t, tc.gate.calls, "the gate is not asked")
			}
			if tc.gate != nil && tc.flags.Collaboration && !tc.flags.ExpertGate && tc.strategy == routing.Router {
				// The AgentRouter ranks with the gate's skill match alone.
				assert.Equal(t, 1, tc.gate.calls)
				assert.True(t, tc.gate.got.SkillsOnly, "asked for the skill match alone")
				assert.Equal(t, cascade.DecidedByAgentRouter, d.DecidedBy)
			}
		})
	}
}

// The turn read the active agents to route: the gate gets them, so it
// reads only the counters and ratings.
func TestTheGateGetsTheAgentsTheTurnRead(t *testing.T) {
	g := &gate{scores: []routing.ExpertScore{{AgentSlug: "luke", Overall: 0.9, Confidence: 0.9}}}
	r := &cascade.Router{Gate: g, Flags: cascade.Flags{Collaboration: true, ExpertGate: true}}
	_, err := r.Route(context.Background(), request("Can you review this Go function for bugs?"))
	require.NoError(t, err)
	require.Equal(t, 1, g.calls)
	assert.Equal(t, team, g.got.Agents)
	assert.Equal(t, "team_1", g.got.TeamID)
}

func TestRouteBuildsTheWholeDecisionAndFinishItsOutcome(t *testing.T) {
	flags := cascade.Flags{Collaboration: true, ExpertGate: true}
	r := &cascade.Router{Flags: flags, Gate: &gate{scores: []routing.ExpertScore{{AgentSlug: "luke", Overall: 0.9, Confidence: 0.9}}}}
	req := request(strings.Repeat("review this function ", 50))
	p, err := r.Route(context.Background(), req)
	require.NoError(t, err)
	d := p.Decision()
	assert.True(t, strings.HasPrefix(d.ID, "rdec"), d.ID)
	assert.Equal(t, "team_1", d.TeamID)
	assert.Equal(t, "conv_1", d.ConversationID)
	assert.Equal(t, "msg_1", d.MessageID)
	assert.Len(t, []rune(d.Query), cascade.MaxLoggedQuery)
	assert.Equal(t, flags, d.Flags)
	assert.Equal(t, req.At, d.CreatedAt)
	assert.Equal(t, "big", d.Model)
	assert.Equal(t, 4.0, d.GateLatencyMS)
	assert.Positive(t, d.RouterLatencyMS)
	assert.Equal(t, 120.0, p.Loads.Of("luke").LatencyMS)
	assert.Empty(t, d.Outcome, "no outcome before the agents answer")

	attempts := []cascade.Attempt{{Agent: "luke", Outcome: cascade.OutcomeFailed, CostUSD: 0.001}, {Agent: "dana", Outcome: cascade.OutcomeAnswered, CostUSD: 0.002, Kept: true}}
	done := p.Finish(cascade.Result{Attempts: attempts, AnsweredBy: []string{"dana"}, SynthesisCostUSD: 0.004, Answered: true})
	assert.Equal(t, cascade.OutcomeAnswered, done.Outcome)
	assert.InDelta(t, 0.007, done.ActualCost, 1e-12)
	assert.Equal(t, attempts, done.Attempts)
	assert.Equal(t, []string{"dana"}, done.AnsweredBy)
	assert.Equal(t, d.ID, done.ID)
	assert.Empty(t, p.Decision().Attempts, "finishing returns a new decision")
	failed := p.Finish(cascade.Result{Attempts: attempts[:1]})
	assert.Equal(t, cascade.OutcomeFailed, failed.Outcome)

	// The log's JSON names are the API's.
	raw, err := json.Marshal(done)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	for _, k := range []string{"id", "conversation_id", "message_id", "query", "strategy", "reason", "scores", "selected_agents", "answered_by",
		"confidence", "confidence_threshold", "fallback_used", "complexity_score", "complexity_dimensions", "selected_tier", "selected_model",
		"estimated_cost", "actual_cost", "gate_latency_ms", "router_latency_ms", "attempts", "outcome", "flags", "created_at", "decided_by"} {
		assert.Contains(t, m, k)
	}
	assert.NotContains(t, m, "TeamID")
	assert.NotContains(t, m, "router_model", "the router model was not asked")
	assert.Equal(t, "gate", m["decided_by"])
	assert.Equal(t, map[string]any{"collaboration": true, "expert_gate": true, "ensemble": false, "router_model": false}, m["flags"])
}

func TestRouteWithNoAgentIsAConflict(t *testing.T) {
	req := request("hello")
	req.Active, req.DefaultAgent, req.CurrentAgent = nil, "", ""
	_, err := (&cascade.Router{}).Route(context.Background(), req)
	var ae *apperr.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, apperr.ECONFLICT, ae.Code)
	assert.Equal(t, "AgentUnavailable", ae.Reason)
}

func TestParseOptionsNamesTheField(t *testing.T) {
	bad, zero, tooMany := 1.5, 0, routing.MaxK+1
	for name, c := range map[string]struct {
		field string
		call  func() error
	}{
		"strategy":             {"strategy", func() error { _, err := cascade.ParseOptions("best", nil, nil); return err }},
		"k above the maximum":  {"k", func() error { _, err := cascade.ParseOptions("", &tooMany, nil); return err }},
		"k of 0 (minimum 1)":   {"k", func() error { _, err := cascade.ParseOptions("", &zero, nil); return err }},
		"confidence_threshold": {"confidence_threshold", func() error { _, err := cascade.ParseOptions("", nil, &bad); return err }},
	} {
		var ae *apperr.Error
		require.ErrorAs(t, c.call(), &ae, name)
		assert.Equal(t, apperr.EINVALID, ae.Code, name)
		assert.Equal(t, c.field, ae.Field, name)
	}
	o, err := cascade.ParseOptions("", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, cascade.Options{Strategy: routing.Top1, Threshold: routing.DefaultThreshold}, o)
}

// memLog is the decision log in memory, newest first.
type memLog []cascade.Decision

func (l memLog) GetDecision(_ context.Context, _, id string) (cascade.Decision, error) {
	for _, d := range l {
		if d.ID == id {
			return d, nil
		}
	}
	return cascade.Decision{}, apperr.NotFound("routing decision", id)
}
func (l memLog) ListDecisions(context.Context, string, cascade.DecisionFilter, paging.Page) ([]cascade.Decision, string, error) {
	return l, "", nil
}
func (l memLog) RecentDecisions(context.Context, string, time.Time, int) ([]cascade.Decision, error) {
	return l, nil
}

func TestTheLogAnswersTheAnalytics(t *testing.T) {
	ctx := context.Background()
	svc := &cascade.Service{Store: memLog{
		{ID: "rdec_3", Query: "review this function for bugs", Strategy: routing.Top1, SelectedAgents: []string{"luke"}, Confidence: 0.9, ActualCost: 0.02},
		{ID: "rdec_2", Query: "review the function for bugs please", Strategy: routing.Top1, SelectedAgents: []string{"luke"}, Confidence: 0.7},
		{ID: "rdec_1", Query: "which metrics trend down", Strategy: routing.Router, SelectedAgents: []string{"dana"}, Confidence: 0.5, Fallback: true},
	}}
	d, err := svc.Decision(ctx, "team_1", "rdec_2")
	require.NoError(t, err)
	assert.Equal(t, 0.7, d.Confidence)
	_, err = svc.Decision(ctx, "team_1", "rdec_9")
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
	_, _, err = svc.Decisions(ctx, "team_1", cascade.DecisionFilter{Strategy: "best"}, paging.Page{})
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))
	// Every strategy a decision is logged with filters the log (issue 43:
	// greeting decisions were logged and could not be asked for).
	for _, st := range []routing.Strategy{routing.Top1, routing.TopK, routing.Ensemble, routing.Cascade, routing.Direct, routing.Mentioned, routing.Router, routing.HandedOff, routing.Greeting} {
		_, _, err = svc.Decisions(ctx, "team_1", cascade.DecisionFilter{Strategy: string(st)}, paging.Page{})
		assert.NoError(t, err, st)
	}

	rep, err := svc.SelectedFor(ctx, "team_1", "review this function for bugs", 0, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, 3, rep.DecisionsScanned)
	assert.Equal(t, 2, rep.MatchedDecisions)
	assert.Equal(t, []cascade.AgentSelection{{Agent: "luke", Selected: 2, Share: 1, AvgConfidence: 0.8}}, rep.Agents)
	_, err = svc.SelectedFor(ctx, "team_1", " ", 0, time.Time{})
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))

	st, err := svc.ConfidenceByStrategy(ctx, "team_1", time.Time{})
	require.NoError(t, err)
	assert.Equal(t, []cascade.StrategyStats{
		{Strategy: "router", Decisions: 1, AvgConfidence: 0.5, FallbackRate: 1},
		{Strategy: "top_1", Decisions: 2, AvgConfidence: 0.8, AvgCostUSD: 0.01},
	}, st.Strategies)
}

// A decision no agent answered (and one read back without its lists) has
// [] and {} where the document types arrays and objects, never null.
func TestDecisionJSONHasNoNullLists(t *testing.T) {
	raw, err := json.Marshal(cascade.Decision{ID: "rdec_1", Outcome: cascade.OutcomeFailed})
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	for _, k := range []string{"scores", "selected_agents", "answered_by", "attempts"} {
		assert.Equal(t, []any{}, m[k], k)
	}
	assert.Equal(t, map[string]any{}, m["complexity_dimensions"])
	assert.Equal(t, "rdec_1", m["id"])
	assert.NotContains(t, m, "aggregation", "omitempty still holds")

	raw, err = json.Marshal(cascade.Decision{AnsweredBy: []string{"luke"}})
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"answered_by":["luke"]`)
}

// k is accepted from 1 to routing.MaxK and the confidence threshold from 0
// to 1, both bounds included.
func TestParseOptionsAcceptsTheBounds(t *testing.T) {
	for _, k := range []int{1, routing.MaxK} {
		o, err := cascade.ParseOptions("top_k", &k, nil)
		require.NoError(t, err, k)
		assert.Equal(t, k, o.K)
	}
	for _, th := range []float64{0, 1} {
		o, err := cascade.ParseOptions("", nil, &th)
		require.NoError(t, err, th)
		assert.Equal(t, th, o.Threshold)
	}
	for _, th := range []float64{-0.01, 1.01} {
		_, err := cascade.ParseOptions("", nil, &th)
		assert.Equal(t, apperr.EINVALID, apperr.Code(err), th)
	}
}

// The estimated cost of a turn is the tier's per agent that answers: an
// ensemble of two costs twice one agent's; a cascade stops at the first
// that answers and a fallback asks one agent, so each costs one agent's.
func TestTheEstimatedCostCountsTheAgentsThatAnswer(t *testing.T) {
	scores := []routing.ExpertScore{{AgentSlug: "luke", AgentName: "Luke", Overall: 0.9, Confidence: 0.9}, {AgentSlug: "dana", AgentName: "Dana", Overall: 0.7, Confidence: 0.7}}
	for _, c := range []struct {
		name     string
		strategy routing.Strategy
		thresh   float64
		agents   int
		cost     float64
	}{
		{"top_1", routing.Top1, 0.6, 1, 0.01},
		{"ensemble of two", routing.Ensemble, 0.6, 2, 0.02},
		{"top_k of two", routing.TopK, 0.6, 2, 0.02},
		{"cascade", routing.Cascade, 0.6, 2, 0.01},
		{"fallback", routing.Ensemble, 0.95, 1, 0.01},
	} {
		req := request("Can you review this Go function for bugs?")
		req.Options.Strategy, req.Options.Threshold, req.Options.K, req.CurrentAgent = c.strategy, c.thresh, 2, ""
		r := &cascade.Router{Flags: cascade.Flags{Collaboration: true, ExpertGate: true, Ensemble: true}, Gate: &gate{scores: scores},
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		p, err := r.Route(context.Background(), req)
		require.NoError(t, err, c.name)
		d := p.Decision()
		assert.Len(t, d.SelectedAgents, c.agents, c.name)
		assert.InDelta(t, c.cost, d.EstimatedCost, 1e-9, c.name)
	}
}

// The analytics accept their bounds: a query of exactly MaxQuery
// characters, a min_similarity of exactly 1, which an identical logged
// query meets (a similarity equal to the minimum counts).
func TestSelectedForAtItsBounds(t *testing.T) {
	ctx := context.Background()
	q := "review this function for bugs"
	svc := &cascade.Service{Store: memLog{
		{ID: "rdec_2", Query: q, Strategy: routing.Top1, SelectedAgents: []string{"luke"}, Confidence: 0.9},
		{ID: "rdec_1", Query: "review the function for bugs in the parser", Strategy: routing.Top1, SelectedAgents: []string{"luke"}, Confidence: 0.7},
	}}
	rep, err := svc.SelectedFor(ctx, "team_1", q, 1, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, 1, rep.MatchedDecisions, "only the identical query is as similar as 1")
	_, err = svc.SelectedFor(ctx, "team_1", q, 1.01, time.Time{})
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))

	_, err = svc.SelectedFor(ctx, "team_1", strings.Repeat("x", cascade.MaxQuery), 0, time.Time{})
	assert.NoError(t, err)
	_, err = svc.SelectedFor(ctx, "team_1", strings.Repeat("x", cascade.MaxQuery+1), 0, time.Time{})
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))
}

// The router model's choice is checked: a candidate, with a confidence
// from 0 to 1, both included.
func TestAChoiceIsACandidateWithAConfidenceFromZeroToOne(t *testing.T) {
	req := cascade.ChoiceRequest{Candidates: []cascade.Candidate{{Agent: "luke"}, {Agent: "dana"}}}
	for _, c := range []float64{0, 1} {
		assert.NoError(t, req.Check(cascade.Choice{Agent: "luke", Confidence: c}), c)
	}
	for _, c := range []float64{-0.01, 1.01} {
		assert.ErrorIs(t, req.Check(cascade.Choice{Agent: "luke", Confidence: c}), cascade.ErrInvalidChoice, c)
	}
	assert.ErrorIs(t, req.Check(cascade.Choice{Agent: "kyra", Confidence: 0.5}), cascade.ErrInvalidChoice, "not a candidate")
}

// The router's own tier models, when configured, name the model of a turn
// the gate did not score (the baseline router here); the baseline's skill
// match names the skill the chosen agent answers with.
func TestTheBaselineUsesTheConfiguredTiersAndNamesTheSkill(t *testing.T) {
	tiers := routing.TierModels{routing.Tier0: "mine-0", routing.Tier1: "mine-1", routing.Tier2: "mine-2"}
	r := &cascade.Router{Flags: cascade.Flags{Collaboration: true}, Tiers: tiers, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	p, err := r.Route(context.Background(), request("Can you review this Go function for bugs?"))
	require.NoError(t, err)
	d := p.Decision()
	assert.Equal(t, []string{"luke"}, d.SelectedAgents)
	assert.True(t, strings.HasPrefix(d.Model, "mine-"), d.Model)
	assert.Equal(t, "code-review", p.Skills["luke"])
	assert.Equal(t, "code-review", d.Skill)
}

// When nobody matches and the team's default agent cannot answer (paused
// here), the conversation's current agent does.
func TestTheFallbackIsTheCurrentAgentWhenTheDefaultCannotAnswer(t *testing.T) {
	r := &cascade.Router{Flags: cascade.Flags{Collaboration: true, ExpertGate: true}, Gate: &gate{scores: []routing.ExpertScore{{AgentSlug: "luke", AgentName: "Luke", Overall: 0.2, Confidence: 0.2}}},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	req := request("hmm, thoughts on it?")
	req.DefaultAgent, req.CurrentAgent = "wren", "dana"
	p, err := r.Route(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, []string{"dana"}, p.Decision().SelectedAgents)
}

// The gate is asked to score the current agent wherever it ranks (for
// continuity), and the invited participants.
func TestTheGateScoresTheCurrentAgentAndTheInvited(t *testing.T) {
	g := &gate{scores: []routing.ExpertScore{{AgentSlug: "luke", AgentName: "Luke", Overall: 0.9, Confidence: 0.9}}}
	r := &cascade.Router{Flags: cascade.Flags{Collaboration: true, ExpertGate: true}, Gate: g, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	req := request("Can you review this Go function for bugs?")
	req.CurrentAgent, req.Invited = "dana", []string{"kyra"}
	_, err := r.Route(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, []string{"dana", "kyra"}, g.got.Include)
	req.CurrentAgent = ""
	_, err = r.Route(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, []string{"kyra"}, g.got.Include, "no current agent")
}
