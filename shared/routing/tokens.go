package routing

import (
	"math"

	"sync"
	"sync/atomic"
)

// TokenEmbedder is an Embedder whose vector of a text is the sum of its
// tokens' rows of a table, scaled to unit length (wordllama). A
// classifier's dense logits W·(v/|v|) are then (1/|s|)·Σ_t W·e_t over the
// message's tokens t: with each token's W·e_t kept (tokenLogits), the
// dense part of a gate query is a few tokens' rows of additions instead of
// Dim rows of multiply-adds (at 100 agents, 201 classes: about 2,000
// additions instead of 51,200 multiply-adds). Titan's vectors do not
// decompose: an embedder that is not a TokenEmbedder scores from the
// vector.
type TokenEmbedder interface {
	Embedder
	// Tokens appends the ids of text's tokens to ids: Embed's vector of
	// text is the sum of their rows, scaled to unit length.
	Tokens(text string, ids []int32) []int32
	// Row is token id's row (read only), of the vectors' length.
	Row(id int32) []float32
	// Vocabulary is how many rows there are: every id is below it.
	Vocabulary() int
}

// SetEmbedder tells ix which embedder embeds its queries
// (Signals.QueryEmbedding); a TokenEmbedder lets a classifier sum its
// dense logits over a message's tokens, and a two-stage index choose its
// candidates through them (tokenSims). Call it after SetEmbeddings and
// before ix is in use (Embed does; an index given stored vectors by
// SetEmbeddings needs it from its caller). The scores are the same either way, within float
// rounding.
func (ix *Index) SetEmbedder(e Embedder) {
	ix.tokens, _ = e.(TokenEmbedder)
	ix.buildTokenSims()
}

// tokenLogits keeps, for one classifier and one embedder, each token's
// W·e_t (the classifier's dense weights times the token's row; classes()
// floats), computed at a token's first use and kept without a lock: a
// query reads a kept row with one atomic load.
//
// Bounded at tokenLogitFloats floats (8 MB): every token of wordllama's
// vocabulary at the classifier's bound would be 32,000 × 513 float32, 66
// MB per classifier, too much for a function that holds several teams'.
// 8 MB keeps about 10,000 tokens at 201 classes and 4,000 at 513, more
// than the distinct tokens of most teams' messages; a message with a token
// past the bound is scored from its vector, as without it.
type tokenLogits struct {
	c    *Classifier
	e    TokenEmbedder
	rows []atomic.Pointer[[]float32] // by token id; nil: not computed
	left atomic.Int64                // rows that may still be kept
	// words are the sums of words' 4-grams' rows (addGrams), by hash.
	words []atomic.Pointer[wordGrams]
}

const tokenLogitFloats = 1 << 21

// tokenLogitsFor is c's token logits over e's vocabulary: made once per
// classifier and shared by every index holding it with e; nil when e does
// not decompose or its rows are not c's dimension. A copy of c (another
// classifier, perhaps of other weights) gets its own, and so does another
// embedder (the last one asked keeps its). tokensMu guards c.tok: it is
// taken once per SetClassifier, never by a query.
func (c *Classifier) tokenLogitsFor(e TokenEmbedder) *tokenLogits {
	if e == nil || e.Vocabulary() == 0 || len(e.Row(0)) != c.Dim {
		return nil
	}
	tokensMu.Lock()
	defer tokensMu.Unlock()
	if tl := c.tok; tl != nil && tl.c == c && tl.e == e {
		return tl
	}
	tl := &tokenLogits{c: c, e: e, rows: make([]atomic.Pointer[[]float32], e.Vocabulary()), words: newWordSlots(c.classes())}
	tl.left.Store(int64(tokenLogitFloats / c.classes()))
	c.tok = tl
	return tl
}

var tokensMu sync.Mutex

// row is W·e_t for token id (classes() floats): kept, or computed and
// kept while the bound allows; nil past the bound.
func (tl *tokenLogits) row(c *Classifier, id int32) []float32 {
	if r := tl.rows[id].Load(); r != nil {
		return *r
	}
	if tl.left.Load() <= 0 {
		return nil
	}
	nc := c.classes()
	r := make([]float32, nc)
	for f, x := range tl.e.Row(id) {
		axpy(x, c.Weights[f*nc:(f+1)*nc], r)
	}
	// Two queries may compute one token at once: the same row, kept once.
	if tl.rows[id].CompareAndSwap(nil, &r) {
		tl.left.Add(-1)
	}
	return r
}

