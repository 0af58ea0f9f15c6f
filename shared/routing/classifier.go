package routing

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/words"
)

// The classifier (issue 42): a softmax regression fitted to a team's
// skills, one class per skill, on what users say to them (each skill's
// examples) and on what the skill says of itself (its text: name,
// description, keywords), with three kinds of features: the message's
// embedding (the index's embedder), its words and pairs of words
// (words.Tokens), and the character 4-grams of its words, hashed. The
// embedding carries meaning across phrasings, the words what a team's
// users say literally ("routing number", "pto"), the 4-grams what words
// share ("transfer", "transferring"; a typo); on CLINC150 the embedding
// and the words together route better than either (docs/routing.md,
// "The classifier"), and better than the nearest examples, and the
// 4-grams decline more of the messages no skill fits.
//
// A classifier is fitted once per set of agent versions, away from any
// chat turn (the classifier-fitter function, on each agent change), stored
// (shared/store/expertgatestore) and read by the gate with the index; the
// gate never waits for a fit, and scores by example similarity until one
// is in (expertgate, classifiers.go). Its probabilities replace the skill
// match of every skill and, summed over an agent's skills and read
// through the calibration (Calibration.ClsScale, ClsBias), the agent's
// match confidence: the threshold is then a measured probability that the
// agent routed to is the right one.

// ClassifierSkill names a class: an agent's skill.
type ClassifierSkill struct {
	Agent string `json:"agent"`
	Skill string `json:"skill"`
}

// Classifier is a fitted softmax regression over a team's skills and,
// when Background > 0, one more class learned from that many Background
// messages, whose probability belongs to no agent. Its weights are
// feature-major: feature f's weight for class c is Weights[f*classes+c]
// (classes: len(Skills), plus one with a background), features being the
// Dim embedding dimensions, then Terms, then Grams buckets.
type Classifier struct {
	// Embedder is the ID of the embedder whose vectors it reads.
	Embedder string            `json:"embedder"`
	Skills   []ClassifierSkill `json:"skills"`
	// Background is how many Background messages its last class learned
	// (0: no such class).
	Background int      `json:"background"`
	Dim        int      `json:"dim"`
	Terms      []string `json:"terms"`
	// Grams is how many buckets the character 4-grams of a message's
	// words are hashed into (gramsOf); 0 (a classifier fitted before
	// them): none.
	Grams   int       `json:"grams,omitempty"`
	Weights []float32 `json:"-"`
	Bias    []float32 `json:"bias"`
	// Quality is how well it routes its own team's examples, held out
	// (FitOptions.Folds); nil when not measured.
	Quality *ClassifierQuality `json:"quality,omitempty"`
	// Agents are the agent versions it was fitted to (sorted
	// slug:version, comma-separated), read at ReadAt; FittedAt is when
	// the fit ended. Set by whoever fits (expertgate.Fitter).
	Agents string `json:"agents"`
	// Texts identifies what it was fitted on (TrainingHash): an index
	// whose skills and examples read the same would get the same fit.
	Texts    string    `json:"texts"`
	ReadAt   time.Time `json:"read_at"`
	FittedAt time.Time `json:"fitted_at"`

	terms map[string]int32 // Terms → feature index, built on first use
	// tok is the dense weights times each token's row (tokenLogits), for
	// the embedder of the indexes that hold it; nil until one does.
	tok *tokenLogits
}

// The classifier's bounds: a team past MaxClassifierSkills skills (every
// indexed skill is a class) or MaxClassifierSamples examples and skill
// texts routes by example similarity, as a team without a fit does: a fit
// costs samples × classes × features per epoch, and these keep it within
// the fitter's time (about a minute on one Lambda core at both bounds).
// MaxClassifierTerms bounds the vocabulary (the most frequent terms), and
// with the skills and classifierGrams the stored size: at both bounds
// and 512 dimensions (Titan) about 6.8 MB of half floats, 20 parts of
// expertgatestore's 350 KiB (4.7 MB, 14 parts, before the grams).
const (
	MaxClassifierSkills  = denseScores // a Ranking keeps every skill's score: none is scored again
	MaxClassifierSamples = 12000
	MaxClassifierTerms   = 4096
)

