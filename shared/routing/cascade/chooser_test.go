package cascade_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// chooser answers with a fixed choice or error, or blocks until its
// context ends; it records what it was asked.
type chooser struct {
	choice cascade.Choice
	err    error
	block  bool
	calls  int
	got    cascade.ChoiceRequest
	left   time.Duration // what was left of the call's context
}

func (c *chooser) Choose(ctx context.Context, req cascade.ChoiceRequest) (cascade.Choice, error) {
	c.calls++
	c.got = req
	if dl, ok := ctx.Deadline(); ok {
		c.left = time.Until(dl)
	}
	if c.block {
		<-ctx.Done()
		return cascade.Choice{ModelID: "tiny"}, ctx.Err()
	}
	return c.choice, c.err
}

// picks is a valid choice of agent with confidence, as the adapter returns it.
func picks(agent string, confidence float64) *chooser {
	return &chooser{choice: cascade.Choice{Agent: agent, Skill: "s", Confidence: confidence, Reason: "because", ModelID: "tiny", InputTokens: 90, OutputTokens: 20, CostUSD: 0.0003}}
}

// routeModel routes with the router model flag on and no current agent
// (continuity would keep it), edited by edit.
func routeModel(t *testing.T, scores []routing.ExpertScore, c *chooser, edit func(*cascade.Request, *cascade.Router)) (cascade.Plan, cascade.Decision) {
	t.Helper()
	r := &cascade.Router{Gate: &gate{scores: scores}, Chooser: c, Flags: cascade.Flags{Collaboration: true, ExpertGate: true, Ensemble: true, RouterModel: true}}
	req := request("Which of you should look at this?")
	req.CurrentAgent = ""
	if edit != nil {
		edit(&req, r)
	}
	p, err := r.Route(context.Background(), req)
	require.NoError(t, err)
	return p, p.Decision()
}

// The model is asked exactly when the gate is unsure: the top two within
// UnsureMargin (inclusive), or the best in [threshold − NearThreshold,
// threshold); one step past either margin, the gate decides alone.
func TestTheRouterModelIsAskedOnlyWhenTheGateIsUnsure(t *testing.T) {
	th := routing.DefaultThreshold
	m, near := cascade.UnsureMargin, cascade.NearThreshold
	for _, tc := range []struct {
		name   string
		scores []routing.ExpertScore
		asked  bool
	}{
		{"top two exactly at the margin", []routing.ExpertScore{sc("luke", 0.8), sc("dana", 0.8-m)}, true},
		{"top two exactly at the margin as written (0.8 − 0.7 is 0.10000000000000009)", []routing.ExpertScore{sc("luke", 0.8), sc("dana", 0.7)}, true},
		{"top two one past the margin", []routing.ExpertScore{sc("luke", 0.8), sc("dana", 0.8-m-0.001)}, false},
		{"top two within the margin, ordered by overall not confidence", []routing.ExpertScore{sc("dana", 0.75), sc("luke", 0.8)}, true},
		{"a clear winner", []routing.ExpertScore{sc("luke", 0.95), sc("dana", 0.3)}, false},
		{"best exactly at threshold − near", []routing.ExpertScore{sc("luke", th-near), sc("dana", 0.1)}, true},
		{"best one past threshold − near", []routing.ExpertScore{sc("luke", th-near-0.001), sc("dana", 0.1)}, false},
		{"best just under the threshold", []routing.ExpertScore{sc("luke", th-0.001), sc("dana", 0.1)}, true},
		{"best exactly at the threshold, alone", []routing.ExpertScore{sc("luke", th), sc("dana", th-m-0.001)}, false},
		{"nobody near", []routing.ExpertScore{sc("luke", 0.2), sc("dana", 0.1)}, false},
		{"one confident agent, alone", []routing.ExpertScore{sc("luke", 0.9)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := picks("kyra", 0.9)
			_, d := routeModel(t, tc.scores, c, nil)
			if !tc.asked {
				assert.Zero(t, c.calls)
				assert.Nil(t, d.RouterModel)
				assert.Equal(t, cascade.DecidedByGate, d.DecidedBy)
				return
			}
			require.Equal(t, 1, c.calls)
			assert.Equal(t, []string{"kyra"}, d.SelectedAgents)
			assert.Equal(t, cascade.DecidedByRouterModel, d.DecidedBy)
			assert.Equal(t, cascade.ReasonRouterModel, d.Reason)
		})
	}
	// With a threshold of the request's own, the margins move with it.
	c := picks("kyra", 0.9)
	_, d := routeModel(t, []routing.ExpertScore{sc("luke", 0.3-near), sc("dana", 0.01)}, c, func(r *cascade.Request, _ *cascade.Router) { r.Options.Threshold = 0.3 })
	assert.Equal(t, 1, c.calls)
	assert.Equal(t, []string{"kyra"}, d.SelectedAgents)
}

