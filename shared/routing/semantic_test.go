package routing_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/wordllama"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

var (
	modelOnce sync.Once
	model     *wordllama.Model
	modelErr  error
)

// mustModel is the wordllama model (make wordllama fetches it; the test
// fails without it rather than skipping the semantic checks).
func mustModel(tb testing.TB) *wordllama.Model {
	tb.Helper()
	modelOnce.Do(func() {
		dir, err := wordllama.Dir()
		if err != nil {
			modelErr = err
			return
		}
		model, modelErr = wordllama.Load(dir)
	})
	require.NoError(tb, modelErr)
	return model
}

func embedQuery(tb testing.TB, q string) []float64 {
	tb.Helper()
	v, err := mustModel(tb).Embed(context.Background(), []string{q})
	require.NoError(tb, err)
	return v[0]
}

func semanticIndex(tb testing.TB, team []agents.Agent) *routing.Index {
	tb.Helper()
	ix := routing.BuildIndex(team)
	require.NoError(tb, ix.Embed(context.Background(), mustModel(tb)))
	return ix
}

// The examples of issue 23: everyday phrasing reaches the specialist, with
// a match confidence above the default threshold, and the words-only gate
// does not get there.
func TestEverydayPhrasingReachesTheSpecialist(t *testing.T) {
	ix := semanticIndex(t, demoTeam())
	lexical := routing.BuildIndex(demoTeam())
	for _, tc := range []struct{ q, want string }{
		{"Is my login flow safe against attackers?", "sage"},
		{"My program crashes when I call it twice, why?", "luke"},
		{"Can you review this Go function for bugs?", "luke"},
		{"Which of our tables should we index to make the monthly revenue query faster?", "dana"},
	} {
		r := ix.Rank(tc.q, routing.Signals{QueryEmbedding: embedQuery(t, tc.q)})
		best := r.Best(3, 0)
		assert.Equal(t, tc.want, r.Leader(), tc.q)
		assert.Equal(t, tc.want, best[0].AgentSlug, tc.q)
		assert.GreaterOrEqual(t, best[0].Confidence, routing.DefaultThreshold, tc.q)
		for _, s := range best[1:] {
			assert.Less(t, s.Confidence, best[0].Confidence, tc.q)
		}
	}
	// Words alone do not get there: the question shares no word with
	// sage's skill.
	best := lexical.Rank("Is my login flow safe against attackers?", routing.Signals{}).Best(1, 0)[0]
	assert.Less(t, best.Confidence, routing.DefaultThreshold, "words alone: %s %.3f", best.AgentSlug, best.Confidence)
	// Off-topic questions stay below the threshold: the default answers.
	for _, q := range []string{"What's the weather like in Lisbon tomorrow?", "Recommend me a good pizza place nearby."} {
		best := ix.Rank(q, routing.Signals{QueryEmbedding: embedQuery(t, q)}).Best(1, 0)[0]
		assert.Less(t, best.Confidence, routing.DefaultThreshold, "%q: %s %.3f", q, best.AgentSlug, best.Confidence)
	}
}

// A question that shares one generic word with the only skill is not a
// match (issue 23: coverage counted only the team's known words).
func TestOneGenericSharedWordIsNotAMatch(t *testing.T) {
	team := []agents.Agent{{Slug: "clock", Name: "Clock", Status: agents.StatusActive, Skills: []agents.Skill{
		{Name: "get-current-time", Description: "Get the current time in a time zone. Inputs: the IANA time zone name", Keywords: []string{"timezone"}},
	}}}
	ix := semanticIndex(t, team)
	for _, q := range []string{"How much time does it take to bake a sourdough bread?", "Find me a time to meet my dentist", "What time is it in Tokyo right now?"} {
		best := ix.Rank(q, routing.Signals{QueryEmbedding: embedQuery(t, q)}).Best(1, 0)[0]
		if strings.Contains(q, "Tokyo") {
			assert.GreaterOrEqual(t, best.Confidence, routing.DefaultThreshold, "%q: %.3f", q, best.Confidence)
			continue
		}
		assert.Less(t, best.Confidence, routing.DefaultThreshold, "%q: %.3f", q, best.Confidence)
	}
	// Coverage counts the words no skill uses: one shared word of four
	// covers a quarter, not all, of the question.
	lexical := routing.BuildIndex(team).Rank("How much time does it take to bake a sourdough bread?", routing.Signals{}).Best(1, 0)[0]
	assert.Less(t, lexical.SkillMatch, 0.5)
}

