package routing

import (
	"fmt"
	"slices"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// Strategy says how many agents answer and how their replies combine.
type Strategy string

// Strategies.
const (
	Top1     Strategy = "top_1"    // the best agent answers
	TopK     Strategy = "top_k"    // k agents answer in parallel, the best reply is kept
	Ensemble Strategy = "ensemble" // every agent above the threshold answers, replies are aggregated
	Cascade  Strategy = "cascade"  // agents are tried in score order until one succeeds
	// Direct is logged when collaboration is off: the conversation's agent
	// answers without routing. Mention marks an @mention that decided.
	Direct    Strategy = "direct"
	Mentioned Strategy = "mention"
	// Router is the baseline AgentRouter (expert gate off).
	Router Strategy = "router"
	// HandedOff: the conversation was handed to its current agent.
	HandedOff Strategy = "handoff"
	// Greeting: the message was small talk (IsSmallTalk): no scoring.
	Greeting Strategy = "greeting"
)

// Selection defaults and bounds.
const (
	DefaultThreshold = 0.6
	DefaultK         = 3
	MaxK             = 5
	// MaxEnsemble caps how many agents one ENSEMBLE reply may cost.
	MaxEnsemble = 5
)

// ParseStrategy validates a requested strategy ("" is TOP_1).
func ParseStrategy(s string) (Strategy, error) {
	switch Strategy(s) {
	case "":
		return Top1, nil
	case Top1, TopK, Ensemble, Cascade:
		return Strategy(s), nil
	}
	return "", apperr.Invalid("strategy", "strategy must be top_1, top_k, ensemble or cascade")
}

// Multi reports whether the strategy needs the ensemble flag.
func (s Strategy) Multi() bool { return s == TopK || s == Ensemble }

// Selection is the ExpertSelector's result.
type Selection struct {
	Strategy Strategy `json:"strategy"`
	// Requested is the strategy asked for when it was downgraded (ensemble
	// flag off).
	Requested  Strategy `json:"requested_strategy,omitempty"`
	Agents     []string `json:"selected_agents"`
	Confidence float64  `json:"confidence"`
	Threshold  float64  `json:"confidence_threshold"`
	Fallback   bool     `json:"fallback_used"`
	// Note is said to the user when the default agent stands in.
	Note string `json:"note,omitempty"`
}

// SelectOptions configure one selection.
type SelectOptions struct {
	Strategy     Strategy
	K            int
	Threshold    float64
	DefaultAgent string
	// EnsembleEnabled is the ensemble feature flag: off downgrades TOP_K
	// and ENSEMBLE to TOP_1.
	EnsembleEnabled bool
}

// Select applies the strategy to scores sorted best first by overall. The
// threshold is a match confidence (ExpertScore.Confidence): only agents at
// or above it are confident, and among them overall (skill, performance,
// style, load) decides the order. With no confident agent the default
// agent answers alone and the selection says so (every strategy, ENSEMBLE
// included). TOP_K and CASCADE ask the confident agents first, then the
// next best by overall up to k; ENSEMBLE asks confident agents only.
func Select(scores []ExpertScore, o SelectOptions) Selection {
	if o.K <= 0 {
		o.K = DefaultK
	}
	o.K = min(o.K, MaxK)
	sel := Selection{Strategy: o.Strategy, Threshold: o.Threshold}
	if sel.Strategy == "" {
		sel.Strategy = Top1
	}
	if sel.Strategy.Multi() && !o.EnsembleEnabled {
		sel.Requested, sel.Strategy = sel.Strategy, Top1
	}
	confident, rest := Confident(scores, o.Threshold)
	if len(confident) == 0 {
		sel.Fallback = true
		sel.Agents = []string{o.DefaultAgent}
		best := "no agent"
		if b, ok := MostConfident(scores); ok {
			sel.Confidence = b.Confidence
			best = fmt.Sprintf("best was %s at %.2f", b.AgentName, b.Confidence)
			if o.DefaultAgent == "" {
				sel.Agents = []string{b.AgentSlug}
			}
		}
		sel.Note = fmt.Sprintf("No specialist matched this confidently (%s, below the %.2f threshold), so the team's default agent is answering.", best, o.Threshold)
		return sel
	}
	sel.Confidence = confident[0].Confidence
	switch sel.Strategy {
	case Top1:
		sel.Agents = []string{confident[0].AgentSlug}
	case TopK, Cascade:
		// Cascade: ordered by score; bounded by k so a failing chain stays
		// within the API's 30 s.
		all := append(slices.Clone(confident), rest...)
		sel.Agents = slugs(all[:min(o.K, len(all))])
	case Ensemble:
		sel.Agents = slugs(confident[:min(MaxEnsemble, len(confident))])
	}
	return sel
}

// Confident splits scores (best first by overall) into those at or above
// the confidence threshold and the rest, each in the order given.
func Confident(scores []ExpertScore, threshold float64) (confident, rest []ExpertScore) {
	for _, s := range scores {
		if s.Confidence >= threshold && s.Confidence > 0 {
			confident = append(confident, s)
		} else {
			rest = append(rest, s)
		}
	}
	return confident, rest
}

// MostConfident is the score with the highest confidence (the first of
// equals), false when there is none.
func MostConfident(scores []ExpertScore) (ExpertScore, bool) {
	if len(scores) == 0 {
		return ExpertScore{}, false
	}
	b := scores[0]
	for _, s := range scores[1:] {
		if s.Confidence > b.Confidence {
			b = s
		}
	}
	return b, true
}

func slugs(s []ExpertScore) []string {
	out := make([]string, len(s))
	for i := range s {
		out[i] = s[i].AgentSlug
	}
	return out
}
