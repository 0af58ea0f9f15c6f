package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/expertgate"
	"github.com/conclave-ai/conclave/shared/ids"
	"github.com/conclave-ai/conclave/shared/routing"
)

// MaxLoggedQuery bounds the query a decision keeps (in runes).
const MaxLoggedQuery = 500

// Options are what the user asked of the selection (used when the
// ExpertGate routes).
type Options struct {
	Strategy  routing.Strategy
	K         int
	Threshold float64
}

// ParseOptions validates a turn's selection options: an empty strategy is
// TOP_1, k is nil (the selector's default) or 1 to routing.MaxK, and the
// confidence threshold (routing.DefaultThreshold when nil) is from 0 to 1.
// Returns EINVALID naming the field.
func ParseOptions(strategy string, k *int, threshold *float64) (Options, error) {
	o := Options{Threshold: routing.DefaultThreshold}
	var err error
	if o.Strategy, err = routing.ParseStrategy(strategy); err != nil {
		return o, err
	}
	if k != nil {
		if *k < 1 || *k > routing.MaxK {
			return o, apperr.Invalid("k", "k must be from 1 to %d", routing.MaxK)
		}
		o.K = *k
	}
	if threshold != nil {
		if *threshold < 0 || *threshold > 1 {
			return o, apperr.Invalid("confidence_threshold", "confidence_threshold must be from 0 to 1")
		}
		o.Threshold = *threshold
	}
	return o, nil
}

// Request is one user message to route, with what routing needs to know
// of its conversation and team.
type Request struct {
	TeamID         string
	ConversationID string
	MessageID      string
	Query          string
	// CurrentAgent answers when collaboration is off, and keeps answering
	// while HandoffActive (the conversation was handed to it).
	CurrentAgent  string
	HandoffActive bool
	Active        []agents.Agent
	DefaultAgent  string
	Options       Options
	// Start is when the turn began: the router latency counts from it.
	Start time.Time
	// At is the turn's time, the decision's created_at.
	At time.Time
}

// Plan is a routed turn: the decision so far and what running it needs.
// Its decision is read with Decision and completed with Finish.
type Plan struct {
	decision Decision
	// Note is shown to the user before the reply when routing fell back
	// (an unavailable agent, no confident expert); empty otherwise.
	Note string
	// Loads, Labels and Scores are the gate's view of the agents it
	// answered (its best routing.ExplainedScores, every agent that can be
	// selected; the router's labels when the gate did not score).
	Loads  map[string]routing.Load
	Labels map[string]string
	Scores map[string]float64
}

// Decision returns the routing decision, without its outcome.
func (p Plan) Decision() Decision { return p.decision }

// Result is what the agents asked did with a turn.
type Result struct {
	Attempts    []Attempt
	AnsweredBy  []string // the reply's agent first, then other contributors
	Aggregation []routing.Contribution
	// SynthesisCostUSD is what synthesizing an ENSEMBLE reply cost.
	SynthesisCostUSD float64
	// Answered: a reply was kept (otherwise every agent asked failed).
	Answered bool
}

// Finish completes the decision with the turn's result: the attempts, who
// answered, the aggregation, the actual cost and the outcome.
func (p Plan) Finish(r Result) Decision {
	d := p.decision
	d.Attempts, d.AnsweredBy, d.Aggregation = r.Attempts, r.AnsweredBy, r.Aggregation
	for _, a := range r.Attempts {
		d.ActualCost += a.CostUSD
	}
	d.ActualCost += r.SynthesisCostUSD
	d.Outcome = OutcomeFailed
	if r.Answered {
		d.Outcome = OutcomeAnswered
	}
	return d
}

// Router decides who answers a turn.
type Router struct {
	// Gate is the ExpertGate (the expert-gate function through Lambda
	// Invoke); used when Flags.ExpertGate is on.
	Gate  expertgate.Gate
	Flags Flags
	// Tiers picks the model tier when the gate does not (nil: the
	// defaults of shared/routing).
	Tiers routing.TierModels
	Log   *slog.Logger
}

func (r *Router) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}

func (r *Router) tiers() routing.TierModels {
	if r.Tiers != nil {
		return r.Tiers
	}
	return routing.DefaultTierModels
}

// Route applies the cascade of feature flags: collaboration off → the
// conversation's agent; an @mention (or "go back to Kyra") → that agent; a
// handed-off conversation → its current agent; expert gate off → the
// AgentRouter; on → the gate and the selector (the AgentRouter when the
// gate fails). The plan's decision is complete but for its outcome.
// Returns ECONFLICT (AgentUnavailable) when no agent can answer.
func (r *Router) Route(ctx context.Context, req Request) (Plan, error) {
	p := Plan{Loads: map[string]routing.Load{}, Labels: map[string]string{}, Scores: map[string]float64{}}
	p.decision = Decision{
		ID: ids.New("rdec"), TeamID: req.TeamID, ConversationID: req.ConversationID, MessageID: req.MessageID,
		Query: clip(req.Query, MaxLoggedQuery), Threshold: req.Options.Threshold, Scores: []routing.ExpertScore{},
		Flags: r.Flags, CreatedAt: req.At,
	}
	r.choose(ctx, req, &p)
	p.decision.RouterLatencyMS = ms(time.Since(req.Start))
	if len(p.decision.SelectedAgents) == 0 || p.decision.SelectedAgents[0] == "" {
		return Plan{}, apperr.New(apperr.ECONFLICT, "the team has no active agent to answer").WithReason("AgentUnavailable")
	}
	return p, nil
}

