package conversations

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/dispatch"
	"github.com/conclave-ai/conclave/shared/ids"
	"github.com/conclave-ai/conclave/shared/routing"
)

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
	UserMessage Message           `json:"user_message"`
	Replies     []Message         `json:"replies"`
	Routing     dispatch.Decision `json:"routing"`
}

func (in PostInput) validate() (dispatch.Options, error) {
	n := utf8.RuneCountInString(strings.TrimSpace(in.Content))
	if n == 0 || n > MaxContent {
		return dispatch.Options{}, apperr.Invalid("content", "content must be 1 to %d characters", MaxContent)
	}
	return dispatch.ParseOptions(in.Strategy, in.K, in.Threshold)
}

// plan is a routed turn on its way to the agents: the routing plan and the
// conversation the agents answer in.
type plan struct {
	dispatch.Plan
	conv Conversation
}

// thread is what a turn reads before it is routed.
type thread struct {
	conv    Conversation
	active  []agents.Agent
	byslug  map[string]agents.Agent
	def     string
	history []Message
}

// read loads the open conversation, the team's active and default agents
// and the history the agents will see.
func (s *Service) read(ctx context.Context, teamID, convID string) (thread, error) {
	var th thread
	var err error
	if th.conv, err = s.Store.GetConversation(ctx, teamID, convID); err != nil {
		return th, err
	}
	if th.conv.Status != StatusOpen {
		return th, apperr.New(apperr.ECONFLICT, "conversation is closed").WithReason("ConversationClosed")
	}
	if th.active, err = s.Agents.ActiveAgents(ctx, teamID); err != nil {
		return th, err
	}
	if th.def, err = s.Agents.DefaultAgent(ctx, teamID); err != nil {
		return th, err
	}
	if th.history, err = s.Store.RecentMessages(ctx, teamID, convID, HistoryLimit); err != nil {
		return th, err
	}
	th.byslug = map[string]agents.Agent{}
	for _, a := range th.active {
		th.byslug[a.Slug] = a
	}
	return th, nil
}

func (s *Service) router() *dispatch.Router {
	if s.Router != nil {
		return s.Router
	}
	return &dispatch.Router{} // every flag off: direct dispatch
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
	th, err := s.read(ctx, teamID, convID)
	if err != nil {
		return PostResult{}, err
	}
	now := s.now()
	user := Message{ID: ids.New("msg"), ConversationID: convID, Role: AuthorUser, Content: strings.TrimSpace(in.Content), CreatedAt: now}
	routed, err := s.router().Route(ctx, dispatch.Request{
		TeamID: teamID, ConversationID: convID, MessageID: user.ID, Query: user.Content,
		CurrentAgent: th.conv.CurrentAgent, HandoffActive: th.conv.HandoffActive, Active: th.active, DefaultAgent: th.def,
		Options: opts, Start: start, At: now,
	})
	if err != nil {
		return PostResult{}, err
	}
	user.DecisionID = routed.Decision().ID
	// The notes are shown before the reply, so their ids (which order the
	// conversation) are made before the agents answer.
	var note *Message
	if routed.Note != "" {
		note = &Message{ID: ids.New("msg"), ConversationID: convID, Role: AuthorSystem, Content: routed.Note, CreatedAt: now, DecisionID: user.DecisionID, ReplyTo: user.ID}
	}
	ret, err := s.returnIn(ctx, teamID, th, routed.Decision())
	if err != nil {
		return PostResult{}, err
	}
	out := s.execute(ctx, plan{Plan: routed, conv: th.conv}, th.byslug, th.history, user)
	d := routed.Finish(out.result())
	if ret != nil && (out.reply == nil || out.answeredBy[0] != ret.handoff.To) {
		ret = nil // the agent asked for did not answer: nothing returned
	}
	msgs := s.turnMessages(user, note, ret, out)
	if err := s.commit(ctx, teamID, th.conv, msgs, out.answeredBy, d, ret); err != nil {
		return PostResult{}, err
	}
	if ret != nil {
		s.publishHandoff(ctx, teamID, ret.handoff)
	}
	s.recordLatency(ctx, teamID, routed.Loads, out)
	res := PostResult{UserMessage: user, Replies: msgs[1:], Routing: d}
	if out.reply == nil {
		return res, apperr.New(apperr.EUPSTREAM, "no agent could answer: %s", failureNote(out.attempts)).
			WithReason("AllAgentsFailed").WithDetail("decision_id", d.ID).WithDetail("attempts", out.attempts)
	}
	return res, nil
}