// When the model's answer is not usable, the gate's choice stands and the
// decision says why.
func TestTheGatesChoiceStandsWhenTheModelFailsOrIsUnsure(t *testing.T) {
	tie := []routing.ExpertScore{sc("luke", 0.8), sc("dana", 0.75)}
	for _, tc := range []struct {
		name    string
		c       *chooser
		outcome string
		agents  []string
		errPart string
	}{
		{"chosen at exactly the minimum confidence", picks("dana", cascade.MinChoiceConfidence), cascade.ChoiceChosen, []string{"dana"}, ""},
		{"low confidence", picks("dana", cascade.MinChoiceConfidence-0.001), cascade.ChoiceLowConfidence, []string{"luke"}, ""},
		{"an agent that is not a candidate", picks("wren", 0.9), cascade.ChoiceInvalid, []string{"luke"}, `"wren" is not a candidate`},
		{"a confidence above 1", picks("dana", 1.2), cascade.ChoiceInvalid, []string{"luke"}, "not in [0, 1]"},
		{"an answer that does not parse", &chooser{choice: cascade.Choice{ModelID: "tiny", CostUSD: 0.0002}, err: fmt.Errorf("%w: unexpected end of JSON input", cascade.ErrInvalidChoice)},
			cascade.ChoiceInvalid, []string{"luke"}, "unexpected end of JSON input"},
		{"an error", &chooser{err: errors.New("throttled")}, cascade.ChoiceFailed, []string{"luke"}, "throttled"},
		{"a timeout", &chooser{block: true}, cascade.ChoiceFailed, []string{"luke"}, "timed out after 20ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			p, d := routeModel(t, tie, tc.c, func(_ *cascade.Request, r *cascade.Router) { r.ChooserTimeout = 20 * time.Millisecond })
			assert.Less(t, time.Since(start), 2*time.Second, "the call is bounded")
			require.Equal(t, 1, tc.c.calls)
			require.NotNil(t, d.RouterModel)
			assert.Equal(t, tc.outcome, d.RouterModel.Outcome)
			assert.Equal(t, tc.agents, d.SelectedAgents)
			assert.Contains(t, d.RouterModel.Error, tc.errPart)
			if tc.outcome == cascade.ChoiceChosen {
				assert.Equal(t, cascade.DecidedByRouterModel, d.DecidedBy)
				assert.Equal(t, cascade.ReasonRouterModel, d.Reason)
				assert.InDelta(t, 0.75, d.Confidence, 1e-9, "the decision keeps the gate's calibrated confidence of the agent chosen")
			} else {
				assert.Equal(t, cascade.DecidedByGate, d.DecidedBy)
				assert.Equal(t, routing.ReasonGate, d.Reason)
				assert.InDelta(t, 0.8, d.Confidence, 1e-9)
			}
			// The call costs what it cost, whatever came of it.
			done := p.Finish(cascade.Result{Attempts: []cascade.Attempt{{Agent: d.SelectedAgents[0], CostUSD: 0.001}}, Answered: true})
			assert.InDelta(t, 0.001+tc.c.choice.CostUSD, done.ActualCost, 1e-12)
			assert.Equal(t, tc.c.choice.CostUSD, d.RouterModel.CostUSD)
		})
	}
}

