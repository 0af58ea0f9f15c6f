package routing

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/conclave-ai/conclave/shared/platform/f32"
)

// Embedder turns texts into dense vectors (architecture decision 6b): the
// static wordllama model inside the function by default, Amazon Titan Text
// Embeddings on Bedrock as an option. ID names the model: similarities of
// different models read differently, so each has its Calibration, and
// stored skill vectors are keyed by it.
type Embedder interface {
	ID() string
	Embed(ctx context.Context, texts []string) ([][]float64, error)
}

// Calibration says how one embedder's similarities read, and turns a skill
// match into a match confidence. Fitted on the tuning sets of the routing
// benchmark (BFCL `multiple` and `irrelevance`, `make bench-routing`), and
// checked on its held-out `live_*` sets.
type Calibration struct {
	// Floor and Ceil map the embedder's cosine to [0, 1]: unrelated texts
	// sit near Floor, a paraphrase near Ceil.
	Floor, Ceil float64
	// Semantic is the semantic similarity's share of the skill match (the
	// lexical match has the rest).
	Semantic float64
	// Confidence = σ(Bias + Match × skill match + Lead × lead), where lead
	// is how far the best agent's skill match is ahead of the runner-up's
	// (0 for every other agent, and with a single agent).
	Bias, Match, Lead float64
	// ExFloor and ExCeil read a skill's example similarity (the mean
	// cosine of the message to its NearestExamples examples): ExFloor is
	// as unrelated as Floor, ExCeil as close as Ceil. A message is nearer
	// a user's message than a description, so the two scales differ.
	// Zero: the example similarity is read as a cosine.
	ExFloor, ExCeil float64
	// ExBias, ExMatch and ExLead replace Bias, Match and Lead for an agent
	// with examples (one of its skills has some): its confidence is
	// σ(ExBias + ExMatch × skill match + ExLead × lead). Fitted on team
	// routing data (CLINC150), not on function descriptions; and the lead
	// counts there: a message much nearer one agent's examples than any
	// other's is that agent's, however plain its wording, and one halfway
	// between two agents' examples is neither's. (Lead stays off for
	// descriptions, see Calibrations.) ExMatch 0: Bias, Match and Lead.
	ExBias, ExMatch, ExLead float64
	// ExAgreement is the example agreement (Index.ExampleAgreement) of
	// the data the example side was fitted on: a team's example
	// similarities are read shifted by how much more (or less) its own
	// examples agree with each other, so that the calibration transfers
	// from the fitting data to a team whose users phrase things more
	// variously. 0: no shift.
	ExAgreement float64
	// ClsScale and ClsBias read an agent's probability under the team's
	// classifier (the sum of its skills'; classifier.go) as its
	// confidence: σ(ClsScale × logit(p) + ClsBias), Platt scaling fitted
	// on team routing data (CLINC150's validation splits, in scope and
	// out of scope), so that the confidence is the measured probability
	// that the agent is the right one. ClsScale 0: p itself.
	ClsScale, ClsBias float64
}

// classified is the confidence of an agent whose probability under the
// classifier is p.
func (c Calibration) classified(p float64) float64 {
	if c.ClsScale == 0 {
		return clamp01(p)
	}
	p = min(max(p, 1e-6), 1-1e-6)
	return 1 / (1 + math.Exp(-(c.ClsScale*math.Log(p/(1-p)) + c.ClsBias)))
}

// NearestExamples is how many of a skill's examples nearest a message make
// its example similarity: the mean of the best three is steadier than the
// best one (one stray example does not win a message) and still follows a
// skill with few examples.
const NearestExamples = 3

// fromExamples is an example similarity on the description cosine's
// scale (Floor to Ceil), which blend reads. A skill with examples is
// read by them alone: its description's cosine, on another scale, added
// noise to the ranking (CLINC150's top-1 by skill: 63% with the better of
// the two, 81% with the examples alone).
func (c Calibration) fromExamples(sim, agreement float64) float64 {
	if c.ExAgreement > 0 && agreement > 0 {
		sim += c.ExAgreement - agreement
	}
	if c.ExCeil <= c.ExFloor {
		return sim
	}
	return c.Floor + clamp01((sim-c.ExFloor)/(c.ExCeil-c.ExFloor))*(c.Ceil-c.Floor)
}

// LexicalCalibration reads the lexical match alone (no embedder, or a
// query without a vector). Fitted by `go run ./localstack/bench/bfclbench
// -fit -embedder none` on the tuning sets.
var LexicalCalibration = Calibration{Bias: -0.114, Match: 2.137}

