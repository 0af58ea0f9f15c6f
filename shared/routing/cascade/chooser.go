package cascade

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// The tier-0 router model (issue 23, item 5; architecture decision 6b): a
// fast model decides only when the gate is unsure.
const (
	// UnsureMargin: the gate is unsure when its most confident agent is
	// confident and the second is within this much confidence of it (at
	// the margin included; the second is then near the threshold too, as
	// UnsureMargin < NearThreshold).
	UnsureMargin = 0.10
	// NearThreshold: an agent is near when its confidence is at least the
	// threshold minus this. The gate is also unsure when its best agent is
	// near but not confident (in [threshold − NearThreshold, threshold)),
	// where the default agent would otherwise stand in.
	NearThreshold = 0.15
	// MinChoiceConfidence is the least confidence the model must give its
	// choice for it to stand; below it the gate's choice stands.
	MinChoiceConfidence = 0.6
	// MaxCandidates is how many of the gate's most confident agents the
	// model chooses among; the conversation's current agent and the
	// team's default agent are added when they are not among them.
	MaxCandidates = 8
	// ChooserTimeout bounds the model call; it never takes more than a
	// quarter of what is left of the turn either, so the agent answering
	// keeps the rest.
	ChooserTimeout = 3 * time.Second
)

// Which path of the cascade decided a turn (Decision.DecidedBy).
const (
	DecidedByDirect      = "direct"
	DecidedByMention     = "mention"
	DecidedByHandoff     = "handoff"
	DecidedByGreeting    = "greeting"
	DecidedByGate        = "gate"
	DecidedByRouterModel = "router_model"
	DecidedByAgentRouter = "agent_router"
)

// ReasonRouterModel is the decision's reason when the tier-0 model chose.
const ReasonRouterModel = "router_model"

// What became of a router model call (RouterModelCall.Outcome).
const (
	ChoiceChosen        = "chosen"         // its agent answers
	ChoiceLowConfidence = "low_confidence" // below MinChoiceConfidence: the gate's choice stands
	ChoiceInvalid       = "invalid"        // unparsable, or not a candidate: the gate's choice stands
	ChoiceFailed        = "failed"         // an error or a timeout: the gate's choice stands
)

// ErrInvalidChoice is a model answer that is not a valid choice: no
// choose_agent call, input that does not parse, an agent that is not a
// candidate, a confidence outside [0, 1].
var ErrInvalidChoice = errors.New("invalid router model choice")

// Candidate is one agent the router model may choose: what it is told of
// it (one skill, the one the gate matched best).
type Candidate struct {
	Agent       string `json:"agent"`
	Name        string `json:"name"`
	Skill       string `json:"skill"`
	Description string `json:"description"`
}

// ChoiceRequest is what the router model is asked: who of the candidates
// (the gate's best, most confident first) should answer the question.
type ChoiceRequest struct {
	TeamID string
	// ConversationID is the conversation routed in: the call is charged
	// to it (budget usage).
	ConversationID string
	Question       string
	// CurrentAgent is the conversation's current agent ("" for none): a
	// hint for follow-ups; it is always a candidate when set.
	CurrentAgent string
	Candidates   []Candidate
}

// Choice is the router model's answer and what the call cost.
type Choice struct {
	Agent        string
	Skill        string
	Confidence   float64
	Reason       string
	ModelID      string
	InputTokens  int
	OutputTokens int
	CostUSD      float64
}

// Check returns ErrInvalidChoice (wrapped, saying why) unless c names one
// of the candidates with a confidence in [0, 1].
func (r ChoiceRequest) Check(c Choice) error {
	if !slices.ContainsFunc(r.Candidates, func(x Candidate) bool { return x.Agent == c.Agent }) {
		return fmt.Errorf("%w: %q is not a candidate", ErrInvalidChoice, c.Agent)
	}
	if c.Confidence < 0 || c.Confidence > 1 {
		return fmt.Errorf("%w: confidence %v is not in [0, 1]", ErrInvalidChoice, c.Confidence)
	}
	return nil
}