// choose runs the cascade and sets the routing fields of p's decision.
func (r *Router) choose(ctx context.Context, req Request, p *Plan) {
	d := &p.decision
	if !r.Flags.Collaboration {
		r.direct(req, p)
		return
	}
	if m := routing.Mention(req.Query, req.Active); m != "" {
		d.Strategy, d.Reason, d.Confidence, d.SelectedAgents = routing.Mentioned, routing.ReasonMention, 1, []string{m}
		r.localTier(d, req.Query, 1)
		return
	}
	if req.HandoffActive && isActive(req.Active, req.CurrentAgent) {
		// Handed off: the agent that took over answers until the next
		// handoff, return or mention.
		d.Strategy, d.Reason, d.Confidence, d.SelectedAgents = routing.HandedOff, routing.ReasonHandoff, 1, []string{req.CurrentAgent}
		r.localTier(d, req.Query, 1)
		return
	}
	if gate := r.score(ctx, req); gate != nil {
		r.selectExperts(req, *gate, p)
		return
	}
	r.baseline(req, p)
}

// direct is dispatch with collaboration off: the conversation's agent (the
// team's default for a new one, or when it is not active).
func (r *Router) direct(req Request, p *Plan) {
	d := &p.decision
	agent := req.CurrentAgent
	if agent == "" {
		agent = req.DefaultAgent
	}
	d.Strategy, d.Reason, d.Confidence = routing.Direct, routing.ReasonDirect, 1
	if !isActive(req.Active, agent) && agent != req.DefaultAgent {
		p.Note = fmt.Sprintf("%s is not available, so the team's default agent is answering.", agent)
		agent, d.Fallback, d.Reason = req.DefaultAgent, true, routing.ReasonDefault
	}
	d.SelectedAgents = []string{agent}
	r.localTier(d, req.Query, 0)
}

// score asks the gate when it is on; nil when it is off or failed.
func (r *Router) score(ctx context.Context, req Request) *expertgate.Response {
	if !r.Flags.ExpertGate || r.Gate == nil {
		return nil
	}
	// The turn has read the active agents: they go with the request, so
	// the gate reads only the counters and ratings (and scores the agents
	// the turn will run).
	res, err := r.Gate.Score(ctx, expertgate.Request{TeamID: req.TeamID, Query: req.Query, Agents: req.Active})
	if err != nil {
		// Chat keeps working without the gate: the baseline router
		// decides and the decision says why.
		r.log().ErrorContext(ctx, "expert gate failed; routing with the baseline router", "error", err.Error())
		return nil
	}
	return &res
}

// baseline is the AgentRouter: skills, then the current agent, then the
// default.
func (r *Router) baseline(req Request, p *Plan) {
	d := &p.decision
	ix := routing.BuildIndex(req.Active)
	res := ix.Route(req.Query, req.CurrentAgent, req.DefaultAgent)
	d.Strategy, d.Reason, d.Confidence, d.SelectedAgents = routing.Router, res.Reason, res.Confidence, []string{res.Agent}
	d.Fallback = res.Reason == routing.ReasonDefault
	if r.Flags.ExpertGate {
		d.Reason += " (expert gate unavailable)"
	}
	for _, a := range req.Active {
		p.Labels[a.Slug] = ix.PrimaryLabel(a.Slug)
	}
	r.localTier(d, req.Query, len(res.MatchingSkills))
}

// selectExperts applies the selection strategy to the gate's scores.
func (r *Router) selectExperts(req Request, gate expertgate.Response, p *Plan) {
	d := &p.decision
	o := req.Options
	sel := routing.Select(gate.Scores, routing.SelectOptions{Strategy: o.Strategy, K: o.K, Threshold: o.Threshold, DefaultAgent: req.DefaultAgent, EnsembleEnabled: r.Flags.Ensemble})
	d.Strategy, d.RequestedStrategy, d.SelectedAgents, d.Confidence, d.Fallback = sel.Strategy, sel.Requested, sel.Agents, sel.Confidence, sel.Fallback
	d.Reason = routing.ReasonGate
	if sel.Fallback {
		d.Reason, p.Note = routing.ReasonFallback, sel.Note
	}
	d.Scores = gate.Scores
	d.Complexity, d.Dimensions = gate.Complexity.Score, gate.Complexity.Dimensions
	d.Tier, d.Model, d.EstimatedCost = gate.Tier.Tier, gate.Tier.ModelID, gate.Tier.EstimatedCost
	d.GateLatencyMS = gate.GateLatencyMS
	if n := len(sel.Agents); n > 1 && !sel.Fallback && sel.Strategy != routing.Cascade {
		d.EstimatedCost *= float64(n)
	}
	p.Loads = gate.Loads
	for _, sc := range gate.Scores {
		p.Labels[sc.AgentSlug], p.Scores[sc.AgentSlug] = sc.Label, sc.Overall
	}
}

// localTier sets the complexity and model tier without the gate.
func (r *Router) localTier(d *Decision, query string, touched int) {
	c := routing.ComplexityOf(query, touched)
	d.Complexity, d.Dimensions = c.Score, c.Dimensions
	t := r.tiers().Choose(query, c)
	d.Tier, d.Model, d.EstimatedCost = t.Tier, t.ModelID, t.EstimatedCost
}

func isActive(active []agents.Agent, slug string) bool {
	for _, a := range active {
		if a.Slug == slug {
			return true
		}
	}
	return false
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}