// Calibrations are the fitted calibrations by embedder ID; an embedder
// without one uses DefaultSemanticCalibration. The wordllama one was
// fitted by `go run ./localstack/bench/bfclbench -fit` on BFCL `multiple`
// and `irrelevance` (top-1 first, then the most irrelevant questions
// declined at 0.6 with at most 3% of answerable ones falsely declined):
// confidence 0.6 is then the estimated probability, on that data, that
// the agent routed to is the right one. Lead fitted to 0 on these sets
// (their irrelevant questions all ask a one-function team, which a lead
// term learns as "one agent: decline"), so it stays off until tuning data
// without that shortcut exists.
var Calibrations = map[string]Calibration{
	"wordllama-l2_supercat-256": {Floor: 0, Ceil: 0.45, Semantic: 0.75, Bias: -3.246, Match: 5.701, ExFloor: 0.2, ExCeil: 1, ExBias: -5.999, ExMatch: 32, ExLead: 1, ExAgreement: 0.706, ClsScale: 0.85, ClsBias: 0.463},
}

// DefaultSemanticCalibration is used for an embedder with no fitted
// calibration.
var DefaultSemanticCalibration = Calibration{Floor: 0, Ceil: 0.45, Semantic: 0.75, Bias: -3.246, Match: 5.701}

// CalibrationFor is the calibration of an embedder ID ("" is lexical).
func CalibrationFor(id string) Calibration {
	if id == "" {
		return LexicalCalibration
	}
	if c, ok := Calibrations[id]; ok {
		return c
	}
	return DefaultSemanticCalibration
}

// blend is a skill match from its lexical match and semantic cosine.
func (c *Calibration) blend(lex, cos float64) float64 { return c.mix(lex, c.semOf(cos)) }

// semOf is a semantic cosine on blend's scale.
func (c *Calibration) semOf(cos float64) float64 {
	if c.Ceil > c.Floor {
		return clamp01((cos - c.Floor) / (c.Ceil - c.Floor))
	}
	return 0
}

// mix is blend of lex and semOf's sem. Through a pointer, and inlined:
// the gate blends every skill a query's words touch (about 1,000 at
// 1,000 agents), and a copy of the Calibration per call was a twentieth
// of a query there.
func (c *Calibration) mix(lex, sem float64) float64 {
	return clamp01((1-c.Semantic)*lex + c.Semantic*sem)
}

// Confidence is the match confidence of an agent whose best skill matches
// with skill, lead ahead of the runner-up: 0 without any match.
func (c Calibration) Confidence(skill, lead float64) float64 {
	return c.confidence(skill, lead, false)
}

// confidence is Confidence for an agent with examples or without.
func (c Calibration) confidence(skill, lead float64, examples bool) float64 {
	if skill <= 0 {
		return 0
	}
	if examples && c.ExMatch != 0 {
		return 1 / (1 + math.Exp(-(c.ExBias + c.ExMatch*skill + c.ExLead*max(0, lead))))
	}
	return 1 / (1 + math.Exp(-(c.Bias + c.Match*skill + c.Lead*max(0, lead))))
}

// SkillTexts are the texts of the index's skills, in skill order, then
// their examples, in the same order: what an embedder embeds for them
// (SetEmbeddings takes the vectors in this order).
func (ix *Index) SkillTexts() []string {
	texts := make([]string, len(ix.docs), len(ix.docs)+len(ix.examples))
	for i, d := range ix.docs {
		texts[i] = d.text
	}
	return append(texts, ix.examples...)
}

// Skills is how many skills the index holds (the first Skills() of
// SkillTexts; the rest are their examples).
func (ix *Index) Skills() int { return len(ix.docs) }

// Embed computes the embeddings of the index's skills with e and uses
// them (SetEmbeddings with e's calibration). Done once per index, never
// per query.
func (ix *Index) Embed(ctx context.Context, e Embedder) error {
	out, err := e.Embed(ctx, ix.SkillTexts())
	if err != nil {
		return err
	}
	if err := ix.SetEmbeddings(out, CalibrationFor(e.ID())); err != nil {
		return err
	}
	ix.SetEmbedder(e)
	return nil
}

