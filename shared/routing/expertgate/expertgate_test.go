package expertgate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

type source struct {
	agents  []agents.Agent
	loads   map[string]routing.Load
	ratings []routing.Rating
	since   time.Time
	reads   int
}

func (s *source) ActiveAgents(context.Context, string) ([]agents.Agent, error) {
	s.reads++
	return s.agents, nil
}
func (s *source) AgentLoads(context.Context, string) (routing.Loads, error) {
	return routing.LoadsOf(s.loads), nil
}
func (s *source) RecentRatings(_ context.Context, _ string, since time.Time, _ int) ([]routing.Rating, error) {
	s.since = since
	return s.ratings, nil
}

func team() []agents.Agent {
	return []agents.Agent{
		{Slug: "luke", Name: "Luke", Status: agents.StatusActive, Version: 1, Skills: []agents.Skill{{Name: "code-review", Description: "Review code for bugs", Keywords: []string{"code", "review", "bug"}}}},
		{Slug: "wren", Name: "Wren", Status: agents.StatusActive, Version: 1, Skills: []agents.Skill{{Name: "writing", Description: "Write blog posts", Keywords: []string{"blog", "write"}}}},
	}
}

func TestServiceScoresWithLoadsRatingsAndTier(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	src := &source{agents: team(), loads: map[string]routing.Load{"luke": {ActiveTasks: 5}},
		ratings: []routing.Rating{{Agent: "luke", Rating: 5, Query: "review my code for bugs", At: now.Add(-time.Hour)}}}
	g := &expertgate.Service{Source: src, Now: func() time.Time { return now }}
	resp, err := g.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "review my code for bugs"})
	require.NoError(t, err)
	require.Len(t, resp.Scores, 2)
	assert.Equal(t, "luke", resp.Scores[0].AgentSlug)
	assert.Equal(t, 1.0, resp.Scores[0].PastPerformance)
	assert.Equal(t, 0.5, resp.Scores[0].LoadBalance)
	assert.Equal(t, now.Add(-routing.PerformanceWindow), src.since, "ratings of the last 30 days")
	assert.Equal(t, routing.DefaultTierModels[resp.Tier.Tier], resp.Tier.ModelID)
	assert.Len(t, resp.Complexity.Dimensions, 5)
	assert.Equal(t, 2, resp.AgentsScored)

	resp, err = g.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "review my code", Exclude: []string{"luke"}})
	require.NoError(t, err)
	require.Len(t, resp.Scores, 1)
	assert.Equal(t, "wren", resp.Scores[0].AgentSlug)

	for _, bad := range []expertgate.Request{{Query: "x"}, {TeamID: "t"}, {TeamID: "t", Query: "   "}} {
		_, err := g.Score(context.Background(), bad)
		assert.True(t, apperr.Is(err, apperr.EINVALID), "%+v", bad)
	}
}

// The AgentRouter's request (the expert_gate flag off) ranks by the skill
// match alone: no load or rating is read, so they weigh nothing, and the
// confidence is the same calibrated skill match the full scoring gives.
func TestSkillsOnlyReadsNoLoadOrRating(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	src := &source{agents: team(), loads: map[string]routing.Load{"luke": {ActiveTasks: 5}},
		ratings: []routing.Rating{{Agent: "luke", Rating: 1, Query: "review my code for bugs", At: now.Add(-time.Hour)}}}
	g := &expertgate.Service{Source: src, Now: func() time.Time { return now }}
	full, err := g.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "review my code for bugs"})
	require.NoError(t, err)
	require.False(t, src.since.IsZero(), "the full scoring reads the ratings")

	src.since = time.Time{}
	skills, err := g.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "review my code for bugs", SkillsOnly: true})
	require.NoError(t, err)
	assert.True(t, src.since.IsZero(), "no rating read")
	require.Len(t, skills.Scores, 2)
	assert.Equal(t, "luke", skills.Scores[0].AgentSlug)
	assert.Equal(t, full.Scores[0].Confidence, skills.Scores[0].Confidence, "the same calibrated skill match")
	assert.Equal(t, full.Scores[0].SkillMatch, skills.Scores[0].SkillMatch)
	assert.NotEqual(t, full.Scores[0].PastPerformance, skills.Scores[0].PastPerformance, "the rating weighs only in the full scoring")
	assert.NotEqual(t, full.Scores[0].LoadBalance, skills.Scores[0].LoadBalance, "the load weighs only in the full scoring")
}