// The decision records the call: model, choice, outcome, latency, tokens
// and cost.
func TestTheDecisionRecordsTheRouterModelsCall(t *testing.T) {
	// Nobody confident: the default would stand in, the model chooses.
	p, d := routeModel(t, []routing.ExpertScore{sc("luke", 0.55), sc("dana", 0.3)}, picks("luke", 0.8), nil)
	assert.Equal(t, []string{"luke"}, d.SelectedAgents)
	assert.False(t, d.Fallback, "the model chose: no fallback")
	assert.Empty(t, p.Note, "and no note that the default is answering")
	require.NotNil(t, d.RouterModel)
	got := *d.RouterModel
	assert.GreaterOrEqual(t, got.LatencyMS, 0.0)
	got.LatencyMS = 0
	assert.Equal(t, cascade.RouterModelCall{Model: "tiny", Agent: "luke", Skill: "s", Confidence: 0.8, Reason: "because", Outcome: cascade.ChoiceChosen,
		InputTokens: 90, OutputTokens: 20, CostUSD: 0.0003}, got)
	assert.True(t, d.Flags.RouterModel)
}

// The model is told the question, the candidates (the gate's most
// confident, each with the skill matched and its description) and the
// conversation's current agent.
func TestTheRouterModelIsToldTheCandidates(t *testing.T) {
	luke := sc("luke", 0.8)
	luke.MatchingSkills = []string{"code-review"}
	c := picks("luke", 0.9)
	routeModel(t, []routing.ExpertScore{luke, sc("dana", 0.78)}, c, nil)
	assert.Equal(t, cascade.ChoiceRequest{TeamID: "team_1", ConversationID: "conv_1", Question: "Which of you should look at this?", Candidates: []cascade.Candidate{
		{Agent: "luke", Name: "Luke", Skill: "code-review", Description: "Review code for bugs"},
		{Agent: "dana", Name: "Dana", Skill: "data-analysis", Description: "Analyze metrics"},
		{Agent: "kyra", Name: "Kyra", Skill: "general-assistance", Description: "Answer general questions"}, // the default
	}}, c.got)

	// At most MaxCandidates by confidence, then the current and default
	// agents; removed agents never.
	var big []agents.Agent
	var scores []routing.ExpertScore
	for i := range 12 {
		slug := fmt.Sprintf("a%02d", i)
		big = append(big, agents.Agent{Slug: slug, Name: slug, Status: agents.StatusActive, Skills: []agents.Skill{{Name: "s" + slug, Description: "d"}}})
		scores = append(scores, sc(slug, 0.8-float64(i)*0.01))
	}
	c = picks("a00", 0.9)
	routeModel(t, scores, c, func(r *cascade.Request, _ *cascade.Router) {
		r.Active, r.DefaultAgent, r.Removed = big, "a11", []string{"a01"}
	})
	var got []string
	for _, cand := range c.got.Candidates {
		got = append(got, cand.Agent)
	}
	assert.Equal(t, []string{"a00", "a02", "a03", "a04", "a05", "a06", "a07", "a08", "a11"}, got)
}

