package suggestions_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/routing/suggestions"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

// decisions is the decision log, by team and id.
type decisions map[string]cascade.Decision

func (d decisions) GetDecision(_ context.Context, team, id string) (cascade.Decision, error) {
	dec, ok := d[team+"/"+id]
	if !ok {
		return cascade.Decision{}, apperr.NotFound("decision", id)
	}
	return dec, nil
}

// gate ranks the agent's skills as best says (the fitted model's ranking
// stands in for this test), and counts its calls.
type gate struct {
	best  map[string][]string // agent -> its matching skills, best first
	calls int
}

func (g *gate) Score(_ context.Context, req expertgate.Request) (expertgate.Response, error) {
	g.calls++
	var out expertgate.Response
	for _, a := range req.Include {
		out.Scores = append(out.Scores, routing.ExpertScore{AgentSlug: a, MatchingSkills: g.best[a]})
	}
	return out, nil
}

type fixture struct {
	svc  *suggestions.Service
	dec  decisions
	gate *gate
	ag   *agents.Service
}

const team = "team_a"

func newFixture(t *testing.T) fixture {
	t.Helper()
	store := memstore.New()
	for _, id := range []string{team, "team_b"} {
		require.NoError(t, store.CreateTeam(context.Background(), teams.Team{ID: id, Name: id}, teams.APIKey{ID: "k-" + id}, "h-"+id))
	}
	ag := agents.NewService(store)
	for _, in := range []agents.CreateInput{
		{Slug: "kyra", Name: "Kyra", Skills: []agents.Skill{{Name: "general", Description: "general questions"}}},
		{Slug: "luke", Name: "Luke", Skills: []agents.Skill{
			{Name: "code-review", Description: "reviews code"},
			{Name: "refactoring", Description: "restructures code", Examples: []string{"Split this class up"}},
			{Name: "delegation", Description: "internal", InternalOnly: true},
		}},
	} {
		_, err := ag.Create(context.Background(), team, in)
		require.NoError(t, err)
	}
	g := &gate{best: map[string][]string{"luke": {"delegation", "refactoring", "code-review"}}}
	dec := decisions{}
	return fixture{svc: &suggestions.Service{Store: store, Decisions: dec, Agents: ag, Gate: g}, dec: dec, gate: g, ag: ag}
}

// corrected records a decision the gate made for a new user message in
// conv, answered by kyra, and returns the correction choosing luke.
func (f fixture) corrected(content, decidedBy string) suggestions.Correction {
	msg, conv, dec := ids.New("msg"), ids.New("conv"), ids.New("rdec")
	f.dec[team+"/"+dec] = cascade.Decision{ID: dec, ConversationID: conv, MessageID: msg, DecidedBy: decidedBy}
	return suggestions.Correction{TeamID: team, ConversationID: conv, MessageID: msg, Content: content, DecisionID: dec,
		AnsweredBy: "kyra", ChosenAgent: "luke", Kind: suggestions.KindMention, CorrectedAt: time.Now()}
}

func TestACorrectionOfTheRouterIsSuggestedUnderTheBestReachableSkill(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.corrected("  Is a 400-line method in one class bad practice?  ", cascade.DecidedByGate)
	c.Rating = 2

	sg, added, err := f.svc.Suggest(ctx, c)
	require.NoError(t, err)
	require.True(t, added)
	// The internal-only skill ranks first but no user reaches it.
	assert.Equal(t, "refactoring", sg.Skill)
	assert.Equal(t, "Is a 400-line method in one class bad practice?", sg.Content)
	assert.Equal(t, c.MessageID, sg.ID)
	assert.Equal(t, "kyra", sg.RoutedTo)
	assert.True(t, sg.RatedLow, "rated 2, then corrected")

	// The same correction delivered again, or a low rating counted
	// beside it, is one suggestion.
	_, added, err = f.svc.Suggest(ctx, c)
	require.NoError(t, err)
	assert.False(t, added)
	list, _, err := f.svc.List(ctx, team, "luke", paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, sg.ID, list[0].ID)

	c3 := f.corrected("Another one", cascade.DecidedByGate)
	c3.Rating = 3
	sg3, _, err := f.svc.Suggest(ctx, c3)
	require.NoError(t, err)
	assert.False(t, sg3.RatedLow, "3 is not a low rating")
}

