package conversations

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/ids"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/prompts"
	"github.com/conclave-ai/conclave/shared/routing"
)

// MaxReplyTokens bounds one agent reply.
const MaxReplyTokens = 1000

// outcome is what executing a plan produced.
type outcome struct {
	reply       *Message
	attempts    []Attempt
	answeredBy  []string // the reply's agent first, then other contributors
	aggregation []routing.Contribution
	latency     map[string]float64
	synthCost   float64
}

// answer is one agent's attempt.
type answer struct {
	agent   agents.Agent
	attempt Attempt
	resp    models.Response
	msg     Message
}

// execute runs the selected agents by strategy: one agent (direct,
// mention, router, TOP_1, fallback); CASCADE in score order until one
// answers; TOP_K in parallel keeping the most relevant reply; ENSEMBLE in
// parallel, aggregated with attribution.
func (s *Service) execute(ctx context.Context, p plan, byslug map[string]agents.Agent, history []Message, user Message) outcome {
	budget := s.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	d := p.decision
	selected := d.SelectedAgents
	out := outcome{latency: map[string]float64{}}
	ask := func(ctx context.Context, slug string) answer {
		a, ok := byslug[slug]
		if !ok {
			return answer{attempt: Attempt{Agent: slug, Outcome: OutcomeFailed, Error: "agent is not active"}}
		}
		return s.ask(ctx, a, p, history, user)
	}
	record := func(ans answer) {
		out.attempts = append(out.attempts, ans.attempt)
		if ans.attempt.Outcome == OutcomeAnswered {
			out.latency[ans.agent.Slug] = float64(ans.attempt.LatencyMS)
		}
	}
	keep := func(ans answer, i int) {
		out.attempts[i].Kept = true
		m := ans.msg
		out.reply = &m
		out.answeredBy = []string{ans.agent.Slug}
	}
	multi := !d.Fallback && (d.Strategy == routing.TopK || d.Strategy == routing.Ensemble) && len(selected) > 1
	switch {
	case d.Strategy == routing.Cascade && !d.Fallback:
		for i, slug := range selected {
			// Each remaining candidate gets an equal share of what is left,
			// so one hanging model cannot use up the whole turn.
			left := time.Until(deadline(ctx))
			actx, acancel := context.WithTimeout(ctx, left/time.Duration(len(selected)-i))
			ans := ask(actx, slug)
			acancel()
			record(ans)
			if ans.attempt.Outcome == OutcomeAnswered {
				keep(ans, len(out.attempts)-1)
				break
			}
		}
	case multi:
		answers := make([]answer, len(selected))
		var wg sync.WaitGroup
		for i, slug := range selected {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = ask(ctx, slug)
			}()
		}
		wg.Wait()
		var ok []answer
		for _, a := range answers {
			record(a)
			if a.attempt.Outcome == OutcomeAnswered {
				ok = append(ok, a)
			}
		}
		if len(ok) == 0 {
			break
		}
		replies := make([]routing.ExpertReply, len(ok))
		for i, a := range ok {
			replies[i] = routing.ExpertReply{Agent: a.agent.Slug, Name: a.agent.Name, Label: p.labels[a.agent.Slug], Text: a.msg.Content, Score: p.scores[a.agent.Slug]}
		}
		if d.Strategy == routing.TopK {
			best, _ := routing.Best(user.Content, replies)
			for i, a := range out.attempts {
				if a.Agent == best.Agent && a.Outcome == OutcomeAnswered {
					for _, o := range ok {
						if o.agent.Slug == best.Agent {
							keep(o, i)
						}
					}
				}
			}
			break
		}
		agg, usage, err := routing.Aggregate(ctx, s.Synth, user.Content, replies)
		if err != nil {
			s.log().Warn("ensemble synthesis failed; using the deterministic merge", "error", err.Error())
		}
		if usage.InputTokens+usage.OutputTokens > 0 && s.Synth != nil {
			out.synthCost = models.Cost(s.Synth.ModelID, usage.InputTokens, usage.OutputTokens)
		}
		// The aggregated reply is attributed to its most relevant
		// contributor and lists every contributor.
		lead := ok[0]
		for _, a := range ok {
			if a.agent.Slug == agg.Contributions[0].Agent {
				lead = a
			}
		}
		m := lead.msg
		m.Content, m.Contributors, m.Strategy = agg.Text, nil, string(routing.Ensemble)
		m.InputTokens, m.OutputTokens, m.CostUSD = 0, 0, out.synthCost
		for _, c := range agg.Contributions {
			m.Contributors = append(m.Contributors, c.Agent)
		}
		for i := range out.attempts {
			if out.attempts[i].Outcome == OutcomeAnswered {
				out.attempts[i].Kept = true
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
		out.reply, out.answeredBy, out.aggregation = &m, m.Contributors, agg.Contributions
	default:
		ans := ask(ctx, selected[0])
		record(ans)
		if ans.attempt.Outcome == OutcomeAnswered {
			keep(ans, 0)
		}
	}
	return out
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
func (s *Service) ask(ctx context.Context, a agents.Agent, p plan, history []Message, user Message) answer {
	d := p.decision
	// The agent's context: its identity, the handoff summary if the
	// conversation was handed to it, the user profile, the team's shared
	// memories and its own private ones.
	system := prompts.System(a, prompts.Chat{})
	if hs := handoffSummary(p.conv, a.Slug); hs != "" {
		system += "Handoff: " + hs + "\n"
	}
	var memIDs []string
	if s.Memories != nil {
		mc, err := s.Memories.ForAgent(ctx, d.TeamID, a.Slug)
		if err != nil {
			s.log().Warn("memory context unavailable; answering without it", "agent", a.Slug, "error", err.Error())
		} else {
			system += memoryPrompt(mc)
			memIDs = mc.IDs()
		}
	}
	req := prompts.Request(d.TeamID, a, system, MaxReplyTokens, d.Model)
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
	start := time.Now()
	resp, err := s.Model.Converse(ctx, req)
	lat := time.Since(start).Milliseconds()
	att := Attempt{Agent: a.Slug, LatencyMS: lat}
	if err == nil {
		att.CostUSD = models.Cost(resp.ModelID, resp.InputTokens, resp.OutputTokens)
	}
	switch {
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil):
		att.Outcome, att.Error = OutcomeTimedOut, "no answer before the deadline"
	case err != nil:
		att.Outcome, att.Error = OutcomeFailed, err.Error()
	case resp.Refused || strings.TrimSpace(resp.Text) == "":
		att.Outcome, att.Error = OutcomeRefused, "the model declined to answer"
	default:
		att.Outcome = OutcomeAnswered
	}
	ans := answer{agent: a, attempt: att, resp: resp}
	if att.Outcome == OutcomeAnswered {
		ans.msg = Message{
			ID: ids.New("msg"), ConversationID: user.ConversationID, Role: AuthorAssistant, Agent: a.Slug, Content: resp.Text,
			CreatedAt: time.Now().UTC(), ReplyTo: user.ID, DecisionID: d.ID, Strategy: string(d.Strategy), ModelID: resp.ModelID,
			InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens, CostUSD: att.CostUSD, LatencyMS: lat, Query: clip(user.Content, 500),
			ContextMemories: memIDs,
		}
	}
	return ans
}

// systemPrompt is the agent's chat identity. It stays as a name for
// handoff.go's agent context, which another change is reworking; inline it
// there once that lands.
func systemPrompt(a agents.Agent) string { return prompts.System(a, prompts.Chat{}) }
