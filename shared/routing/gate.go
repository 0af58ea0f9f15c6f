package routing

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/shared/agents"
)

// The ExpertGate's signal weights (they sum to 1).
const (
	WeightSkill       = 0.40
	WeightPerformance = 0.25
	WeightPersonality = 0.20
	WeightLoad        = 0.15
)

// Past performance: ratings of queries whose cosine similarity to this one
// is above SimilarQuery, within PerformanceWindow; agents without any get
// NeutralPerformance so a new agent is neither favoured nor buried.
const (
	NeutralPerformance = 0.7
	SimilarQuery       = 0.8
	PerformanceWindow  = 30 * 24 * time.Hour
)

// Load: what counts as a full agent. Five concurrent tasks is the product's
// per-agent limit; twenty open conversations and ten seconds per reply are
// where an agent is considered saturated or slow.
const (
	TaskCapacity         = 5
	ConversationCapacity = 20
	SlowLatencyMS        = 10000
)

// Load is an agent's current work.
type Load struct {
	ActiveTasks         int     `json:"active_tasks"`
	ActiveConversations int     `json:"active_conversations"`
	LatencyMS           float64 `json:"latency_ms"`
}

// Rating is one feedback rating of an agent's reply, with the query it
// answered.
type Rating struct {
	Agent  string
	Rating int // 1–5
	Query  string
	At     time.Time
}

// Embedder turns texts into dense vectors. It is optional: with one, skill
// match blends TF-IDF with embedding similarity (see Index.Embed).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float64, error)
}

// Embed computes the embeddings of the index's skill documents.
func (ix *Index) Embed(ctx context.Context, e Embedder) error {
	texts := make([]string, len(ix.docs))
	for i, d := range ix.docs {
		texts[i] = d.text
	}
	out, err := e.Embed(ctx, texts)
	if err != nil {
		return err
	}
	if len(out) != len(texts) {
		return fmt.Errorf("embedder returned %d vectors for %d texts", len(out), len(texts))
	}
	ix.docEmbeddings = out
	return nil
}

// Signals are the inputs of one scoring beyond the index.
type Signals struct {
	Loads   map[string]Load
	Ratings []Rating
	Now     time.Time
	// QueryEmbedding is used when the index has embeddings.
	QueryEmbedding []float64
}

// ExpertScore is one agent's score with its per-signal breakdown.
type ExpertScore struct {
	AgentSlug       string   `json:"agent_slug"`
	AgentName       string   `json:"agent_name"`
	SkillMatch      float64  `json:"skill_match"`
	PastPerformance float64  `json:"past_performance"`
	PersonalityFit  float64  `json:"personality_fit"`
	LoadBalance     float64  `json:"load_balance"`
	Overall         float64  `json:"overall"`
	MatchingSkills  []string `json:"matching_skills"`
	Explanation     string   `json:"explanation"`
	// RatedSimilar is how many ratings of similar queries fed past performance.
	RatedSimilar int `json:"rated_similar"`
	// Label is the agent's primary skill, for attributions ("code review").
	Label string `json:"label,omitempty"`
	// Explicit: a keyword of a matching skill is in the query.
	Explicit bool `json:"-"`
	Override bool `json:"-"`
}

// Overall is the weighted sum of the four signals.
func Overall(skill, perf, fit, load float64) float64 {
	return round3(WeightSkill*skill + WeightPerformance*perf + WeightPersonality*fit + WeightLoad*load)
}

// ExplainedScores is how many of the best scores the expert-gate function
// explains in full (ScoreTop). It is more than any strategy selects (MaxK,
// MaxEnsemble) or discovery recommends, so every agent that may answer, and
// the runners-up it is compared with, carry their reason; explaining every
// agent of a large team would cost more than scoring it and bloat each
// routing decision with sentences nobody reads.
const ExplainedScores = 10

// Score rates every indexed agent for text on the four signals and returns
// the scores sorted best first (ties: skill match, then slug), each
// explained in full.
func (ix *Index) Score(text string, sig Signals) []ExpertScore {
	return ix.ScoreTop(text, sig, len(ix.agents))
}

