package conversations

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// PostInput is the body of POST /v1/conversations/{id}/messages.
type PostInput struct {
	Content  string `json:"content"`
	Strategy string `json:"strategy"`
	K        *int   `json:"k"` // nil: the selector's default

	Threshold *float64 `json:"confidence_threshold"`
	// Context is what the message carries for the eligibility gates: the
	// editor the user has open and references to attachments (seed 003:
	// requires_editor, editor_types, requires_image_context).
	Context *routing.MessageContext `json:"context"`
	// UserKey is the id of the API key that sent the message (set by the
	// handler, never decoded): work a kind skill starts for the message is
	// requested by that user, as POST /v1/reports would record it (kinds.go).
	UserKey string `json:"-"`
	// Watch, when set, sees the turn as it runs (a streamed turn).
	Watch Watcher `json:"-"`
}

// PostResult is the turn: the user's message, the replies (and any system
// note), and the routing decision.
type PostResult struct {
	UserMessage Message          `json:"user_message"`
	Replies     []Message        `json:"replies"`
	Routing     cascade.Decision `json:"routing"`
	// Replayed: the turn was stored before, by a request with the same
	// Idempotency-Key, and is answered as stored (no agent was asked).
	Replayed bool `json:"-"`
}

// Check is the input's validation, for a caller that must refuse a bad
// message before it answers anything (a streamed turn's first byte).
func (in PostInput) Check() error {
	_, err := in.validate()
	return err
}

func (in PostInput) validate() (cascade.Options, error) {
	n := utf8.RuneCountInString(strings.TrimSpace(in.Content))
	if n == 0 || n > MaxContent {
		return cascade.Options{}, apperr.Invalid("content", "content must be 1 to %d characters", MaxContent)
	}
	if err := in.Context.Validate(); err != nil {
		return cascade.Options{}, err
	}
	return cascade.ParseOptions(in.Strategy, in.K, in.Threshold)
}

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
	if th.conv.Participants, err = s.Store.ListParticipants(ctx, teamID, convID); err != nil {
		return th, err
	}
	th.byslug = map[string]agents.Agent{}
	for _, a := range th.active {
		th.byslug[a.Slug] = a
	}
	return th, nil
}

// rejoined are the answering agents the turn re-joined: removed from the
// conversation before it (only an @mention routes to one). The turn's
// commit wrote them back as participants (turnOn joins every answering
// agent, which clears left_at).
func rejoined(th thread, answeredBy []string) []string {
	removed := th.participants("", true)
	var out []string
	for _, a := range answeredBy {
		if slices.Contains(removed, a) {
			out = append(out, a)
		}
	}
	return out
}

// publishRejoined announces the agents a committed turn re-joined.
func (s *Service) publishRejoined(ctx context.Context, teamID, convID string, user Message, agents []string) {
	if s.Bus == nil {
		return
	}
	for _, a := range agents {
		ev := RejoinedEvent{TeamID: teamID, ConversationID: convID, Agent: a, MessageID: user.ID, DecisionID: user.DecisionID, CreatedAt: user.CreatedAt}
		if err := s.Bus.Publish(ctx, RejoinedDetailType, ev); err != nil {
			// The turn is committed; the event feeds the activity log only.
			s.log().ErrorContext(ctx, "publishing ParticipantRejoined failed", "agent", a, "error", err.Error())
		}
	}
}

// participants are the slugs of the conversation's participants with a
// role ("" for any) that have left (removed) or not.
func (th thread) participants(role string, removed bool) []string {
	var out []string
	for _, p := range th.conv.Participants {
		if (role == "" || p.Role == role) && (p.LeftAt != nil) == removed {
			out = append(out, p.Agent)
		}
	}
	return out
}

func (s *Service) router() *cascade.Router {
	if s.Router != nil {
		return s.Router
	}
	return &cascade.Router{} // every flag off: direct dispatch
}

