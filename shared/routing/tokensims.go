package routing

import (
	"slices"
	"sync/atomic"
)

// tokenSims keeps, for a two-stage index whose embedder decomposes
// (TokenEmbedder), each token's dot product with every domain's centroid
// and every skill's examples' centroid, computed at a token's first use
// and kept without a lock. A message's cosine to a centroid c is then
// (1/|s|)·Σ_t e_t·c over its tokens: at 1,000 agents the centroid
// cosines of the domains and of the probed domains' 200 to 400 skills
// (about a quarter of a gate query, 256 multiply-adds each) become a
// few tokens' additions each. They only choose the domains probed and the
// skills whose examples are compared (nearestDomains, preselectExamples):
// every similarity a score reads is computed as before. The sums differ
// from the vector's dot products by float rounding only.
//
// Bounded at as many floats as the index's own vectors (a row is
// domains + skills floats: at 1,000 agents with 20 examples a skill, about
// 5,000 tokens, 42 MB like the vectors); past it a message with a token
// not kept is scored from its vector.
type tokenSims struct {
	rows []atomic.Pointer[[]float32] // by token id; nil: not computed
	left atomic.Int64                // rows that may still be kept
}

// buildTokenSims gives a two-stage index with examples' centroids its
// tokenSims (nil otherwise).
func (ix *Index) buildTokenSims() {
	ix.tokSims = nil
	if ix.tokens == nil || !ix.twoStage() || ix.exCentroids == nil || ix.tokens.Vocabulary() == 0 || len(ix.tokens.Row(0)) != ix.dim {
		return
	}
	ts := &tokenSims{rows: make([]atomic.Pointer[[]float32], ix.tokens.Vocabulary())}
	ts.left.Store(int64(len(ix.vecs) / (len(ix.domainNames) + len(ix.docs))))
	ix.tokSims = ts
}

// simRow is token id's dot products: domain g's centroid at g, skill d's
// examples' centroid at len(domainNames)+d (0 for a skill without
// examples); kept, or computed and kept while the bound allows; nil past
// it.
func (ix *Index) simRow(id int32) []float32 {
	ts := ix.tokSims
	if r := ts.rows[id].Load(); r != nil {
		return *r
	}
	if ts.left.Load() <= 0 {
		return nil
	}
	e, dim, ng := ix.tokens.Row(id), ix.dim, len(ix.domainNames)
	r := make([]float32, ng+len(ix.docs))
	for g := range ng {
		r[g] = float32(dot(e, ix.centroids[g*dim:(g+1)*dim]))
	}
	for d := range len(ix.docs) {
		if ix.exCentroids != nil && ix.exStart[d] != ix.exStart[d+1] { // nil: CompareEveryExample
			r[ng+d] = float32(dot(e, ix.exCentroids[d*dim:(d+1)*dim]))
		}
	}
	if ts.rows[id].CompareAndSwap(nil, &r) {
		ts.left.Add(-1)
	}
	return r
}

// querySims are a message's cosines to the centroids through its tokens:
// the rows of its tokens and 1/|s|.
type querySims struct {
	rows  [][]float32
	scale float64
	buf   []float64 // sums' scratch
}

// at is the message's cosine to centroid k (simRow's order).
func (s *querySims) at(k int) float64 {
	sum := 0.0
	for _, r := range s.rows {
		sum += float64(r[k])
	}
	return sum * s.scale
}

// sums are the message's cosines to the centroids off+k for k of ks, row
// by row: the rows are a few KB apart, and read centroid by centroid
// (at) the same offset of each fell in one set of the processor's cache
// and missed it (at 1,000 agents, 5.6 µs of 20 µs saved were lost so).
func (s *querySims) sums(ks []int32, off int) []float64 {
	out := slices.Grow(s.buf[:0], len(ks))[:len(ks)]
	clear(out)
	for _, r := range s.rows {
		r = r[off:]
		for i, k := range ks {
			out[i] += float64(r[k])
		}
	}
	for i := range out {
		out[i] *= s.scale
	}
	s.buf = out
	return out
}

// querySimsOf is q's querySims (in sc), or nil when the index keeps none,
// q's tokens do not stand for its vector (tokenNorm) or one is past the
// bound: the cosines are then dot products with the vector.
func (ix *Index) querySimsOf(q *query, sc *scratch) *querySims {
	if ix.tokSims == nil || q.vec == nil {
		return nil
	}
	sc.tokIDs = ix.tokens.Tokens(q.text, sc.tokIDs[:0])
	norm, ok := tokenNorm(ix.tokens, sc.tokIDs, q.vec)
	if !ok {
		return nil
	}
	rows := sc.simRows[:0]
	for _, id := range sc.tokIDs {
		r := ix.simRow(id)
		if r == nil {
			return nil
		}
		rows = append(rows, r)
	}
	sc.simRows = rows
	sc.qsims.rows, sc.qsims.scale = rows, 1/norm
	return &sc.qsims
}
