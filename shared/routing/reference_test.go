package routing_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/words"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// The reference ExpertGate: the scorer as it was first written, one map
// per skill, a cosine per skill and per rating, every agent explained. It
// is slow and obviously right, and the index must agree with it on every
// signal of every agent.

type refDoc struct {
	agent           int
	name, label     string
	vec             map[string]float64
	norm            float64
	keywords        map[string]bool
	requiresKeyword bool
	override        bool
	priority        int
	embedding       []float32
	// gated: needs an editor or an image, which no reference query has.
	gated bool
}

type refGate struct {
	team  []agents.Agent
	docs  []refDoc
	idf   map[string]float64
	label []string
	cal   routing.Calibration
}

func refDocText(s agents.Skill) string {
	return strings.Join([]string{strings.ReplaceAll(s.Name, "-", " "), s.Description,
		strings.Join(s.Keywords, " "), strings.Join(s.Domains, " "), strings.Join(s.Actions, " ")}, " ")
}

func newRefGate(team []agents.Agent, embed func(string) []float64) *refGate {
	g := &refGate{team: team, idf: map[string]float64{}, label: make([]string, len(team)), cal: routing.LexicalCalibration}
	if embed != nil {
		g.cal = routing.CalibrationFor("hash")
	}
	df := map[string]int{}
	for ai, a := range team {
		best, any := 0, false
		for _, s := range a.Skills {
			if s.InternalOnly {
				continue
			}
			text := refDocText(s)
			d := refDoc{agent: ai, name: s.Name, label: strings.ReplaceAll(s.Name, "-", " "), vec: map[string]float64{}, keywords: map[string]bool{},
				requiresKeyword: s.RequiresExplicitKeywords, override: s.OverrideContinuity, priority: s.Priority,
				gated: s.RequiresEditor || s.RequiresImageContext}
			for _, t := range words.Tokens(text) {
				d.vec[t]++
			}
			for _, k := range s.Keywords {
				for _, t := range words.Tokens(k) {
					d.keywords[t] = true
				}
			}
			for t := range d.vec {
				df[t]++
			}
			if embed != nil {
				d.embedding = refUnit(embed(text))
			}
			if !any || d.priority > best {
				g.label[ai], best, any = d.label, d.priority, true
			}
			g.docs = append(g.docs, d)
		}
	}
	for t, c := range df {
		g.idf[t] = math.Log(1 + float64(len(g.docs))/float64(c))
	}
	for i := range g.docs {
		sum := 0.0
		for t, tf := range g.docs[i].vec {
			g.docs[i].vec[t] = tf * g.idf[t]
			sum += g.docs[i].vec[t] * g.docs[i].vec[t]
		}
		g.docs[i].norm = math.Sqrt(sum)
	}
	return g
}

// refUnit is v normalized to float32, as the index keeps vectors.
func refUnit(v []float64) []float32 {
	sum := 0.0
	for _, x := range v {
		sum += x * x
	}
	if sum == 0 {
		return make([]float32, len(v))
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x / math.Sqrt(sum))
	}
	return out
}

// refDot sums float32 products in four lanes, as the index does (the
// vectors here are short: one lane).
func refDot(a, b []float32) float64 {
	var lanes [4]float32
	for i := range a {
		lanes[i%4] += a[i] * b[i]
	}
	return float64((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]))
}