// SetEmbeddings gives the index one vector per skill (SkillTexts' order,
// all of one length) and the calibration of their embedder. Vectors are
// normalized and kept as float32. Queries then need Signals.QueryEmbedding
// from the same embedder.
func (ix *Index) SetEmbeddings(vectors [][]float64, cal Calibration) error {
	if len(vectors) != len(ix.docs)+len(ix.examples) {
		return fmt.Errorf("routing: %d vectors for %d skills and %d examples", len(vectors), len(ix.docs), len(ix.examples))
	}
	dim := 0
	if len(vectors) > 0 {
		dim = len(vectors[0])
	}
	flat := make([]float32, 0, dim*len(vectors))
	for i, v := range vectors {
		if len(v) != dim || dim == 0 {
			return fmt.Errorf("routing: vector %d has %d dimensions, want %d", i, len(v), dim)
		}
		u := unitVector(v, dim)
		if u == nil {
			u = make([]float32, dim) // an empty text: no similarity to anything
		}
		flat = append(flat, u...)
	}
	ix.vecs, ix.dim, ix.cal = flat, dim, cal
	ix.semNone = cal.semOf(-1)
	ix.tokens, ix.tokSims = nil, nil // named again (SetEmbedder) for these vectors
	ix.agreement = ix.exampleAgreement()
	ix.buildDomains()
	return nil
}

// Semantic reports whether the index has embeddings (and so wants
// Signals.QueryEmbedding).
func (ix *Index) Semantic() bool { return ix.vecs != nil }

// unitVector is v normalized, as float32; nil when v is empty, of the
// wrong length or zero.
func unitVector(v []float64, dim int) []float32 {
	if len(v) != dim || dim == 0 {
		return nil
	}
	sum := 0.0
	for _, x := range v {
		sum += x * x
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return nil
	}
	n := 1 / math.Sqrt(sum)
	out := make([]float32, dim)
	for i, x := range v {
		out[i] = float32(x * n)
	}
	return out
}

// vec is skill d's unit vector.
func (ix *Index) vec(d int32) []float32 {
	return ix.vecs[int(d)*ix.dim : int(d+1)*ix.dim]
}

// dot is the dot product of two vectors of one length, four lanes at a
// time (float32: the cosines are read to three decimals).
func dot(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	// Four lanes while four are left (< leaves the last four to the loop
	// below: the same products, summed in another order).
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return float64((s0 + s1) + (s2 + s3))
}

// dot4 is dot of q with each of the four vectors ex holds, one after
// another: f32.Lanes4x4's lanes (SSE or NEON, the bits of dot's loop on
// each architecture), then dot's tail and sum. The same bits as four
// calls of dot, in about a quarter of the time.
func dot4(q, ex []float32) (out [4]float64) {
	d := len(q)
	l := f32.Lanes4x4(q, ex)
	for k := range out {
		s0, s1, s2, s3 := l[4*k], l[4*k+1], l[4*k+2], l[4*k+3]
		e := ex[k*d : (k+1)*d]
		for i := d &^ 3; i < d; i++ {
			s0 += q[i] * e[i]
		}
		out[k] = float64((s0 + s1) + (s2 + s3))
	}
	return out
}

// scoreSemantic sets the semantic similarity of the skills it scores
// (acc[d].sem, semantic) and adds those no query term touched to touched:
// every skill, or in a two-stage index those of the domains nearest the
// query (q.semAll or q.semDocs, sorted, record which). Every candidate
// gets the exact cosine: a cheaper pre-selection inside the candidates (a
// one-bit sketch of each vector, or its first 64 dimensions) agreed with
// full scoring on only 62–89% of top-1 choices on 1,000 agents, among
// near-duplicate skills; the domains agreed on all of them.
func (ix *Index) scoreSemantic(q *query, acc []docAcc, touched []int32, sc *scratch) []int32 {
	if !ix.twoStage() {
		q.semAll = true
		for d := range int32(len(ix.docs)) {
			touched = ix.visitSemantic(q, acc, touched, d)
		}
		return touched
	}
	qs := ix.querySimsOf(q, sc)
	q.domains = ix.nearestDomains(q.vec, qs, q.domains[:0])
	cands := ix.mergeDomains(q.domains, sc.cands[:0])
	cands = ix.preselectExamples(q.vec, qs, cands)
	sims := sc.sims[:0]
	for _, d := range cands {
		touched = ix.visitSemantic(q, acc, touched, d)
		sims = append(sims, acc[d].sem)
	}
	q.semDocs, q.semSims, sc.cands, sc.sims = cands, sims, cands, sims
	return touched
}