func TestIndexIsRebuiltWhenAnAgentChanges(t *testing.T) {
	src := &source{agents: team()}
	g := &expertgate.Service{Source: src}
	first, err := g.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "write a blog"})
	require.NoError(t, err)
	assert.Equal(t, "wren", first.Scores[0].AgentSlug)
	// Wren's skills change (version 2): the cached index must not be used.
	src.agents[1].Skills = []agents.Skill{{Name: "gardening", Description: "Plants"}}
	src.agents[1].Version = 2
	again, err := g.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "write a blog"})
	require.NoError(t, err)
	for _, s := range again.Scores {
		assert.Zero(t, s.SkillMatch, s.AgentSlug)
	}
}

// Agents sent with the request are scored without reading them again (a
// chat turn has read them); inactive ones are left out, as the source does.
func TestAgentsSentWithTheRequestAreNotReadAgain(t *testing.T) {
	src := &source{agents: team()}
	g := &expertgate.Service{Source: src}
	sent := append(team(), agents.Agent{Slug: "dana", Name: "Dana", Status: agents.StatusPaused, Version: 1,
		Skills: []agents.Skill{{Name: "code-review", Description: "Review code", Keywords: []string{"code", "review", "bug"}}}})
	resp, err := g.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "review my code for bugs", Agents: sent})
	require.NoError(t, err)
	assert.Zero(t, src.reads, "the agents were not read")
	require.Len(t, resp.Scores, 2, "the paused agent is not scored")
	assert.Equal(t, "luke", resp.Scores[0].AgentSlug)

	read, err := g.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "review my code for bugs"})
	require.NoError(t, err)
	assert.Equal(t, 1, src.reads, "without agents the gate reads them")
	assert.Equal(t, read.Scores, resp.Scores, "the same scores either way")
}

func TestServiceAnswersTheBestScoresOfALargeTeamAndThoseAskedFor(t *testing.T) {
	list := team()
	for i := range 2 * routing.ExplainedScores {
		list = append(list, agents.Agent{Slug: fmt.Sprintf("helper-%02d", i), Name: "Helper", Status: agents.StatusActive, Version: 1,
			Skills: []agents.Skill{{Name: "code-help", Description: "Help with code", Keywords: []string{"code"}}}})
	}
	g := &expertgate.Service{Source: &source{agents: list}}
	resp, err := g.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "review my code for bugs"})
	require.NoError(t, err)
	assert.Equal(t, len(list), resp.AgentsScored, "every active agent is scored and ranked")
	require.Len(t, resp.Scores, routing.ExplainedScores, "the best are answered")
	assert.Equal(t, "luke", resp.Scores[0].AgentSlug)
	for _, s := range resp.Scores {
		assert.NotEmpty(t, s.Explanation, s.AgentSlug)
		assert.NotEmpty(t, s.MatchingSkills, s.AgentSlug)
	}
	// The ranking is the full one: the answered scores are its best, in
	// its order, identical to scoring everyone.
	ix := routing.BuildIndex(list)
	all := ix.Score("review my code for bugs", routing.Signals{Now: time.Now()})
	assert.Equal(t, all[:routing.ExplainedScores], resp.Scores)
	// Breadth counts every matching agent, not only those answered: luke
	// and the twenty helpers.
	assert.Equal(t, routing.ComplexityOf("review my code for bugs", 1+2*routing.ExplainedScores), resp.Complexity)

	// An agent asked for is answered wherever it ranks, after the best and
	// unexplained; one asked for twice, or already among the best, once.
	last := all[len(all)-1]
	resp, err = g.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "review my code for bugs",
		Include: []string{last.AgentSlug, "luke", last.AgentSlug, "nobody"}})
	require.NoError(t, err)
	require.Len(t, resp.Scores, routing.ExplainedScores+1)
	got := resp.Scores[routing.ExplainedScores]
	assert.Equal(t, last.AgentSlug, got.AgentSlug)
	assert.Empty(t, got.Explanation)
	last.Explanation = ""
	assert.Equal(t, last, got, "the same score as in the full ranking")
}

// countingEmbedder counts the skill texts it embeds (queries are one text
// each; skills come in batches).
type countingEmbedder struct{ batches int }

func (*countingEmbedder) ID() string { return "counting" }
func (c *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float64, error) {
	if len(texts) > 1 || len(texts) == 1 && texts[0] != "write a blog" {
		c.batches++
	}
	out := make([][]float64, len(texts))
	for i, t := range texts {
		out[i] = []float64{float64(len(t) % 7), 1, float64(len(t) % 3)}
	}
	return out, nil
}

