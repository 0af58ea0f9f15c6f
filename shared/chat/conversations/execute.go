package conversations

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/prompts"
)

// MaxReplyTokens bounds one agent reply.
const MaxReplyTokens = 1000

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
	budget := s.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	if dl, ok := ctx.Deadline(); ok {
		// The commit and its retries need the end of the deadline.
		budget = min(budget, time.Until(dl)-2*s.commitReserve())
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	r := &run{s: s, p: p, byslug: byslug, history: history, user: user, out: outcome{latency: map[string]float64{}}, returning: returning}
	d := p.Decision()
	selected := d.SelectedAgents
	multi := !d.Fallback && (d.Strategy == routing.TopK || d.Strategy == routing.Ensemble) && len(selected) > 1
	r.drafts = multi
	if !multi && s.Tools != nil {
		// One agent answers at a time: it may use its tools (tools.go).
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

// answerOf asks one agent; one that is no longer active fails.
func (r *run) answerOf(ctx context.Context, slug string) answer {
	a, ok := r.byslug[slug]
	if !ok {
		return answer{attempt: cascade.Attempt{Agent: slug, Outcome: cascade.OutcomeFailed, Error: "agent is not active"}}
	}
	if ans, ok := r.s.kindAnswer(ctx, r, a); ok {
		// Its skill requests a report or starts a session (kinds.go).
		return ans
	}
	return r.s.ask(ctx, a, r, r.history, r.user)
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
	syn := s.Synth
	if syn != nil {
		turn := *syn
		turn.Metadata = map[string]string{models.MetadataTeamID: r.p.Decision().TeamID, models.MetadataConversationID: r.p.conv.ID}
		syn = &turn
	}
	agg, usage, err := routing.Aggregate(ctx, syn, r.user.Content, r.replies(ok))
	if err != nil {
		s.log().WarnContext(ctx, "ensemble synthesis failed; using the deterministic merge", "error", err.Error())
	}
	// No tokens (>= 0) would cost 0: the same.
	if usage.InputTokens+usage.OutputTokens > 0 && s.Synth != nil {
		r.out.synthCost = models.Cost(s.Synth.ModelID, usage.InputTokens, usage.OutputTokens)
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
		m.ModelID = s.Synth.ModelID
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

// ask has one agent answer the user's message with the conversation so
// far. A model error, a timeout and a refusal are failures a CASCADE moves
// past.
//
// Kept whole: one model call with its deadline, refusal, usage and cost in the
// order they happen, all on the one attempt's state.
func (s *Service) ask(ctx context.Context, a agents.Agent, r *run, history []Message, user Message) answer {
	p := r.p
	d := p.Decision()
	// The agent's context: its identity, the handoff summary if the
	// conversation was handed to it, its team and unread messages, the
	// user profile, the team's shared memories and its own private ones.
	system := prompts.System(a, prompts.Chat{})
	if hs := handoffSummary(p.conv, a.Slug); hs != "" {
		system += "Handoff: " + hs + "\n"
	}
	var tools []models.Tool
	if r.budget != nil {
		tools = s.Tools.Specs(a)
	}
	team, seen := s.teamBlock(ctx, r, a, tools)
	system += team
	var memIDs []string
	if s.Memories != nil {
		mc, err := s.Memories.ForAgent(ctx, d.TeamID, a.Slug)
		if err != nil {
			s.log().WarnContext(ctx, "memory context unavailable; answering without it", "agent", a.Slug, "error", err.Error())
		} else {
			system += prompts.Memories(mc)
			memIDs = mc.IDs()
		}
	}
	if sk, ok := p.chosenSkill(a); ok {
		// The skill that chose the agent: its prompt and context last,
		// nearest the conversation.
		system += s.skillPrompt(ctx, r, a, sk)
	}
	req := prompts.Request(d.TeamID, a, system, MaxReplyTokens, d.Model)
	req.Metadata[models.MetadataConversationID] = p.conv.ID
	for _, m := range history {
		switch m.Role {
		case AuthorUser:
			req.Messages = append(req.Messages, models.Message{Role: "user", Content: m.Content})
		case AuthorAssistant:
			content := m.Content
			if m.Agent != a.Slug {
				// Another agent's reply: the model sees who said it.
				content = "[" + m.Agent + "] " + content
			}
			req.Messages = append(req.Messages, models.Message{Role: "assistant", Content: content})
		}
	}
	req.Messages = append(req.Messages, models.Message{Role: "user", Content: user.Content})
	// The id is made before the model is asked: a watcher's deltas name
	// the message they become.
	msgID := ids.New("msg")
	req.OnDelta = deltaSink(p.watch, msgID, a.Slug, r.drafts)
	var lp *loop
	if r.budget != nil {
		// No tool offered (>= 0 would loop anyway): the loop makes the one
		// call Converse makes and answers its reply.
		if req.Tools = tools; len(req.Tools) > 0 {
			lp = &loop{s: s, a: a, budget: r.budget, byslug: r.byslug, conv: p.conv, returning: r.returning, watch: p.watch, msgID: msgID,
				caller: ToolCaller{TeamID: d.TeamID, ConversationID: p.conv.ID, Agent: a.Slug, Skills: a.Skills, WaitUntil: deadline(ctx).Add(-toolAnswerReserve), Offered: req.Tools}}
		}
	}
	start := time.Now()
	var resp models.Response
	var err error
	if lp != nil {
		resp, err = lp.converse(ctx, req)
	} else {
		resp, err = s.Model.Converse(ctx, req)
	}
	lat := time.Since(start).Milliseconds()
	att := cascade.Attempt{Agent: a.Slug, LatencyMS: lat}
	if err == nil {
		att.CostUSD = models.Cost(resp.ModelID, resp.InputTokens, resp.OutputTokens)
	}
	switch {
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil):
		att.Outcome, att.Error = cascade.OutcomeTimedOut, "no answer before the deadline"
	case err != nil:
		att.Outcome, att.Error = cascade.OutcomeFailed, err.Error()
	case resp.Refused || strings.TrimSpace(resp.Text) == "":
		att.Outcome, att.Error = cascade.OutcomeRefused, "the model declined to answer"
	default:
		att.Outcome = cascade.OutcomeAnswered
	}
	ans := answer{agent: a, attempt: att, resp: resp, seen: seen}
	if errors.Is(err, models.ErrBudgetExhausted) {
		ans.refused = err
	}
	if lp != nil {
		// A warning only: its condition's mutants change a log line.
		if len(lp.pending) > 0 && att.Outcome != cascade.OutcomeAnswered {
			// The work goes on; its result will be posted in the
			// conversation even though this agent gave no reply.
			s.log().WarnContext(ctx, "an agent that started work gave no reply", "agent", a.Slug, "pending", len(lp.pending))
		}
		ans.handoff, ans.delivered = lp.handoff, lp.delivered
	}
	if att.Outcome == cascade.OutcomeAnswered {
		ans.msg = Message{
			ID: msgID, ConversationID: user.ConversationID, Role: AuthorAssistant, Agent: a.Slug, Content: resp.Text,
			CreatedAt: time.Now().UTC(), ReplyTo: user.ID, DecisionID: d.ID, Strategy: string(d.Strategy), ModelID: resp.ModelID,
			InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens, CostUSD: att.CostUSD, LatencyMS: lat, Query: clip.Clip(user.Content, 500),
			ContextMemories: memIDs,
		}
		if lp != nil {
			ans.msg.ToolCalls, ans.msg.Pending, ans.msg.Stopped = lp.uses, lp.pending, lp.stopped
			ans.msg.Content = pendingNote(ans.msg.Content, lp.pending)
		}
	}
	return ans
}