// ErrTooLarge says a team is past the classifier's bounds.
var ErrTooLarge = errors.New("routing: the team is past the classifier's bounds")

// ClassifierExamples is how many examples a skill needs to count as
// described by its users' words; a team gets a classifier when at least
// half of its skills are (ErrFewExamples otherwise). A model fitted to one
// description per skill learns the background messages better than the
// skills: a team of descriptions only routed "review this Go function" to
// nobody, where its words and meaning reach the code reviewer.
const ClassifierExamples = 5

// ErrFewExamples says too few of a team's skills have examples for a
// classifier (ClassifierExamples).
var ErrFewExamples = errors.New("routing: too few of the team's skills have examples for a classifier")

// ClassifierReady reports whether at least half of ix's skills have
// ClassifierExamples examples or more.
func (ix *Index) ClassifierReady() bool {
	ready := 0
	for d := range len(ix.docs) {
		if ix.exStart[d+1]-ix.exStart[d] >= ClassifierExamples {
			ready++
		}
	}
	return len(ix.docs) > 0 && 2*ready >= len(ix.docs)
}

// FitOptions tunes a fit; the zero value is the fitted defaults.
type FitOptions struct {
	// Epochs over the samples (default classifierEpochs).
	Epochs int
	// Folds, past 1, measures Quality: Folds fits on all examples but one
	// fold, each routing the held-out fold (0: not measured).
	Folds int
	// Seed of the samples' order (default 1): a fit is deterministic.
	Seed uint64
}

// The fit's hyperparameters, chosen on CLINC150's train and validation
// splits (clincbench -fit-classifier): the embedding counts twice the
// words (their unit vectors are scaled so), a light L2 penalty on the
// embedding's weights, plain SGD with a decaying step. The words'
// 4-grams in 2,048 buckets, as much as the words: on `val` they raised
// the out-of-scope messages declined at the same in-scope share
// (docs/measurements.md, CLINC150); 3- and 4-grams, 3 to 5, 4,096
// buckets, or the grams counting more or less did no better, and 4-grams
// alone cost the least.
const (
	classifierEpochs = 20
	embeddingScale   = 2
	classifierL2     = 1e-5
	classifierStep   = 0.5
	stepDecay        = 0.2
	classifierGrams  = 2048
	gramLen          = 4
)

// features are one text's inputs: its unit embedding (scaled), its
// terms' indexes with their weights (a unit vector of counts) and its
// 4-grams' buckets (gramsOf).
type features struct {
	dense []float32
	idx   []int32
	val   []float32
}

// termsOf are the unigrams and bigrams of a text's words (stop words
// kept: words.AllTokens).
func termsOf(text string) []string {
	ws := words.AllTokens(text)
	out := slices.Clone(ws)
	for i := 0; i+1 < len(ws); i++ {
		out = append(out, ws[i]+" "+ws[i+1])
	}
	return out
}

// sample is one training text and its class.
type sample struct {
	f     features
	class int32
}