// Chooser is the port of the tier-0 router model (shared/routing/chooser
// over the models port).
type Chooser interface {
	// Choose asks the model once. The returned Choice carries the model id,
	// tokens and cost whenever the model answered, also with an error.
	// Returns ErrInvalidChoice (wrapped) for an answer that is not a valid
	// choice, the model's or the context's error otherwise.
	Choose(ctx context.Context, req ChoiceRequest) (Choice, error)
}

// RouterModelCall is what the decision log keeps of a router model call.
type RouterModelCall struct {
	Model        string  `json:"model"`
	Agent        string  `json:"agent"`
	Skill        string  `json:"skill"`
	Confidence   float64 `json:"confidence"`
	Reason       string  `json:"reason"`
	Outcome      string  `json:"outcome"` // chosen, low_confidence, invalid, failed
	Error        string  `json:"error,omitempty"`
	LatencyMS    float64 `json:"latency_ms"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// unsure reports whether the gate's scores leave the choice open: the two
// most confident agents within UnsureMargin of each other, or the best
// near the threshold but not confident (in [threshold − NearThreshold,
// threshold)). With nobody near, the default agent's fallback stands
// unasked. The margins are inclusive (to 1e-9, so 0.8 − 0.7 is within
// 0.10); the threshold is not, as in routing.Confident.
func unsure(scores []routing.ExpertScore, threshold float64) bool {
	const eps = 1e-9
	// Compared against a bound moved by eps, a score never equals it: `<`
	// and `<=` (at both margins below) decide alike, two survivors of
	// mutation testing that change nothing.
	conf := make([]float64, len(scores))
	for i, s := range scores {
		conf[i] = s.Confidence
	}
	slices.SortFunc(conf, func(a, b float64) int { return cmp.Compare(b, a) })
	if len(conf) == 0 || conf[0] < threshold-NearThreshold-eps {
		return false
	}
	if conf[0] < threshold {
		return true
	}
	return len(conf) > 1 && conf[0]-conf[1] <= UnsureMargin+eps
}

// candidates are the agents the router model chooses among: the
// MaxCandidates most confident of the gate's scores, then the current and
// the default agent when they may answer and are not among them. Each
// comes with the skill the gate matched (else its first user-facing
// skill) and that skill's description.
func candidates(req Request, scores []routing.ExpertScore) []Candidate {
	byConf := slices.Clone(scores)
	slices.SortStableFunc(byConf, func(a, b routing.ExpertScore) int { return cmp.Compare(b.Confidence, a.Confidence) })
	var out []Candidate
	add := func(slug string, matching []string) {
		if slug == "" || slices.ContainsFunc(out, func(c Candidate) bool { return c.Agent == slug }) {
			return
		}
		i := slices.IndexFunc(req.Active, func(a agents.Agent) bool { return a.Slug == slug })
		if i < 0 {
			return
		}
		out = append(out, candidateOf(req.Active[i], matching))
	}
	for _, s := range byConf {
		if len(out) == MaxCandidates {
			break
		}
		add(s.AgentSlug, s.MatchingSkills)
	}
	for _, slug := range []string{current(req), req.DefaultAgent} {
		var matching []string
		for _, s := range scores {
			if s.AgentSlug == slug {
				matching = s.MatchingSkills
			}
		}
		add(slug, matching)
	}
	return out
}

func candidateOf(a agents.Agent, matching []string) Candidate {
	c := Candidate{Agent: a.Slug, Name: a.Name}
	pick := -1
	for _, name := range matching {
		if pick = slices.IndexFunc(a.Skills, func(s agents.Skill) bool { return s.Name == name }); pick >= 0 {
			break
		}
	}
	// `pick <= 0` would only look again when the match is skill 0, and find
	// it again: the gate matches no internal skill (a survivor that changes
	// nothing).
	if pick < 0 {
		pick = slices.IndexFunc(a.Skills, func(s agents.Skill) bool { return !s.InternalOnly })
	}
	if pick >= 0 {
		c.Skill, c.Description = a.Skills[pick].Name, a.Skills[pick].Description
	}
	return c
}

// chooserTimeout is the call's bound: ChooserTimeout, and at most a quarter
// of what is left of ctx.
func chooserTimeout(ctx context.Context, bound time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		bound = min(bound, time.Until(dl)/4)
	}
	return bound
}

// askModel asks the router model when the flag is on, the strategy picks
// one agent to answer (TOP_1, CASCADE; TOP_K and ENSEMBLE ask several and
// are skipped) and the gate is unsure. It records the call in the
// decision and, when the choice stands, puts the chosen agent first in
// sel. Reports whether the model's choice stands.
//
// Continuity is weighed before: when the current agent answers (kept by
// continuity, or the gate's choice anyway) the model is not asked.
func (r *Router) askModel(ctx context.Context, req Request, scores []routing.ExpertScore, sel *routing.Selection, d *Decision) bool {
	if !r.Flags.RouterModel || r.Chooser == nil || (sel.Strategy != routing.Top1 && sel.Strategy != routing.Cascade) ||
		!unsure(scores, req.Options.Threshold) {
		return false
	}
	// Select always names one agent at least, so `len > 0` is a guard only
	// (`>= 0` survives mutation testing and changes nothing).
	if cur := current(req); cur != "" && len(sel.Agents) > 0 && sel.Agents[0] == cur {
		// The current agent answers by continuity (or is the gate's choice
		// anyway, so nobody is clearly better): nothing to second-guess.
		return false
	}
	creq := ChoiceRequest{TeamID: req.TeamID, ConversationID: req.ConversationID, Question: req.Query, CurrentAgent: current(req), Candidates: candidates(req, scores)}
	if len(creq.Candidates) < 2 {
		return false
	}
	bound := r.ChooserTimeout
	if bound <= 0 {
		bound = ChooserTimeout
	}
	timeout := chooserTimeout(ctx, bound)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	c, err := r.Chooser.Choose(cctx, creq)
	if err == nil {
		err = creq.Check(c) // whatever the adapter checked, nothing else reaches the selection
	}
	call := &RouterModelCall{Model: c.ModelID, Agent: c.Agent, Skill: c.Skill, Confidence: c.Confidence, Reason: c.Reason,
		LatencyMS: ms(time.Since(start)), InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, CostUSD: c.CostUSD}
	d.RouterModel = call
	switch {
	case errors.Is(err, ErrInvalidChoice):
		call.Outcome, call.Error = ChoiceInvalid, err.Error()
	case err != nil:
		call.Outcome, call.Error = ChoiceFailed, err.Error()
		if cctx.Err() != nil && ctx.Err() == nil {
			call.Error = "timed out after " + timeout.String() + ": " + err.Error()
		}
	case c.Confidence < MinChoiceConfidence:
		call.Outcome = ChoiceLowConfidence
	default:
		call.Outcome = ChoiceChosen
	}
	if call.Outcome != ChoiceChosen {
		r.log().InfoContext(ctx, "router model choice not taken; the gate's stands", "outcome", call.Outcome, "error", call.Error)
		return false
	}
	// The model's choice answers (first, for CASCADE). It knew the current
	// agent, and continuity was weighed before it was asked (a current
	// agent kept by continuity is never second-guessed), so continuity
	// does not overrule it.
	first := c.Agent
	rest := slices.DeleteFunc(slices.Clone(sel.Agents), func(s string) bool { return s == first })
	switch {
	case sel.Strategy == routing.Top1:
		sel.Agents = []string{first}
	case sel.Fallback:
		// A CASCADE the default agent would have answered alone: it stays
		// behind the chosen agent, when k allows a second.
		sel.Agents = append([]string{first}, rest...)[:min(1+len(rest), max(1, cascadeK(req.Options.K)))]
	default:
		sel.Agents = append([]string{first}, rest...)[:len(sel.Agents)]
	}
	sel.Fallback, sel.Note = false, ""
	sel.Confidence = 0
	for _, s := range scores {
		if s.AgentSlug == first {
			sel.Confidence = s.Confidence
		}
	}
	return true
}

// cascadeK is the selector's k for a CASCADE.
func cascadeK(k int) int {
	if k <= 0 {
		k = routing.DefaultK
	}
	return min(k, routing.MaxK)
}
