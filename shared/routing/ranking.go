package routing

import (
	"math"
	"slices"
	"sync"
)

// Ranking is every indexed agent's score for one query, best first (ties:
// skill match, then slug, then input order), in a compact form: the order,
// and per agent its four signals and overall score in thousandths, its
// flags and number of similar ratings, plus every skill's match. None of
// it holds a pointer. ExpertScores are built from it on demand, so a
// caller that needs the best few of a large team in full pays for those
// few.
//
// A Ranking reads its index, and sig.Loads for the task and conversation
// counts of explanations, when it builds scores: leave the map unchanged
// while the Ranking is in use.
type Ranking struct {
	ix    *Index
	loads map[string]Load
	fit   *fits
	// order is the agents, best first; the rest is by agent (signals,
	// flags, rated: nil when no rating counted).
	order   []int32
	signals []uint64
	flags   []uint8
	rated   []int32
	// Every skill's SkillMatch (by skill), for the order of the matching
	// skills of the agents built in full; or, for an index of more than
	// denseScores skills, nil and the query, to score the skills of those
	// agents again instead of copying thousands of numbers.
	docScore []float64
	q        query
}

// denseScores: up to this many skills (4 KiB of scores) a Ranking copies
// every skill's score; past it, it scores the few skills it builds in
// full again.
const denseScores = 512

// The four signals of an agent in Ranking.signals and scratch.signals:
// 16 bits each, in thousandths.
const (
	skillShift   = 48
	perfShift    = 32
	loadShift    = 16
	overallShift = 0
)

// Rank scores every indexed agent for text on the four signals and ranks
// them.
//
// The work is in proportion to the postings of the query's terms (skill
// match) and to the ratings (past performance, against term vectors cached
// in the index), plus tight loops over flat per-agent slices (load;
// personality fit, cached per message style; the sort key) and a radix
// sort. It allocates the Ranking's few slices, nothing per agent.
func (ix *Index) Rank(text string, sig Signals) *Ranking {
	sc := ix.getScratch()
	defer ix.putScratch(sc)
	q := ix.prepare(text, sig.QueryEmbedding, sc)
	style := StyleOf(text)
	ix.scoreSkills(&q, sc)
	defer ix.clearSkills(sc)
	rated := ix.performance(&q, sig, sc)
	fit := ix.personalityFits(style)

	// Each agent's load, in input order (an agent without one is idle:
	// the zero Load). The map lookups are a loop of their own so that the
	// arithmetic below runs without calls, many agents at once.
	n := len(ix.agents)
	loads := sc.loads[:n]
	if len(sig.Loads) > 0 {
		for ai, slug := range ix.slugs {
			loads[ai] = sig.Loads[slug]
		}
	} else {
		clear(loads)
	}
	// The signals are rounded as round3 rounds them, in thousandths and
	// back through a table: the same values without a division each.
	best, perfSum, perfN, fv := sc.best[:n], sc.perf[:n], sc.perfN[:n], fit.v[:n]
	signals, keys := sc.signals[:n], sc.keys[:n]
	for ai := range best {
		skill := roundMilli(best[ai])
		perf := uint64(neutralMilli)
		if k := perfN[ai]; k > 0 {
			perf = roundMilli(perfSum[ai] / float64(k))
			perfSum[ai] = 0
		}
		load := roundMilli(LoadBalance(loads[ai]))
		overall := roundMilli(weighted(thousandth[skill&1023], thousandth[perf&1023], fv[ai], thousandth[load&1023]))
		signals[ai] = skill<<skillShift | perf<<perfShift | load<<loadShift | overall<<overallShift
		// Best first: overall, then skill match (both 0–1 in steps of
		// 0.001, so exactly ordered as integers).
		keys[ai] = (1000-overall)<<radixBits | (1000 - skill)
	}
	sorted := ix.rank(sc)

	r := &Ranking{ix: ix, loads: sig.Loads, fit: fit, order: make([]int32, n), signals: slices.Clone(signals), flags: slices.Clone(sc.flags[:n])}
	if len(ix.docs) <= denseScores {
		r.docScore = make([]float64, len(ix.docs))
		for _, d := range sc.touched {
			r.docScore[d] = sc.acc[d].score
		}
	} else {
		r.q = query{terms: slices.Clone(q.terms), weights: slices.Clone(q.weights), known: q.known, norm: q.norm, embedding: q.embedding}
	}
	for i, k := range sorted {
		r.order[i] = int32(uint32(k))
	}
	if rated > 0 {
		r.rated = slices.Clone(perfN)
		clear(perfN)
	}
	return r
}

