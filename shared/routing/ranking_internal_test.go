package routing

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/team/agents"
)

// A Ranking of a large index scores the skills it builds in full again; a
// small one copies the scores. Both must give the same matching skills in
// the same order.
func TestRescoringGivesTheCopiedScores(t *testing.T) {
	topics := []string{"code", "review", "reviews", "sql", "api", "latency", "billing", "deploy", "data", "docs", "cost", "legal"}
	r := rand.New(rand.NewPCG(11, 12))
	for seed := range 50 {
		var team []agents.Agent
		for i := range 1 + r.IntN(60) {
			a := agents.Agent{Slug: fmt.Sprintf("a%02d", i), Name: "A"}
			for k := r.IntN(4); k > 0; k-- {
				w := func() string { return topics[r.IntN(len(topics))] }
				a.Skills = append(a.Skills, agents.Skill{Name: w() + "-" + w(), Description: w() + " " + w() + " " + w(), Keywords: []string{w()},
					Priority: r.IntN(3), RequiresExplicitKeywords: r.IntN(6) == 0})
			}
			team = append(team, a)
		}
		ix := BuildIndex(team)
		for range 5 {
			q := topics[r.IntN(len(topics))] + " " + topics[r.IntN(len(topics))] + " the " + topics[r.IntN(len(topics))]
			dense := ix.Rank(q, Signals{})
			require.NotNil(t, dense.docScore, "a small index copies its scores")
			rescored := *dense
			rescored.docScore = nil
			rescored.q = ix.prepare(q, nil, ix.getScratch())
			require.Equal(t, dense.Scores(dense.Len()), rescored.Scores(rescored.Len()), "seed %d, %q", seed, q)
		}
	}
}

// A large index rescores skill by skill for a few agents and by the
// postings for many: the same matching skills either way.
func TestLargeRankingsBuildTheSameScoresEitherWay(t *testing.T) {
	var team []agents.Agent
	topics := []string{"code", "review", "sql", "api", "latency", "billing", "deploy", "data"}
	for i := range 400 {
		team = append(team, agents.Agent{Slug: fmt.Sprintf("a%03d", i), Skills: []agents.Skill{
			{Name: topics[i%8] + "-" + topics[i*3%8], Description: topics[i*5%8] + " and " + topics[i*7%8], Priority: i % 3},
			{Name: topics[i*3%8] + "-ops", Description: topics[i%8] + " " + topics[i*5%8]},
		}})
	}
	ix := BuildIndex(team)
	require.Greater(t, len(ix.docs), denseScores)
	r := ix.Rank("review the sql api latency of billing", Signals{})
	require.Nil(t, r.docScore)
	all := r.Scores(0) // by the postings
	for n := 1; n <= denseScores/8; n *= 2 {
		top := r.Top(n) // skill by skill
		for i := range top {
			require.Equal(t, all[i].MatchingSkills, top[i].MatchingSkills, "#%d", i)
			require.Equal(t, all[i].SkillMatch, top[i].SkillMatch, "#%d", i)
		}
	}
}

// The same with embeddings, in two stages: a skill rescored for the few
// agents built in full reads its semantic similarity as the walk of the
// postings did.
func TestLargeSemanticRankingsBuildTheSameScoresEitherWay(t *testing.T) {
	var team []agents.Agent
	topics := []string{"code", "review", "sql", "api", "latency", "billing", "deploy", "data"}
	for i := range 400 {
		team = append(team, agents.Agent{Slug: fmt.Sprintf("a%03d", i), Skills: []agents.Skill{
			{Name: topics[i%8] + "-" + topics[i*3%8], Description: topics[i*5%8] + " and " + topics[i*7%8], Domains: []string{topics[i%8]}},
			{Name: topics[i*3%8] + "-ops", Description: topics[i%8] + " " + topics[i*5%8], Domains: []string{topics[i*3%8]}},
		}})
	}
	ix := BuildIndex(team)
	r := rand.New(rand.NewPCG(7, 8))
	vec := func() []float64 {
		v := make([]float64, 8)
		for i := range v {
			v[i] = r.Float64()
		}
		return v
	}
	vecs := make([][]float64, len(ix.docs))
	for d := range vecs {
		vecs[d] = vec()
	}
	require.NoError(t, ix.SetEmbeddings(vecs, DefaultSemanticCalibration))
	require.True(t, ix.twoStage())
	// By words and meaning, and by meaning alone.
	for _, q := range []string{"review the sql api latency of billing", "quarterly"} {
		rk := ix.Rank(q, Signals{QueryEmbedding: vec()})
		require.Nil(t, rk.docScore)
		all := rk.Scores(0)            // by the postings
		top := rk.Top(denseScores / 8) // skill by skill
		require.NotEmpty(t, top[0].MatchingSkills, q)
		for i := range top {
			require.Equal(t, all[i].MatchingSkills, top[i].MatchingSkills, "%s: #%d", q, i)
		}
	}
}

// A large team's ranking orders its best agents at once and the others
// when asked: every way of reading it gives the full sort's order.
func TestLazilyOrderedRankingsReadAsTheFullSort(t *testing.T) {
	var team []agents.Agent
	topics := []string{"code", "review", "sql", "api", "latency", "billing", "deploy", "data"}
	loads := map[string]Load{}
	for i := range 600 {
		slug := fmt.Sprintf("a%03d", (i*37)%600)
		team = append(team, agents.Agent{Slug: slug, Skills: []agents.Skill{
			{Name: topics[i%8] + "-" + topics[i*3%8], Description: topics[i*5%8] + " and " + topics[i*7%8]},
		}})
		loads[slug] = Load{ActiveTasks: i % 4, ActiveConversations: i % 7}
	}
	ix := BuildIndex(team)
	q, sig := "review the sql api latency", Signals{Loads: LoadsOf(loads)}
	full := ix.Rank(q, sig).Scores(0)
	r := ix.Rank(q, sig)
	require.Less(t, r.top, r.Len(), "ordered lazily")
	matched := 0
	for _, s := range full {
		if s.SkillMatch > 0 {
			matched++
		}
	}
	assert.Equal(t, matched, r.Matched())
	// Best: the best n, then the leader and the agents named, in rank
	// order wherever they rank.
	// Named twice, with the leader, or more than 8 (picked by a scan, not
	// searched): each once.
	many := []string{"nobody"}
	for i := 20; i < 600; i += 60 {
		many = append(many, full[i].AgentSlug)
	}
	for _, named := range [][]string{
		{full[len(full)-1].AgentSlug, full[400].AgentSlug},
		{full[400].AgentSlug, r.Leader(), full[17].AgentSlug, full[400].AgentSlug, "nobody"},
		many,
	} {
		for _, n := range []int{3, rankedFirst} {
			want := slices.Clone(full[:n])
			for _, s := range full[n:] {
				if slices.Contains(named, s.AgentSlug) || s.AgentSlug == r.Leader() {
					want = append(want, s)
				}
			}
			assert.Equal(t, want, ix.Rank(q, sig).Best(n, 0, named...), "best %d of %v", n, named)
		}
	}
	explained := ix.Rank(q, sig).Scores(40)
	assert.Equal(t, explained[:40], ix.Rank(q, sig).Top(40))
	assert.Equal(t, explained[:5], ix.Rank(q, sig).Top(5))
}