// FitClassifier fits a classifier to ix's skills: its skill texts and
// examples, with their vectors (ix must have embeddings, of e), and the
// Background messages, which e embeds. ErrTooLarge past the bounds. ctx
// bounds the fit (checked every epoch).
func FitClassifier(ctx context.Context, ix *Index, e Embedder, opt FitOptions) (*Classifier, error) {
	if ix.vecs == nil {
		return nil, errors.New("routing: a classifier needs an index with embeddings")
	}
	nd := len(ix.docs)
	if nd == 0 || nd > MaxClassifierSkills || nd+len(ix.examples) > MaxClassifierSamples {
		return nil, ErrTooLarge
	}
	if !ix.ClassifierReady() {
		return nil, ErrFewExamples
	}
	texts, classes := ix.trainingSet()
	bg, err := e.Embed(ctx, Background)
	if err != nil {
		return nil, fmt.Errorf("routing: embedding the background messages: %w", err)
	}
	if len(bg) != len(Background) {
		return nil, fmt.Errorf("routing: %d vectors for %d background messages", len(bg), len(Background))
	}
	c := &Classifier{Embedder: e.ID(), Dim: ix.dim, Skills: make([]ClassifierSkill, nd), Texts: ix.TrainingHash(), Background: len(Background)}
	for d := range ix.docs {
		c.Skills[d] = ClassifierSkill{Agent: ix.slugs[ix.docHot[d].agent], Skill: ix.docs[d].name}
	}
	c.Terms = vocabulary(append(slices.Clone(texts), Background...))
	c.Grams = classifierGrams
	all := make([]sample, len(texts), len(texts)+len(Background))
	for i, t := range texts {
		all[i] = sample{f: c.features(ix.vec(int32(i)), t), class: classes[i]} // the vectors are in trainingSet's order
	}
	for i, t := range Background {
		all = append(all, sample{f: c.features(unitVector(bg[i], ix.dim), t), class: int32(nd)})
	}
	start := time.Now()
	if err := c.fit(ctx, all, opt); err != nil {
		return nil, err
	}
	// The cross-validation costs about Folds fits: measured only when that
	// fits in what is left of ctx's time (a large team is fitted, and
	// routes with its classifier, without the measure).
	took := time.Since(start)
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < time.Duration(float64(opt.Folds)*1.2*float64(took)) {
		return c, nil
	}
	if opt.Folds > 1 {
		q, err := c.crossValidate(ctx, ix, all, opt)
		if err != nil {
			return nil, err
		}
		c.Quality = q
	}
	return c, nil
}