// refBlend is the skill match of a lexical match and a cosine.
func refBlend(c routing.Calibration, lex, cos float64) float64 {
	sem := min(1, max(0, (cos-c.Floor)/(c.Ceil-c.Floor)))
	return min(1, max(0, (1-c.Semantic)*lex+c.Semantic*sem))
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func (g *refGate) score(text string, sig routing.Signals) []routing.ExpertScore {
	tokens := map[string]bool{}
	qv := map[string]float64{}
	known, all := 0.0, 0.0
	for _, t := range words.Tokens(text) {
		first := !tokens[t]
		tokens[t] = true
		if idf, ok := g.idf[t]; ok {
			if qv[t] == 0 {
				known += idf
			}
			qv[t] += idf
		} else if first {
			all += math.Log(1 + float64(max(1, len(g.docs))))
		}
	}
	all += known
	var qvec []float32
	if len(g.docs) > 0 && g.docs[0].embedding != nil && len(sig.QueryEmbedding) == len(g.docs[0].embedding) {
		qvec = refUnit(sig.QueryEmbedding)
	}
	cal := g.cal
	if qvec == nil {
		cal = routing.LexicalCalibration
	}
	qn := 0.0
	for _, w := range qv {
		qn += w * w
	}
	qn = math.Sqrt(qn)
	docScore := func(d refDoc) (float64, bool) {
		explicit := false
		for k := range d.keywords {
			explicit = explicit || tokens[k]
		}
		if d.gated || (d.requiresKeyword && !explicit) {
			return 0, explicit
		}
		covered, dot := 0.0, 0.0
		for t, w := range qv {
			if d.vec[t] > 0 {
				covered += g.idf[t]
				dot += w * d.vec[t]
			}
		}
		lex := 0.0
		if covered > 0 {
			cos := 0.0
			if qn > 0 && d.norm > 0 {
				cos = min(1, dot/(qn*d.norm))
			}
			lex = 0.6*covered/all + 0.4*cos
		}
		if qvec != nil {
			return refBlend(cal, lex, refDot(qvec, d.embedding)), explicit
		}
		return min(1, max(0, lex)), explicit
	}

	type acc struct {
		sum float64
		n   int
	}
	perf := map[string]acc{}
	qtf := routing.TermVector(text)
	for _, r := range sig.Ratings {
		if r.Rating < 1 || r.Rating > 5 || (!sig.Now.IsZero() && r.At.Before(sig.Now.Add(-routing.PerformanceWindow))) {
			continue
		}
		if routing.Cosine(qtf, routing.TermVector(r.Query)) > routing.SimilarQuery {
			a := perf[r.Agent]
			a.sum += float64(r.Rating-1) / 4
			a.n++
			perf[r.Agent] = a
		}
	}

	style := routing.StyleOf(text)
	var out []routing.ExpertScore
	for ai, a := range g.team {
		type hit struct {
			name  string
			score float64
			prio  int
		}
		var hits []hit
		s := routing.ExpertScore{AgentSlug: a.Slug, AgentName: a.Name, Label: g.label[ai], MatchingSkills: []string{}}
		best := 0.0
		for _, d := range g.docs {
			if d.agent != ai {
				continue
			}
			sc, explicit := docScore(d)
			if sc <= 0 {
				continue
			}
			prio := 0
			for _, o := range g.docs {
				if o.agent == ai && o.name == d.name {
					prio = o.priority
					break
				}
			}
			hits = append(hits, hit{d.name, sc, prio})
			best = max(best, sc)
			s.Explicit = s.Explicit || explicit
			s.Override = s.Override || (explicit && d.override)
		}
		sort.SliceStable(hits, func(i, j int) bool {
			if hits[i].score != hits[j].score {
				return hits[i].score > hits[j].score
			}
			return hits[i].prio > hits[j].prio
		})
		for _, h := range hits {
			s.MatchingSkills = append(s.MatchingSkills, h.name)
		}
		s.SkillMatch = round3(best)
		s.PastPerformance = routing.NeutralPerformance
		if p := perf[a.Slug]; p.n > 0 {
			s.PastPerformance, s.RatedSimilar = round3(p.sum/float64(p.n)), p.n
		}
		s.PersonalityFit = round3(routing.PersonalityFit(style, a.Personality))
		l := sig.Loads.Of(a.Slug)
		s.LoadBalance = round3(routing.LoadBalance(l))
		s.Overall = round3(0.40*s.SkillMatch + 0.25*s.PastPerformance + 0.20*s.PersonalityFit + 0.15*s.LoadBalance)
		switch {
		case s.SkillMatch >= 0.6:
			s.Explanation = "strong skill match (" + strings.Join(s.MatchingSkills, ", ") + ")"
		case s.SkillMatch > 0:
			s.Explanation = "partial skill match (" + strings.Join(s.MatchingSkills, ", ") + ")"
		default:
			s.Explanation = "no matching skill"
		}
		if s.RatedSimilar > 0 {
			s.Explanation += fmt.Sprintf("; rated %.2f on %d similar queries", s.PastPerformance, s.RatedSimilar)
		} else {
			s.Explanation += "; no rated history (neutral)"
		}
		s.Explanation += fmt.Sprintf("; style fit %.2f; load %.2f (%d tasks, %d conversations)", s.PersonalityFit, s.LoadBalance, l.ActiveTasks, l.ActiveConversations)
		out = append(out, s)
	}
	// Confidence: the skill match through the calibration, with the lead
	// of the one best agent over the runner-up.
	var top1, top2 float64
	for _, s := range out {
		if s.SkillMatch > top1 {
			top1, top2 = s.SkillMatch, top1
		} else if s.SkillMatch > top2 {
			top2 = s.SkillMatch
		}
	}
	leader := true
	for i := range out {
		lead := 0.0
		if leader && out[i].SkillMatch == top1 {
			lead, leader = top1-top2, false
		}
		out[i].Confidence = round3(cal.Confidence(out[i].SkillMatch, lead))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Overall != out[j].Overall {
			return out[i].Overall > out[j].Overall
		}
		if out[i].SkillMatch != out[j].SkillMatch {
			return out[i].SkillMatch > out[j].SkillMatch
		}
		return out[i].AgentSlug < out[j].AgentSlug
	})
	return out
}