func TestOnlyAnAutomaticChoiceOfAnotherAgentIsACorrection(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, by := range []string{cascade.DecidedByMention, cascade.DecidedByHandoff, cascade.DecidedByDirect, cascade.DecidedByGreeting, ""} {
		_, added, err := f.svc.Suggest(ctx, f.corrected("a message", by))
		require.NoError(t, err)
		assert.False(t, added, "decided by %q", by)
	}
	for _, by := range []string{cascade.DecidedByRouterModel, cascade.DecidedByAgentRouter} {
		_, added, err := f.svc.Suggest(ctx, f.corrected("a message the router chose for: "+by, by))
		require.NoError(t, err)
		assert.True(t, added, "decided by %q", by)
	}

	// The router kept the conversation's agent (continuity).
	kept := f.corrected("kept by continuity", cascade.DecidedByGate)
	d := f.dec[team+"/"+kept.DecisionID]
	d.Reason = routing.ReasonCurrent
	f.dec[team+"/"+kept.DecisionID] = d
	_, added, err := f.svc.Suggest(ctx, kept)
	require.NoError(t, err)
	assert.False(t, added, "continuity is not a routing choice to correct")

	same := f.corrected("the same agent", cascade.DecidedByGate)
	same.AnsweredBy = "luke"
	_, added, err = f.svc.Suggest(ctx, same)
	require.NoError(t, err)
	assert.False(t, added, "the agent that answered was the one chosen")

	// The decision must be the corrected message's own.
	other := f.corrected("wrong message", cascade.DecidedByGate)
	other.MessageID = ids.New("msg")
	_, added, err = f.svc.Suggest(ctx, other)
	require.NoError(t, err)
	assert.False(t, added)

	// Another team's decision is not found.
	foreign := f.corrected("foreign", cascade.DecidedByGate)
	foreign.TeamID = "team_b"
	_, added, err = f.svc.Suggest(ctx, foreign)
	require.NoError(t, err)
	assert.False(t, added)

	// An example longer than a skill takes is no suggestion.
	long := f.corrected(strings.Repeat("x", agents.MaxExampleLength+1), cascade.DecidedByGate)
	_, added, err = f.svc.Suggest(ctx, long)
	require.NoError(t, err)
	assert.False(t, added)

	// Nor is one the skill already has (accepted before).
	had := f.corrected("split this class up", cascade.DecidedByGate)
	_, added, err = f.svc.Suggest(ctx, had)
	require.NoError(t, err)
	assert.False(t, added)

	// A paused agent takes no suggestion.
	_, err = f.ag.SetStatus(ctx, team, "luke", agents.StatusPaused)
	require.NoError(t, err)
	_, added, err = f.svc.Suggest(ctx, f.corrected("paused", cascade.DecidedByGate))
	require.NoError(t, err)
	assert.False(t, added)
}

func TestAcceptingAddsTheExampleOnceAndRemovesTheSuggestion(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sg, _, err := f.svc.Suggest(ctx, f.corrected("Should this handler be three functions?", cascade.DecidedByGate))
	require.NoError(t, err)
	before, err := f.ag.Get(ctx, team, "luke")
	require.NoError(t, err)

	out, err := f.svc.Accept(ctx, team, "luke", sg.ID, suggestions.AcceptInput{})
	require.NoError(t, err)
	assert.Equal(t, "refactoring", out.Skill)
	assert.Equal(t, 2, out.Examples)
	assert.Equal(t, before.Version+1, out.Version)
	a, err := f.ag.Get(ctx, team, "luke")
	require.NoError(t, err)
	assert.Equal(t, []string{"Split this class up", "Should this handler be three functions?"}, a.Skills[1].Examples)

	_, err = f.svc.Accept(ctx, team, "luke", sg.ID, suggestions.AcceptInput{})
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "accepted once: %v", err)
	list, _, err := f.svc.List(ctx, team, "luke", paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, list)
}