// Len is the number of agents ranked.
func (r *Ranking) Len() int { return len(r.order) }

// Top returns the best n scores (all of them when fewer), each in full
// with its explanation.
func (r *Ranking) Top(n int) []ExpertScore {
	n = max(0, min(n, len(r.order)))
	return r.scores(n, n)
}

// Scores returns every score, best first; the best explained carry their
// explanation, the others every signal and matching skill.
func (r *Ranking) Scores(explained int) []ExpertScore {
	return r.scores(len(r.order), max(0, min(explained, len(r.order))))
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

func signal(v uint64, shift uint) float64 { return thousandth[(v>>shift)&1023] }

// scores builds the best n scores, the best explained of them with their
// explanation.
func (r *Ranking) scores(n, explained int) []ExpertScore {
	ix := r.ix
	// Every matching skill of the n agents, best first per agent, in one
	// slice: their names are one allocation.
	nd := 0
	for _, ai := range r.order[:n] {
		nd += int(ix.docStart[ai+1] - ix.docStart[ai])
	}
	hits := make([]hit, 0, nd)
	from := make([]int32, n+1)
	for i, ai := range r.order[:n] {
		h := len(hits)
		for d := ix.docStart[ai]; d < ix.docStart[ai+1]; d++ {
			var s float64
			if r.docScore != nil {
				s = r.docScore[d]
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
	for i, ai := range r.order[:n] {
		v, f := r.signals[ai], r.flags[ai]
		s := &out[i]
		s.AgentSlug, s.AgentName, s.Label = ix.slugs[ai], ix.names[ai], ix.labels[ai]
		s.SkillMatch, s.PastPerformance, s.PersonalityFit = signal(v, skillShift), signal(v, perfShift), r.fit.v[ai]
		s.LoadBalance, s.Overall = signal(v, loadShift), signal(v, overallShift)
		if r.rated != nil {
			s.RatedSimilar = int(r.rated[ai])
		}
		s.Explicit, s.Override = f&flagExplicit != 0, f&flagOverride != 0
		s.MatchingSkills = names[from[i]:from[i+1]:from[i+1]]
	}
	if explained > 0 {
		b := make([]byte, 0, 128*explained)
		ends := make([]int, explained)
		for i := range explained {
			b = appendExplanation(b, &out[i], r.loads[out[i].AgentSlug])
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
	y := x * 1000
	t := int64(y)
	return uint64(t) + 1 - math.Float64bits(y-float64(t)-0.5)>>63
}

// milli is a 0–1 score rounded by round3, in thousandths (0–1000).
func milli(x float64) uint64 { return uint64(x*1000 + 0.5) }

const (
	// radixBits holds a score in thousandths (0–1000): a sort key is two
	// scores, 20 bits.
	radixBits = 10
	// smallTeam: below it a comparison sort beats the radix sort's three
	// passes over 256 buckets.
	smallTeam = 256
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
	// A least-significant-digit radix sort of the 20-bit keys, 8 bits a
	// pass, the agents taken in slug order: every pass is stable, so ties
	// keep that order. The elements are key<<32 | agent.
	var cnt [3][256]int32
	for _, k := range keys {
		cnt[0][k&0xff]++
		cnt[1][(k>>8)&0xff]++
		cnt[2][(k>>16)&0xff]++
	}
	for d := range cnt {
		sum := int32(0)
		for b, c := range cnt[d] {
			cnt[d][b], sum = sum, sum+c
		}
	}
	for _, ai := range ix.bySlugRank {
		k := keys[ai]
		b := k & 0xff
		tmp[cnt[0][b]] = k<<32 | uint64(ai)
		cnt[0][b]++
	}
	for _, x := range tmp { // keys is free now
		b := (x >> 40) & 0xff
		keys[cnt[1][b]] = x
		cnt[1][b]++
	}
	for _, x := range keys {
		b := (x >> 48) & 0xff
		tmp[cnt[2][b]] = x
		cnt[2][b]++
	}
	return tmp
}

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