func (ix *Index) visitSemantic(q *query, acc []docAcc, touched []int32, d int32) []int32 {
	a := &acc[d]
	if a.covered == 0 {
		touched = append(touched, d)
	}
	a.sem, a.semantic = ix.similarity(q.vec, d), true
	return touched
}

// agreementSample bounds the examples exampleAgreement reads: its cost is
// this many times a skill's examples, whatever the team's size.
const agreementSample = 512

// exampleAgreement is how near a team's examples are to the other
// examples of their own skill: the median, over the examples (a sample of
// agreementSample, evenly spread), of an example's example similarity to
// its skill with itself left out (cross-validation over the team's own
// examples; skills with more than NearestExamples examples only). A team
// whose users phrase one thing many ways agrees less than one whose
// examples are near-paraphrases, and a message to it is as far from the
// examples as they are from each other: the calibration reads the
// similarity against the team's own agreement (Calibration.ExAgreement).
// -1 when no skill has enough examples.
func (ix *Index) exampleAgreement() float64 {
	var skills []int32 // docs with enough examples
	total := 0
	for d := range int32(len(ix.docs)) {
		if n := int(ix.exStart[d+1] - ix.exStart[d]); n > NearestExamples {
			skills = append(skills, d)
			total += n
		}
	}
	if total == 0 {
		return -1
	}
	step := max(1, total/agreementSample)
	base := int32(len(ix.docs))
	var sims []float64
	k := 0
	for _, d := range skills {
		lo, hi := ix.exStart[d], ix.exStart[d+1]
		for j := lo; j < hi; j++ {
			if k++; (k-1)%step != 0 {
				continue
			}
			sims = append(sims, ix.nearestExamples(ix.vec(base+j), lo, hi, j))
		}
	}
	slices.Sort(sims)
	return sims[len(sims)/2]
}

// nearestExamples is the mean cosine of v to the NearestExamples nearest
// of the examples lo to hi (fewer when there are fewer), example skip left
// out (-1: none).
func (ix *Index) nearestExamples(v []float32, lo, hi, skip int32) float64 {
	var top [NearestExamples]float64
	for i := range top {
		top[i] = -1
	}
	base, n := int32(len(ix.docs)), 0
	// Four examples at a time (a skill's examples are one block of vecs):
	// dot4's bits are dot's, and they are taken in the same order.
	for j := lo; j < hi; j += 4 {
		var cos [4]float64
		m := min(4, hi-j)
		if m == 4 {
			cos = dot4(v, ix.vecs[int(base+j)*ix.dim:int(base+j+4)*ix.dim])
		} else {
			for k := range m {
				cos[k] = dot(v, ix.vec(base+j+k))
			}
		}
		for k, c := range cos[:m] {
			if j+int32(k) == skip {
				continue
			}
			n++
			for t := range top {
				if c > top[t] {
					copy(top[t+1:], top[t:len(top)-1])
					top[t] = c
					break
				}
			}
		}
	}
	n = min(n, NearestExamples)
	sum := 0.0
	for _, c := range top[:n] {
		sum += c
	}
	return sum / float64(n)
}

// ExampleAgreement is the index's exampleAgreement (-1: none), for the
// benchmarks.
func (ix *Index) ExampleAgreement() float64 { return ix.agreement }

// similarity is skill d's semantic similarity to the message v: the
// cosine to its description or, for a skill with examples, its example
// similarity (Calibration.fromExamples).
func (ix *Index) similarity(v []float32, d int32) float64 {
	lo, hi := ix.exStart[d], ix.exStart[d+1]
	if lo == hi {
		return dot(v, ix.vec(d))
	}
	return ix.cal.fromExamples(ix.nearestExamples(v, lo, hi, -1), ix.agreement)
}

// semanticOf is skill d's semantic similarity for q as scoreSemantic set
// it, and whether it was scored at all. The candidates' similarities are
// kept with the query (semSims): at 1,000 agents the best agents' skills
// cost their example cosines a second time otherwise (about a twelfth of
// a gate query).
func (ix *Index) semanticOf(q *query, d int32) (float64, bool) {
	if !q.semAll {
		i, ok := slices.BinarySearch(q.semDocs, d)
		if !ok {
			return 0, false
		}
		if i < len(q.semSims) {
			return q.semSims[i], true // as scoreSemantic computed it: not again
		}
	}
	return ix.similarity(q.vec, d), true
}
