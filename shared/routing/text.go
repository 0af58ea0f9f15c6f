// Package routing is the routing wing and its core: who answers a chat
// message. This package holds the pure computation the family shares: the
// baseline AgentRouter (mentions, continuity, skill match, default), the
// ExpertGate's four-signal scoring, query complexity and model tier, the
// ExpertSelector's strategies and the ResponseAggregator, on data the
// caller loads, so it is unit-tested and benchmarked in process.
//
// The family below it: cascade is the one entry point of a chat turn (the
// flags, greetings, the ExpertGate, the tier-0 chooser, the decision log);
// chooser is the tier-0 model that picks among candidates; expertgate is
// the gate as a service (and gateclient its Lambda Invoke adapter);
// discovery answers "who can help with this" outside a turn; wordllama is
// the static embedding model the gate reads meaning with.
package routing

import (
	"math"

	"github.com/conclave-ai/conclave/shared/platform/words"
)

// isASCII tells text the classifiers can read byte by byte (StyleOf,
// IsSmallTalk) from text that needs their rune paths.
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

// Vector is a sparse term-weight vector with its Euclidean norm.
type Vector struct {
	W    map[string]float64
	Norm float64
}

// TermVector is the term-frequency vector of s.
func TermVector(s string) Vector {
	v := Vector{W: map[string]float64{}}
	for _, t := range words.Tokens(s) {
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