// Post runs one turn: the user's message is routed, the selected agents
// answer, and the turn is committed with its decision, as the last step.
// When every agent asked fails, the turn (with a system note) and the
// decision are still recorded and the error is EUPSTREAM. When too little
// of ctx's deadline is left to commit and answer (deadline.go), nothing is
// stored and the error is EUNAVAILABLE. Returns EINVALID, ENOTFOUND,
// ECONFLICT, EUPSTREAM, EUNAVAILABLE, and EREJECTED (reason
// TeamBudgetExhausted) when the team's budget refused every agent's call.
//
// Kept whole: it is the outline of a turn (check, route, answer, commit), each
// step a call to a helper.
func (s *Service) Post(ctx context.Context, teamID, convID string, in PostInput) (PostResult, error) {
	opts, err := in.validate()
	if err != nil {
		return PostResult{}, err
	}
	if !timeLeft(ctx, 2*s.commitReserve()) {
		// Not even time to ask a model and commit: ask none.
		return PostResult{}, tooLate("turn")
	}
	if res, ok, err := s.storedTurn(ctx, teamID, convID); ok || err != nil {
		return res, err
	}
	start := time.Now()
	th, err := s.read(ctx, teamID, convID)
	if err != nil {
		return PostResult{}, err
	}
	now := s.now()
	user := Message{ID: ids.New("msg"), ConversationID: convID, Role: AuthorUser, Content: strings.TrimSpace(in.Content), CreatedAt: now}
	routed, err := s.router().Route(ctx, cascade.Request{
		TeamID: teamID, ConversationID: convID, MessageID: user.ID, Query: user.Content,
		CurrentAgent: th.conv.CurrentAgent, HandoffActive: th.conv.HandoffActive, Active: th.active, DefaultAgent: th.def,
		Invited: th.participants(RoleInvited, false), Removed: th.participants("", true), Context: in.Context,
		Options: opts, Start: start, At: now,
	})
	if err != nil {
		return PostResult{}, err
	}
	if in.Watch != nil {
		in.Watch.Routed(routed.Decision())
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
	routed, planned := s.askPlanner(ctx, teamID, routed, th, user)
	var out outcome
	if planned != nil {
		out = s.planReply(routed.Decision(), user, planned)
	} else {
		out = s.execute(ctx, plan{Plan: routed, conv: th.conv, userKey: in.UserKey, watch: in.Watch}, th.byslug, th.history, user, ret != nil)
	}
	d := routed.Finish(out.result())
	if ret != nil && (out.reply == nil || out.answeredBy[0] != ret.handoff.To) {
		ret = nil // the agent asked for did not answer: nothing returned
	}
	hand := ret
	if hand == nil && out.handoff != nil {
		// The reply's agent handed the conversation over (handoff_to):
		// committed with the turn, after its reply.
		hand = out.handoff
		hand.note.ID, hand.note.ReplyTo, hand.note.DecisionID = ids.New("msg"), user.ID, user.DecisionID
	}
	msgs := s.turnMessages(user, note, ret, out)
	ch := change{msgs: msgs, answeredBy: out.answeredBy, decision: d, ret: hand, latency: latencies(routed.Loads, out), lastHandoff: lastHandoffID(th.conv),
		carried: out.carriedByReply()}
	if err := s.commit(ctx, teamID, th.conv, ch); err != nil {
		if res, ok, rerr := s.replayed(ctx, teamID, convID, err); ok {
			// A request with this key stored its turn meanwhile (its
			// answer lost): that turn is the answer, these replies are
			// dropped with their undelivered results unposted, as a
			// turn that never ran.
			return res, rerr
		}
		// The reply's results too: the turn wrote their markers, so a
		// commit that applied after all (one cut off in flight) makes
		// their post a no-op, and one still in flight is refused by the
		// post's marker. After a cut-off commit only what is left before
		// the deadline, less the answer's own time, is the post's.
		pctx, cancel := s.commitContext(ctx)
		if isUnknownOutcome(err) {
			pctx, cancel = s.lastContext(ctx)
		}
		s.postUndelivered(pctx, ctx, teamID, convID, out.undelivered(false))
		cancel()
		return PostResult{}, err
	}
	// Only now, the turn committed, are the messages its replies saw read.
	s.acknowledge(ctx, teamID, out)
	pctx, cancel := s.commitContext(ctx)
	s.postUndelivered(pctx, ctx, teamID, convID, out.undelivered(true))
	cancel()
	if hand != nil {
		// After the commit, best effort and within the answer's time.
		pctx, cancel := s.commitContext(ctx)
		s.publishHandoff(pctx, teamID, hand.handoff)
		cancel()
	}
	// None rejoined (>= 0) would publish no event either.
	if back := rejoined(th, out.answeredBy); len(back) > 0 {
		pctx, cancel := s.commitContext(ctx)
		s.publishRejoined(pctx, teamID, convID, user, back)
		cancel()
	}
	res := PostResult{UserMessage: user, Replies: msgs[1:], Routing: d}
	if out.reply == nil && out.refused != nil {
		// The team's budget refused the calls: not an upstream failure,
		// and retrying cannot help until the budget is raised or the
		// month ends (the turn is recorded with its note all the same).
		return res, out.refused
	}
	if out.reply == nil {
		return res, apperr.New(apperr.EUPSTREAM, "no agent could answer: %s", failureNote(out.attempts)).
			WithReason("AllAgentsFailed").WithDetail("decision_id", d.ID).WithDetail("attempts", out.attempts)
	}
	return res, nil
}

// postUndelivered posts the results no stored message carries
// (outcome.undelivered), each once, within pctx; one that fails is logged
// (on ctx, the turn's) with its work id (the result is still the work's
// own: GET /v1/tasks/{id}).
func (s *Service) postUndelivered(pctx, ctx context.Context, teamID, convID string, work []WorkRef) {
	if len(work) == 0 {
		return
	}
	if s.Results == nil {
		s.logUndelivered(ctx, teamID, convID, work, errors.New("no result poster"))
		return
	}
	for _, w := range work {
		if err := s.Results.PostUndelivered(pctx, teamID, convID, w); err != nil {
			s.logUndelivered(ctx, teamID, convID, []WorkRef{w}, err)
		}
	}
}

func (s *Service) logUndelivered(ctx context.Context, teamID, convID string, work []WorkRef, err error) {
	for _, w := range work {
		s.log().ErrorContext(ctx, "a result the reply carried was not posted", "team_id", teamID, "conversation_id", convID,
			"work", w.Type, "work_id", w.ID, "error", err.Error())
	}
}

// returnIn is the return a turn makes when the user names the agent
// before the last handoff ("@kyra", "go back to Kyra"): built like POST
// …/return builds one, so both write the same. Nil when the turn makes
// none.
func (s *Service) returnIn(ctx context.Context, teamID string, th thread, d cascade.Decision) (*handover, error) {
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
		msgs = append(msgs, *out.reply)
		if ret == nil && out.handoff != nil {
			msgs = append(msgs, out.handoff.note)
		}
		return msgs
	}
	return append(msgs, Message{ID: ids.New("msg"), ConversationID: user.ConversationID, Role: AuthorSystem, Content: failureNote(out.attempts), CreatedAt: s.now(), DecisionID: user.DecisionID, ReplyTo: user.ID})
}