// Continuity is weighed first: when it keeps the current agent, the model
// is not asked; when another agent is clearly better, the model is asked,
// told the current agent, and its choice stands (it may keep the current
// agent).
func TestContinuityComesBeforeTheRouterModel(t *testing.T) {
	c := picks("dana", 0.9)
	_, d := routeModel(t, []routing.ExpertScore{sc("luke", 0.8), sc("dana", 0.75)}, c, func(r *cascade.Request, _ *cascade.Router) { r.CurrentAgent = "luke" })
	assert.Zero(t, c.calls, "luke, the current agent, is the gate's choice: nothing to ask")
	assert.Equal(t, []string{"luke"}, d.SelectedAgents)
	_, d = routeModel(t, []routing.ExpertScore{sc("dana", 0.8), sc("luke", 0.75)}, c, func(r *cascade.Request, _ *cascade.Router) { r.CurrentAgent = "luke" })
	assert.Zero(t, c.calls, "dana is not clearly better: continuity keeps luke, nothing to ask")
	assert.Equal(t, []string{"luke"}, d.SelectedAgents)
	assert.Equal(t, routing.ReasonCurrent, d.Reason)

	// kyra is current but both luke and dana are clearly better and tied.
	c = picks("kyra", 0.9)
	_, d = routeModel(t, []routing.ExpertScore{sc("luke", 0.8), sc("dana", 0.75), sc("kyra", 0.3)}, c, func(r *cascade.Request, _ *cascade.Router) { r.CurrentAgent = "kyra" })
	require.Equal(t, 1, c.calls)
	assert.Equal(t, "kyra", c.got.CurrentAgent)
	assert.Equal(t, []string{"kyra"}, d.SelectedAgents, "the model, told the current agent, kept it")
	assert.Equal(t, cascade.DecidedByRouterModel, d.DecidedBy)
}

// Greetings, mentions and handoffs never ask the model, nor the flag off,
// nor strategies that ask several agents; CASCADE puts its choice first.
func TestTheRouterModelIsAskedOnlyOnTheGatesPath(t *testing.T) {
	tie := []routing.ExpertScore{sc("luke", 0.8), sc("dana", 0.75), sc("kyra", 0.7)}
	for _, tc := range []struct {
		name string
		edit func(*cascade.Request, *cascade.Router)
		by   string
	}{
		{"greeting", func(r *cascade.Request, _ *cascade.Router) { r.Query = "thanks!" }, cascade.DecidedByGreeting},
		{"mention", func(r *cascade.Request, _ *cascade.Router) { r.Query = "@dana which of you should look at this?" }, cascade.DecidedByMention},
		{"handoff", func(r *cascade.Request, _ *cascade.Router) { r.CurrentAgent, r.HandoffActive = "dana", true }, cascade.DecidedByHandoff},
		{"flag off", func(_ *cascade.Request, r *cascade.Router) { r.Flags.RouterModel = false }, cascade.DecidedByGate},
		{"no chooser", func(_ *cascade.Request, r *cascade.Router) { r.Chooser = nil }, cascade.DecidedByGate},
		{"top_k", func(r *cascade.Request, _ *cascade.Router) { r.Options.Strategy = routing.TopK }, cascade.DecidedByGate},
		{"ensemble", func(r *cascade.Request, _ *cascade.Router) { r.Options.Strategy = routing.Ensemble }, cascade.DecidedByGate},
		{"collaboration off", func(_ *cascade.Request, r *cascade.Router) { r.Flags.Collaboration = false }, cascade.DecidedByDirect},
		{"gate off", func(_ *cascade.Request, r *cascade.Router) { r.Flags.ExpertGate = false }, cascade.DecidedByAgentRouter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := picks("kyra", 0.9)
			_, d := routeModel(t, tie, c, tc.edit)
			assert.Zero(t, c.calls)
			assert.Nil(t, d.RouterModel)
			assert.Equal(t, tc.by, d.DecidedBy)
		})
	}
	// TOP_K downgraded to TOP_1 (ensemble flag off) is TOP_1: asked.
	c := picks("dana", 0.9)
	_, d := routeModel(t, tie, c, func(r *cascade.Request, rt *cascade.Router) {
		r.Options.Strategy, rt.Flags.Ensemble = routing.TopK, false
	})
	assert.Equal(t, 1, c.calls)
	assert.Equal(t, []string{"dana"}, d.SelectedAgents)
	// CASCADE: the choice first, then the rest of the gate's cascade, k kept.
	c = picks("kyra", 0.9)
	_, d = routeModel(t, tie, c, func(r *cascade.Request, _ *cascade.Router) { r.Options.Strategy = routing.Cascade })
	assert.Equal(t, []string{"kyra", "luke", "dana"}, d.SelectedAgents)
	assert.Equal(t, routing.Cascade, d.Strategy)
	// A CASCADE the default would have answered alone keeps it second.
	c = picks("luke", 0.9)
	_, d = routeModel(t, []routing.ExpertScore{sc("luke", 0.5), sc("dana", 0.2)}, c, func(r *cascade.Request, _ *cascade.Router) { r.Options.Strategy = routing.Cascade })
	assert.Equal(t, []string{"luke", "kyra"}, d.SelectedAgents)
	assert.False(t, d.Fallback)
}

