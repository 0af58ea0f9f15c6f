package routing

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randomMessages are ASCII messages made of the words the classifiers
// look for, in every case, with punctuation, code and odd spacing.
func randomMessages(n int) []string {
	words := []string{"Please", "kindly", "could", "hey", "LOL", "haha", "fun", "API", "sql", "func()", "user_id", "x.y", "a.b.", "e.g.",
		"don't", "it's", "Review", "reviews", "reviewing", "coding", "queries", "the", "and", "I", "1.5x", "200MS", "50%", "3", "v2.0",
		"why", "compare", "must", "within", "budget", "microservices", "trade-offs", "SELECT", "```", "!", "!!", "?", "??", ",", "-", "'",
		"a", "ab", "to", "themselves", "foo=bar", "[x]", "<b>", "{}", ";", "@luke", "#1", "\t", "\n", "\v", "\f", "\r", "  "}
	r := rand.New(rand.NewPCG(8, 9))
	out := []string{"", " ", "!", "hi", "Hmm, what do you think about it?", "Can you review the SQL behind our billing API? Latency doubled after the last deploy.",
		"Fix it plz", "Fix it PLZ", "zap it", "Zap it", "9!!"}
	for range n {
		var b strings.Builder
		for k := r.IntN(14); k > 0; k-- {
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(4) > 0 {
				b.WriteByte(" \t\n,.;"[r.IntN(6)])
			}
		}
		out = append(out, b.String())
	}
	return out
}

func TestASCIIFastPathsMatchTheRunePaths(t *testing.T) {
	for _, m := range randomMessages(50_000) {
		require.Equal(t, styleOfRunes(m), styleOfASCII(m), "%q", m)
	}
}

// complexityBefore is ComplexityOf as it was (its words by FieldsFunc,
// three sets, a regular expression), summed in the fixed order.
func complexityBefore(text string, skillsTouched int) Complexity {
	lower := strings.ToLower(text)
	words := strings.FieldsFunc(lower, func(r rune) bool {
		return !(r >= 'a' && r <= 'z') && !(r >= '0' && r <= '9') && r != '-'
	})
	var tech, reason, constraint int
	for _, w := range words {
		if techMarkers[w] {
			tech++
		}
		if reasoningMarkers[w] {
			reason++
		}
		if constraintMarkers[w] {
			constraint++
		}
	}
	if strings.Contains(text, "```") || strings.Contains(text, "func ") || strings.Contains(text, "SELECT ") {
		tech += 3
	}
	constraint += len(regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|%|k|m|gb|mb|x)?\b`).FindAllString(lower, -1))
	if q := strings.Count(text, "?"); q > 1 {
		constraint += q - 1
	}
	values := []float64{min(10, float64(len(words))/12), min(10, 2*float64(tech)), min(10, 2.5*float64(reason)),
		min(10, 3*float64(max(0, skillsTouched-1))), min(10, 2*float64(constraint))}
	dims, score := map[string]float64{}, 0.0
	for i, d := range []string{DimLength, DimTechnical, DimReasoning, DimBreadth, DimConstraints} {
		dims[d] = round1(values[i])
		score += dimensionWeights[d] * values[i]
	}
	return Complexity{Score: round1(score), Dimensions: dims}
}

func TestComplexityCountsAsBefore(t *testing.T) {
	msgs := append(randomMessages(5_000), "Überprüfe die API — 3 Fragen?? ✓ 200ms", "naïve café SQL 1.5x")
	for i, m := range msgs {
		if !assert.Equal(t, complexityBefore(m, i%4), ComplexityOf(m, i%4), "%q", m) {
			return
		}
	}
}

func TestStyleOfOtherScripts(t *testing.T) {
	// Non-ASCII text takes the rune path: letters of any script are words.
	assert.Equal(t, styleOfRunes("lol 🎉 can u help??"), StyleOf("lol 🎉 can u help??"))
}