func TestAcceptTakesAnotherSkillAndRefusesWhatTheSkillCannotHold(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sg, _, err := f.svc.Suggest(ctx, f.corrected("Look over my pull request", cascade.DecidedByGate))
	require.NoError(t, err)

	nope := "nope"
	_, err = f.svc.Accept(ctx, team, "luke", sg.ID, suggestions.AcceptInput{Skill: &nope})
	ae, ok := apperr.As(err)
	require.True(t, ok, err)
	assert.Equal(t, apperr.EINVALID, ae.Code)
	assert.Equal(t, "skill", ae.Field)

	// The skill at its exact bound: 30 examples take no 31st.
	full := make([]string, agents.MaxExamples)
	for i := range full {
		full[i] = fmt.Sprintf("example %d", i)
	}
	a, err := f.ag.Get(ctx, team, "luke")
	require.NoError(t, err)
	skills := a.Skills
	skills[0].Examples = full[:agents.MaxExamples-1]
	_, err = f.ag.Update(ctx, team, "luke", agents.UpdateInput{Skills: &skills})
	require.NoError(t, err)
	review := "code-review"
	out, err := f.svc.Accept(ctx, team, "luke", sg.ID, suggestions.AcceptInput{Skill: &review})
	require.NoError(t, err, "29 examples take a 30th")
	assert.Equal(t, agents.MaxExamples, out.Examples)

	sg2, _, err := f.svc.Suggest(ctx, f.corrected("One more review please", cascade.DecidedByGate))
	require.NoError(t, err)
	_, err = f.svc.Accept(ctx, team, "luke", sg2.ID, suggestions.AcceptInput{Skill: &review})
	ae, ok = apperr.As(err)
	require.True(t, ok, err)
	assert.Equal(t, apperr.ECONFLICT, ae.Code)
	assert.Equal(t, "SkillExamplesFull", ae.Reason)
	_, err = f.svc.Get(ctx, team, "luke", sg2.ID)
	assert.NoError(t, err, "a refused accept keeps the suggestion")
}

func TestDismissHidesForGoodAndIsolatesTeams(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.corrected("Can you rename these variables?", cascade.DecidedByGate)
	sg, _, err := f.svc.Suggest(ctx, c)
	require.NoError(t, err)

	// Another team sees nothing of it.
	_, err = f.svc.Get(ctx, "team_b", "luke", sg.ID)
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND))
	assert.True(t, apperr.Is(f.svc.Dismiss(ctx, "team_b", "luke", sg.ID), apperr.ENOTFOUND))
	_, err = f.svc.Accept(ctx, "team_b", "luke", sg.ID, suggestions.AcceptInput{})
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND))
	_, _, err = f.svc.List(ctx, "team_b", "luke", paging.Page{Limit: 10})
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "team_b has no agent luke")

	require.NoError(t, f.svc.Dismiss(ctx, team, "luke", sg.ID))
	assert.True(t, apperr.Is(f.svc.Dismiss(ctx, team, "luke", sg.ID), apperr.ENOTFOUND), "dismissed once")
	list, _, err := f.svc.List(ctx, team, "luke", paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, list)
	// The same correction delivered again suggests nothing.
	_, added, err := f.svc.Suggest(ctx, c)
	require.NoError(t, err)
	assert.False(t, added)

	// Ids that cannot be a message's are 404 without a read.
	for _, id := range []string{"", "x", "reval_123", "msg_"} {
		assert.True(t, apperr.Is(f.svc.Dismiss(ctx, team, "luke", id), apperr.ENOTFOUND), id)
	}
}

func TestAtMostMaxPerAgentAreKeptTheOldestPushedOut(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var first string
	for i := range suggestions.MaxPerAgent + 1 {
		sg, added, err := f.svc.Suggest(ctx, f.corrected(fmt.Sprintf("message %d", i), cascade.DecidedByGate))
		require.NoError(t, err)
		require.True(t, added)
		if i == 0 {
			first = sg.ID
		}
		if i == suggestions.MaxPerAgent-1 {
			n := 0
			for p := (paging.Page{Limit: 100}); ; {
				list, next, err := f.svc.List(ctx, team, "luke", p)
				require.NoError(t, err)
				n += len(list)
				if next == "" {
					break
				}
				p.Token = next
			}
			require.Equal(t, suggestions.MaxPerAgent, n, "all 100 kept")
			_, err := f.svc.Get(ctx, team, "luke", first)
			require.NoError(t, err)
		}
	}
	_, err := f.svc.Get(ctx, team, "luke", first)
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "the 101st pushed the oldest out")
}
