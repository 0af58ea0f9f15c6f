package routing

import (
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
)

// Complexity is a query's 0–10 complexity on five dimensions and overall.
// It picks the model tier: simple questions go to the cheap tier.
type Complexity struct {
	Score      float64            `json:"score"`
	Dimensions map[string]float64 `json:"dimensions"`
}

// The five dimensions and their weights in the overall score.
const (
	DimLength      = "length"      // how much there is to read and answer
	DimTechnical   = "technical"   // technical vocabulary and code
	DimReasoning   = "reasoning"   // asks for analysis, design, comparison, planning
	DimBreadth     = "breadth"     // how many different skills it touches
	DimConstraints = "constraints" // numbers, requirements, several questions
)

// dimensions in the order of their weights below.
var dimensions = [...]string{DimLength, DimTechnical, DimReasoning, DimBreadth, DimConstraints}

// Word classes of ComplexityOf, one lookup a word.
const (
	complexityTech = 1 << iota
	complexityReasoning
	complexityConstraint
)

var complexityWords, longestComplexityWord = wordClasses(map[uint8]map[string]bool{
	complexityTech: techMarkers, complexityReasoning: reasoningMarkers, complexityConstraint: constraintMarkers})

func isComplexityWordByte(b byte) bool {
	return ('a' <= b && b <= 'z') || ('0' <= b && b <= '9') || b == '-'
}

var dimensionWeights = map[string]float64{
	DimLength: 0.15, DimTechnical: 0.25, DimReasoning: 0.30, DimBreadth: 0.15, DimConstraints: 0.15,
}

var (
	reasoningMarkers = wordSet(`why how compare comparison versus vs tradeoff tradeoffs trade design plan planning
		strategy evaluate analyze analyse analysis explain optimize optimise architect architecture migrate
		migration pros cons decide decision prioritize prioritise root cause diagnose investigate propose`)
	constraintMarkers = wordSet(`must should without within least most under over only never always exactly
		require requires required requirement requirements budget deadline limit limits constraint constraints`)
)

// ComplexityOf scores text; skillsTouched is how many agents' skills
// matched it (from the gate).
func ComplexityOf(text string, skillsTouched int) Complexity {
	lower := strings.ToLower(text)
	// Words: runs of a–z, 0–9 and hyphens (bytes of other runes, all
	// 0x80 and above, separate words as the runes do).
	var tech, reason, constraint, words int
	// At i == len(lower) the break below ends the loop: <= would too.
	for i := 0; i < len(lower); {
		for i < len(lower) && !isComplexityWordByte(lower[i]) {
			i++
		}
		j := i
		for j < len(lower) && isComplexityWordByte(lower[j]) {
			j++
		}
		if j == i {
			break
		}
		words++
		if w := lower[i:j]; len(w) <= longestComplexityWord {
			c := complexityWords[w]
			tech += int(c & complexityTech)
			reason += int(c&complexityReasoning) >> 1
			constraint += int(c&complexityConstraint) >> 2
		}
		i = j
	}
	if strings.Contains(text, "```") || strings.Contains(text, "func ") || strings.Contains(text, "SELECT ") {
		tech += 3
	}
	constraint += countNumbers(lower)
	// One question mark adds q-1 = 0: >= would too.
	if q := strings.Count(text, "?"); q > 1 {
		constraint += q - 1
	}
	values := [...]float64{
		min(10, float64(words)/12),
		min(10, 2*float64(tech)),
		min(10, 2.5*float64(reason)),
		min(10, 3*float64(max(0, skillsTouched-1))),
		min(10, 2*float64(constraint)),
	}
	// The weighted sum in a fixed order (it was map order).
	score := 0.0
	dims := make(map[string]float64, len(dimensions))
	for i, d := range dimensions {
		dims[d] = round1(values[i])
		score += dimensionWeights[d] * values[i]
	}
	return Complexity{Score: round1(score), Dimensions: dims}
}

