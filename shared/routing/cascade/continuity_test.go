package cascade_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

func routeWith(t *testing.T, g *gate, edit func(*cascade.Request)) cascade.Decision {
	t.Helper()
	r := &cascade.Router{Gate: g, Flags: cascade.Flags{Collaboration: true, ExpertGate: true, Ensemble: true}}
	req := request("Can you explain the second point in more detail?")
	edit(&req)
	p, err := r.Route(context.Background(), req)
	require.NoError(t, err)
	return p.Decision()
}

func sc(slug string, confidence float64) routing.ExpertScore {
	return routing.ExpertScore{AgentSlug: slug, AgentName: slug, Overall: confidence, Confidence: confidence}
}

// The current agent keeps the turn unless another agent is at least
// ContinuityMargin more confident, exactly at the margin included.
func TestTheCurrentAgentKeepsTheTurnWithinTheMargin(t *testing.T) {
	m := cascade.ContinuityMargin
	for _, tc := range []struct {
		name    string
		scores  []routing.ExpertScore
		want    string
		reason  string
		overall float64
	}{
		{"nobody matches: a follow-up stays", []routing.ExpertScore{sc("kyra", 0.1), sc("luke", 0.05)}, "luke", routing.ReasonCurrent, 0},
		{"another agent just under the margin: stays", []routing.ExpertScore{sc("dana", 0.7+m-0.001), sc("luke", 0.7)}, "luke", routing.ReasonCurrent, 0},
		{"another agent exactly at the margin: moves", []routing.ExpertScore{sc("dana", 0.7+m), sc("luke", 0.7)}, "dana", routing.ReasonGate, 0},
		{"the current agent not confident, another clearly is: moves", []routing.ExpertScore{sc("dana", 0.9), sc("luke", 0.2)}, "dana", routing.ReasonGate, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := routeWith(t, &gate{scores: tc.scores}, func(r *cascade.Request) { r.CurrentAgent = "luke" })
			assert.Equal(t, []string{tc.want}, d.SelectedAgents)
			assert.Equal(t, tc.reason, d.Reason)
			assert.False(t, d.Fallback)
		})
	}
	// An explicit keyword match of a skill with override_continuity moves
	// the turn whatever the margin.
	over := sc("dana", 0.72)
	over.Explicit, over.Override = true, true
	d := routeWith(t, &gate{scores: []routing.ExpertScore{over, sc("luke", 0.7)}}, func(r *cascade.Request) { r.CurrentAgent = "luke" })
	assert.Equal(t, []string{"dana"}, d.SelectedAgents)
	over.Override = false
	d = routeWith(t, &gate{scores: []routing.ExpertScore{over, sc("luke", 0.7)}}, func(r *cascade.Request) { r.CurrentAgent = "luke" })
	assert.Equal(t, []string{"luke"}, d.SelectedAgents, "explicit but not override_continuity")
}

func TestContinuityInMultiAgentStrategies(t *testing.T) {
	scores := []routing.ExpertScore{sc("dana", 0.9), sc("kyra", 0.85), sc("luke", 0.8)}
	// ENSEMBLE at threshold 0.86: only dana is confident; luke is within
	// the margin of her, so it is asked too.
	d := routeWith(t, &gate{scores: scores}, func(r *cascade.Request) {
		r.CurrentAgent, r.Options.Strategy, r.Options.Threshold = "luke", routing.Ensemble, 0.86
	})
	assert.Equal(t, []string{"dana", "luke"}, d.SelectedAgents)
	// TOP_K with k=2 keeps k: luke takes the last place.
	k := 2
	d = routeWith(t, &gate{scores: scores}, func(r *cascade.Request) {
		r.CurrentAgent, r.Options.Strategy, r.Options.K = "luke", routing.TopK, k
	})
	assert.Equal(t, []string{"dana", "luke"}, d.SelectedAgents)
	// Out of the margin: not added.
	far := []routing.ExpertScore{sc("dana", 0.95), sc("kyra", 0.85), sc("luke", 0.5)}
	d = routeWith(t, &gate{scores: far}, func(r *cascade.Request) {
		r.CurrentAgent, r.Options.Strategy, r.Options.Threshold = "luke", routing.Ensemble, 0.6
	})
	assert.Equal(t, []string{"dana", "kyra"}, d.SelectedAgents)
	// CASCADE starts with the current agent within the margin.
	d = routeWith(t, &gate{scores: scores}, func(r *cascade.Request) { r.CurrentAgent, r.Options.Strategy = "luke", routing.Cascade })
	assert.Equal(t, []string{"luke", "dana", "kyra"}, d.SelectedAgents)
}