// assertSameScores compares the index's scores with the reference's, the
// first explained of them with their explanation.
func assertSameScores(t *testing.T, want, got []routing.ExpertScore, explained int, msg string) bool {
	t.Helper()
	if !assert.Len(t, got, len(want), msg) {
		return false
	}
	ok := true
	for i := range want {
		w, g := want[i], got[i]
		m := fmt.Sprintf("%s: #%d %s", msg, i, w.AgentSlug)
		ok = assert.Equal(t, w.AgentSlug, g.AgentSlug, m) && ok
		ok = assert.Equal(t, w.AgentName, g.AgentName, m) && ok
		ok = assert.Equal(t, w.Label, g.Label, m) && ok
		for _, f := range [][2]float64{{w.SkillMatch, g.SkillMatch}, {w.PastPerformance, g.PastPerformance}, {w.PersonalityFit, g.PersonalityFit}, {w.LoadBalance, g.LoadBalance}, {w.Overall, g.Overall}, {w.Confidence, g.Confidence}} {
			ok = assert.InDelta(t, f[0], f[1], 1e-9, m) && ok
		}
		ok = assert.Equal(t, w.MatchingSkills, g.MatchingSkills, m) && ok
		ok = assert.NotNil(t, g.MatchingSkills, m) && ok
		ok = assert.Equal(t, w.RatedSimilar, g.RatedSimilar, m) && ok
		ok = assert.Equal(t, w.Explicit, g.Explicit, m) && ok
		ok = assert.Equal(t, w.Override, g.Override, m) && ok
		if i < explained {
			ok = assert.Equal(t, w.Explanation, g.Explanation, m) && ok
		} else {
			ok = assert.Empty(t, g.Explanation, m) && ok
		}
		if !ok {
			return false
		}
	}
	return true
}

// The vocabulary of the random teams: topic words in several inflections
// (they stem together), stop words, and words no skill uses.
var (
	refTopics = []string{"code", "coding", "review", "reviews", "reviewing", "security", "data", "databases", "database", "sql",
		"design", "api", "apis", "writing", "write", "docs", "cloud", "cost", "latency", "testing", "tests", "frontend", "ml",
		"privacy", "billing", "support", "legal", "bug", "bugs", "deploy", "deployment", "query", "queries", "running", "run"}
	refFiller = []string{"the", "and", "of", "please", "can", "you", "our", "this", "x", "42", "hmm", "zebra", "quantum", "lol", "kindly", "!", "?", "🎉", "foo_bar()"}
)

func pick(r *rand.Rand, list []string) string { return list[r.IntN(len(list))] }

func phrase(r *rand.Rand, n int, filler bool) string {
	var w []string
	for range n {
		if filler && r.IntN(3) == 0 {
			w = append(w, pick(r, refFiller))
		} else {
			w = append(w, pick(r, refTopics))
		}
	}
	return strings.Join(w, " ")
}

