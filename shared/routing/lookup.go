package routing

import (
	"math"

	"github.com/conclave-ai/conclave/shared/platform/words"
)

// scratch is the per-query working memory, sized to the index and reused
// through a pool: every slice is all zeros between queries (each query
// clears what it touched).
type scratch struct {
	// per term: the query's place of it, plus one (0: not in the query)
	termPos []int32
	// per skill: the query's accumulators, and the skills they touched
	acc     []docAcc
	touched []int32
	// per agent: best skill match, past performance (sum and count),
	// flags, load; the Ranking's entries and the radix sort's buffer.
	best, perf  []float64
	perfN       []int32
	flags       []uint8
	loads       []Load
	keys, keys2 []uint64
	// per query
	qTerms   []int32
	qWeights []float64
	sorted   []string
	// the semantic candidates of a two-stage index, and their
	// similarities
	cands []int32
	sims  []float64
	// with a classifier (classify): per class, whether one of the
	// index's skills that may answer has it, and its probability; per
	// agent, the sum of its skills' probabilities
	keep    []bool
	prob    []float32
	agentP  []float64
	tokIDs  []int32     // the message's tokens (logitsByTokens, querySimsOf)
	tokRows [][]float32 // rows of logits to add up (logitsByTokens, addGrams)
	// the rows of the message's tokens (querySimsOf)
	simRows [][]float32
	qsims   querySims
	// addGrams' scratch
	gramSum []float32
	gramBuf []byte
}

// gramTmp is sc.gramSum, of n floats.
func (sc *scratch) gramTmp(n int) []float32 {
	if len(sc.gramSum) != n {
		sc.gramSum = make([]float32, n)
	}
	return sc.gramSum
}

// docAcc is a skill's share of one query: the dot product with the
// query's tf-idf vector, the IDF of the query terms it covers, whether it
// has one of them as a keyword, its semantic similarity (when semantic
// is set) and its SkillMatch.
type docAcc struct {
	dot, covered, score float64
	sem                 float64
	explicit, semantic  bool
}

// Agent flags: a matching skill has a keyword of the query; and overrides
// continuity.
const (
	flagExplicit = 1 << iota
	flagOverride
)

func newScratch(ix *Index) *scratch {
	nd, na := len(ix.docs), len(ix.agents)
	sc := &scratch{
		termPos: make([]int32, len(ix.idf)),
		acc:     make([]docAcc, nd),
		best:    make([]float64, na), perf: make([]float64, na), perfN: make([]int32, na), flags: make([]uint8, na), loads: make([]Load, na),
		keys: make([]uint64, na), keys2: make([]uint64, na),
	}
	return sc
}

func (ix *Index) getScratch() *scratch { return ix.scratch.Get().(*scratch) }

func (ix *Index) putScratch(s *scratch) { ix.scratch.Put(s) }

// query is a message prepared for scoring against the index.
type query struct {
	text   string
	tokens []string // every content word, in order (words.Tokens)
	// words are all its words (words.AllTokens), what its classifier
	// reads: split with tokens, once, when it has one (cls).
	words []string
	// The distinct known terms (first-occurrence order) and their tf-idf
	// weights; known is the sum of their IDFs, norm the weights' norm.
	// all is known plus, for each distinct word no skill of the team uses,
	// the IDF of a word only one skill would use: coverage is a share of
	// everything the message says, so one generic word shared with a
	// skill ("find", "time") does not cover a question about something
	// else.
	terms   []int32
	weights []float64
	known   float64
	all     float64
	norm    float64
	// vec is the message's unit embedding (nil: no semantic signal);
	// domains, of a two-stage index, the domains scoreSemantic chose;
	// semAll, or else semDocs (sorted), the skills it scored, and
	// semSims their similarities, in semDocs' order.
	vec     []float32
	domains []int32
	semAll  bool
	semDocs []int32
	semSims []float64
	// The message's context, for the eligibility filters.
	editor string
	image  bool
	// cls is the index's classifier when the query has a vector (nil:
	// none), loaded once for the whole query.
	cls *classified
}

func (ix *Index) prepare(text string, sig *Signals, sc *scratch) query {
	q := query{text: text, terms: sc.qTerms[:0], weights: sc.qWeights[:0]}
	if sig != nil {
		q.editor, q.image = sig.Context.EditorType(), sig.Context.HasImage()
		if ix.vecs != nil {
			q.vec = unitVector(sig.QueryEmbedding, ix.dim)
		}
		if q.vec != nil {
			q.cls = ix.classifier.Load()
		}
	}
	if q.cls != nil {
		q.tokens, q.words = words.Split(text)
	} else {
		q.tokens = words.Tokens(text)
	}
	var unknown map[string]bool
	for _, t := range q.tokens {
		id, ok := ix.terms[t]
		if !ok {
			if unknown == nil {
				unknown = map[string]bool{}
			}
			unknown[t] = true
			continue
		}
		idf := ix.idf[id]
		if p := sc.termPos[id]; p > 0 {
			q.weights[p-1] += idf
			continue
		}
		q.known += idf
		q.terms = append(q.terms, id)
		q.weights = append(q.weights, idf)
		sc.termPos[id] = int32(len(q.terms))
	}
	sum := 0.0
	for i, t := range q.terms {
		sum += q.weights[i] * q.weights[i]
		sc.termPos[t] = 0
	}
	q.norm = math.Sqrt(sum)
	q.all = q.known + float64(len(unknown))*ix.rareIDF()
	sc.qTerms, sc.qWeights = q.terms, q.weights
	return q
}

