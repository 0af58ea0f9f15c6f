package routing

import (
	"math"
	"slices"
	"sync"
)

// Ranking is every indexed agent's score for one query, best first (ties:
// skill match, then slug, then input order), in a compact form: one
// 64-bit entry an agent, in rank order, holding its overall score and
// signals in thousandths and the agent; per agent its flags and number of
// similar ratings; the skills' matches. None of it holds a pointer.
// ExpertScores are built from it on demand, so a caller that needs the
// best few of a large team in full pays for those few.
//
// A Ranking reads its index, sig.Loads (for the task and conversation
// counts of explanations) and sig.QueryEmbedding when it builds scores:
// leave them unchanged while the Ranking is in use.
type Ranking struct {
	ix      *Index
	loads   Loads
	fit     *fits
	entries []uint64 // best first, see entry
	flags   []uint8  // by agent
	rated   []int32  // by agent; nil when no rating counted
	// Every skill's SkillMatch (by skill), for the order of the matching
	// skills of the agents built in full; or, for an index of more than
	// denseScores skills, nil and the query, to score the skills of those
	// agents again instead of copying thousands of numbers.
	docScore []float64
	q        query
	// The best two skill matches (thousandths) and the agent with the
	// best (-1: none matched): an agent's confidence reads its lead.
	top1, top2 uint64
	leader     int32
	// cal reads the skill matches: the index's, or the lexical one for a
	// query without a vector.
	cal Calibration
	// The first top entries are in rank order, the others follow in
	// agent order; all, once sortAll made it, is every entry in rank
	// order: a caller wanting more than the best few pays for the rest
	// (order.go). entries never changes.
	top  int
	once *sync.Once // nil when top is every entry
	all  []uint64
	// matched is how many agents match the query's skills (Matched).
	matched int
	// agentP is every agent's probability when the index's classifier
	// scored the query (nil otherwise): its confidence is calibrated
	// (an exp and a log) only for the agents whose scores are built, a
	// tenth of a query at 100 agents when every one was.
	agentP []float64
}

// denseScores: up to this many skills (4 KiB of scores) a Ranking copies
// every skill's score; past it, it scores the few skills it builds in
// full again.
const denseScores = 512

// An entry packs, from the highest bits: 1000 − overall, 1000 − skill
// match (10 bits each, so that ascending entries are best first), past
// performance and load balance (10 bits each), all in thousandths, and
// the agent (24 bits).
const (
	overallShift = 54
	skillShift   = 44
	perfShift    = 34
	loadShift    = 24
	agentBits    = 24
	agentMask    = 1<<agentBits - 1
	// MaxAgents is the most agents an index ranks.
	MaxAgents = agentMask
)

func entry(overall, skill, perf, load uint64, agent int) uint64 {
	return (1000-overall)<<overallShift | (1000-skill)<<skillShift | perf<<perfShift | load<<loadShift | uint64(agent)
}