// ScoreTop is Score with the Explanation written for the best explained
// scores only: the others carry every signal, their matching skills and
// their rank, and an empty Explanation. The scores are identical to
// Score's.
//
// The work is in proportion to the postings of the query's terms (skill
// match), the ratings (past performance, against term vectors cached in
// the index), and one loop over flat per-agent slices (personality, load,
// the sort key); the result is one allocation for the scores, one for all
// matching-skill lists and one for all explanations, whatever the team's
// size.
func (ix *Index) ScoreTop(text string, sig Signals, explained int) []ExpertScore {
	sc := ix.getScratch()
	defer ix.putScratch(sc)
	q := ix.prepare(text, sig.QueryEmbedding, sc)
	style := StyleOf(text)
	hits := ix.scoreSkills(&q, sc)
	defer ix.clearSkills(sc)
	ix.performance(&q, sig, sc)

	n := len(ix.agents)
	fits := ix.personalityFits(style)
	for ai := range n {
		skill := 0.0
		if b := sc.best[ai]; b > 0 {
			skill = round3(b)
		}
		perf := NeutralPerformance
		if k := sc.perfN[ai]; k > 0 {
			perf = round3(sc.perf[ai] / float64(k))
		}
		load := 1.0 // an agent without load is idle: LoadBalance(Load{})
		if l, ok := sig.Loads[ix.slugs[ai]]; ok {
			load = round3(LoadBalance(l))
		}
		overall := Overall(skill, perf, fits[ai], load)
		sc.skill[ai], sc.perf[ai], sc.load[ai], sc.overall[ai] = skill, perf, load, overall
		sc.keys[ai] = (1000-milli(overall))<<radixBits | (1000 - milli(skill))
	}
	order := ix.rank(sc)

	out := make([]ExpertScore, n)
	names := make([]string, hits)
	explained = max(0, min(explained, n))
	b := sc.explain[:0]
	ends := sc.ends[:0]
	for i, k := range order {
		ai := int32(uint32(k))
		s := &out[i]
		s.AgentSlug, s.AgentName, s.Label = ix.slugs[ai], ix.names[ai], ix.labels[ai]
		s.SkillMatch, s.PastPerformance, s.PersonalityFit, s.LoadBalance, s.Overall = sc.skill[ai], sc.perf[ai], fits[ai], sc.load[ai], sc.overall[ai]
		s.RatedSimilar = int(sc.perfN[ai])
		sc.perf[ai], sc.perfN[ai] = 0, 0
		if f := sc.flags[ai]; f != 0 {
			s.Explicit, s.Override = f&flagExplicit != 0, f&flagOverride != 0
		}
		m := names[:0:0]
		if sc.hits[ai] > 0 {
			hit := ix.hitOrder(int(ai), sc)
			m, names = names[:len(hit):len(hit)], names[len(hit):]
			for j, di := range hit {
				m[j] = ix.docs[di].name
			}
		}
		s.MatchingSkills = m
		if i < explained {
			b = appendExplanation(b, s, sig.Loads[s.AgentSlug])
			ends = append(ends, len(b))
		}
	}
	if explained > 0 {
		all, from := string(b), 0
		for i, end := range ends {
			out[i].Explanation, from = all[from:end], end
		}
	}
	sc.explain, sc.ends = b, ends
	return out
}

// milli is a 0–1 score rounded by round3, in thousandths (0–1000).
func milli(x float64) uint64 { return uint64(x*1000 + 0.5) }

const (
	// radixBits holds a score in thousandths (0–1000).
	radixBits    = 10
	radixBuckets = 1 << radixBits
	// smallTeam: below it a comparison sort beats two counting passes over
	// radixBuckets.
	smallTeam = 64
)

// rank orders the agents best first: overall, then skill match (both in
// sc.keys[ai] as (1000 − overall)<<radixBits | (1000 − skill), in
// thousandths), then slug, then input order. It returns the order with
// the agent in the low 32 bits of each element.
func (ix *Index) rank(sc *scratch) []uint64 {
	n := len(ix.agents)
	keys, tmp := sc.keys[:n], sc.keys2[:n]
	if n < smallTeam {
		for ai, k := range keys {
			tmp[ai] = k<<32 | uint64(ix.slugRank[ai])
		}
		slices.Sort(tmp)
		for i, k := range tmp {
			tmp[i] = k&^(1<<32-1) | uint64(ix.bySlugRank[uint32(k)])
		}
		return tmp
	}
	// Two stable counting passes, skill match then overall, over the
	// agents taken in slug order: ties keep that order.
	cnt := sc.counts
	const mask = radixBuckets - 1
	countingStarts(cnt, keys, 0)
	for _, ai := range ix.bySlugRank {
		k := keys[ai]
		tmp[cnt[k&mask]] = k<<32 | uint64(ai)
		cnt[k&mask]++
	}
	countingStarts(cnt, tmp, 32+radixBits)
	for _, x := range tmp {
		b := x >> (32 + radixBits)
		keys[cnt[b]] = x
		cnt[b]++
	}
	return keys
}

