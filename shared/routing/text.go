// Package routing decides which agent answers a chat message: the baseline
// AgentRouter (mentions, continuity, skill match, default), the ExpertGate's
// four-signal scoring, query complexity and model tier, the ExpertSelector's
// strategies and the ResponseAggregator. Everything here is pure computation
// on data the caller loads, so it is unit-tested and benchmarked in process;
// the expert-gate function and the chat service supply the data.
package routing

import (
	"math"
	"strings"
	"unicode"
)

// stopwords carry no topic; dropping them keeps TF-IDF and cosine on the
// words that say what a message is about.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because been
		before being below between both but by can could did do does doing down during each few for from further
		had has have having he her here hers herself him himself his how i if in into is it its itself just
		me more most my myself no nor not now of off on once only or other our ours ourselves out over own
		same she should so some such than that the their theirs them themselves then there these they this
		those through to too under until up very was we were what when where which while who whom why will
		with would you your yours yourself yourselves let lets please thanks thank hi hello hey ok okay
		im ive id youre dont cant wont get got us also like one thing something anything`) {
		m[w] = true
	}
	return m
}()

// Tokens splits s into lower-case, lightly stemmed content words. Stemming
// is a few suffix rules (plural, -ing, -ed): enough for "reviews",
// "reviewing" and "reviewed" to meet "review" without a dictionary.
func Tokens(s string) []string { return appendTokens(nil, s) }

// appendTokens appends the Tokens of s to out. ASCII text, nearly every
// message, is split in one pass over its bytes; other text by runes.
func appendTokens(out []string, s string) []string {
	lower := strings.ToLower(s)
	if !isASCII(lower) {
		return appendTokensRunes(out, lower)
	}
	// In lower-case ASCII the letters and digits are a–z and 0–9.
	for i := 0; i < len(lower); {
		for i < len(lower) && !isLowerAlnum(lower[i]) {
			i++
		}
		j := i
		for j < len(lower) && isLowerAlnum(lower[j]) {
			j++
		}
		if j > i { // j == i only at the end: "" is no token (>= alike)
			out = appendToken(out, lower[i:j])
		}
		i = j
	}
	return out
}

// appendTokensRunes is appendTokens for any lower-case text.
func appendTokensRunes(out []string, lower string) []string {
	for _, f := range strings.FieldsFunc(lower, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		out = appendToken(out, f)
	}
	return out
}

func appendToken(out []string, f string) []string {
	if len(f) < 2 || (len(f) <= longestStopword && stopwords[f]) {
		return out
	}
	return append(out, Stem(f))
}

// longestStopword is the length of the longest stop word: a longer word
// needs no lookup.
var longestStopword = func() int {
	n := 0
	for w := range stopwords {
		n = max(n, len(w))
	}
	return n
}()

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		// Valid UTF-8 never starts a rune with 0x80 (> alike), and the rune
		// path gives what the ASCII one does (turned around alike).
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func isLowerAlnum(b byte) bool { return ('a' <= b && b <= 'z') || ('0' <= b && b <= '9') }

// Stem strips the common English suffixes. A singular and its plural
// share one stem: "movie" and "movies" ("movi"), "query" and "queries"
// ("queri"): a final y after a consonant becomes i, as "-ies" does, since
// the e-rule below leaves "movie" as "movi".
func Stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		w = w[:len(w)-2]
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		w = w[:len(w)-3]
	case len(w) > 4 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed"):
		w = w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "es") && (strings.HasSuffix(w, "ses") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes")):
		w = w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	// "running" → "runn" → "run": undo a doubled final consonant.
	if n := len(w); n > 3 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) {
		w = w[:n-1]
	}
	// A final silent e goes too, so "code" meets "coding" and "write" meets
	// "writing" ("cod", "writ").
	if n := len(w); n > 3 && w[n-1] == 'e' && w[n-2] != 'e' {
		w = w[:n-1]
	}
	// "query" → "queri" meets "queries" → "queri"; "day", "key" and
	// "play" keep their y (a vowel before it: the plural is a plain s).
	if n := len(w); n > 3 && w[n-1] == 'y' && !strings.ContainsRune("aeiouy", rune(w[n-2])) {
		w = w[:n-1] + "i"
	}
	return w
}

// Vector is a sparse term-weight vector with its Euclidean norm.
type Vector struct {
	W    map[string]float64
	Norm float64
}

// TermVector is the term-frequency vector of s.
func TermVector(s string) Vector {
	v := Vector{W: map[string]float64{}}
	for _, t := range Tokens(s) {
		v.W[t]++
	}
	v.norm()
	return v
}

func (v *Vector) norm() {
	sum := 0.0
	for _, w := range v.W {
		sum += w * w
	}
	v.Norm = math.Sqrt(sum)
}

// Cosine is the cosine similarity of two vectors (0 when either is empty).
func Cosine(a, b Vector) float64 {
	if a.Norm == 0 || b.Norm == 0 {
		return 0
	}
	if len(a.W) > len(b.W) { // the shorter map is walked: either way the same dot
		a, b = b, a
	}
	dot := 0.0
	for t, w := range a.W {
		dot += w * b.W[t]
	}
	return clamp01(dot / (a.Norm * b.Norm))
}

// Similarity is the cosine similarity of the term vectors of two texts.
func Similarity(a, b string) float64 { return Cosine(TermVector(a), TermVector(b)) }

func clamp01(x float64) float64 {
	switch {
	case x < 0 || math.IsNaN(x):
		return 0
	case x > 1:
		return 1
	}
	return x
}

// round3 keeps scores readable in logs and responses.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
