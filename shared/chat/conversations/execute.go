package conversations

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// MaxReplyTokens bounds one agent reply.
const MaxReplyTokens = 1000

// plan is a routed turn on its way to the agents: the routing plan and the
// conversation the agents answer in.
type plan struct {
	cascade.Plan
	conv Conversation
	// userKey is PostInput.UserKey.
	userKey string
	// watch is PostInput.Watch.
	watch Watcher
}

// outcome is what executing a plan produced.
type outcome struct {
	reply       *Message
	handoff     *handover // the reply's agent handed the conversation over
	attempts    []cascade.Attempt
	answeredBy  []string // the reply's agent first, then other contributors
	aggregation []routing.Contribution
	latency     map[string]float64
	synthCost   float64
	// carried is, per attempt (in attempts' order), the work whose result
	// only that attempt's reply carries (ToolResult.Delivered).
	carried [][]WorkRef
	// seen is, per attempt, the inbox messages its context showed
	// (marked read when the turn commits with its reply kept: seenBy).
	seen [][]string
	// refused is the team budget's first refusal of a model call: a turn
	// no agent answered because of it answers it (422), not EUPSTREAM.
	refused error
}

// undelivered is the work whose result no stored message will carry: that
// of every attempt whose reply was not kept and, when the turn was not
// stored, that of the kept one too.
func (o outcome) undelivered(stored bool) []WorkRef {
	var out []WorkRef
	for i, refs := range o.carried {
		if !stored || !o.attempts[i].Kept {
			out = append(out, refs...)
		}
	}
	return out
}

// carriedByReply is the work whose result the kept reply carries, each
// marked with the reply's id (CarriedResult).
func (o outcome) carriedByReply() []CarriedResult {
	if o.reply == nil {
		return nil
	}
	var out []CarriedResult
	for i, refs := range o.carried {
		if o.attempts[i].Kept {
			for _, w := range refs {
				out = append(out, CarriedResult{Marker: w.ID, MessageID: o.reply.ID})
			}
		}
	}
	return out
}

// result is the outcome as the routing decision records it.
func (o outcome) result() cascade.Result {
	return cascade.Result{Attempts: o.attempts, AnsweredBy: o.answeredBy, Aggregation: o.aggregation, SynthesisCostUSD: o.synthCost, Answered: o.reply != nil}
}

// answer is one agent's attempt.
type answer struct {
	agent   agents.Agent
	attempt cascade.Attempt
	resp    models.Response
	msg     Message
	// handoff is the agent's handoff_to, committed with the turn when
	// this answer is the reply.
	handoff *handover
	// delivered: work whose result only this answer carries.
	delivered []WorkRef
	// seen: the inbox messages the agent's context showed.
	seen []string
	// refused is the team budget's refusal of the agent's model call
	// (budget.RefusedError), if it was refused.
	refused error
}

// execute runs the selected agents by strategy: one agent (direct,
// mention, router, TOP_1, fallback); CASCADE in score order until one
// answers; TOP_K in parallel keeping the most relevant reply; ENSEMBLE in
// parallel, aggregated with attribution.
func (s *Service) execute(ctx context.Context, p plan, byslug map[string]agents.Agent, history []Message, user Message, returning bool) outcome {
	budget := s.budget
	if dl, ok := ctx.Deadline(); ok {
		// The commit and its retries need the end of the deadline.
		budget = min(budget, time.Until(dl)-2*s.commitReserve)
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	r := &run{s: s, p: p, byslug: byslug, history: history, user: user, out: outcome{latency: map[string]float64{}}, returning: returning}
	d := p.Decision()
	selected := d.SelectedAgents
	multi := !d.Fallback && (d.Strategy == routing.TopK || d.Strategy == routing.Ensemble) && len(selected) > 1
	r.drafts = multi
	if !multi && s.tools != nil {
		// One agent answers at a time: it may use its tools (tools.go),
		// when the service was given some (Config.Tools).
		r.budget = newTurnBudget()
	}
	switch {
	case d.Strategy == routing.Cascade && !d.Fallback:
		r.cascade(ctx, selected)
	case multi:
		ok := r.parallel(ctx, selected)
		switch {
		case len(ok) == 0:
		case d.Strategy == routing.TopK:
			r.keepBest(ok)
		default:
			r.ensemble(ctx, ok)
		}
	default:
		if ans := r.try(ctx, selected[0]); ans.attempt.Outcome == cascade.OutcomeAnswered {
			r.keep(ans, 0)
		}
	}
	return r.out
}

// run is one execution: the agents asked so far and the reply kept.
type run struct {
	s       *Service
	p       plan
	byslug  map[string]agents.Agent
	history []Message
	user    Message
	out     outcome
	// budget is the turn's tool budget; nil offers no tools.
	budget    *turnBudget
	returning bool
	// drafts: the agents answer at once and the turn keeps one or a
	// synthesis (a watcher's deltas are drafts).
	drafts bool
}

// answerOf asks one agent; one that is no longer active fails. The
// agent's answer is an invoke_agent span (the GenAI conventions): its
// model calls and tools are under it.
func (r *run) answerOf(ctx context.Context, slug string) (ans answer) {
	ctx, span := tracing.Start(ctx, "invoke_agent "+slug, trace.SpanKindInternal,
		attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", slug),
		attribute.String("gen_ai.agent.id", r.p.Decision().TeamID+"/"+slug), attribute.String("gen_ai.conversation.id", r.p.conv.ID))
	defer func() {
		span.SetAttributes(attribute.String("conclave.outcome", string(ans.attempt.Outcome)))
		if ans.attempt.Error != "" {
			// The attempt's error text only with content (tracing.Fail).
			msg := string(ans.attempt.Outcome)
			if tracing.Content(ctx) {
				msg = ans.attempt.Error
			}
			span.SetStatus(codes.Error, msg)
		}
		span.End()
	}()
	a, ok := r.byslug[slug]
	if !ok {
		return answer{attempt: cascade.Attempt{Agent: slug, Outcome: cascade.OutcomeFailed, Error: "agent is not active"}}
	}
	if ans, ok := r.s.kindAnswer(ctx, r, a); ok {
		// Its skill requests a report or starts a session (kinds.go).
		return ans
	}
	return r.s.ask(ctx, a, r)
}

// try asks one agent and records the attempt.
func (r *run) try(ctx context.Context, slug string) answer {
	ans := r.answerOf(ctx, slug)
	r.record(ans)
	return ans
}

func (r *run) record(ans answer) {
	r.out.attempts = append(r.out.attempts, ans.attempt)
	r.out.carried = append(r.out.carried, ans.delivered)
	r.out.seen = append(r.out.seen, ans.seen)
	if ans.refused != nil && r.out.refused == nil {
		r.out.refused = ans.refused
	}
	if ans.attempt.Outcome == cascade.OutcomeAnswered {
		r.out.latency[ans.agent.Slug] = float64(ans.attempt.LatencyMS)
	}
}

// keep makes ans (attempt i) the turn's reply.
func (r *run) keep(ans answer, i int) {
	r.out.attempts[i].Kept = true
	m := ans.msg
	r.out.reply = &m
	r.out.answeredBy = []string{ans.agent.Slug}
	r.out.handoff = ans.handoff
}

// cascade asks the agents in score order until one answers.
func (r *run) cascade(ctx context.Context, selected []string) {
	for i, slug := range selected {
		// Each remaining candidate gets an equal share of what is left,
		// so one hanging model cannot use up the whole turn.
		left := time.Until(deadline(ctx))
		actx, acancel := context.WithTimeout(ctx, left/time.Duration(len(selected)-i))
		ans := r.try(actx, slug)
		acancel()
		if ans.attempt.Outcome == cascade.OutcomeAnswered {
			r.keep(ans, len(r.out.attempts)-1)
			return
		}
	}
}

// parallel asks every selected agent at once and returns the answers,
// recording the attempts in the order selected.
func (r *run) parallel(ctx context.Context, selected []string) []answer {
	answers := make([]answer, len(selected))
	var wg sync.WaitGroup
	for i, slug := range selected {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = r.answerOf(ctx, slug)
		}()
	}
	wg.Wait()
	var ok []answer
	for _, a := range answers {
		r.record(a)
		if a.attempt.Outcome == cascade.OutcomeAnswered {
			ok = append(ok, a)
		}
	}
	return ok
}