// rareIDF is the IDF of a term only one skill uses: what a word no skill
// uses weighs in a query's coverage.
func (ix *Index) rareIDF() float64 { return math.Log(1 + float64(max(1, len(ix.docs)))) }

// scoreSkills computes the SkillMatch of every skill sharing a term with
// the query (sc.acc[d].score; every other skill scores 0) by walking the
// postings of the query's terms, and each agent's best skill and flags
// (sc.best, sc.flags).
func (ix *Index) scoreSkills(q *query, sc *scratch) {
	acc := sc.acc
	touched := sc.touched[:0]
	for i, t := range q.terms {
		w, idf := q.weights[i], ix.idf[t]
		for _, p := range ix.postings[ix.postStart[t]:ix.postStart[t+1]] {
			a := &acc[p.doc]
			if a.covered == 0 {
				touched = append(touched, p.doc)
			}
			a.dot += w * p.w
			a.covered += idf
			if p.keyword {
				a.explicit = true
			}
		}
	}
	if q.vec != nil && q.cls != nil {
		ix.classify(q, sc, touched)
		return
	}
	if q.vec != nil {
		touched = ix.scoreSemantic(q, acc, touched, sc)
	}
	sc.touched = touched
	best, flags := sc.best, sc.flags
	for _, d := range touched {
		a := &acc[d]
		s := ix.skillMatch(q, d, a)
		if s <= 0 {
			continue
		}
		a.score = s
		h := &ix.docHot[d]
		if s > best[h.agent] { // >= stores the value it holds
			best[h.agent] = s
		}
		if a.explicit {
			flags[h.agent] |= flagExplicit
			if h.flags&docOverride != 0 {
				flags[h.agent] |= flagOverride
			}
		}
	}
}

// skillMatch is the SkillMatch of skill d from its share of the query
// (a.covered > 0 or a.semantic): the lexical match, 0.6 × the share of
// the query's words (IDF-weighted, words no skill uses included, see
// query.all) the skill covers + 0.4 × the TF-IDF cosine; blended with the
// semantic similarity when the index has embeddings (Calibration.blend).
// 0 when the skill requires a keyword the query lacks or is not eligible
// for the message's context. Coverage rewards a short question that names
// the skill ("review my code") that a cosine against a long description
// would under-rate.
func (ix *Index) skillMatch(q *query, d int32, a *docAcc) float64 {
	h := &ix.docHot[d]
	if h.flags&docRequiresKeyword != 0 && !a.explicit {
		return 0
	}
	if h.flags&(docNeedsEditor|docNeedsImage|docEditorTypes) != 0 && !ix.eligible(q, d) {
		return 0
	}
	lex := 0.0
	if a.covered > 0 {
		cos := 0.0
		if q.norm != 0 && h.norm != 0 {
			cos = clamp01(a.dot / (q.norm * h.norm))
		}
		lex = 0.6*a.covered/q.all + 0.4*cos
	}
	switch {
	case a.semantic:
		return ix.cal.blend(lex, a.sem)
	case q.vec != nil:
		return ix.cal.mix(lex, ix.semNone) // not among the semantic candidates: its words alone
	}
	return clamp01(lex) // lexical only: no embeddings, or no query vector
}

// minProbability is the least class probability that counts as a skill
// match: below it a skill does not match at all (Ranking.Matched, the
// query's breadth, counts the agents that do).
const minProbability = 0.02