// A team's calls alternate between a few sets of agents (a conversation's
// routable agents, find_colleagues' active and paused ones): each set's
// index is kept, up to IndexesPerTeam, so alternating does not rebuild
// and re-embed the team's skills.
func TestAlternatingSetsOfAgentsKeepTheirIndexes(t *testing.T) {
	emb := &countingEmbedder{}
	g := &expertgate.Service{Source: &source{}, Embedder: emb}
	sets := make([][]agents.Agent, expertgate.IndexesPerTeam+1)
	for i := range sets {
		sets[i] = append(team(), agents.Agent{Slug: fmt.Sprintf("extra-%d", i), Name: "Extra", Status: agents.StatusActive, Version: 1,
			Skills: []agents.Skill{{Name: "extra", Description: fmt.Sprintf("extra skill %d", i)}}})
	}
	score := func(set []agents.Agent) {
		_, err := g.Score(context.Background(), expertgate.Request{TeamID: "t", Query: "write a blog", Agents: set})
		require.NoError(t, err)
	}
	for range 3 {
		score(sets[0])
		score(sets[1])
	}
	assert.Equal(t, 2, emb.batches, "two sets, each embedded once")
	for _, set := range sets[:expertgate.IndexesPerTeam] {
		score(set)
	}
	assert.Equal(t, expertgate.IndexesPerTeam, emb.batches, "up to IndexesPerTeam kept")
	score(sets[expertgate.IndexesPerTeam]) // evicts the least recently used: sets[0]
	score(sets[0])
	assert.Equal(t, expertgate.IndexesPerTeam+2, emb.batches, "past the bound the least recently used is rebuilt")
}

// moneyEmbedder puts a text about money on one axis and anything else on
// the other: enough to tell a skill's examples from its description.
type moneyEmbedder struct{}

func (moneyEmbedder) ID() string { return "money" }

func (moneyEmbedder) Embed(_ context.Context, texts []string) ([][]float64, error) {
	out := make([][]float64, len(texts))
	for i, t := range texts {
		out[i] = []float64{0, 1}
		if strings.Contains(t, "money") {
			out[i] = []float64{1, 0}
		}
	}
	return out, nil
}

// A request's agents travel without their examples (Lean: only counts);
// the gate reads them back once to build the index for those versions,
// and scores with them: here only an example says the question is wren's.
func TestTheGateReadsTheExamplesALeanRequestLeftOut(t *testing.T) {
	full := team()
	full[1].Skills[0].Examples = []string{"where did my money go", "I need money for the trip"}
	src := &source{agents: full}
	g := &expertgate.Service{Source: src, Embedder: moneyEmbedder{}}
	req := expertgate.Lean(expertgate.Request{TeamID: "t", Query: "my money vanished", Agents: full})
	assert.Nil(t, req.Agents[1].Skills[0].Examples, "the request carries no examples")
	assert.Equal(t, 2, req.Agents[1].Skills[0].ExampleCount)
	assert.Equal(t, []string{"where did my money go", "I need money for the trip"}, full[1].Skills[0].Examples, "the caller's agents are not changed")
	for range 2 {
		resp, err := g.Score(context.Background(), req)
		require.NoError(t, err)
		assert.Equal(t, "wren", resp.Scores[0].AgentSlug)
		assert.Positive(t, resp.Scores[0].SkillMatch)
		assert.Zero(t, scoreOf(resp.Scores, "luke").SkillMatch)
	}
	assert.Equal(t, 1, src.reads, "read once, for the index; the second call used the cached index")

	// Without the examples (an agent of another version than the stored
	// one keeps what it carried), the question is nobody's.
	stale := expertgate.Lean(expertgate.Request{TeamID: "t", Query: "my money vanished", Agents: team()})
	stale.Agents[1].Version = 2
	stale.Agents[1].Skills[0].ExampleCount = 2
	resp, err := g.Score(context.Background(), stale)
	require.NoError(t, err)
	assert.Zero(t, scoreOf(resp.Scores, "wren").SkillMatch)
}

func scoreOf(list []routing.ExpertScore, slug string) routing.ExpertScore {
	for _, s := range list {
		if s.AgentSlug == slug {
			return s
		}
	}
	return routing.ExpertScore{}
}