func (r *run) replies(ok []answer) []routing.ExpertReply {
	replies := make([]routing.ExpertReply, len(ok))
	for i, a := range ok {
		replies[i] = routing.ExpertReply{Agent: a.agent.Slug, Name: a.agent.Name, Label: r.p.Labels[a.agent.Slug], Text: a.msg.Content, Score: r.p.Scores[a.agent.Slug]}
	}
	return replies
}

// keepBest is TOP_K: the most relevant of the replies is kept.
func (r *run) keepBest(ok []answer) {
	best, _ := routing.Best(r.user.Content, r.replies(ok))
	for i, a := range r.out.attempts {
		if a.Agent == best.Agent && a.Outcome == cascade.OutcomeAnswered {
			for _, o := range ok {
				if o.agent.Slug == best.Agent {
					r.keep(o, i)
				}
			}
		}
	}
}

// ensemble aggregates the replies into one, attributed to its most
// relevant contributor and listing every contributor.
func (r *run) ensemble(ctx context.Context, ok []answer) {
	s := r.s
	syn := s.synth
	if syn != nil {
		turn := *syn
		turn.Metadata = map[string]string{models.MetadataTeamID: r.p.Decision().TeamID, models.MetadataConversationID: r.p.conv.ID}
		syn = &turn
	}
	agg, usage, err := routing.Aggregate(ctx, syn, r.user.Content, r.replies(ok))
	if err != nil {
		s.log.WarnContext(ctx, "ensemble synthesis failed; using the deterministic merge", "error", err.Error())
	}
	// No tokens (>= 0) would cost 0: the same.
	if usage.InputTokens+usage.OutputTokens > 0 && s.synth != nil {
		r.out.synthCost = models.Cost(s.synth.ModelID, usage.InputTokens, usage.OutputTokens)
	}
	lead := ok[0]
	for _, a := range ok {
		if a.agent.Slug == agg.Contributions[0].Agent {
			lead = a
		}
	}
	m := lead.msg
	// The synthesis is a message of its own: the lead's answer was
	// watched as a draft under the lead's id.
	m.ID = ids.New("msg")
	m.Content, m.Contributors, m.Strategy = agg.Text, nil, string(routing.Ensemble)
	m.InputTokens, m.OutputTokens, m.CostUSD = 0, 0, r.out.synthCost
	for _, c := range agg.Contributions {
		m.Contributors = append(m.Contributors, c.Agent)
	}
	for i := range r.out.attempts {
		if r.out.attempts[i].Outcome == cascade.OutcomeAnswered {
			r.out.attempts[i].Kept = true
		}
	}
	for _, a := range ok {
		m.InputTokens += a.msg.InputTokens
		m.OutputTokens += a.msg.OutputTokens
		m.CostUSD += a.msg.CostUSD
	}
	if agg.Method == "model" {
		m.ModelID = s.synth.ModelID
	}
	r.out.reply, r.out.answeredBy, r.out.aggregation = &m, m.Contributors, agg.Contributions
}

func deadline(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(DefaultBudget)
	}
	return d
}