func failureNote(attempts []cascade.Attempt) string {
	parts := make([]string, len(attempts))
	for i, a := range attempts {
		parts[i] = a.Agent + " " + strings.ReplaceAll(a.Outcome, "_", " ")
	}
	return "No agent could answer this message (" + strings.Join(parts, ", ") + "). Please try again."
}

// latencies is the new moving average of each answering agent's reply
// latency (the gate's load signal), from the gate's view of it; it is
// written with the turn.
func latencies(loads map[string]routing.Load, out outcome) map[string]float64 {
	avg := map[string]float64{}
	for _, slug := range out.answeredBy {
		lat, ok := out.latency[slug]
		if !ok {
			continue
		}
		avg[slug] = lat
		if prev := loads[slug].LatencyMS; prev > 0 {
			avg[slug] = 0.7*prev + 0.3*lat
		}
	}
	return avg
}

// maxCommitAttempts bounds the retries of a turn that lost the race for
// its conversation to concurrent turns.
const maxCommitAttempts = 12

// change is what a turn writes, whatever the conversation's state when it
// commits.
type change struct {
	msgs       []Message
	answeredBy []string
	decision   cascade.Decision
	// ret is the handover the turn commits: a return ("@kyra") or the
	// reply's agent's handoff_to.
	ret     *handover
	latency map[string]float64
	// lastHandoff is the conversation's last handoff when the turn read
	// it: a handoff_to is built on that state.
	lastHandoff string
	// carried is the work whose result the reply carries (Turn.Carried).
	carried []CarriedResult
}