func randomTeam(r *rand.Rand, n int) []agents.Agent {
	grid := func() float64 { return float64(r.IntN(11)) / 10 }
	team := make([]agents.Agent, n)
	for i := range team {
		a := agents.Agent{Slug: fmt.Sprintf("a%03d", r.IntN(4*n)), Name: fmt.Sprintf("Agent %d", i), Status: agents.StatusActive,
			Personality: agents.Personality{Formality: grid(), Humor: grid(), TechnicalDepth: grid()}}
		if r.IntN(10) == 0 {
			a.Personality.TechnicalDepth = r.Float64()
		}
		for k := r.IntN(5); k > 0; k-- {
			s := agents.Skill{Name: pick(r, refTopics) + "-" + pick(r, refTopics), Description: phrase(r, 1+r.IntN(8), true),
				Priority: []int{0, 10, 50, 50}[r.IntN(4)]}
			if r.IntN(6) == 0 && len(a.Skills) > 0 {
				s.Name = a.Skills[0].Name // a second skill of the same name
			}
			for j := r.IntN(4); j > 0; j-- {
				s.Keywords = append(s.Keywords, pick(r, refTopics))
			}
			if r.IntN(3) == 0 {
				s.Domains = []string{phrase(r, 2, false)}
			}
			if r.IntN(3) == 0 {
				s.Actions = []string{phrase(r, 1, true)}
			}
			s.RequiresExplicitKeywords = r.IntN(5) == 0
			s.OverrideContinuity = r.IntN(4) == 0
			s.InternalOnly = r.IntN(10) == 0
			s.RequiresEditor = r.IntN(20) == 0
			a.Skills = append(a.Skills, s)
		}
		team[i] = a
	}
	return team
}

// hashEmbedder embeds a text as a few numbers derived from its hash.
func hashEmbedder(text string) []float64 {
	h := fnv.New64a()
	h.Write([]byte(text))
	r := rand.New(rand.NewPCG(h.Sum64(), 1))
	return []float64{r.Float64() - 0.3, r.Float64(), r.Float64() - 0.5}
}

type funcEmbedder func(string) []float64

func (funcEmbedder) ID() string { return "hash" }

func (f funcEmbedder) Embed(_ context.Context, texts []string) ([][]float64, error) {
	out := make([][]float64, len(texts))
	for i, t := range texts {
		out[i] = f(t)
	}
	return out, nil
}

func randomSignals(r *rand.Rand, team []agents.Agent, query string, now time.Time) routing.Signals {
	sig := routing.Signals{Now: now}
	if r.IntN(5) == 0 {
		sig.Now = time.Time{} // no window
	}
	if r.IntN(4) > 0 {
		loads := map[string]routing.Load{}
		for _, a := range team {
			if r.IntN(3) > 0 {
				loads[a.Slug] = routing.Load{ActiveTasks: r.IntN(8), ActiveConversations: r.IntN(30), LatencyMS: float64(r.IntN(15000))}
			}
		}
		// Loads of agents the index does not have (removed since the team
		// was read): sorted before, between and after the team's slugs.
		for k := r.IntN(4); k > 0; k-- {
			loads[[]string{"", "a", "m", "zz"}[r.IntN(4)]+fmt.Sprint(r.IntN(100))] = routing.Load{ActiveTasks: 7, ActiveConversations: 29, LatencyMS: 14000}
		}
		sig.Loads = routing.LoadsOf(loads)
	}
	for k := r.IntN(80); k > 0; k-- {
		rt := routing.Rating{Rating: r.IntN(7), At: now.Add(-time.Duration(r.IntN(40*24)) * time.Hour)}
		if len(team) > 0 && r.IntN(6) > 0 {
			rt.Agent = team[r.IntN(len(team))].Slug
		} else {
			rt.Agent = "nobody"
		}
		switch r.IntN(4) {
		case 0:
			rt.Query = query
		case 1:
			rt.Query = query + " " + pick(r, refTopics)
		case 2:
			rt.Query = strings.ToUpper(query) + " please"
		default:
			rt.Query = phrase(r, 1+r.IntN(6), true)
		}
		sig.Ratings = append(sig.Ratings, rt)
	}
	return sig
}