// countNumbers counts the numbers in lower-case text, with their units
// ("3", "1.5", "200ms", "50%", "3x", "16gb"): the matches of
// \b\d+(\.\d+)?(ms|s|%|k|m|gb|mb|x)?\b, found as that regular expression
// finds them (leftmost first, one after another), without its machinery.
func countNumbers(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if !isDigit(s[i]) || (i > 0 && isWordByte(s[i-1])) {
			i++
			continue
		}
		// A number ends past its first digit, never at 0: >= would too.
		if end := numberEnd(s, i); end > 0 {
			n++
			i = end
		} else {
			i++
		}
	}
	return n
}

// numberEnd is where the number starting at s[p] (a digit after a word
// boundary) ends, or -1: the digits (all of them, as \d+ can only match
// there), a fraction if one follows and a unit and boundary fit after it,
// else none.
func numberEnd(s string, p int) int {
	q := p
	for q < len(s) && isDigit(s[q]) {
		q++
	}
	if q+1 < len(s) && s[q] == '.' && isDigit(s[q+1]) {
		r := q + 1
		for r < len(s) && isDigit(s[r]) {
			r++
		}
		// Past the fraction's digits, never 0: >= would too.
		if end := unitEnd(s, r); end > 0 {
			return end
		}
	}
	return unitEnd(s, q)
}

// numberUnits in the regular expression's order of preference.
var numberUnits = [...]string{"ms", "s", "%", "k", "m", "gb", "mb", "x"}

// unitEnd is where an optional unit at s[c] and the word boundary after it
// end, or -1.
func unitEnd(s string, c int) int {
	for _, u := range numberUnits {
		if strings.HasPrefix(s[c:], u) && wordBoundary(s, c+len(u)) {
			return c + len(u)
		}
	}
	if wordBoundary(s, c) {
		return c
	}
	return -1
}

// wordBoundary reports \b at s[e], s[e-1] being ASCII: a word character on
// one side only. Bytes of multi-byte runes are not word characters, as the
// runes are not.
func wordBoundary(s string, e int) bool {
	return isWordByte(s[e-1]) != (e < len(s) && isWordByte(s[e]))
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// isWordByte is \w: ASCII letters, digits and underscore.
func isWordByte(b byte) bool {
	return isDigit(b) || ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') || b == '_'
}

func round1(x float64) float64 { return float64(int(x*10+0.5)) / 10 }

// Tiers.
const (
	Tier0 = "tier_0"
	Tier1 = "tier_1"
	Tier2 = "tier_2"
)

// TierFor maps a complexity score to a tier: below 3 the small model, below
// 6 the balanced one, the strongest above.
func TierFor(score float64) string {
	switch {
	case score < 3:
		return Tier0
	case score < 6:
		return Tier1
	}
	return Tier2
}

// TierModels names the model of each tier; it is configuration
// (MODEL_TIERS), these are the defaults on Amazon Bedrock.
type TierModels map[string]string

// DefaultTierModels are the Bedrock models used when MODEL_TIERS is unset.
var DefaultTierModels = TierModels{
	Tier0: "amazon.nova-micro-v1:0",
	Tier1: "anthropic.claude-3-5-haiku-20241022-v1:0",
	Tier2: "anthropic.claude-3-5-sonnet-20240620-v1:0",
}

// expectedOutput is the typical reply length per tier, for estimates.
var expectedOutput = map[string]int{Tier0: 250, Tier1: 500, Tier2: 900}

// PromptOverhead approximates the tokens of the system prompt and history
// that accompany the query.
const PromptOverhead = 400

// TierChoice is the tier, its model and the estimated cost of one reply.
type TierChoice struct {
	Tier          string  `json:"tier"`
	ModelID       string  `json:"model_id"`
	EstimatedCost float64 `json:"estimated_cost_usd"`
}

// Choose picks the tier for c and estimates one reply's cost.
func (t TierModels) Choose(text string, c Complexity) TierChoice {
	tier := TierFor(c.Score)
	model := t[tier]
	if model == "" {
		model = DefaultTierModels[tier]
	}
	in := models.EstimateTokens(text) + PromptOverhead
	return TierChoice{Tier: tier, ModelID: model, EstimatedCost: models.Cost(model, in, expectedOutput[tier])}
}