// Rank scores every indexed agent for text on the four signals and ranks
// them.
//
// The work is in proportion to the postings of the query's terms (skill
// match) and to the ratings (past performance, against term vectors cached
// in the index), plus tight loops over flat per-agent slices (load;
// personality fit, cached per message style; the entries) and a radix
// sort. It allocates the Ranking's few slices, nothing per agent.
func (ix *Index) Rank(text string, sig Signals) *Ranking {
	sc := ix.getScratch()
	defer ix.putScratch(sc)
	q := ix.prepare(text, &sig, sc)
	style := StyleOf(text)
	ix.scoreSkills(&q, sc)
	defer ix.clearSkills(sc)
	rated := ix.performance(&q, sig, sc)
	fit := ix.personalityFits(style)

	// Each agent's load, in input order (an agent without one is idle:
	// the zero Load). The merge is a loop of its own so that the
	// arithmetic below runs without calls, many agents at once.
	n := len(ix.agents)
	loads := sc.loads[:n]
	if sig.Loads.Len() > 0 { // >= 0: the merge of none is the zero Load clear gives
		ix.alignLoads(sig.Loads, loads)
	} else {
		clear(loads)
	}
	// The signals are rounded as round3 rounds them, in thousandths and
	// back through a table: the same values without a division each.
	best, perfSum, perfN, fv, entries := sc.best[:n], sc.perf[:n], sc.perfN[:n], fit.v[:n], sc.keys[:n]
	var top1, top2 uint64 // the two best skill matches, for the leader's lead
	leader, matched := int32(-1), 0
	for ai := range best {
		skill := roundMilli(best[ai])
		matched += int(min(skill, 1))
		if skill > top1 {
			top1, top2, leader = skill, top1, int32(ai)
		} else if skill > top2 { // >= sets top2 to the value it holds
			top2 = skill
		}
		perf := uint64(neutralMilli)
		if k := perfN[ai]; k > 0 {
			perf = roundMilli(perfSum[ai] / float64(k))
			perfSum[ai] = 0
		}
		load := roundMilli(LoadBalance(loads[ai]))
		overall := roundMilli(weighted(thousandth[skill&1023], thousandth[perf&1023], fv[ai], thousandth[load&1023]))
		entries[ai] = entry(overall, skill, perf, load, ai)
	}

	r := &Ranking{ix: ix, loads: sig.Loads, fit: fit, flags: slices.Clone(sc.flags[:n]), top1: top1, top2: top2, leader: leader,
		cal: ix.cal, matched: matched}
	if r.entries, r.top = ix.rank(sc); r.top < n {
		r.once = new(sync.Once)
	}
	if q.vec == nil {
		r.cal = LexicalCalibration
	} else if q.cls != nil {
		r.agentP = slices.Clone(sc.agentP[:n])
	}
	// Copied or scored again, a skill's score is the same (< or <=).
	if len(ix.docs) <= denseScores {
		r.docScore = make([]float64, len(ix.docs))
		for _, d := range sc.touched {
			r.docScore[d] = sc.acc[d].score
		}
	} else {
		r.q = query{terms: slices.Clone(q.terms), weights: slices.Clone(q.weights), known: q.known, all: q.all, norm: q.norm,
			vec: q.vec, domains: slices.Clone(q.domains), semAll: q.semAll, semDocs: slices.Clone(q.semDocs), semSims: slices.Clone(q.semSims), editor: q.editor, image: q.image}
	}
	if rated > 0 { // >= 0 would copy counts of 0: the same RatedSimilar
		r.rated = slices.Clone(perfN)
		clear(perfN)
	}
	return r
}

// skillScores is every skill's SkillMatch for q, by skill: scoreSkills'
// walk of the postings, so the same values.
func (ix *Index) skillScores(q *query) []float64 {
	sc := ix.getScratch()
	defer ix.putScratch(sc)
	ix.scoreSkills(q, sc)
	defer ix.clearSkills(sc)
	out := make([]float64, len(ix.docs))
	for _, d := range sc.touched {
		out[d] = sc.acc[d].score
	}
	return out
}

// confidence is the match confidence of an entry's agent: its skill match
// and, for the leader, its lead over the runner-up, through the index's
// calibration; in thousandths like every signal.
func (r *Ranking) confidence(e uint64) float64 {
	skill := 1000 - signal(e, skillShift)
	lead := uint64(0)
	if int32(e&agentMask) == r.leader && skill == r.top1 {
		lead = r.top1 - r.top2
	}
	ai := int32(e & agentMask)
	if r.agentP != nil {
		return round3(r.ix.cal.classified(r.agentP[ai]))
	}
	return round3(r.cal.confidence(thousandth[skill], thousandth[lead], r.ix.exampled(ai)))
}

// Leader is the slug of the agent with the best skill match ("" when no
// agent matched): the most confident, wherever its overall score ranks it.
func (r *Ranking) Leader() string {
	if r.leader < 0 || r.top1 == 0 {
		return ""
	}
	return r.ix.slugs[r.leader]
}

// Len is the number of agents ranked.
func (r *Ranking) Len() int { return len(r.entries) }