// logitsByTokens writes into z (classes()) the class scores of the message
// text whose unit vector is v and whose words are ws (words.AllTokens), as
// logits(features(v, text)) does, with the dense part summed over the
// message's tokens and the 4-grams' a word at a time (addGrams). False when the tokens cannot stand for v
// (tokenNorm) or one is past the bound: z is then to be computed from v.
func (c *Classifier) logitsByTokens(tl *tokenLogits, text string, ws []string, v []float32, z []float32, sc *scratch) bool {
	ids := tl.e.Tokens(text, sc.tokIDs[:0])
	sc.tokIDs = ids
	norm, ok := tokenNorm(tl.e, ids, v)
	if !ok {
		return false
	}
	rows := sc.tokRows[:0]
	for _, id := range ids {
		r := tl.row(c, id)
		if r == nil {
			return false
		}
		rows = append(rows, r)
	}
	sumRows(rows, z)
	clear(rows) // the rows are the classifier's: the scratch keeps none
	sc.tokRows = rows
	scale := float32(embeddingScale / norm)
	bias := c.Bias[:len(z)]
	for k, x := range z {
		z[k] = bias[k] + scale*x
	}
	c.addSparse(c.wordFeatures(ws, false), z)
	if c.Grams > 0 {
		sc.gramBuf, sc.tokRows = tl.addGrams(c, ws, z, sc.gramTmp(len(z)), sc.gramBuf, sc.tokRows)
	}
	return true
}

// tokenNorm is |s|, s the sum of the rows of ids, read off the message's
// unit vector v = s/|s| at v's largest coordinate j (s_j/v_j: len(ids)
// additions, not len(ids) rows); false unless three other coordinates of
// s/|s| agree with v's, as they do when v is the vector of these tokens.
// A vector of another text (or model) is thus never scored by these
// tokens. s_j is summed in float32 in the tokens' order, as the embedder
// sums it.
func tokenNorm(e TokenEmbedder, ids []int32, v []float32) (float64, bool) {
	if len(ids) == 0 || len(v) == 0 {
		return 0, false
	}
	col := func(j int) float64 {
		s := float32(0)
		for _, id := range ids {
			s += e.Row(id)[j]
		}
		return float64(s)
	}
	jm := 0
	for j, x := range v {
		if math.Abs(float64(x)) > math.Abs(float64(v[jm])) {
			jm = j
		}
	}
	norm := col(jm) / float64(v[jm])
	if !(norm > 0) || math.IsInf(norm, 0) {
		return 0, false
	}
	for _, j := range [...]int{0, len(v) / 2, len(v) - 1} {
		if math.Abs(col(j)/norm-float64(v[j])) > 1e-5 {
			return 0, false
		}
	}
	return norm, true
}

// sumRows writes into z the sum of rows (each at least len(z) long), a
// block of eight columns at a time: each value the float32 sum of its
// column over the rows in their order, from zero (the same bits as
// clearing z and adding row after row), with the block's sums in
// registers instead of read and written back once a row.
func sumRows(rows [][]float32, z []float32) {
	j := 0
	for ; j+8 <= len(z); j += 8 {
		var s0, s1, s2, s3, s4, s5, s6, s7 float32
		for _, r := range rows {
			r8 := r[j : j+8 : j+8]
			s0 += r8[0]
			s1 += r8[1]
			s2 += r8[2]
			s3 += r8[3]
			s4 += r8[4]
			s5 += r8[5]
			s6 += r8[6]
			s7 += r8[7]
		}
		z8 := z[j : j+8 : j+8]
		z8[0], z8[1], z8[2], z8[3], z8[4], z8[5], z8[6], z8[7] = s0, s1, s2, s3, s4, s5, s6, s7
	}
	for ; j < len(z); j++ {
		var s float32
		for _, r := range rows {
			s += r[j]
		}
		z[j] = s
	}
}

// addTo adds x to y, four lanes at a time.
func addTo(x, y []float32) {
	x = x[:len(y)]
	i := 0
	for ; i+4 <= len(y); i += 4 {
		y4, x4 := y[i:i+4:i+4], x[i:i+4:i+4]
		y4[0] += x4[0]
		y4[1] += x4[1]
		y4[2] += x4[2]
		y4[3] += x4[3]
	}
	for ; i < len(y); i++ {
		y[i] += x[i]
	}
}

// axpy adds a × x to y, four lanes at a time (Go does not vectorize the
// plain loop; unrolled, the gate's logits at 200 classes take about two
// thirds of the time). The same products, in the same order per lane.
func axpy(a float32, x, y []float32) {
	x = x[:len(y)]
	i := 0
	for ; i+4 <= len(y); i += 4 {
		y4, x4 := y[i:i+4:i+4], x[i:i+4:i+4]
		y4[0] += a * x4[0]
		y4[1] += a * x4[1]
		y4[2] += a * x4[2]
		y4[3] += a * x4[3]
	}
	for ; i < len(y); i++ {
		y[i] += a * x[i]
	}
}
