package cascade

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
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
	// Invited are the conversation's invited participants (preferred by
	// ParticipantPreference) and Removed the agents removed from it
	// (never routed to unless @mentioned, which re-joins them).
	Invited []string
	Removed []string
	// Context is what the message carries for the eligibility filters.
	Context *routing.MessageContext
	Options Options
	// Start is when the turn began: the router latency counts from it.
	Start time.Time
	// At is the turn's time, the decision's created_at.
	At time.Time
	// UserID is the person the message is from ("" for a key's own): the
	// gate weighs their own ratings more (routing.OwnRatingWeight).
	UserID string
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
	Loads  routing.Loads
	Labels map[string]string
	Scores map[string]float64
	// Skills are, for each selected agent chosen because one of its
	// skills matched, that skill's name (its best match): the skill's
	// system_prompt, context loaders and kind apply to its turn
	// (docs/skills.md). An agent chosen otherwise (a mention, a handoff,
	// continuity, a greeting, the default or a fallback) has none.
	Skills map[string]string
}

// Decision returns the routing decision, without its outcome.
func (p Plan) Decision() Decision { return p.decision }

// WithPlanner records the compound planner's call on the decision.
func (p Plan) WithPlanner(c *PlannerCall) Plan {
	p.decision.Planner = c
	return p
}

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
// answered, the aggregation, the actual cost (the router model's call
// included) and the outcome.
func (p Plan) Finish(r Result) Decision {
	d := p.decision
	d.Attempts, d.AnsweredBy, d.Aggregation = r.Attempts, r.AnsweredBy, r.Aggregation
	for _, a := range r.Attempts {
		d.ActualCost += a.CostUSD
	}
	d.ActualCost += r.SynthesisCostUSD
	if d.RouterModel != nil {
		d.ActualCost += d.RouterModel.CostUSD
	}
	if d.Planner != nil {
		d.ActualCost += d.Planner.CostUSD
	}
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
	// Chooser is the tier-0 router model, asked when Flags.RouterModel is
	// on and the gate is unsure (chooser.go); nil never asks.
	Chooser Chooser
	// ChooserTimeout bounds its call (0: ChooserTimeout).
	ChooserTimeout time.Duration
	Log            *slog.Logger
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
// gate fails). The plan's decision is complete but for its outcome;
// ECONFLICT (AgentUnavailable) when no agent can answer.
func (r *Router) Route(ctx context.Context, req Request) (Plan, error) {
	ctx, span := tracing.Start(ctx, "route", trace.SpanKindInternal) // ended after traceDecision
	defer span.End()
	p := Plan{Labels: map[string]string{}, Scores: map[string]float64{}, Skills: map[string]string{}}
	p.decision = Decision{
		ID: ids.New("rdec"), TeamID: req.TeamID, ConversationID: req.ConversationID, MessageID: req.MessageID,
		Query: clip.Clip(req.Query, MaxLoggedQuery), Threshold: req.Options.Threshold, Scores: []routing.ExpertScore{},
		Flags: r.Flags, CreatedAt: req.At, TraceID: tracing.TraceID(ctx),
	}
	r.choose(ctx, req, &p)
	if sel := p.decision.SelectedAgents; len(sel) > 0 {
		p.decision.Skill = p.Skills[sel[0]]
	}
	traceDecision(span, p.decision)
	ownModel(&p.decision, req.Active)
	p.decision.RouterLatencyMS = ms(time.Since(req.Start))
	if len(p.decision.SelectedAgents) == 0 || p.decision.SelectedAgents[0] == "" {
		return Plan{}, apperr.New(apperr.ECONFLICT, "the team has no active agent to answer").WithReason("AgentUnavailable")
	}
	return p, nil
}

// Continuity and participants when the gate routes inside a conversation.
const (
	// ContinuityMargin: the conversation's current agent keeps the turn
	// unless another agent's match confidence is at least this much
	// higher (or one of its skills with override_continuity matches by
	// keyword). A follow-up ("Thanks! Can you explain the second point?")
	// matches nobody and stays; a clear change of subject moves.
	ContinuityMargin = 0.15
	// ParticipantPreference is added to an invited participant's
	// confidence and overall score (at most 1) before selection: an agent
	// the user brought into the conversation wins a near tie.
	ParticipantPreference = 0.05
)

// choose runs the cascade and sets the routing fields of p's decision.
func (r *Router) choose(ctx context.Context, req Request, p *Plan) {
	d := &p.decision
	if !r.Flags.Collaboration {
		r.direct(req, p)
		return
	}
	if m := routing.Mention(req.Query, req.Active); m != "" {
		// A removed agent answers when mentioned: the turn re-joins it.
		d.Strategy, d.Reason, d.Confidence, d.SelectedAgents, d.DecidedBy = routing.Mentioned, routing.ReasonMention, 1, []string{m}, DecidedByMention
		r.localTier(d, req.Query, 1)
		return
	}
	if req.HandoffActive && isActive(req.Active, req.CurrentAgent) {
		// Handed off: the agent that took over answers until the next
		// handoff, return or mention.
		d.Strategy, d.Reason, d.Confidence, d.SelectedAgents, d.DecidedBy = routing.HandedOff, routing.ReasonHandoff, 1, []string{req.CurrentAgent}, DecidedByHandoff
		r.localTier(d, req.Query, 1)
		return
	}
	req.Active = routable(req)
	if routing.IsSmallTalk(req.Query) {
		// The greeting filter: nothing to route on, so no scoring and no
		// model choosing; the conversation's agent (or the default)
		// answers.
		agent := current(req)
		if agent == "" {
			agent = fallbackAgent(req, nil)
		}
		d.Strategy, d.Reason, d.Confidence, d.SelectedAgents, d.DecidedBy = routing.Greeting, routing.ReasonGreeting, 1, []string{agent}, DecidedByGreeting
		r.localTier(d, req.Query, 0)
		return
	}
	if gate := r.score(ctx, req); gate != nil {
		r.selectExperts(ctx, req, *gate, p)
		return
	}
	if !r.Flags.ExpertGate && r.skillsByGate(ctx, req, p) {
		return
	}
	r.baseline(req, p)
}

// skillsByGate is the AgentRouter with the expert_gate flag off, when the
// expert-gate function is there: the gate ranks the skills alone
// (expertgate.Request.SkillsOnly), with the team's fitted classifier and
// examples, so the AgentRouter, the ExpertGate and consultations rank one
// question the same way; its calibrated confidence decides at the default
// threshold, a measured probability of being right (docs/routing.md). The
// other signals (past performance, load, personality), the strategies and
// the tier-0 router stay the gate flag's. false when the gate could not
// answer: the words-only baseline decides.
func (r *Router) skillsByGate(ctx context.Context, req Request, p *Plan) bool {
	if r.Gate == nil {
		return false
	}
	var include []string
	if c := current(req); c != "" {
		include = append(include, c)
	}
	res, err := r.Gate.Score(ctx, expertgate.Request{TeamID: req.TeamID, Query: req.Query, Agents: req.Active, Include: include, Context: req.Context, SkillsOnly: true, UserID: req.UserID})
	if err != nil {
		r.log().WarnContext(ctx, "the gate did not rank the skills; routing with the words-only baseline", "error", err.Error())
		return false
	}
	d := &p.decision
	out := routing.RouteScores(res.Scores, current(req), fallbackAgent(req, res.Scores), req.Options.Threshold)
	d.Strategy, d.Reason, d.Confidence, d.SelectedAgents, d.DecidedBy = routing.Router, out.Reason, out.Confidence, []string{out.Agent}, DecidedByAgentRouter
	d.Fallback = out.Reason == routing.ReasonDefault
	d.Scores = res.Scores
	d.GateLatencyMS = res.GateLatencyMS
	for _, sc := range res.Scores {
		p.Labels[sc.AgentSlug], p.Scores[sc.AgentSlug] = sc.Label, sc.Overall
	}
	if out.Reason == routing.ReasonSkill && len(out.MatchingSkills) > 0 {
		p.Skills[out.Agent] = out.MatchingSkills[0]
	}
	d.Complexity, d.Dimensions = res.Complexity.Score, res.Complexity.Dimensions
	d.Tier, d.Model, d.EstimatedCost = res.Tier.Tier, res.Tier.ModelID, res.Tier.EstimatedCost
	return true
}

// routable are the active agents routing may choose: not those removed
// from the conversation.
func routable(req Request) []agents.Agent {
	if len(req.Removed) == 0 {
		return req.Active
	}
	out := make([]agents.Agent, 0, len(req.Active))
	for _, a := range req.Active {
		if !slices.Contains(req.Removed, a.Slug) {
			out = append(out, a)
		}
	}
	return out
}

// current is the conversation's current agent when routing may keep it
// (active and not removed), else "".
func current(req Request) string {
	if req.CurrentAgent != "" && isActive(req.Active, req.CurrentAgent) {
		return req.CurrentAgent
	}
	return ""
}

// fallbackAgent answers when nobody matches: the team's default agent,
// unless it was removed from the conversation (or is not active); then
// the current agent; then the best scored agent that may answer; then
// the first that may.
func fallbackAgent(req Request, scores []routing.ExpertScore) string {
	if isActive(req.Active, req.DefaultAgent) {
		return req.DefaultAgent
	}
	if c := current(req); c != "" {
		return c
	}
	for _, s := range scores {
		if isActive(req.Active, s.AgentSlug) {
			return s.AgentSlug
		}
	}
	if len(req.Active) > 0 {
		return req.Active[0].Slug
	}
	return req.DefaultAgent
}

// direct is dispatch with collaboration off: the conversation's agent (the
// team's default for a new one, or when it is not active).
func (r *Router) direct(req Request, p *Plan) {
	d := &p.decision
	agent := req.CurrentAgent
	if agent == "" {
		agent = req.DefaultAgent
	}
	d.Strategy, d.Reason, d.Confidence, d.DecidedBy = routing.Direct, routing.ReasonDirect, 1, DecidedByDirect
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
	// The current agent and the invited participants are scored wherever
	// they rank: continuity and preference weigh them.
	var include []string
	if c := current(req); c != "" {
		include = append(include, c)
	}
	include = append(include, req.Invited...)
	res, err := r.Gate.Score(ctx, expertgate.Request{TeamID: req.TeamID, Query: req.Query, Agents: req.Active, Include: include, Context: req.Context, UserID: req.UserID})
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
	res := ix.Route(req.Query, current(req), fallbackAgent(req, nil))
	d.Strategy, d.Reason, d.Confidence, d.SelectedAgents, d.DecidedBy = routing.Router, res.Reason, res.Confidence, []string{res.Agent}, DecidedByAgentRouter
	d.Fallback = res.Reason == routing.ReasonDefault
	if r.Flags.ExpertGate {
		d.Reason += " (expert gate unavailable)"
	}
	for _, a := range req.Active {
		p.Labels[a.Slug] = ix.PrimaryLabel(a.Slug)
	}
	// A skill decision always has the skills that matched (router.go), so
	// `len > 0` is a guard only: `>= 0` survives mutation testing.
	if res.Reason == routing.ReasonSkill && len(res.MatchingSkills) > 0 {
		p.Skills[res.Agent] = res.MatchingSkills[0]
	}
	r.localTier(d, req.Query, len(res.MatchingSkills))
}

// selectExperts applies the selection strategy to the gate's scores, with
// the invited participants' preference and the current agent's
// continuity; when the gate is unsure and continuity did not keep the
// current agent, the tier-0 router model may choose (askModel).
func (r *Router) selectExperts(ctx context.Context, req Request, gate expertgate.Response, p *Plan) {
	d := &p.decision
	o := req.Options
	scores := prefer(gate.Scores, req.Invited)
	sel := routing.Select(scores, routing.SelectOptions{Strategy: o.Strategy, K: o.K, Threshold: o.Threshold, DefaultAgent: fallbackAgent(req, scores), EnsembleEnabled: r.Flags.Ensemble})
	kept := continuity(current(req), req.DefaultAgent, scores, &sel)
	chosen := r.askModel(ctx, req, scores, &sel, d)
	d.Strategy, d.RequestedStrategy, d.SelectedAgents, d.Confidence, d.Fallback = sel.Strategy, sel.Requested, sel.Agents, sel.Confidence, sel.Fallback
	d.Reason, d.DecidedBy = routing.ReasonGate, DecidedByGate
	switch {
	case chosen:
		d.Reason, d.DecidedBy = ReasonRouterModel, DecidedByRouterModel
	case kept:
		d.Reason = routing.ReasonCurrent
	case sel.Fallback:
		d.Reason, p.Note = routing.ReasonFallback, sel.Note
	}
	d.Scores = scores
	d.Complexity, d.Dimensions = gate.Complexity.Score, gate.Complexity.Dimensions
	d.Tier, d.Model, d.EstimatedCost = gate.Tier.Tier, gate.Tier.ModelID, gate.Tier.EstimatedCost
	d.GateLatencyMS = gate.GateLatencyMS
	// n > 1 only skips a multiplication by 1: `>= 1` computes the same (a
	// mutation testing survivor that changes nothing).
	if n := len(sel.Agents); n > 1 && !sel.Fallback && sel.Strategy != routing.Cascade {
		d.EstimatedCost *= float64(n)
	}
	p.Loads = gate.Loads
	for _, sc := range gate.Scores {
		p.Labels[sc.AgentSlug], p.Scores[sc.AgentSlug] = sc.Label, sc.Overall
	}
	chosenSkills(p, scores, sel, kept)
}

// chosenSkills sets p.Skills for a selection from the gate's scores: each
// selected agent's best matching skill, unless the selection fell back or
// continuity kept the current agent (who answers first).
func chosenSkills(p *Plan, scores []routing.ExpertScore, sel routing.Selection, kept bool) {
	if sel.Fallback {
		return
	}
	for i, slug := range sel.Agents {
		if kept && i == 0 {
			continue // continuity chose it, not a skill
		}
		for _, sc := range scores {
			if sc.AgentSlug == slug && len(sc.MatchingSkills) > 0 {
				p.Skills[slug] = sc.MatchingSkills[0]
			}
		}
	}
}

// prefer adds ParticipantPreference to the invited participants'
// confidence and overall score and orders the scores again by overall
// (stable: ties keep the gate's order).
func prefer(scores []routing.ExpertScore, invited []string) []routing.ExpertScore {
	if len(invited) == 0 {
		return scores
	}
	out := slices.Clone(scores)
	for i := range out {
		if slices.Contains(invited, out[i].AgentSlug) {
			out[i].Confidence = round3(min(1, out[i].Confidence+ParticipantPreference))
			out[i].Overall = round3(min(1, out[i].Overall+ParticipantPreference))
		}
	}
	slices.SortStableFunc(out, func(a, b routing.ExpertScore) int { return cmp.Compare(b.Overall, a.Overall) })
	return out
}

// continuity keeps the conversation's current agent (cur, "" for none)
// in the selection unless another agent is clearly better: for TOP_1 and
// CASCADE it answers (first) unless the chosen agent's confidence is
// ContinuityMargin above its own or that agent matched a skill with
// override_continuity by keyword; for TOP_K and ENSEMBLE it is among
// those asked when within the margin of the best. With nobody confident,
// it answers rather than the default; and the default agent (def) never
// takes the turn from it on confidence alone: the default answers what no
// specialist is sure of, and inside a conversation with one that is the
// specialist ("thanks, shorter please", which a team classifier fitted
// to the default's small talk reads as the default's with confidence);
// an @mention or a handoff moves the conversation. Reports whether the
// current agent answers first because of it.
func continuity(cur, def string, scores []routing.ExpertScore, sel *routing.Selection) bool {
	if cur == "" {
		return false
	}
	var mine routing.ExpertScore
	for _, s := range scores {
		if s.AgentSlug == cur {
			mine = s
			break
		}
	}
	if sel.Fallback {
		sel.Fallback, sel.Note, sel.Agents, sel.Confidence = false, "", []string{cur}, mine.Confidence
		return true
	}
	if slices.Contains(sel.Agents, cur) && sel.Agents[0] == cur {
		return false
	}
	var best routing.ExpertScore
	for _, s := range scores {
		if s.AgentSlug == sel.Agents[0] {
			best = s
			break
		}
	}
	// Against a margin moved by 1e-9 a difference is never equal: `>` and
	// `>=` decide alike (a mutation testing survivor that changes nothing).
	clearlyBetter := (best.Confidence-mine.Confidence >= ContinuityMargin-1e-9 && best.AgentSlug != def) || (best.Explicit && best.Override)
	switch sel.Strategy {
	case routing.TopK, routing.Ensemble:
		if clearlyBetter || slices.Contains(sel.Agents, cur) {
			return false
		}
		limit := routing.MaxEnsemble
		if sel.Strategy == routing.TopK {
			limit = len(sel.Agents)
		}
		if len(sel.Agents) >= limit {
			sel.Agents = sel.Agents[:limit-1]
		}
		if sel.Agents[0] == def {
			// The default first would take the conversation (its first
			// answerer becomes the current agent): the specialist answers
			// first, the default beside it.
			sel.Agents = append([]string{cur}, sel.Agents...)
			return true
		}
		sel.Agents = append(slices.Clone(sel.Agents), cur)
		return false
	default: // TOP_1, CASCADE
		if clearlyBetter {
			return false
		}
		others := slices.DeleteFunc(slices.Clone(sel.Agents), func(s string) bool { return s == cur })
		if sel.Strategy == routing.Cascade {
			sel.Agents = append([]string{cur}, others...)[:len(sel.Agents)]
		} else {
			sel.Agents = []string{cur}
		}
		sel.Confidence = mine.Confidence
		return true
	}
}

// ownModel names the model that will answer when the first selected agent
// has a model of its own (agents.Model.ID overrides the tier's, as the
// prompt's request does): the decision logs that model and why.
func ownModel(d *Decision, active []agents.Agent) {
	if len(d.SelectedAgents) == 0 {
		return
	}
	for _, a := range active {
		if a.Slug == d.SelectedAgents[0] && a.Model != nil && a.Model.ID != "" && a.Model.ID != d.Model {
			d.TierOverrideReason = fmt.Sprintf("%s answers with its own model %s (the %s tier chose %s)", a.Slug, a.Model.ID, d.Tier, d.Model)
			d.Model = a.Model.ID
			return
		}
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