// Top returns the best n scores (all of them when fewer), each in full
// with its explanation.
func (r *Ranking) Top(n int) []ExpertScore {
	n = max(0, min(n, len(r.entries)))
	return r.scores(n, n)
}

// Scores returns every score, best first; the best explained carry their
// explanation, the others every signal and matching skill.
func (r *Ranking) Scores(explained int) []ExpertScore {
	return r.scores(len(r.entries), max(0, min(explained, len(r.entries))))
}

// thousandth[m] is m/1000 for m = 0…1000: round3's results, exactly. (The
// table has 1,024 entries so that an index masked to 10 bits needs no
// bounds check.)
var thousandth = func() (t [1024]float64) {
	for m := range 1001 {
		t[m] = float64(m) / 1000
	}
	return t
}()

// neutralMilli is NeutralPerformance in thousandths.
const neutralMilli = 700

// signal is a signal of an entry, in thousandths.
func signal(e uint64, shift uint) uint64 { return e >> shift & 1023 }

// Best returns the best n scores in full, the first explained of them
// with their explanation, and then the score of each agent of include
// (by slug) and of the Leader that is not among the best n, in rank order
// and unexplained.
// A slug of include that is not ranked is left out. It is what the
// expert-gate function answers: every agent is scored and ranked, but
// only the scores a caller can use are built (a strategy selects at most
// MaxK or MaxEnsemble, discovery recommends three, a consultation also
// weighs its suggested agent wherever it ranks).
func (r *Ranking) Best(n, explained int, include ...string) []ExpertScore {
	n = max(0, min(n, len(r.entries)))
	explained = max(0, min(explained, n))
	list := r.list(n)
	// >= 0: with nothing to include the block below adds nothing.
	if len(include) > 0 || r.Leader() != "" {
		// The agents wanted, a few: a slice searched (a map read per
		// ranked agent was a fiftieth of a query at 1,000 agents).
		var want []int32
		for _, slug := range include {
			for ai, ok := r.ix.bySlug[slug]; ok && ai >= 0; ai = r.ix.nextSameSlug[ai] {
				want = append(want, ai)
			}
		}
		if n > 0 && r.Leader() != "" {
			// The most confident agent, wherever overall ranks it: the
			// selection's threshold reads confidence.
			want = append(want, r.leader)
		}
		want = slices.DeleteFunc(want, func(ai int32) bool {
			return slices.ContainsFunc(list, func(e uint64) bool { return int32(e&agentMask) == ai })
		})
		if len(want) > 0 { // >= 0 clones and adds nothing: the same list
			list = append(slices.Clone(list), r.wanted(n, want)...)
		}
	}
	return r.scoresOf(list, explained)
}

// Matched is how many ranked agents match the query's skills at all
// (skill match above 0): the breadth a query's complexity counts.
func (r *Ranking) Matched() int { return r.matched }

// scores builds the best n scores, the best explained of them with their
// explanation.
func (r *Ranking) scores(n, explained int) []ExpertScore {
	return r.scoresOf(r.list(n), explained)
}