func TestIndexScoresEqualTheReferenceOnRandomTeams(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		n := []int{0, 1, 3, 10, 40, 63, 64, 65, 150}[r.IntN(9)]
		team := randomTeam(r, n)
		var embed func(string) []float64
		embedded := r.IntN(5) == 0
		if embedded {
			// One stage: no domains to choose between (two-stage
			// selection is checked against full scoring on its own).
			for i := range team {
				for k := range team[i].Skills {
					team[i].Skills[k].Domains = nil
				}
			}
		}
		ix := routing.BuildIndex(team)
		if embedded {
			embed = hashEmbedder
			require.NoError(t, ix.Embed(context.Background(), funcEmbedder(embed)))
		}
		ref := newRefGate(team, embed)
		// Several queries per index: the rating and personality caches
		// carry over between them.
		for k := range 6 {
			q := phrase(r, r.IntN(12), true)
			if k == 0 && r.IntN(2) == 0 {
				q = "Can you review the SQL behind our billing API? Latency doubled after the last deploy."
			}
			sig := randomSignals(r, team, q, now)
			if embed != nil && r.IntN(3) > 0 {
				sig.QueryEmbedding = hashEmbedder(q)
				if r.IntN(4) == 0 {
					sig.QueryEmbedding = sig.QueryEmbedding[:2] // a mismatched length counts as no similarity
				}
			}
			want := ref.score(q, sig)
			msg := fmt.Sprintf("seed %d, %d agents, query %q", seed, n, q)
			if !assertSameScores(t, want, ix.Score(q, sig), len(want), msg) {
				return
			}
			explained := r.IntN(n + 2)
			if !assertSameScores(t, want, ix.ScoreTop(q, sig, explained), explained, msg+fmt.Sprintf(", %d explained", explained)) {
				return
			}
			ranking := ix.Rank(q, sig)
			require.Equal(t, n, ranking.Len())
			top := min(explained, n)
			if !assertSameScores(t, want[:top], ranking.Top(explained), top, msg+fmt.Sprintf(", top %d", explained)) {
				return
			}
		}
	}
}

func TestIndexMatchesTheReferenceOnTheBenchmarkTeam(t *testing.T) {
	for _, n := range []int{10, 100, 1000} {
		team := syntheticTeam(n)
		ix, ref := routing.BuildIndex(team), newRefGate(team, nil)
		now := time.Now()
		sig := routing.Signals{Now: now}
		for i := 0; i < 200; i++ {
			sig.Ratings = append(sig.Ratings, routing.Rating{Agent: team[i%n].Slug, Rating: 1 + i%5, Query: "review the sql api latency " + fmt.Sprint(i%9), At: now.Add(-time.Hour)})
		}
		loads := map[string]routing.Load{}
		for i, a := range team {
			loads[a.Slug] = routing.Load{ActiveTasks: i % 5, ActiveConversations: i % 11, LatencyMS: float64(i%20) * 100}
		}
		sig.Loads = routing.LoadsOf(loads)
		for _, q := range []string{"Can you review the SQL behind our billing API? Latency doubled after the last deploy.", "review the sql api latency", "hello"} {
			want := ref.score(q, sig)
			assertSameScores(t, want, ix.ScoreTop(q, sig, routing.ExplainedScores), routing.ExplainedScores, fmt.Sprintf("%d agents, %q", n, q))
			assertSameScores(t, want[:routing.ExplainedScores], ix.Rank(q, sig).Top(routing.ExplainedScores), routing.ExplainedScores, fmt.Sprintf("%d agents, %q, top", n, q))
		}
	}
}

func TestRatedQueryCacheStartsAfreshPastItsBound(t *testing.T) {
	team := randomTeam(rand.New(rand.NewPCG(1, 2)), 30)
	ix, ref := routing.BuildIndex(team), newRefGate(team, nil)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	q := "review the sql api latency"
	for round := range 4 {
		sig := routing.Signals{Now: now}
		for i := range routing.RatedQueryCache / 3 {
			query := fmt.Sprintf("%s %d%d", q, round, i) // distinct text, same terms
			if i%2 == 0 {
				query = fmt.Sprintf("review sql %d%d billing", round, i)
			}
			sig.Ratings = append(sig.Ratings, routing.Rating{Agent: team[i%len(team)].Slug, Rating: 1 + i%5, Query: query, At: now.Add(-time.Minute)})
		}
		assertSameScores(t, ref.score(q, sig), ix.Score(q, sig), len(team), fmt.Sprintf("round %d", round))
	}
}

func TestIndexIsSafeForConcurrentQueries(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	team := randomTeam(r, 80)
	ix, ref := routing.BuildIndex(team), newRefGate(team, nil)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	type tc struct {
		q    string
		sig  routing.Signals
		want []routing.ExpertScore
	}
	var cases []tc
	for range 8 {
		q := phrase(r, 1+r.IntN(10), true)
		sig := randomSignals(r, team, q, now)
		cases = append(cases, tc{q, sig, ref.score(q, sig)})
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				c := cases[(g+i)%len(cases)]
				if !assertSameScores(t, c.want, ix.Score(c.q, c.sig), len(c.want), c.q) {
					return
				}
			}
		}()
	}
	wg.Wait()
}