// bigTeam is 1,000 agents with three skills each in 25 domains, their
// descriptions in everyday words.
func bigTeam() []agents.Agent {
	domains := []struct{ name, what string }{
		{"security", "authentication, passwords, attacks and vulnerabilities"}, {"databases", "sql queries, indexes and schema design"},
		{"frontend", "web pages, css layout and browser rendering"}, {"mobile", "ios and android apps"}, {"billing", "invoices, payments and refunds"},
		{"legal", "contracts, licenses and compliance"}, {"writing", "blog posts, release notes and documentation"}, {"cloud", "servers, deployment and infrastructure costs"},
		{"ml", "machine learning models, training and evaluation"}, {"support", "customer tickets and complaints"}, {"hiring", "interviews, job offers and recruiting"},
		{"travel", "flights, hotels and itineraries"}, {"finance", "budgets, forecasts and accounting"}, {"marketing", "campaigns, ads and social media"},
		{"design", "user interface mockups and visual design"}, {"testing", "unit tests, flaky tests and test coverage"}, {"networking", "dns, load balancers and latency"},
		{"privacy", "personal data, gdpr and consent"}, {"analytics", "dashboards, metrics and reports"}, {"devops", "ci pipelines, builds and releases"},
		{"health", "fitness, diet and sleep"}, {"education", "courses, lessons and homework"}, {"cooking", "recipes, baking and meal plans"},
		{"gaming", "video games, levels and players"}, {"music", "songs, playlists and instruments"},
	}
	verbs := []string{"Answer questions about", "Fix problems with", "Plan and review work on"}
	out := make([]agents.Agent, 1000)
	for i := range out {
		a := agents.Agent{Slug: fmt.Sprintf("agent-%04d", i), Name: fmt.Sprintf("Agent %d", i), Status: agents.StatusActive}
		for k := range 3 {
			d := domains[(i*3+k*7)%len(domains)]
			a.Skills = append(a.Skills, agents.Skill{Name: fmt.Sprintf("%s-%d", d.name, k), Description: fmt.Sprintf("%s %s for team %d", verbs[(i+k)%3], d.what, i%17),
				Domains: []string{d.name}, Priority: 50 - k})
		}
		out[i] = a
	}
	return out
}

var bigQueries = []string{
	"someone keeps trying to guess our admin password", "the checkout page renders badly in safari", "how do I refund a customer who paid twice",
	"our monthly sql report is slow", "write the release notes for version 2", "the android app crashes on startup", "is this open source license ok for us",
	"the model overfits after ten epochs", "a customer is angry about a late reply", "we need to hire two backend engineers", "book me a flight to berlin",
	"forecast next quarter's spending", "plan an ad campaign for the launch", "make a mockup of the settings screen", "our tests fail randomly on ci",
	"dns lookups time out sometimes", "can we store emails of european users", "build a dashboard of weekly signups", "the build pipeline takes an hour",
	"how much should I sleep before a marathon", "prepare a lesson on fractions", "a vegan lasagna recipe please", "why is my game lagging", "suggest songs for a road trip",
	"our aws bill doubled last month", "users cannot log in with single sign-on", "the invoice total is wrong", "an index on the orders table", "translate our docs into clear english",
}

// Two-stage selection at scale: on 1,000 agents with 3 skills each, the
// best agent agrees with full scoring (every skill's exact cosine) on at
// least 99% of queries.
func TestTwoStageAgreesWithFullScoring(t *testing.T) {
	team := bigTeam()
	two := semanticIndex(t, team)
	require.True(t, routing.TwoStage(two))
	full := semanticIndex(t, team)
	routing.FullScoring(full)
	require.False(t, routing.TwoStage(full))
	agree, n := 0, 0
	for i, base := range bigQueries {
		for _, q := range []string{base, "hey, " + base + "?", "quick question: " + base, "Could you help? " + base + fmt.Sprint(" ", i)} {
			sig := routing.Signals{QueryEmbedding: embedQuery(t, q)}
			a, b := two.Rank(q, sig).Best(1, 0)[0], full.Rank(q, sig).Best(1, 0)[0]
			n++
			if a.AgentSlug == b.AgentSlug {
				agree++
			} else {
				t.Logf("disagree on %q: two-stage %s (%.3f), full %s (%.3f)", q, a.AgentSlug, a.SkillMatch, b.AgentSlug, b.SkillMatch)
			}
		}
	}
	t.Logf("top-1 agreement %d/%d", agree, n)
	assert.GreaterOrEqual(t, float64(agree)/float64(n), 0.99)
}