// returnIn is the return a turn makes when the user names the agent
// before the last handoff ("@kyra", "go back to Kyra"): built like POST
// …/return builds one, so both write the same. Nil when the turn makes
// none.
func (s *Service) returnIn(ctx context.Context, teamID string, th thread, d dispatch.Decision) (*handover, error) {
	c, to := th.conv, d.SelectedAgents[0]
	if d.Reason != routing.ReasonMention || to != c.PreviousAgent || to == c.CurrentAgent || c.CurrentAgent == "" {
		return nil, nil
	}
	from, ok := th.byslug[c.CurrentAgent]
	if !ok {
		// The agent handing back may have been paused since.
		var err error
		if from, err = s.Agents.GetAgent(ctx, teamID, c.CurrentAgent); err != nil {
			return nil, err
		}
	}
	h, err := s.newHandover(c, from, th.byslug[to], KindReturn, "the user asked to go back to "+to, lastSummary(c))
	if err != nil {
		return nil, err
	}
	return &h, nil
}

// turnMessages are what a turn adds, in conversation order: the user's
// message, the routing note, the return's note, then the reply or, when
// every agent failed, a system note saying so.
func (s *Service) turnMessages(user Message, note *Message, ret *handover, out outcome) []Message {
	msgs := []Message{user}
	if note != nil {
		msgs = append(msgs, *note)
	}
	if ret != nil {
		msgs = append(msgs, ret.note)
	}
	if out.reply != nil {
		return append(msgs, *out.reply)
	}
	return append(msgs, Message{ID: ids.New("msg"), ConversationID: user.ConversationID, Role: AuthorSystem, Content: failureNote(out.attempts), CreatedAt: s.now(), DecisionID: user.DecisionID, ReplyTo: user.ID})
}

func failureNote(attempts []dispatch.Attempt) string {
	parts := make([]string, len(attempts))
	for i, a := range attempts {
		parts[i] = a.Agent + " " + strings.ReplaceAll(a.Outcome, "_", " ")
	}
	return "No agent could answer this message (" + strings.Join(parts, ", ") + "). Please try again."
}

// recordLatency keeps a moving average of each answering agent's reply
// latency for the gate's load signal; a failure only costs accuracy.
func (s *Service) recordLatency(ctx context.Context, teamID string, loads map[string]routing.Load, out outcome) {
	for _, slug := range out.answeredBy {
		lat, ok := out.latency[slug]
		if !ok {
			continue
		}
		avg := lat
		if prev := loads[slug].LatencyMS; prev > 0 {
			avg = 0.7*prev + 0.3*lat
		}
		if err := s.Store.SetLatency(ctx, teamID, slug, avg); err != nil {
			s.log().Warn("recording agent latency failed", "agent", slug, "error", err.Error())
		}
	}
}

// maxCommitAttempts bounds the retries of a turn that lost the race for
// its conversation to concurrent turns.
const maxCommitAttempts = 12

// commit writes the turn, re-reading the conversation when a concurrent
// turn moved it on (the replies stand; only the conversation's state is
// recomputed).
func (s *Service) commit(ctx context.Context, teamID string, conv Conversation, msgs []Message, answeredBy []string, d dispatch.Decision, ret *handover) error {
	for attempt := 0; ; attempt++ {
		err := s.Store.CommitTurn(ctx, teamID, turnOn(conv, msgs, answeredBy, d, ret, s.now()))
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
		if ret != nil && (conv.CurrentAgent != ret.handoff.From || conv.PreviousAgent != ret.handoff.To) {
			// A handoff or return landed meanwhile: the return this turn
			// asked for was built on the old state and would overwrite it.
			return apperr.New(apperr.ECONFLICT, "the conversation was handed over during the turn; send the message again").WithReason("ConversationChanged")
		}
	}
}

// turnOn is the turn as a change of conv: one version on, its messages
// counted, the first answering agent current, every answering agent a
// participant, and a return's changes (handover.apply, its roles, record
// and memory).
func turnOn(conv Conversation, msgs []Message, answeredBy []string, d dispatch.Decision, ret *handover, at time.Time) Turn {
	next := conv
	next.Version++
	next.MessageCount += len(msgs)
	next.UpdatedAt = at
	if len(answeredBy) > 0 {
		next.CurrentAgent = answeredBy[0]
		if next.PrimaryAgent == "" {
			next.PrimaryAgent = next.CurrentAgent
		}
	}
	t := Turn{PrevCurrent: conv.CurrentAgent, Messages: msgs, Decision: d}
	if ret != nil {
		next = ret.apply(next)
		t.Join = append(t.Join, ret.roles...)
		t.Handoff, t.Memory = &ret.handoff, ret.memory
	}
	for _, slug := range answeredBy {
		if ret != nil && slug == ret.handoff.To {
			continue // its role is the return's
		}
		role := RoleInvited
		if slug == next.PrimaryAgent {
			role = RolePrimary
		}
		t.Join = append(t.Join, Participant{Agent: slug, Role: role, JoinedAt: at})
	}
	t.Conversation = next
	return t
}