// countingStarts sets cnt[b] to the first place of bucket b, the buckets
// being (k >> shift) & (radixBuckets − 1).
func countingStarts(cnt []int32, keys []uint64, shift uint) {
	clear(cnt)
	for _, k := range keys {
		cnt[(k>>shift)&(radixBuckets-1)]++
	}
	sum := int32(0)
	for b, c := range cnt {
		cnt[b], sum = sum, sum+c
	}
}

// fitCache keeps every agent's personality fit, rounded, per message
// style. A style's scales move in fixed steps (StyleOf), so a team's
// messages fall into a few dozen styles and after the first of each the
// personality signal is a lookup.
type fitCache struct {
	mu      sync.Mutex
	byStyle map[Style][]float64
}

// FitStyles bounds the styles an index keeps personality fits for; past it
// the cache starts afresh.
const FitStyles = 256

// personalityFits returns round3(PersonalityFit(st, agent)) for every
// agent, in input order. The slice is shared: read only.
func (ix *Index) personalityFits(st Style) []float64 {
	c := &ix.fits
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.byStyle[st]; ok {
		return f
	}
	if c.byStyle == nil || len(c.byStyle) >= FitStyles {
		c.byStyle = map[Style][]float64{}
	}
	f := make([]float64, len(ix.agents))
	for ai := range f {
		f[ai] = round3(personalityFit(st, ix.formality[ai], ix.humor[ai], ix.techDepth[ai]))
	}
	c.byStyle[st] = f
	return f
}

// LoadBalance is 1 for an idle agent and falls with active tasks (half the
// weight), open conversations (0.3) and recent reply latency (0.2).
func LoadBalance(l Load) float64 {
	task := min(1, float64(l.ActiveTasks)/TaskCapacity)
	conv := min(1, float64(l.ActiveConversations)/ConversationCapacity)
	lat := min(1, l.LatencyMS/SlowLatencyMS)
	return clamp01(1 - (0.5*task + 0.3*conv + 0.2*lat))
}

// appendExplanation writes the one-line reason of a score. It is built
// with strconv rather than fmt, into one buffer for all the scores of a
// query.
func appendExplanation(b []byte, s *ExpertScore, l Load) []byte {
	switch {
	case s.SkillMatch >= 0.6:
		b = append(b, "strong skill match ("...)
		b = appendJoin(b, s.MatchingSkills)
		b = append(b, ')')
	case s.SkillMatch > 0:
		b = append(b, "partial skill match ("...)
		b = appendJoin(b, s.MatchingSkills)
		b = append(b, ')')
	default:
		b = append(b, "no matching skill"...)
	}
	if s.RatedSimilar > 0 {
		b = append(b, "; rated "...)
		b = strconv.AppendFloat(b, s.PastPerformance, 'f', 2, 64)
		b = append(b, " on "...)
		b = strconv.AppendInt(b, int64(s.RatedSimilar), 10)
		b = append(b, " similar queries"...)
	} else {
		b = append(b, "; no rated history (neutral)"...)
	}
	b = append(b, "; style fit "...)
	b = strconv.AppendFloat(b, s.PersonalityFit, 'f', 2, 64)
	b = append(b, "; load "...)
	b = strconv.AppendFloat(b, s.LoadBalance, 'f', 2, 64)
	b = append(b, " ("...)
	b = strconv.AppendInt(b, int64(l.ActiveTasks), 10)
	b = append(b, " tasks, "...)
	b = strconv.AppendInt(b, int64(l.ActiveConversations), 10)
	b = append(b, " conversations)"...)
	return b
}

func appendJoin(b []byte, list []string) []byte {
	for i, s := range list {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, s...)
	}
	return b
}

// Candidates returns the active agents of list (the gate scores only those).
func Candidates(list []agents.Agent) []agents.Agent {
	out := make([]agents.Agent, 0, len(list))
	for _, a := range list {
		if a.Status == agents.StatusActive {
			out = append(out, a)
		}
	}
	return out
}