// TrainingHash identifies what a classifier of ix would be fitted on:
// each skill's agent, name and text, and its examples (SHA-256).
func (ix *Index) TrainingHash() string {
	h := sha256.New()
	var n [8]byte
	put := func(s string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	for d := range int32(len(ix.docs)) {
		put(ix.slugs[ix.docHot[d].agent])
		put(ix.docs[d].name)
		put(ix.docs[d].text)
		binary.LittleEndian.PutUint64(n[:], uint64(ix.exStart[d+1]-ix.exStart[d]))
		h.Write(n[:])
		for j := ix.exStart[d]; j < ix.exStart[d+1]; j++ {
			put(ix.examples[j])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// trainingSet is every skill's text (class d) and every example (its
// skill's class), in the order of the index's vectors (SkillTexts).
func (ix *Index) trainingSet() ([]string, []int32) {
	texts := make([]string, 0, len(ix.docs)+len(ix.examples))
	classes := make([]int32, 0, cap(texts))
	for d := range ix.docs {
		texts = append(texts, ix.docs[d].text)
		classes = append(classes, int32(d))
	}
	for d := range int32(len(ix.docs)) {
		for j := ix.exStart[d]; j < ix.exStart[d+1]; j++ {
			texts = append(texts, ix.examples[j])
			classes = append(classes, d)
		}
	}
	return texts, classes
}

// vocabulary is the terms of texts used by at least two of them (a term
// of one text teaches nothing about another), the MaxClassifierTerms most
// used, sorted.
func vocabulary(texts []string) []string {
	df := map[string]int{}
	for _, t := range texts {
		seen := map[string]bool{}
		for _, w := range termsOf(t) {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	var out []string
	for w, n := range df {
		if n >= 2 {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if df[a] != df[b] {
			return df[b] - df[a]
		}
		return strings.Compare(a, b)
	})
	out = out[:min(len(out), MaxClassifierTerms)]
	slices.Sort(out)
	return out
}

// indexTerms builds the Terms → feature map. A classifier is used by
// many queries at once once an index has it: SetClassifier builds the map
// before publishing it, so queries only read it.
func (c *Classifier) indexTerms() {
	if c.terms != nil {
		return
	}
	c.terms = make(map[string]int32, len(c.Terms))
	for i, t := range c.Terms {
		c.terms[t] = int32(i)
	}
}

// features are text's features, v its unit embedding (nil: none). The
// terms are termsOf's, looked up without building them: a message's
// bigrams are joined in one buffer (a map read of string(bytes) copies
// nothing) and counted in a sorted slice, not a map (at 10 agents, the
// strings and the map were a seventh of a gate query).
func (c *Classifier) features(v []float32, text string) features {
	f := c.wordFeatures(words.AllTokens(text), true)
	if len(v) == c.Dim {
		f.dense = make([]float32, c.Dim)
		for i, x := range v {
			f.dense[i] = x * embeddingScale
		}
	}
	return f
}

// wordFeatures are the terms' features of words ws, and their 4-grams'
// when withGrams (features).
func (c *Classifier) wordFeatures(ws []string, withGrams bool) features {
	c.indexTerms() // a fit's own (one goroutine); a published one's is built
	f := features{}
	ids := make([]int32, 0, 2*len(ws))
	var buf []byte
	grams := 0
	if c.Grams > 0 && withGrams {
		for _, w := range ws {
			grams += max(0, len(w)+2-gramLen+1)
		}
	}
	for i, w := range ws {
		if k, ok := c.terms[w]; ok {
			ids = append(ids, k)
		}
		if i+1 < len(ws) {
			buf = append(append(append(buf[:0], w...), ' '), ws[i+1]...)
			if k, ok := c.terms[string(buf)]; ok {
				ids = append(ids, k)
			}
		}
	}
	slices.Sort(ids)
	f.idx, f.val = make([]int32, 0, len(ids)+grams), make([]float32, 0, len(ids)+grams)
	// The counts are whole numbers: their squares sum exactly in any
	// order, as the map of counts summed them.
	norm := float32(0)
	for i := 0; i < len(ids); {
		j := i + 1
		for j < len(ids) && ids[j] == ids[i] {
			j++
		}
		n := float32(j - i)
		f.idx, f.val = append(f.idx, ids[i]), append(f.val, n)
		norm += n * n
		i = j
	}
	norm = float32(math.Sqrt(float64(norm)))
	for k := range f.val {
		f.val[k] /= norm
	}
	if grams > 0 {
		c.gramsOf(&f, ws, buf)
	}
	return f
}

// classes is how many classes c has: its skills, and the background.
func (c *Classifier) classes() int {
	if c.Background > 0 {
		return len(c.Skills) + 1
	}
	return len(c.Skills)
}

// logits writes the class scores of f into z (classes()).
func (c *Classifier) logits(f features, z []float32) {
	nc := c.classes()
	copy(z, c.Bias)
	for i, x := range f.dense {
		axpy(x, c.Weights[i*nc:(i+1)*nc], z)
	}
	c.addSparse(f, z)
}

// addSparse adds the terms' and grams' rows of f to z.
func (c *Classifier) addSparse(f features, z []float32) {
	nc := c.classes()
	for k, i := range f.idx {
		r := (c.Dim + int(i)) * nc
		axpy(f.val[k], c.Weights[r:r+nc], z)
	}
}

// softmax turns z into probabilities in place, over the classes where
// keep is true (nil: all); the others get 0.
func softmax(z []float32, keep []bool) {
	m := float32(math.Inf(-1))
	for i, v := range z {
		if (keep == nil || keep[i]) && v > m {
			m = v
		}
	}
	sum := float32(0)
	for i, v := range z {
		if keep != nil && !keep[i] {
			z[i] = 0
			continue
		}
		z[i] = float32(math.Exp(float64(v - m)))
		sum += z[i]
	}
	if sum > 0 {
		for i := range z {
			z[i] /= sum
		}
	}
}

// fit runs SGD on samples from zero weights.
func (c *Classifier) fit(ctx context.Context, samples []sample, opt FitOptions) error {
	nc, nf := c.classes(), c.Dim+len(c.Terms)+c.Grams
	c.Weights, c.Bias = make([]float32, nf*nc), make([]float32, nc)
	epochs := opt.Epochs
	if epochs <= 0 {
		epochs = classifierEpochs
	}
	seed := opt.Seed
	if seed == 0 {
		seed = 1
	}
	rng := rand.New(rand.NewPCG(seed, uint64(len(samples))))
	order := make([]int, len(samples))
	for i := range order {
		order[i] = i
	}
	z := make([]float32, nc)
	for ep := range epochs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("routing: classifier fit stopped at epoch %d of %d: %w", ep, epochs, err)
		}
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		lr := float32(classifierStep / (1 + stepDecay*float64(ep)))
		decay := 1 - lr*classifierL2
		for _, n := range order {
			s := samples[n]
			c.logits(s.f, z)
			softmax(z, nil)
			z[s.class]--
			// z is now the gradient of the loss by the logits.
			for k := range z {
				c.Bias[k] -= lr * z[k]
			}
			for i, x := range s.f.dense {
				w := c.Weights[i*nc : (i+1)*nc]
				g := -lr * x
				for k := range w {
					w[k] = w[k]*decay + g*z[k]
				}
			}
			for k, i := range s.f.idx {
				r := (c.Dim + int(i)) * nc
				axpy(-lr*s.f.val[k], z, c.Weights[r:r+nc])
			}
		}
	}
	return nil
}

// Probabilities writes each class's probability for a message (its unit
// embedding v and its text) into p (classes(): the background last), over
// the classes where keep is true (nil: all).
func (c *Classifier) Probabilities(v []float32, text string, keep []bool, p []float32) {
	c.logits(c.features(v, text), p)
	softmax(p, keep)
}

// classified is a classifier as an index uses it: class[d] is skill d's
// class.
type classified struct {
	c     *Classifier
	class []int32
	tok   *tokenLogits // nil: the dense logits from the message's vector
}

// classesOf maps ix's skills to c's classes (by agent and skill name):
// nil unless every skill has one and c reads ix's embedder's vectors. A
// classifier fitted to the team's active agents serves every index of a
// subset of them (a conversation without the agents removed from it),
// and, until the next fit is in, the agents' next versions as long as
// their skills keep their names.
func (c *Classifier) classesOf(ix *Index) []int32 {
	if c == nil || c.Dim != ix.dim || ix.vecs == nil || len(ix.docs) == 0 || len(ix.docs) > denseScores {
		return nil
	}
	if c.Grams < 0 || len(c.Bias) != c.classes() || len(c.Weights) != (c.Dim+len(c.Terms)+c.Grams)*c.classes() {
		return nil // a stored one whose parts do not add up: never read past them
	}
	byName := make(map[ClassifierSkill]int32, len(c.Skills))
	for k, s := range c.Skills {
		byName[s] = int32(k)
	}
	class := make([]int32, len(ix.docs))
	for d := range ix.docs {
		k, ok := byName[ClassifierSkill{Agent: ix.slugs[ix.docHot[d].agent], Skill: ix.docs[d].name}]
		if !ok {
			return nil
		}
		class[d] = k
	}
	return class
}

// Fits reports whether c can score ix (SetClassifier).
func (c *Classifier) Fits(ix *Index) bool { return c.classesOf(ix) != nil }

// SetClassifier makes ix score with c: every skill's match is then its
// class's probability among the index's skills, and an agent's
// confidence the calibrated sum of its skills'. Refused (false) when c
// does not fit ix (Fits). Safe while ix is in use: a query reads the
// classifier it started with.
func (ix *Index) SetClassifier(c *Classifier) bool {
	class := c.classesOf(ix)
	if class == nil {
		return false
	}
	c.indexTerms()
	ix.classifier.Store(&classified{c: c, class: class, tok: c.tokenLogitsFor(ix.tokens)})
	return true
}

// ClearClassifier makes ix score by example similarity again (its
// classifier was deleted: the team outgrew it).
func (ix *Index) ClearClassifier() { ix.classifier.Store(nil) }

// Classifier is the classifier ix scores with (nil: none).
func (ix *Index) Classifier() *Classifier {
	if cl := ix.classifier.Load(); cl != nil {
		return cl.c
	}
	return nil
}