// The pre-selection of the skills whose examples are compared
// (ExampleSkillsProbed by their examples' centroid): on 1,000 agents with
// 3 skills each, 10 everyday examples a skill, the best skill match it
// finds is the one comparing every candidate's examples finds on at least
// 97% of queries (a skill of the same match may win a tie either way, so
// the match is compared, not the agent).
func TestExamplePreselectionAgreesWithComparingEveryExample(t *testing.T) {
	asks := []string{"can you help with %s?", "I have a question on %s", "we have trouble with %s again",
		"what should we do about %s", "please look into %s for me", "any advice on %s", "who can sort out %s",
		"%s is a mess, help", "need someone for %s", "got a minute for %s?"}
	team := bigTeam()
	for i := range team {
		for k := range team[i].Skills {
			sk := &team[i].Skills[k]
			what := sk.Description[strings.Index(sk.Description, " ")+1 : strings.LastIndex(sk.Description, " for team")]
			for e := range asks {
				sk.Examples = append(sk.Examples, fmt.Sprintf(asks[(i+k+e)%len(asks)], what))
			}
		}
	}
	pre := semanticIndex(t, team)
	require.True(t, routing.TwoStage(pre))
	require.True(t, routing.PreselectsExamples(pre))
	all := semanticIndex(t, team)
	routing.CompareEveryExample(all)
	agree, n := 0, 0
	for i, base := range bigQueries {
		for _, q := range []string{base, "hey, " + base + "?", "quick question: " + base, "Could you help? " + base + fmt.Sprint(" ", i)} {
			sig := routing.Signals{QueryEmbedding: embedQuery(t, q)}
			a, b := pre.Rank(q, sig).Best(1, 0)[0], all.Rank(q, sig).Best(1, 0)[0]
			n++
			if math.Abs(a.SkillMatch-b.SkillMatch) < 1e-9 {
				agree++
			} else {
				t.Logf("disagree on %q: pre-selected %s (%.3f), every example %s (%.3f)", q, a.AgentSlug, a.SkillMatch, b.AgentSlug, b.SkillMatch)
			}
		}
	}
	t.Logf("best-match agreement %d/%d", agree, n)
	assert.GreaterOrEqual(t, float64(agree)/float64(n), 0.97)
}

func benchmarkStages(b *testing.B, fullScoring bool) {
	team := bigTeam()
	ix := semanticIndex(b, team)
	if fullScoring {
		routing.FullScoring(ix)
	}
	vecs := make([][]float64, len(bigQueries))
	for i, q := range bigQueries {
		vecs[i] = embedQuery(b, q)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % len(bigQueries)
		r := ix.Rank(bigQueries[k], routing.Signals{QueryEmbedding: vecs[k], Now: time.Time{}})
		if len(r.Best(routing.ExplainedScores, routing.ExplainedScores)) == 0 {
			b.Fatal("no scores")
		}
	}
}

// BenchmarkSemantic1000TwoStage and BenchmarkSemantic1000Full rank 1,000
// agents (3,000 skills) with the semantic signal, in two stages and with
// every skill's exact cosine (the query's embedding is not counted: both
// need it).
func BenchmarkSemantic1000TwoStage(b *testing.B) { benchmarkStages(b, false) }
func BenchmarkSemantic1000Full(b *testing.B)     { benchmarkStages(b, true) }

// leadIndex is a team whose one skill each is as similar to the query
// vector (1, 0) as sims says (by meaning alone: no word in common), read
// through cal.
func leadIndex(t *testing.T, cal routing.Calibration, sims ...float64) *routing.Index {
	t.Helper()
	var team []agents.Agent
	var vecs [][]float64
	for i, s := range sims {
		team = append(team, agents.Agent{Slug: string(rune('a' + i)), Skills: []agents.Skill{{Name: "skill", Description: "work"}}})
		vecs = append(vecs, []float64{s, math.Sqrt(1 - s*s)})
	}
	ix := routing.BuildIndex(team)
	require.NoError(t, ix.SetEmbeddings(vecs, cal))
	return ix
}