func lastHandoffID(c Conversation) string {
	if c.LastHandoff == nil {
		return ""
	}
	return c.LastHandoff.ID
}

// commit writes the turn, re-reading the conversation when a concurrent
// turn moved it on (the replies stand; only the conversation's state is
// recomputed). Every attempt, the first included, needs the commit reserve
// left before ctx's deadline; without it the turn is EUNAVAILABLE and
// nothing was stored (a lost race stores nothing).
func (s *Service) commit(ctx context.Context, teamID string, conv Conversation, ch change) error {
	for attempt := 0; ; attempt++ {
		if !timeLeft(ctx, s.commitReserve()) {
			return tooLate("turn")
		}
		cctx, cancel := s.commitContext(ctx)
		t := turnOn(conv, ch, s.now())
		t.IdempotencyKey = idempotency.KeyFor(ctx, RefKind)
		err := s.Store.CommitTurn(cctx, teamID, t)
		cut := commitCut(cctx, err)
		cancel()
		if cut {
			s.log().ErrorContext(ctx, "turn commit cut off by the deadline; outcome unknown", "conversation_id", conv.ID, "error", err.Error())
			return unknownOutcome("turn", err)
		}
		if err == nil || attempt >= maxCommitAttempts-1 || !errors.Is(err, ErrChanged) {
			return err
		}
		// Concurrent turns in one conversation: back off a little, with
		// jitter, so the losers do not collide again at once.
		if !sleep(ctx, time.Duration(5+rand.IntN(20*(attempt+1)))*time.Millisecond) {
			return tooLate("turn")
		}
		if conv, err = s.Store.GetConversation(ctx, teamID, conv.ID); err != nil {
			if ctx.Err() != nil {
				return tooLate("turn")
			}
			return err
		}
		if conv.Status != StatusOpen {
			return apperr.New(apperr.ECONFLICT, "conversation was closed during the turn").WithReason("ConversationClosed")
		}
		if ret := ch.ret; ret != nil && ret.handoff.Kind == KindHandoff && lastHandoffID(conv) != ch.lastHandoff {
			// Another handoff landed meanwhile: this one was decided on
			// the old state.
			return apperr.New(apperr.ECONFLICT, "the conversation was handed over during the turn; send the message again").WithReason("ConversationChanged")
		}
		if ret := ch.ret; ret != nil && ret.handoff.Kind == KindReturn && (conv.CurrentAgent != ret.handoff.From || conv.PreviousAgent != ret.handoff.To) {
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
func turnOn(conv Conversation, ch change, at time.Time) Turn {
	msgs, answeredBy, ret := ch.msgs, ch.answeredBy, ch.ret
	next := conv
	next.Version++
	next.MessageCount += len(msgs)
	next.EventSeq += int64(len(msgs)) // one MessagePosted each, written with the turn
	next.UpdatedAt = at
	if len(answeredBy) > 0 {
		next.CurrentAgent = answeredBy[0]
		if next.PrimaryAgent == "" {
			next.PrimaryAgent = next.CurrentAgent
		}
	}
	t := Turn{PrevCurrent: conv.CurrentAgent, Messages: msgs, Decision: ch.decision, Latency: ch.latency, Carried: ch.carried}
	if ret != nil {
		next = ret.apply(next)
		t.Join = append(t.Join, ret.roles...)
		t.Handoff, t.Memory = &ret.handoff, ret.memory
	}
	for _, slug := range answeredBy {
		if ret != nil && (slug == ret.handoff.To || slug == ret.handoff.From) {
			continue // its role is the handover's
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