func TestParticipantsAreWeighedAndRemovedAgentsNeverAnswer(t *testing.T) {
	// Invited: preferred by ParticipantPreference in a near tie.
	tie := []routing.ExpertScore{sc("dana", 0.8), sc("luke", 0.78)}
	d := routeWith(t, &gate{scores: tie}, func(r *cascade.Request) { r.CurrentAgent, r.Invited = "", []string{"luke"} })
	assert.Equal(t, []string{"luke"}, d.SelectedAgents)
	assert.InDelta(t, 0.78+cascade.ParticipantPreference, d.Confidence, 1e-9)
	d = routeWith(t, &gate{scores: tie}, func(r *cascade.Request) { r.CurrentAgent = "" })
	assert.Equal(t, []string{"dana"}, d.SelectedAgents, "without the invitation dana wins")

	// Removed: not sent to the gate, never chosen, even as the current
	// agent or the default.
	g := &gate{scores: []routing.ExpertScore{sc("luke", 0.2), sc("dana", 0.1)}}
	d = routeWith(t, g, func(r *cascade.Request) { r.CurrentAgent, r.Removed = "kyra", []string{"kyra"} })
	for _, a := range g.got.Agents {
		assert.NotEqual(t, "kyra", a.Slug)
	}
	assert.Equal(t, []string{"luke"}, d.SelectedAgents, "default and current removed: the best agent that was not")
	assert.True(t, d.Fallback)
	// The default removed, the current agent answers the fallback.
	d = routeWith(t, &gate{scores: []routing.ExpertScore{sc("luke", 0.2)}}, func(r *cascade.Request) {
		r.CurrentAgent, r.Removed, r.Options.Strategy = "dana", []string{"kyra"}, routing.Top1
	})
	assert.Equal(t, []string{"dana"}, d.SelectedAgents)
	// Small talk with the current agent removed goes to the default.
	d = routeWith(t, &gate{}, func(r *cascade.Request) { r.Query, r.CurrentAgent, r.Removed = "hello!", "luke", []string{"luke"} })
	assert.Equal(t, []string{"kyra"}, d.SelectedAgents)
	// An @mention of a removed agent answers (the turn re-joins it).
	d = routeWith(t, &gate{}, func(r *cascade.Request) { r.Query, r.Removed = "@dana what do you think?", []string{"dana"} })
	assert.Equal(t, []string{"dana"}, d.SelectedAgents)
	assert.Equal(t, routing.ReasonMention, d.Reason)
}

// An agent with a model of its own overrides the tier's: the decision
// names the model used and why.
func TestAnAgentsOwnModelOverridesTheTierInTheDecision(t *testing.T) {
	d := routeWith(t, &gate{scores: []routing.ExpertScore{sc("luke", 0.9)}}, func(r *cascade.Request) {
		r.CurrentAgent = ""
		r.Active = append([]agents.Agent(nil), r.Active...)
		r.Active[1].Model = &agents.Model{ID: "anthropic.claude-own"}
	})
	require.Equal(t, []string{"luke"}, d.SelectedAgents)
	assert.Equal(t, "anthropic.claude-own", d.Model)
	assert.Contains(t, d.TierOverrideReason, "own model anthropic.claude-own")
	d = routeWith(t, &gate{scores: []routing.ExpertScore{sc("luke", 0.9)}}, func(r *cascade.Request) { r.CurrentAgent = "" })
	assert.Equal(t, "big", d.Model)
	assert.Empty(t, d.TierOverrideReason)
}

// The team's default agent never takes a conversation from the specialist
// it is with on confidence alone (a follow-up a team classifier reads as
// the default's small talk): it keeps it even far past the margin, while
// another specialist past the margin still takes it, and the default
// with an explicit override_continuity keyword does too.
func TestTheDefaultAgentDoesNotTakeTheTurnFromTheSpecialist(t *testing.T) {
	d := routeWith(t, &gate{scores: []routing.ExpertScore{sc("kyra", 0.97), sc("luke", 0.01)}}, func(r *cascade.Request) { r.CurrentAgent = "luke" })
	assert.Equal(t, []string{"luke"}, d.SelectedAgents)
	assert.Equal(t, routing.ReasonCurrent, d.Reason)

	d = routeWith(t, &gate{scores: []routing.ExpertScore{sc("dana", 0.97), sc("luke", 0.01)}}, func(r *cascade.Request) { r.CurrentAgent = "luke" })
	assert.Equal(t, []string{"dana"}, d.SelectedAgents, "another specialist still does")

	over := sc("kyra", 0.97)
	over.Explicit, over.Override = true, true
	d = routeWith(t, &gate{scores: []routing.ExpertScore{over, sc("luke", 0.01)}}, func(r *cascade.Request) { r.CurrentAgent = "luke" })
	assert.Equal(t, []string{"kyra"}, d.SelectedAgents, "an override keyword moves it")

	d = routeWith(t, &gate{scores: []routing.ExpertScore{sc("kyra", 0.97), sc("luke", 0.01)}}, func(r *cascade.Request) { r.CurrentAgent = "" })
	assert.Equal(t, []string{"kyra"}, d.SelectedAgents, "a new conversation goes to whoever is confident")
}

// With TOP_K and ENSEMBLE too the default does not take the conversation:
// the specialist answers first (and so stays current), the default beside.
func TestTheDefaultAgentDoesNotTakeAMultiAgentTurn(t *testing.T) {
	d := routeWith(t, &gate{scores: []routing.ExpertScore{sc("kyra", 0.97), sc("dana", 0.2), sc("luke", 0.01)}}, func(r *cascade.Request) {
		r.CurrentAgent, r.Options.Strategy, r.Options.K = "luke", routing.TopK, 2
	})
	require.NotEmpty(t, d.SelectedAgents)
	assert.Equal(t, "luke", d.SelectedAgents[0])
	assert.Contains(t, d.SelectedAgents, "kyra")
	assert.LessOrEqual(t, len(d.SelectedAgents), 2)
}
