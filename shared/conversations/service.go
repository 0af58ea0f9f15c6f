package conversations

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/expertgate"
	"github.com/conclave-ai/conclave/shared/ids"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/paging"
	"github.com/conclave-ai/conclave/shared/routing"
)

// Limits of the chat API.
const (
	MaxContent = 8000
	MaxTitle   = 200
	MaxComment = 1000
	// HistoryLimit is how many earlier messages an agent sees: the whole
	// of a normal conversation, bounded so a prompt stays within budget.
	HistoryLimit = 50
	// DefaultBudget is the time a turn may spend on model calls: below API
	// Gateway's 30 s with room to commit (the function times out at 29 s).
	DefaultBudget = 24 * time.Second
)

// AgentDirectory is what chat needs from the agents.
type AgentDirectory interface {
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
	ActiveAgents(ctx context.Context, teamID string) ([]agents.Agent, error)
	DefaultAgent(ctx context.Context, teamID string) (string, error)
}

// Service implements conversations and chat.
type Service struct {
	Store  Store
	Agents AgentDirectory
	// Gate is the ExpertGate (the expert-gate function through Lambda
	// Invoke); used when Flags.ExpertGate is on.
	Gate  expertgate.Gate
	Model models.Model
	Flags Flags
	Tiers routing.TierModels
	// Synth synthesizes ENSEMBLE replies with the tier-1 model; nil merges
	// deterministically.
	Synth *routing.Synthesizer
	// Memories gives each agent its memory context (nil: none); Bus
	// publishes handoffs (nil: not published).
	Memories Memories
	Bus      Publisher
	Budget   time.Duration
	Now      func() time.Time
	Log      *slog.Logger
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// CreateInput is the body of POST /v1/conversations.
type CreateInput struct {
	Title string `json:"title"`
	Agent string `json:"agent"`
}

// Create starts a conversation, optionally with a primary agent (which must
// be active). Returns EINVALID, ENOTFOUND, ECONFLICT.
func (s *Service) Create(ctx context.Context, teamID string, in CreateInput) (Conversation, error) {
	in.Title = strings.TrimSpace(in.Title)
	if utf8.RuneCountInString(in.Title) > MaxTitle {
		return Conversation{}, apperr.Invalid("title", "title must be at most %d characters", MaxTitle)
	}
	now := s.now()
	c := Conversation{ID: ids.New("conv"), TeamID: teamID, Title: in.Title, Status: StatusOpen, Version: 1, CreatedAt: now, UpdatedAt: now}
	var primary *Participant
	if in.Agent != "" {
		a, err := s.activeAgent(ctx, teamID, in.Agent, "agent")
		if err != nil {
			return Conversation{}, err
		}
		c.PrimaryAgent, c.CurrentAgent = a.Slug, a.Slug
		primary = &Participant{Agent: a.Slug, Role: RolePrimary, JoinedAt: now}
		c.Participants = []Participant{*primary}
	}
	if err := s.Store.CreateConversation(ctx, c, primary); err != nil {
		return Conversation{}, err
	}
	return c, nil
}

func (s *Service) activeAgent(ctx context.Context, teamID, slug, field string) (agents.Agent, error) {
	if !agents.ValidSlug(slug) {
		return agents.Agent{}, apperr.NotFound("agent", slug)
	}
	a, err := s.Agents.GetAgent(ctx, teamID, slug)
	if err != nil {
		return agents.Agent{}, err
	}
	if a.Status != agents.StatusActive {
		return agents.Agent{}, apperr.New(apperr.ECONFLICT, "agent %q is %s", slug, a.Status).WithReason("AgentUnavailable").WithDetail("status", a.Status)
	}
	return a, nil
}

// Get returns a conversation with its participants. Returns ENOTFOUND.
func (s *Service) Get(ctx context.Context, teamID, id string) (Conversation, error) {
	c, err := s.Store.GetConversation(ctx, teamID, id)
	if err != nil {
		return Conversation{}, err
	}
	if c.Participants, err = s.Store.ListParticipants(ctx, teamID, id); err != nil {
		return Conversation{}, err
	}
	return c, nil
}

// List returns a page of the team's conversations, newest first.
func (s *Service) List(ctx context.Context, teamID string, p paging.Page) ([]Conversation, string, error) {
	p, err := p.Normalize()
	if err != nil {
		return nil, "", err
	}
	return s.Store.ListConversations(ctx, teamID, p)
}

// Messages returns a page of a conversation's messages, oldest first.
// Returns ENOTFOUND.
func (s *Service) Messages(ctx context.Context, teamID, id string, p paging.Page) ([]Message, string, error) {
	p, err := p.Normalize()
	if err != nil {
		return nil, "", err
	}
	if _, err := s.Store.GetConversation(ctx, teamID, id); err != nil {
		return nil, "", err
	}
	return s.Store.ListMessages(ctx, teamID, id, p)
}

// Close ends a conversation; its agent no longer counts it as active.
// Returns ENOTFOUND, ECONFLICT (already closed).
func (s *Service) Close(ctx context.Context, teamID, id string) (Conversation, error) {
	c, err := s.Store.GetConversation(ctx, teamID, id)
	if err != nil {
		return Conversation{}, err
	}
	if c.Status == StatusClosed {
		return Conversation{}, apperr.New(apperr.ECONFLICT, "conversation is already closed").WithReason("ConversationClosed")
	}
	now := s.now()
	if err := s.Store.CloseConversation(ctx, teamID, c, now); err != nil {
		return Conversation{}, err
	}
	c.Status, c.UpdatedAt, c.Version = StatusClosed, now, c.Version+1
	return c, nil
}

// RateInput is the body of the feedback endpoint.
type RateInput struct {
	Rating  int    `json:"rating"`
	Comment string `json:"comment"`
}

// Rate records a 1–5 rating of an agent's reply (a later rating replaces an
// earlier one). Returns EINVALID, ENOTFOUND.
func (s *Service) Rate(ctx context.Context, teamID, convID, msgID string, in RateInput) (Feedback, error) {
	if in.Rating < 1 || in.Rating > 5 {
		return Feedback{}, apperr.Invalid("rating", "rating must be an integer from 1 to 5")
	}
	if utf8.RuneCountInString(in.Comment) > MaxComment {
		return Feedback{}, apperr.Invalid("comment", "comment must be at most %d characters", MaxComment)
	}
	if _, err := s.Store.GetConversation(ctx, teamID, convID); err != nil {
		return Feedback{}, err
	}
	m, err := s.Store.GetMessage(ctx, teamID, convID, msgID)
	if err != nil {
		return Feedback{}, err
	}
	if m.Role != AuthorAssistant {
		return Feedback{}, apperr.Invalid("message_id", "only agent replies can be rated; this is a %s message", m.Role)
	}
	f := Feedback{ConversationID: convID, MessageID: msgID, Rating: in.Rating, Comment: strings.TrimSpace(in.Comment), Agents: m.Contributors, Query: m.Query, RatedAt: s.now()}
	if len(f.Agents) == 0 {
		f.Agents = []string{m.Agent}
	}
	if err := s.Store.RateMessage(ctx, teamID, f); err != nil {
		return Feedback{}, err
	}
	return f, nil
}

// PostInput is the body of POST /v1/conversations/{id}/messages.
type PostInput struct {
	Content   string   `json:"content"`
	Strategy  string   `json:"strategy"`
	K         int      `json:"k"`
	Threshold *float64 `json:"confidence_threshold"`
}

// PostResult is the turn: the user's message, the replies (and any system
// note), and the routing decision.
type PostResult struct {
	UserMessage Message   `json:"user_message"`
	Replies     []Message `json:"replies"`
	Routing     Decision  `json:"routing"`
}

type options struct {
	strategy  routing.Strategy
	k         int
	threshold float64
}

func (in PostInput) validate() (options, error) {
	o := options{threshold: routing.DefaultThreshold}
	n := utf8.RuneCountInString(strings.TrimSpace(in.Content))
	if n == 0 || n > MaxContent {
		return o, apperr.Invalid("content", "content must be 1 to %d characters", MaxContent)
	}
	var err error
	if o.strategy, err = routing.ParseStrategy(in.Strategy); err != nil {
		return o, err
	}
	if in.K < 0 || in.K > routing.MaxK {
		return o, apperr.Invalid("k", "k must be from 1 to %d", routing.MaxK)
	}
	o.k = in.K
	if in.Threshold != nil {
		if *in.Threshold < 0 || *in.Threshold > 1 {
			return o, apperr.Invalid("confidence_threshold", "confidence_threshold must be from 0 to 1")
		}
		o.threshold = *in.Threshold
	}
	return o, nil
}

// Post runs one turn: the user's message is routed, the selected agents
// answer, and the turn is committed with its decision. When every agent
// asked fails, the turn (with a system note) and the decision are still
// recorded and the error is EUPSTREAM. Returns EINVALID, ENOTFOUND,
// ECONFLICT, EUPSTREAM.
func (s *Service) Post(ctx context.Context, teamID, convID string, in PostInput) (PostResult, error) {
	opts, err := in.validate()
	if err != nil {
		return PostResult{}, err
	}
	start := time.Now()
	conv, err := s.Store.GetConversation(ctx, teamID, convID)
	if err != nil {
		return PostResult{}, err
	}
	if conv.Status != StatusOpen {
		return PostResult{}, apperr.New(apperr.ECONFLICT, "conversation is closed").WithReason("ConversationClosed")
	}
	active, err := s.Agents.ActiveAgents(ctx, teamID)
	if err != nil {
		return PostResult{}, err
	}
	def, err := s.Agents.DefaultAgent(ctx, teamID)
	if err != nil {
		return PostResult{}, err
	}
	history, err := s.Store.RecentMessages(ctx, teamID, convID, HistoryLimit)
	if err != nil {
		return PostResult{}, err
	}
	now := s.now()
	user := Message{ID: ids.New("msg"), ConversationID: convID, Role: AuthorUser, Content: strings.TrimSpace(in.Content), CreatedAt: now}
	plan := s.route(ctx, teamID, conv, user.Content, active, def, opts)
	plan.decision.ID, plan.decision.TeamID, plan.decision.ConversationID, plan.decision.MessageID = ids.New("rdec"), teamID, convID, user.ID
	plan.decision.Query, plan.decision.CreatedAt, plan.decision.Flags = clip(user.Content, 500), now, s.Flags
	plan.decision.RouterLatencyMS = ms(time.Since(start))
	if len(plan.decision.SelectedAgents) == 0 || plan.decision.SelectedAgents[0] == "" {
		return PostResult{}, apperr.New(apperr.ECONFLICT, "the team has no active agent to answer").WithReason("AgentUnavailable")
	}
	user.DecisionID = plan.decision.ID
	// "@kyra" or "go back to Kyra" naming the agent before the last handoff
	// is a return: recorded as one, in the same transaction as the turn.
	var ret *Handoff
	if m := plan.decision.SelectedAgents[0]; plan.decision.Reason == routing.ReasonMention && m == conv.PreviousAgent && m != conv.CurrentAgent && conv.CurrentAgent != "" {
		ret = &Handoff{ID: ids.New("hoff"), ConversationID: convID, From: conv.CurrentAgent, To: m, Kind: KindReturn, Reason: "the user asked to go back to " + m, CreatedAt: now}
		if conv.LastHandoff != nil {
			ret.ContextSummary = conv.LastHandoff.ContextSummary
		}
	}

	// The note is shown before the reply, so its id (which orders the
	// conversation) is made before the agents answer.
	noteID := ""
	if plan.note != "" {
		noteID = ids.New("msg")
	}
	byslug := map[string]agents.Agent{}
	for _, a := range active {
		byslug[a.Slug] = a
	}
	out := s.execute(ctx, plan, byslug, history, user)
	d := &plan.decision
	d.Attempts, d.AnsweredBy, d.Aggregation = out.attempts, out.answeredBy, out.aggregation
	for _, a := range out.attempts {
		d.ActualCost += a.CostUSD
	}
	d.ActualCost += out.synthCost
	msgs := []Message{user}
	if plan.note != "" {
		msgs = append(msgs, Message{ID: noteID, ConversationID: convID, Role: AuthorSystem, Content: plan.note, CreatedAt: now, DecisionID: d.ID, ReplyTo: user.ID})
	}
	if out.reply != nil {
		d.Outcome = OutcomeAnswered
		msgs = append(msgs, *out.reply)
	} else {
		d.Outcome = OutcomeFailed
		msgs = append(msgs, Message{ID: ids.New("msg"), ConversationID: convID, Role: AuthorSystem, Content: failureNote(out.attempts), CreatedAt: s.now(), DecisionID: d.ID, ReplyTo: user.ID})
	}
	if ret != nil && (out.reply == nil || out.answeredBy[0] != ret.To) {
		ret = nil // the agent asked for did not answer: nothing returned
	}
	if err := s.commit(ctx, teamID, conv, msgs, out, *d, ret); err != nil {
		return PostResult{}, err
	}
	if ret != nil {
		s.publishHandoff(ctx, teamID, *ret)
	}
	for _, slug := range out.answeredBy {
		if lat, ok := out.latency[slug]; ok {
			prev := plan.loads[slug].LatencyMS
			avg := lat
			if prev > 0 {
				avg = 0.7*prev + 0.3*lat
			}
			if err := s.Store.SetLatency(ctx, teamID, slug, avg); err != nil {
				s.log().Warn("recording agent latency failed", "agent", slug, "error", err.Error())
			}
		}
	}
	res := PostResult{UserMessage: user, Replies: msgs[1:], Routing: *d}
	if out.reply == nil {
		return res, apperr.New(apperr.EUPSTREAM, "no agent could answer: %s", failureNote(out.attempts)).
			WithReason("AllAgentsFailed").WithDetail("decision_id", d.ID).WithDetail("attempts", out.attempts)
	}
	return res, nil
}

func failureNote(attempts []Attempt) string {
	parts := make([]string, len(attempts))
	for i, a := range attempts {
		parts[i] = a.Agent + " " + strings.ReplaceAll(a.Outcome, "_", " ")
	}
	return "No agent could answer this message (" + strings.Join(parts, ", ") + "). Please try again."
}

// maxCommitAttempts bounds the retries of a turn that lost the race for
// its conversation to concurrent turns.
const maxCommitAttempts = 12

// commit writes the turn, re-reading the conversation when a concurrent
// turn moved it on (the replies stand; only the conversation's state is
// recomputed).
func (s *Service) commit(ctx context.Context, teamID string, conv Conversation, msgs []Message, out outcome, d Decision, ret *Handoff) error {
	for attempt := 0; ; attempt++ {
		next := conv
		next.Version++
		next.MessageCount += len(msgs)
		next.UpdatedAt = s.now()
		var join []Participant
		if len(out.answeredBy) > 0 {
			next.CurrentAgent = out.answeredBy[0]
			if next.PrimaryAgent == "" {
				next.PrimaryAgent = next.CurrentAgent
			}
			for _, slug := range out.answeredBy {
				role := RoleInvited
				if slug == next.PrimaryAgent {
					role = RolePrimary
				}
				join = append(join, Participant{Agent: slug, Role: role, JoinedAt: next.UpdatedAt, SetRole: ret != nil && slug == ret.To})
			}
		}
		if ret != nil {
			next.PreviousAgent, next.LastHandoff, next.HandoffActive = ret.From, ret, true
			join = append(join, Participant{Agent: ret.From, Role: RoleHandoffSource, JoinedAt: next.UpdatedAt, SetRole: true})
		}
		err := s.Store.CommitTurn(ctx, teamID, Turn{Conversation: next, PrevCurrent: conv.CurrentAgent, Messages: msgs, Join: join, Decision: d, Handoff: ret})
		if err == nil || attempt >= maxCommitAttempts-1 || !errors.Is(err, ErrChanged) {
			return err
		}
		// Concurrent turns in one conversation: back off a little, with
		// jitter, so the losers do not collide again at once.
		time.Sleep(time.Duration(5+rand.IntN(20*(attempt+1))) * time.Millisecond)
		if conv, err = s.Store.GetConversation(ctx, teamID, conv.ID); err != nil {
			return err
		}
		if conv.Status != StatusOpen {
			return apperr.New(apperr.ECONFLICT, "conversation was closed during the turn").WithReason("ConversationClosed")
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}

// plan is the routing outcome before execution.
type plan struct {
	conv     Conversation
	decision Decision
	note     string
	loads    map[string]routing.Load
	labels   map[string]string
	scores   map[string]float64
}

// route applies the cascade of feature flags: collaboration off → the
// conversation's agent; an @mention (or "go back to Kyra") → that agent;
// expert gate off → the AgentRouter; on → the gate and the selector.
func (s *Service) route(ctx context.Context, teamID string, conv Conversation, content string, active []agents.Agent, def string, o options) plan {
	p := plan{conv: conv, loads: map[string]routing.Load{}, labels: map[string]string{}, scores: map[string]float64{}}
	d := &p.decision
	d.Threshold, d.Scores = o.threshold, []routing.ExpertScore{}
	isActive := map[string]bool{}
	for _, a := range active {
		isActive[a.Slug] = true
	}
	local := func(touched int) {
		c := routing.ComplexityOf(content, touched)
		d.Complexity, d.Dimensions = c.Score, c.Dimensions
		t := s.tiers().Choose(content, c)
		d.Tier, d.Model, d.EstimatedCost = t.Tier, t.ModelID, t.EstimatedCost
	}
	switch {
	case !s.Flags.Collaboration:
		agent := conv.CurrentAgent
		if agent == "" {
			agent = def
		}
		d.Strategy, d.Reason, d.Confidence = routing.Direct, routing.ReasonDirect, 1
		if !isActive[agent] && agent != def {
			p.note = fmt.Sprintf("%s is not available, so the team's default agent is answering.", agent)
			agent, d.Fallback, d.Reason = def, true, routing.ReasonDefault
		}
		d.SelectedAgents = []string{agent}
		local(0)
		return p
	}
	if m := routing.Mention(content, active); m != "" {
		d.Strategy, d.Reason, d.Confidence, d.SelectedAgents = routing.Mentioned, routing.ReasonMention, 1, []string{m}
		local(1)
		return p
	}
	if conv.HandoffActive && isActive[conv.CurrentAgent] {
		// Handed off: the agent that took over answers until the next
		// handoff, return or mention.
		d.Strategy, d.Reason, d.Confidence, d.SelectedAgents = routing.HandedOff, routing.ReasonHandoff, 1, []string{conv.CurrentAgent}
		local(1)
		return p
	}
	var gate *expertgate.Response
	if s.Flags.ExpertGate && s.Gate != nil {
		r, err := s.Gate.Score(ctx, expertgate.Request{TeamID: teamID, Query: content})
		if err != nil {
			// Chat keeps working without the gate: the baseline router
			// decides and the decision says why.
			s.log().Error("expert gate failed; routing with the baseline router", "error", err.Error())
		} else {
			gate = &r
		}
	}
	if gate == nil {
		ix := routing.BuildIndex(active)
		r := ix.Route(content, conv.CurrentAgent, def)
		d.Strategy, d.Reason, d.Confidence, d.SelectedAgents = routing.Router, r.Reason, r.Confidence, []string{r.Agent}
		d.Fallback = r.Reason == routing.ReasonDefault
		if s.Flags.ExpertGate {
			d.Reason += " (expert gate unavailable)"
		}
		for _, a := range active {
			p.labels[a.Slug] = ix.PrimaryLabel(a.Slug)
		}
		local(len(r.MatchingSkills))
		return p
	}
	sel := routing.Select(gate.Scores, routing.SelectOptions{Strategy: o.strategy, K: o.k, Threshold: o.threshold, DefaultAgent: def, EnsembleEnabled: s.Flags.Ensemble})
	d.Strategy, d.RequestedStrategy, d.SelectedAgents, d.Confidence, d.Fallback = sel.Strategy, sel.Requested, sel.Agents, sel.Confidence, sel.Fallback
	d.Reason = routing.ReasonGate
	if sel.Fallback {
		d.Reason, p.note = routing.ReasonFallback, sel.Note
	}
	d.Scores = gate.Scores
	d.Complexity, d.Dimensions = gate.Complexity.Score, gate.Complexity.Dimensions
	d.Tier, d.Model, d.EstimatedCost = gate.Tier.Tier, gate.Tier.ModelID, gate.Tier.EstimatedCost
	d.GateLatencyMS = gate.GateLatencyMS
	if n := len(sel.Agents); n > 1 && !sel.Fallback && sel.Strategy != routing.Cascade {
		d.EstimatedCost *= float64(n)
	}
	p.loads = gate.Loads
	for _, sc := range gate.Scores {
		p.labels[sc.AgentSlug], p.scores[sc.AgentSlug] = sc.Label, sc.Overall
	}
	return p
}

func (s *Service) tiers() routing.TierModels {
	if s.Tiers != nil {
		return s.Tiers
	}
	return routing.DefaultTierModels
}