// The call is bounded by ChooserTimeout and by a quarter of what is left
// of the turn.
func TestTheRouterModelsCallIsBounded(t *testing.T) {
	tie := []routing.ExpertScore{sc("luke", 0.8), sc("dana", 0.75)}
	c := picks("dana", 0.9)
	r := &cascade.Router{Gate: &gate{scores: tie}, Chooser: c, Flags: cascade.Flags{Collaboration: true, ExpertGate: true, RouterModel: true}}
	req := request("Which of you should look at this?")
	req.CurrentAgent = ""
	_, err := r.Route(context.Background(), req)
	require.NoError(t, err)
	assert.InDelta(t, cascade.ChooserTimeout.Seconds(), c.left.Seconds(), 0.1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = r.Route(ctx, req)
	require.NoError(t, err)
	assert.InDelta(t, 0.5, c.left.Seconds(), 0.1, "a quarter of the 2 s left")
}

// A candidate added as the default agent (outside the most confident)
// comes with the skill the gate matched for it, the first of its matches
// the agent has; without a match, its first user-facing skill.
func TestACandidateComesWithItsMatchedSkill(t *testing.T) {
	var big []agents.Agent
	var scores []routing.ExpertScore
	for i := range 12 {
		slug := fmt.Sprintf("a%02d", i)
		big = append(big, agents.Agent{Slug: slug, Name: slug, Status: agents.StatusActive, Skills: []agents.Skill{
			{Name: "triage-" + slug, Description: "internal", InternalOnly: true},
			{Name: "s" + slug, Description: "d"},
			{Name: "deep-" + slug, Description: "deep d"}}})
		scores = append(scores, sc(slug, 0.8-float64(i)*0.01))
	}
	scores[11].MatchingSkills = []string{"deep-a11", "gone"}
	c := picks("a00", 0.9)
	routeModel(t, scores, c, func(r *cascade.Request, _ *cascade.Router) { r.Active, r.DefaultAgent = big, "a11" })
	got := map[string]string{}
	for _, cand := range c.got.Candidates {
		got[cand.Agent] = cand.Skill
	}
	assert.Equal(t, "deep-a11", got["a11"], "the default agent's matched skill")
	assert.Equal(t, "sa00", got["a00"], "no match: the first user-facing skill")
}

// The model chooses between two candidates or more; with one, there is
// nothing to choose and it is not asked.
func TestTheRouterModelNeedsTwoCandidates(t *testing.T) {
	c := picks("dana", 0.9)
	_, d := routeModel(t, []routing.ExpertScore{sc("luke", 0.8), sc("dana", 0.78)}, c, func(r *cascade.Request, _ *cascade.Router) { r.DefaultAgent = "" })
	require.Len(t, c.got.Candidates, 2)
	assert.Equal(t, 1, c.calls, "two candidates: asked")
	assert.Equal(t, []string{"dana"}, d.SelectedAgents)

	c = picks("luke", 0.9)
	_, d = routeModel(t, []routing.ExpertScore{sc("luke", routing.DefaultThreshold-0.01)}, c, func(r *cascade.Request, _ *cascade.Router) { r.DefaultAgent = "" })
	assert.Zero(t, c.calls, "one candidate: nothing to choose")
	assert.Nil(t, d.RouterModel)
}
