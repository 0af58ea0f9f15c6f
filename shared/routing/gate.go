package routing

import (
	"math"
	"strconv"
	"time"

	"github.com/conclave-ai/conclave/shared/team/agents"
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
	// OwnRatingWeight is how many times a rating counts when the person
	// who gave it is the one asking now (Signals.UserID): their own
	// experience of an agent weighs more than the team's.
	OwnRatingWeight = 2
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
	// UserID is the person who rated ("" for a key's own rating).
	UserID string
}

// Signals are the inputs of one scoring beyond the index.
type Signals struct {
	Loads   Loads
	Ratings []Rating
	Now     time.Time
	// QueryEmbedding is the message's vector from the index's embedder,
	// used when the index has embeddings (Index.Semantic).
	QueryEmbedding []float64
	// Context is what the message carries for the eligibility filters (an
	// open editor, attachments); nil is a plain chat message.
	Context *MessageContext
	// UserID is the person the message is from ("" for a key's own): their
	// own ratings count OwnRatingWeight times in past performance (and in
	// RatedSimilar).
	UserID string
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
	// Explicit: a keyword of a matching skill is in the query; Override:
	// that skill overrides continuity (override_continuity).
	Explicit bool `json:"explicit,omitempty"`
	Override bool `json:"override_continuity,omitempty"`
	// Confidence is the calibrated match confidence in [0, 1]: what the
	// selection threshold, the fallback and the decision log compare (see
	// Confidence in confidence.go).
	Confidence float64 `json:"confidence"`
}

// Overall is the weighted sum of the four signals.
func Overall(skill, perf, fit, load float64) float64 {
	return round3(weighted(skill, perf, fit, load))
}

// weighted is Overall before rounding (Rank rounds it without dividing).
func weighted(skill, perf, fit, load float64) float64 {
	return WeightSkill*skill + WeightPerformance*perf + WeightPersonality*fit + WeightLoad*load
}

// ExplainedScores is how many of the best scores the expert-gate function
// builds and explains in full and answers (Ranking.Best; every agent is
// still scored and ranked). It is more than any strategy selects (MaxK,
// MaxEnsemble) or discovery recommends, so every agent that may answer, and
// the runners-up it is compared with, carry their reason; explaining every
// agent of a large team would cost more than scoring it and bloat each
// routing decision with sentences nobody reads.
const ExplainedScores = 10

// Score rates every indexed agent for text on the four signals and returns
// the scores sorted best first (ties: skill match, then slug), each
// explained in full.
func (ix *Index) Score(text string, sig Signals) []ExpertScore {
	return ix.Rank(text, sig).Scores(len(ix.agents))
}

// ScoreTop is Score with the Explanation written for the best explained
// scores only: the others carry every signal and their matching skills,
// and an empty Explanation. The scores are identical to Score's.
func (ix *Index) ScoreTop(text string, sig Signals, explained int) []ExpertScore {
	return ix.Rank(text, sig).Scores(explained)
}

// LoadBalance is 1 for an idle agent and falls with active tasks (half the
// weight), open conversations (0.3) and recent reply latency (0.2).
func LoadBalance(l Load) float64 {
	task := share(l.ActiveTasks, TaskCapacity, taskShares[:])
	conv := share(l.ActiveConversations, ConversationCapacity, conversationShares[:])
	lat := 0.0
	if l.LatencyMS != 0 {
		lat = min(1, l.LatencyMS/SlowLatencyMS)
	}
	return clamp01(1 - (0.5*task + 0.3*conv + 0.2*lat))
}

// share is min(1, n/capacity), from a table for the counts up to the
// capacity (the gate computes it for every agent of the team on every
// message).
func share(n, capacity int, table []float64) float64 {
	// The table holds what the formula computes: at n = 0 or capacity,
	// or with the condition turned around, the result is the same.
	if n >= 0 && n <= capacity {
		return table[n]
	}
	return min(1, float64(n)/float64(capacity))
}

var taskShares, conversationShares = func() (t [TaskCapacity + 1]float64, c [ConversationCapacity + 1]float64) {
	for n := range t {
		t[n] = float64(n) / TaskCapacity
	}
	for n := range c {
		c[n] = float64(n) / ConversationCapacity
	}
	return t, c
}()

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
		b = appendScore(b, s.PastPerformance)
		b = append(b, " on "...)
		b = strconv.AppendInt(b, int64(s.RatedSimilar), 10)
		b = append(b, " similar queries"...)
	} else {
		b = append(b, "; no rated history (neutral)"...)
	}
	b = append(b, "; style fit "...)
	b = appendScore(b, s.PersonalityFit)
	b = append(b, "; load "...)
	b = appendScore(b, s.LoadBalance)
	b = append(b, " ("...)
	b = strconv.AppendInt(b, int64(l.ActiveTasks), 10)
	b = append(b, " tasks, "...)
	b = strconv.AppendInt(b, int64(l.ActiveConversations), 10)
	b = append(b, " conversations)"...)
	return b
}

// appendScore writes a 0–1 score with two decimals, as
// strconv.AppendFloat(b, x, 'f', 2, 64) does: from a table for the scores
// round3 produces.
func appendScore(b []byte, x float64) []byte {
	// The table holds what AppendFloat writes: at 0 or 1 either way
	// gives the same text.
	if x >= 0 && x <= 1 {
		if m := milli(x); math.Float64bits(thousandth[m]) == math.Float64bits(x) { // not −0
			return append(b, scoreText[m]...)
		}
	}
	return strconv.AppendFloat(b, x, 'f', 2, 64)
}

// scoreText[m] is thousandth[m] with two decimals.
var scoreText = func() (t [1001]string) {
	for m := range t {
		t[m] = strconv.FormatFloat(thousandth[m], 'f', 2, 64)
	}
	return t
}()

func appendJoin(b []byte, list []string) []byte {
	for i, s := range list {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, s...)
	}
	return b
}

// Candidates returns the active agents of list (the gate scores only
// those), less A2A agents that were unreachable at their last check.
func Candidates(list []agents.Agent) []agents.Agent {
	out := make([]agents.Agent, 0, len(list))
	for _, a := range list {
		if a.Status == agents.StatusActive && !a.Unavailable() {
			out = append(out, a)
		}
	}
	return out
}