// classify is scoreSkills with the index's classifier: every skill that
// may answer the message (the keyword and context gates, as skillMatch
// applies them) gets its class's probability among those, every agent the
// sum of its skills' (sc.agentP, its confidence before calibration).
func (ix *Index) classify(q *query, sc *scratch, touched []int32) {
	cl := q.cls
	nc := cl.c.classes()
	if len(sc.prob) != nc {
		sc.keep, sc.prob = make([]bool, nc), make([]float32, nc)
	}
	if sc.agentP == nil {
		sc.agentP = make([]float64, len(ix.agents))
	}
	acc, keep, p := sc.acc, sc.keep, sc.prob
	clear(keep)
	if cl.c.Background > 0 {
		keep[nc-1] = true // the background: every message may be nobody's
	}
	for d, k := range cl.class {
		f := ix.docHot[d].flags
		keep[k] = (f&docRequiresKeyword == 0 || acc[d].explicit) &&
			(f&(docNeedsEditor|docNeedsImage|docEditorTypes) == 0 || ix.eligible(q, int32(d)))
	}
	ix.probabilities(q, sc, keep, p)
	for _, d := range touched { // the lexical walk's sums: not read with a classifier
		acc[d] = docAcc{explicit: acc[d].explicit}
	}
	touched = touched[:0]
	best, flags := sc.best, sc.flags
	for d, k := range cl.class {
		pd := p[k]
		h, a := &ix.docHot[d], &acc[d]
		sc.agentP[h.agent] += float64(pd)
		if a.explicit && keep[k] {
			flags[h.agent] |= flagExplicit
			if h.flags&docOverride != 0 {
				flags[h.agent] |= flagOverride
			}
		}
		if pd < minProbability {
			continue
		}
		a.score = float64(pd)
		touched = append(touched, int32(d))
	}
	// An agent's skill match is the probability that one of its skills is
	// the message's: the sum (two near skills of one agent share a
	// message's probability between them, and the agent should not lose
	// it to a third agent's single skill).
	for ai, pa := range sc.agentP {
		if pa >= minProbability {
			best[ai] = min(pa, 1)
		}
	}
	sc.touched = touched
}

// probabilities writes the probability of each of q's classifier's
// classes into p (over those where keep is true), as
// Classifier.Probabilities does, the dense logits summed over the
// message's tokens when the index's embedder decomposes (tokens.go).
func (ix *Index) probabilities(q *query, sc *scratch, keep []bool, p []float32) {
	c, ok := q.cls.c, false
	if q.cls.tok != nil {
		ws := q.words
		if ws == nil { // a query prepare did not split (or without words)
			ws = words.AllTokens(q.text)
		}
		ok = c.logitsByTokens(q.cls.tok, q.text, ws, q.vec, p, sc)
	}
	if !ok {
		c.logits(c.features(q.vec, q.text), p)
	}
	softmax(p, keep)
}

// eligible applies a skill's editor and image filters to the query's
// context (Eligible, from the flags the index keeps).
func (ix *Index) eligible(q *query, d int32) bool {
	f := ix.docHot[d].flags
	if f&docNeedsEditor != 0 && q.editor == "" {
		return false
	}
	if f&docEditorTypes != 0 && q.editor != "" && !containsFold(ix.docs[d].editorTypes, q.editor) {
		return false
	}
	return f&docNeedsImage == 0 || q.image
}

// rescore is skill d's SkillMatch for q computed from the skill's terms:
// the same sums in the same order as scoreSkills' walk of the postings,
// so the same value.
func (ix *Index) rescore(q *query, d int32) float64 {
	var a docAcc
	terms := ix.docTerms[ix.docTermStart[d]:ix.docTermStart[d+1]] // by id
	for i, t := range q.terms {
		lo, hi := 0, len(terms)
		for lo < hi {
			if m := int(uint(lo+hi) >> 1); terms[m].id < t {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo < len(terms) && terms[lo].id == t {
			a.dot += q.weights[i] * terms[lo].w
			a.covered += ix.idf[t]
			a.explicit = a.explicit || terms[lo].keyword
		}
	}
	if q.vec != nil {
		a.sem, a.semantic = ix.semanticOf(q, d)
	}
	if a.covered == 0 && !a.semantic {
		return 0
	}
	return ix.skillMatch(q, d, &a)
}

// clearSkills returns the skill and agent slices scoreSkills wrote to
// zero.
func (ix *Index) clearSkills(sc *scratch) {
	acc, best, flags := sc.acc, sc.best, sc.flags
	for _, d := range sc.touched {
		acc[d] = docAcc{}
		a := ix.docHot[d].agent
		best[a], flags[a] = 0, 0
	}
	sc.touched = sc.touched[:0]
	if sc.agentP != nil {
		// classify wrote every skill and agent, not only those touched.
		clear(sc.agentP)
		clear(acc)
		clear(best)
		clear(flags)
	}
}

// hit is a matching skill and its SkillMatch.
type hit struct {
	doc   int32
	score float64
}

// sortHits orders an agent's matching skills best first (priority breaks
// ties, then skill order).
func (ix *Index) sortHits(h []hit) {
	// Insertion sort: stable, and an agent has a handful of skills.
	for i := 1; i < len(h); i++ {
		for j := i; j > 0 && ix.hitBefore(h[j], h[j-1]); j-- {
			h[j], h[j-1] = h[j-1], h[j]
		}
	}
}

func (ix *Index) hitBefore(a, b hit) bool {
	if a.score != b.score {
		return a.score > b.score // unequal: > and >= alike
	}
	return ix.docs[a.doc].namePriority > ix.docs[b.doc].namePriority
}