// With a calibration that reads the lead, the leader's confidence counts
// how far its skill match is ahead of the runner-up's, whatever the order
// the agents were given in; no other agent has a lead. Of equal best
// matches, the first ranked leads, with no lead.
func TestTheLeaderIsAheadOfTheRunnerUp(t *testing.T) {
	cal := routing.Calibration{Ceil: 1, Semantic: 1, Match: 1, Lead: 2}
	sig := routing.Signals{QueryEmbedding: []float64{1, 0}}
	r := leadIndex(t, cal, 0.9, 0.3, 0.5).Rank("zzz", sig)
	require.Equal(t, "a", r.Leader())
	conf := map[string]float64{}
	for _, s := range r.Scores(0) {
		conf[s.AgentSlug] = s.Confidence
	}
	assert.InDelta(t, cal.Confidence(0.9, 0.4), conf["a"], 1e-3, "a leads c by 0.4")
	assert.InDelta(t, cal.Confidence(0.5, 0), conf["c"], 1e-3)
	assert.InDelta(t, cal.Confidence(0.3, 0), conf["b"], 1e-3)

	r = leadIndex(t, cal, 0.9, 0.9, 0.5).Rank("zzz", sig)
	assert.Equal(t, "a", r.Leader(), "a tie: the first")
	for _, s := range r.Scores(0)[:2] {
		assert.InDelta(t, cal.Confidence(0.9, 0), s.Confidence, 1e-3, s.AgentSlug)
	}
}

// Best is the best n by overall score, then the agents asked for and the
// most confident agent wherever they rank, in rank order, each once.
func TestBestAddsTheLeaderAndTheAgentsAskedFor(t *testing.T) {
	cal := routing.Calibration{Ceil: 1, Semantic: 1, Match: 1}
	busy := routing.Load{ActiveTasks: routing.TaskCapacity, ActiveConversations: routing.ConversationCapacity, LatencyMS: routing.SlowLatencyMS}
	// a matches best but is busy: it ranks last, and leads.
	ix := leadIndex(t, cal, 0.6, 0.55, 0.5, 0.4)
	r := ix.Rank("zzz", routing.Signals{QueryEmbedding: []float64{1, 0}, Loads: routing.LoadsOf(map[string]routing.Load{"a": busy})})
	require.Equal(t, "a", r.Leader())
	slugs := func(list []routing.ExpertScore) []string {
		out := []string{}
		for _, s := range list {
			out = append(out, s.AgentSlug)
		}
		return out
	}
	require.Equal(t, []string{"b", "c", "d", "a"}, slugs(r.Scores(0)))
	assert.Equal(t, 4, r.Matched())
	assert.Equal(t, []string{"b", "a"}, slugs(r.Best(1, 0)), "the leader")
	assert.Equal(t, []string{}, slugs(r.Best(0, 0)), "none asked, none given")
	assert.Equal(t, []string{"b", "a"}, slugs(r.Best(1, 0, "a", "nobody")), "once")
	assert.Equal(t, []string{"b", "d", "a"}, slugs(r.Best(1, 0, "a", "d")), "in rank order")
	assert.Equal(t, []string{"b", "c", "d", "a"}, slugs(r.Best(4, 0)))

	// No agent matches the words and the query has no vector: no leader,
	// the agents asked for still come.
	r = ix.Rank("zzz", routing.Signals{Loads: routing.LoadsOf(map[string]routing.Load{"a": busy})})
	require.Equal(t, "", r.Leader())
	assert.Zero(t, r.Matched())
	assert.Equal(t, []string{"b"}, slugs(r.Best(1, 0)))
	assert.Equal(t, []string{"b", "a"}, slugs(r.Best(1, 0, "a")))
}

// No skill match, no confidence, whatever the calibration's bias; and a
// calibration whose floor is its ceiling reads no semantic similarity.
func TestCalibrationEdges(t *testing.T) {
	for _, cal := range []routing.Calibration{routing.LexicalCalibration, routing.DefaultSemanticCalibration, {Bias: 3, Lead: 1}} {
		assert.Zero(t, cal.Confidence(0, 0.5))
	}
	flat := routing.Calibration{Floor: 0.5, Ceil: 0.5, Semantic: 1, Match: 1}
	s := leadIndex(t, flat, 0.9).Score("zzz", routing.Signals{QueryEmbedding: []float64{1, 0}})
	assert.Zero(t, s[0].SkillMatch)
}