// scoresOf builds the scores of list (entries of r), the first explained
// of them with their explanation.
func (r *Ranking) scoresOf(list []uint64, explained int) []ExpertScore {
	ix := r.ix
	n := len(list)
	// Every matching skill of the n agents, best first per agent, in one
	// slice: their names are one allocation.
	nd := 0
	for _, e := range list {
		ai := e & agentMask
		nd += int(ix.docStart[ai+1] - ix.docStart[ai])
	}
	docScore := r.docScore
	// By the postings or skill by skill, the scores are the same: the
	// bound (> or >=, or turned around) is a matter of speed.
	if docScore == nil && n > denseScores/8 {
		// Many agents in full (a response with every score): score every
		// skill again by the postings, as Rank did, rather than one by one.
		docScore = ix.skillScores(&r.q)
	}
	hits := make([]hit, 0, nd)
	from := make([]int32, n+1)
	for i, e := range list {
		ai := e & agentMask
		h := len(hits)
		for d := ix.docStart[ai]; d < ix.docStart[ai+1]; d++ {
			var s float64
			if docScore != nil {
				s = docScore[d]
			} else {
				s = ix.rescore(&r.q, d)
			}
			if s > 0 {
				hits = append(hits, hit{d, s})
			}
		}
		ix.sortHits(hits[h:])
		from[i+1] = int32(len(hits))
	}
	names := make([]string, len(hits))
	for i, x := range hits {
		names[i] = ix.docs[x.doc].name
	}
	out := make([]ExpertScore, n)
	for i, e := range list {
		ai := e & agentMask
		f := r.flags[ai]
		s := &out[i]
		s.AgentSlug, s.AgentName, s.Label = ix.slugs[ai], ix.names[ai], ix.labels[ai]
		s.SkillMatch, s.PastPerformance, s.PersonalityFit = thousandth[1000-signal(e, skillShift)], thousandth[signal(e, perfShift)], r.fit.v[ai]
		s.LoadBalance, s.Overall = thousandth[signal(e, loadShift)], thousandth[1000-signal(e, overallShift)]
		if r.rated != nil {
			s.RatedSimilar = int(r.rated[ai])
		}
		s.Explicit, s.Override = f&flagExplicit != 0, f&flagOverride != 0
		s.Confidence = r.confidence(e)
		s.MatchingSkills = names[from[i]:from[i+1]:from[i+1]]
	}
	if explained > 0 { // >= 0 explains none at 0 either
		b := make([]byte, 0, 128*explained)
		ends := make([]int, explained)
		for i := range explained {
			b = appendExplanation(b, &out[i], r.loads.Of(out[i].AgentSlug))
			ends[i] = len(b)
		}
		all, start := string(b), 0
		for i, end := range ends {
			out[i].Explanation, start = all[start:end], end
		}
	}
	return out
}

// roundMilli is math.Round(x*1000) for x in [0, 1] (every signal and their
// weighted sum; a hair above 1 rounds to 1000 too). For y ≥ 0, truncating
// and adding one when the remainder (exact) is at least ½ rounds half away
// from zero as math.Round does; taking that one from the sign bit of
// remainder − ½ (exact or negative) spares a branch the processor cannot
// predict, on every signal of every agent.
func roundMilli(x float64) uint64 {
	y := float64(x * 1000) // rounded here: arm64 would fuse it into y-t below (FMSUB)
	t := int64(y)
	return uint64(t) + 1 - math.Float64bits(y-float64(t)-0.5)>>63
}

// milli is a 0–1 score rounded by round3, in thousandths (0–1000).
func milli(x float64) uint64 { return uint64(x*1000 + 0.5) }

// fitCache keeps every agent's personality fit, rounded, per message
// style. A style's scales move in fixed steps (StyleOf), so a team's
// messages fall into a few dozen styles and after the first of each the
// personality signal is a lookup.
type fitCache struct {
	mu      sync.Mutex
	byStyle map[Style]*fits
}

// fits are round3(PersonalityFit) of every agent for one style, in input
// order, as values and in thousandths. Shared: read only.
type fits struct {
	v []float64
	m []uint16
}

// FitStyles bounds the styles an index keeps personality fits for; past it
// the cache starts afresh.
const FitStyles = 256

func (ix *Index) personalityFits(st Style) *fits {
	c := &ix.fits
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.byStyle[st]; ok {
		return f
	}
	// A cache of fits: its bound (>=, >, or turned around) changes what
	// is kept, never a fit.
	if c.byStyle == nil || len(c.byStyle) >= FitStyles {
		c.byStyle = map[Style]*fits{}
	}
	f := &fits{v: make([]float64, len(ix.agents)), m: make([]uint16, len(ix.agents))}
	for ai := range f.v {
		f.v[ai] = round3(personalityFit(st, ix.formality[ai], ix.humor[ai], ix.techDepth[ai]))
		f.m[ai] = uint16(milli(f.v[ai]))
	}
	c.byStyle[st] = f
	return f
}
