package routing

import (
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/conclave-ai/conclave/shared/platform/words"
)

// RatedQueryCache bounds how many distinct rated queries an index keeps the
// term vectors of. The expert-gate function reads at most MaxRatings (500)
// recent ratings per query, so a team's working set is far below it; past
// it the cache starts afresh rather than tracking which entries are cold.
const RatedQueryCache = 8192

// ratingCache keeps the term-frequency vector of every rated query an index
// has seen, so past performance costs a map lookup and a few multiplications
// per rating instead of tokenizing each rated query on every message. The
// vectors are over their own vocabulary (rated queries use words no skill
// does) and hold integer counts: the cosine against the query is exact, as
// it was with the term vectors it replaces. It also holds the per-query
// working memory, which the lock guards with the rest.
type ratingCache struct {
	mu      sync.Mutex
	vocab   map[string]int32
	byQuery map[string]int32
	// entry e's terms and counts are terms[start[e]:start[e+1]] and tf[…];
	// norm[e] is the Euclidean norm of its counts.
	start []int32
	terms []int32
	tf    []int32
	norm  []float64

	// per query: the query's distinct terms (sorted) and their counts, and
	// its counts by vocabulary term; the similarity of each entry (valid
	// where memo[e] == gen); a rated query's tokens.
	qTerms []string
	qCount []int32
	qtf    []int32
	memo   []uint32
	cos    []float64
	gen    uint32
	tmp    []string
}

func (rc *ratingCache) reset() {
	rc.vocab, rc.byQuery = map[string]int32{}, map[string]int32{}
	rc.start = append(rc.start[:0], 0)
	rc.terms, rc.tf, rc.norm = rc.terms[:0], rc.tf[:0], rc.norm[:0]
	rc.qtf, rc.memo, rc.cos = rc.qtf[:0], rc.memo[:0], rc.cos[:0]
}

// add caches the vector of a rated query. A term new to the vocabulary
// that the query has gets its count in qtf.
func (rc *ratingCache) add(text string) int32 {
	toks := append(rc.tmp[:0], words.Tokens(text)...)
	slices.Sort(toks)
	rc.tmp = toks
	sum := 0
	for i := 0; i < len(toks); {
		j := i + 1
		for j < len(toks) && toks[j] == toks[i] {
			j++
		}
		id, ok := rc.vocab[toks[i]]
		if !ok {
			id = int32(len(rc.vocab))
			rc.vocab[strings.Clone(toks[i])] = id
			rc.qtf = append(rc.qtf, 0)
			if k := sort.SearchStrings(rc.qTerms, toks[i]); k < len(rc.qTerms) && rc.qTerms[k] == toks[i] {
				rc.qtf[id] = rc.qCount[k]
			}
		}
		rc.terms = append(rc.terms, id)
		rc.tf = append(rc.tf, int32(j-i))
		sum += (j - i) * (j - i)
		i = j
	}
	e := int32(len(rc.norm))
	rc.start = append(rc.start, int32(len(rc.terms)))
	rc.norm = append(rc.norm, math.Sqrt(float64(sum)))
	rc.memo = append(rc.memo, 0)
	rc.cos = append(rc.cos, 0)
	rc.byQuery[strings.Clone(text)] = e
	return e
}

// performance averages the ratings (mapped 1–5 → 0–1) of similar queries
// (cosine of their term frequencies above SimilarQuery) in the window, per
// agent, into sc.perf (sums) and sc.perfN (counts). It returns how many
// ratings counted.
func (ix *Index) performance(q *query, sig Signals, sc *scratch) int {
	if len(sig.Ratings) == 0 {
		return 0
	}
	rc := &ix.ratings
	rc.mu.Lock()
	defer rc.mu.Unlock()
	// A cache of rated queries: its bound (>, >=, or turned around)
	// changes what is kept, never a cosine.
	if rc.vocab == nil || len(rc.byQuery) > RatedQueryCache {
		rc.reset()
	}

	// The query's term counts: its norm counts every term; qtf has those
	// in the vocabulary (add fills in those it brings).
	toks := append(sc.sorted[:0], q.tokens...)
	slices.Sort(toks)
	sc.sorted = toks
	rc.qTerms, rc.qCount = rc.qTerms[:0], rc.qCount[:0]
	sum := 0
	for i := 0; i < len(toks); {
		j := i + 1
		for j < len(toks) && toks[j] == toks[i] {
			j++
		}
		rc.qTerms, rc.qCount = append(rc.qTerms, toks[i]), append(rc.qCount, int32(j-i))
		if id, ok := rc.vocab[toks[i]]; ok {
			rc.qtf[id] = int32(j - i)
		}
		sum += (j - i) * (j - i)
		i = j
	}
	qn := math.Sqrt(float64(sum))
	// Cleared on every query instead (!=), the memo recomputes the same
	// cosines.
	if rc.gen++; rc.gen == 0 {
		clear(rc.memo)
		rc.gen = 1
	}

	since, window := sig.Now.Add(-PerformanceWindow), !sig.Now.IsZero()
	perf, perfN := sc.perf, sc.perfN
	counted := 0
	for i := range sig.Ratings {
		r := &sig.Ratings[i]
		if r.Rating < 1 || r.Rating > 5 || (window && r.At.Before(since)) {
			continue
		}
		e, ok := rc.byQuery[r.Query]
		if !ok {
			e = rc.add(r.Query)
		}
		if rc.memo[e] != rc.gen {
			rc.memo[e], rc.cos[e] = rc.gen, rc.cosine(e, qn)
		}
		if rc.cos[e] <= SimilarQuery {
			continue
		}
		ai, ok := ix.bySlug[r.Agent]
		if !ok {
			continue
		}
		v, w := float64(r.Rating-1)/4, int32(1)
		if sig.UserID != "" && r.UserID == sig.UserID {
			w = OwnRatingWeight
		}
		counted++
		for ; ai >= 0; ai = ix.nextSameSlug[ai] {
			perf[ai] += v * float64(w)
			perfN[ai] += w
		}
	}
	for _, t := range rc.qTerms {
		if id, ok := rc.vocab[t]; ok {
			rc.qtf[id] = 0
		}
	}
	return counted
}

// cosine of entry e and the query in rc.qtf (norm qn). The counts are
// integers, so the dot product is exact.
func (rc *ratingCache) cosine(e int32, qn float64) float64 {
	if qn == 0 || rc.norm[e] == 0 {
		return 0
	}
	dot := 0
	for k := rc.start[e]; k < rc.start[e+1]; k++ {
		dot += int(rc.tf[k]) * int(rc.qtf[rc.terms[k]])
	}
	return clamp01(float64(dot) / (qn * rc.norm[e]))
}
