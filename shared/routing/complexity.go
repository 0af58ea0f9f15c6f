package routing

import (
	"regexp"
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

var dimensionWeights = map[string]float64{
	DimLength: 0.15, DimTechnical: 0.25, DimReasoning: 0.30, DimBreadth: 0.15, DimConstraints: 0.15,
}

var (
	reasoningMarkers = wordSet(`why how compare comparison versus vs tradeoff tradeoffs trade design plan planning
		strategy evaluate analyze analyse analysis explain optimize optimise architect architecture migrate
		migration pros cons decide decision prioritize prioritise root cause diagnose investigate propose`)
	constraintMarkers = wordSet(`must should without within least most under over only never always exactly
		require requires required requirement requirements budget deadline limit limits constraint constraints`)
	numberRE = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|%|k|m|gb|mb|x)?\b`)
)

// ComplexityOf scores text; skillsTouched is how many agents' skills
// matched it (from the gate).
func ComplexityOf(text string, skillsTouched int) Complexity {
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
	constraint += len(numberRE.FindAllString(lower, -1))
	if q := strings.Count(text, "?"); q > 1 {
		constraint += q - 1
	}
	dims := map[string]float64{
		DimLength:      min(10, float64(len(words))/12),
		DimTechnical:   min(10, 2*float64(tech)),
		DimReasoning:   min(10, 2.5*float64(reason)),
		DimBreadth:     min(10, 3*float64(max(0, skillsTouched-1))),
		DimConstraints: min(10, 2*float64(constraint)),
	}
	score := 0.0
	for k, v := range dims {
		dims[k] = round1(v)
		score += dimensionWeights[k] * v
	}
	return Complexity{Score: round1(score), Dimensions: dims}
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
