package conversations

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
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
	// UserKey is who sent the message, its key or its token's user (set by the
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

// A turn is a pipeline of stages, each a method that takes what the one
// before handed over and returns a small value of its own: read
// (turnInput: the checked message and the conversation as read), route
// (routedTurn: the router's plan, the user's message and the routing
// note), plan (plannedTurn: a return the message asks for, a compound plan
// the planner started), answer (answeredTurn: the agents' outcome and the
// change to commit), commit, and the effects that follow the commit
// (effects.go). Each stage reads on its own, and what one stage may use
// of another is the value it is handed, not the locals of one long
// function.

// Post runs one turn: the user's message is routed, the selected agents
// answer, and the turn is committed with its decision, as the last step.
// When every agent asked fails, the turn (with a system note) and the
// decision are still recorded and the error is EUPSTREAM. When too little
// of ctx's deadline is left to commit and answer (deadline.go), nothing is
// stored and the error is EUNAVAILABLE. Returns EINVALID, ENOTFOUND,
// ECONFLICT, EUPSTREAM, EUNAVAILABLE, EREJECTED (reason
// TeamBudgetExhausted) when the team's budget refused every agent's call,
// and EINTERNAL from a service built without a model.
func (s *Service) Post(ctx context.Context, teamID, convID string, in PostInput) (PostResult, error) {
	// Before a replay too: a member's key reused on another's
	// conversation replays nothing of it.
	if err := s.mine(ctx, teamID, convID); err != nil {
		return PostResult{}, err
	}
	t, err := s.readTurn(ctx, teamID, convID, in)
	if err != nil || t.stored != nil {
		return t.storedResult(), err
	}
	r, err := s.routeTurn(ctx, t)
	if err != nil {
		return PostResult{}, err
	}
	p, err := s.planTurn(ctx, r)
	if err != nil {
		return PostResult{}, err
	}
	a := s.answerTurn(ctx, p)
	if err := s.commit(ctx, a.teamID, a.th.conv, a.ch); err != nil {
		return s.uncommitted(ctx, a, err)
	}
	s.afterCommit(ctx, false, s.committedEffects(a)...)
	return a.answer()
}

// turnInput is what reading a turn hands on: the checked message, its
// routing options and the conversation as the agents will see it.
type turnInput struct {
	teamID, convID string
	in             PostInput
	opts           cascade.Options
	// start is when the turn began reading: the routing decision's
	// latency counts from it.
	start time.Time
	th    thread
	// stored is the turn stored before under the request's
	// Idempotency-Key: it is the answer, and nothing else is done.
	stored *PostResult
}

func (t turnInput) storedResult() PostResult {
	if t.stored == nil {
		return PostResult{}
	}
	return *t.stored
}

// readTurn checks the message and the time left, answers a turn already
// stored under the request's key, and reads the conversation.
func (s *Service) readTurn(ctx context.Context, teamID, convID string, in PostInput) (turnInput, error) {
	opts, err := in.validate()
	if err != nil {
		return turnInput{}, err
	}
	if s.model == nil {
		return turnInput{}, apperr.New(apperr.EINTERNAL, "this service answers no turn: it was built without a model")
	}
	if !timeLeft(ctx, 2*s.commitReserve) {
		// Not even time to ask a model and commit: ask none.
		return turnInput{}, tooLate("turn")
	}
	if res, ok, err := s.storedTurn(ctx, teamID, convID); ok || err != nil {
		return turnInput{stored: &res}, err
	}
	t := turnInput{teamID: teamID, convID: convID, in: in, opts: opts, start: time.Now()}
	t.th, err = s.read(ctx, teamID, convID)
	return t, err
}

// routedTurn is what routing a turn hands on.
type routedTurn struct {
	turnInput
	routed cascade.Plan
	// user is the user's message, with the decision that routed it.
	user Message
	// note is the router's note, shown before the reply: its id (which
	// orders the conversation) is made before the agents answer.
	note *Message
}

// routeTurn has the router decide who answers, and tells the watcher.
func (s *Service) routeTurn(ctx context.Context, t turnInput) (routedTurn, error) {
	now := s.now.UTC()
	user := Message{ID: ids.New("msg"), ConversationID: t.convID, Role: AuthorUser, Content: strings.TrimSpace(t.in.Content), CreatedAt: now}
	th := t.th
	routed, err := s.router.Route(ctx, cascade.Request{
		TeamID: t.teamID, ConversationID: t.convID, MessageID: user.ID, Query: user.Content,
		CurrentAgent: th.conv.CurrentAgent, HandoffActive: th.conv.HandoffActive, Active: th.active, DefaultAgent: th.def,
		Invited: th.participants(RoleInvited, false), Removed: th.participants("", true), Context: t.in.Context,
		Options: t.opts, Start: t.start, At: now, UserID: authctx.CallerOf(ctx).UserID,
	})
	if err != nil {
		return routedTurn{}, err
	}
	if t.in.Watch != nil {
		t.in.Watch.Routed(routed.Decision())
	}
	user.DecisionID = routed.Decision().ID
	r := routedTurn{turnInput: t, routed: routed, user: user}
	if routed.Note != "" {
		r.note = &Message{ID: ids.New("msg"), ConversationID: t.convID, Role: AuthorSystem, Content: routed.Note, CreatedAt: now, DecisionID: user.DecisionID, ReplyTo: user.ID}
	}
	return r, nil
}

// plannedTurn is what planning a turn hands on: the routed turn (its
// plan with the planner's call recorded), the return it makes and the
// compound plan the planner started, if any.
type plannedTurn struct {
	routedTurn
	ret     *handover
	started *PlanResult
}

// planTurn finds the return the message asks for ("@kyra") and asks the
// compound planner.
func (s *Service) planTurn(ctx context.Context, r routedTurn) (plannedTurn, error) {
	ret, err := s.returnIn(ctx, r.teamID, r.th, r.routed.Decision())
	if err != nil {
		return plannedTurn{}, err
	}
	var started *PlanResult
	r.routed, started = s.askPlanner(ctx, r.teamID, r.routed, r.th, r.user)
	return plannedTurn{routedTurn: r, ret: ret, started: started}, nil
}

// answeredTurn is what answering a turn hands to the commit: what the
// agents did, the finished decision and the change to write.
type answeredTurn struct {
	plannedTurn
	out outcome
	// hand is the handover committed with the turn: the return, or the
	// reply's agent's handoff_to.
	hand *handover
	ch   change
}

// answerTurn has the agents answer (or the planner's lead, when a plan
// started) and makes the turn's change from what they did.
func (s *Service) answerTurn(ctx context.Context, p plannedTurn) answeredTurn {
	var out outcome
	if p.started != nil {
		out = s.planReply(p.routed.Decision(), p.user, p.started)
	} else {
		out = s.execute(ctx, plan{Plan: p.routed, conv: p.th.conv, userKey: p.in.UserKey, watch: p.in.Watch}, p.th.byslug, p.th.history, p.user, p.ret != nil)
	}
	d := p.routed.Finish(out.result())
	ret := p.ret
	if ret != nil && (out.reply == nil || out.answeredBy[0] != ret.handoff.To) {
		ret = nil // the agent asked for did not answer: nothing returned
	}
	hand := ret
	if hand == nil && out.handoff != nil {
		// The reply's agent handed the conversation over (handoff_to):
		// committed with the turn, after its reply.
		hand = out.handoff
		hand.note.ID, hand.note.ReplyTo, hand.note.DecisionID = ids.New("msg"), p.user.ID, p.user.DecisionID
	}
	msgs := s.turnMessages(p.user, p.note, ret, out)
	ch := change{msgs: msgs, answeredBy: out.answeredBy, decision: d, ret: hand, latency: latencies(p.routed.Loads, out), lastHandoff: lastHandoffID(p.th.conv),
		carried: out.carriedByReply()}
	return answeredTurn{plannedTurn: p, out: out, hand: hand, ch: ch}
}

// answer is the committed turn's answer: its messages and decision, with
// the error of a turn no agent answered.
func (a answeredTurn) answer() (PostResult, error) {
	res := PostResult{UserMessage: a.user, Replies: a.ch.msgs[1:], Routing: a.ch.decision}
	out := a.out
	if out.reply == nil && out.refused != nil {
		// The team's budget refused the calls: not an upstream failure,
		// and retrying cannot help until the budget is raised or the
		// month ends (the turn is recorded with its note all the same).
		return res, out.refused
	}
	if out.reply == nil {
		return res, apperr.New(apperr.EUPSTREAM, "no agent could answer: %s", failureNote(out.attempts)).
			WithReason("AllAgentsFailed").WithDetail("decision_id", a.ch.decision.ID).WithDetail("attempts", out.attempts)
	}
	return res, nil
}

// uncommitted answers a turn whose commit failed: the turn a request
// with the same key stored meanwhile, or the commit's error once the
// results the replies carried are posted (effects.go).
func (s *Service) uncommitted(ctx context.Context, a answeredTurn, err error) (PostResult, error) {
	if res, ok, rerr := s.replayed(ctx, a.teamID, a.convID, err); ok {
		// A request with this key stored its turn meanwhile (its answer
		// lost): that turn is the answer, these replies are dropped with
		// their undelivered results unposted, as a turn that never ran.
		return res, rerr
	}
	// The reply's results too: the turn wrote their markers, so a commit
	// that applied after all (one cut off in flight) makes their post a
	// no-op, and one still in flight is refused by the post's marker.
	s.afterCommit(ctx, isUnknownOutcome(err), s.resultsPosted(a.teamID, a.convID, a.out.undelivered(false)))
	return PostResult{}, err
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
	if th.conv, err = s.store.GetConversation(ctx, teamID, convID); err != nil {
		return th, err
	}
	if th.conv.Status != StatusOpen {
		return th, apperr.New(apperr.ECONFLICT, "conversation is closed").WithReason("ConversationClosed")
	}
	if th.active, err = s.agents.ActiveAgents(ctx, teamID); err != nil {
		return th, err
	}
	if th.def, err = s.agents.DefaultAgent(ctx, teamID); err != nil {
		return th, err
	}
	if th.history, err = s.store.RecentMessages(ctx, teamID, convID, HistoryLimit); err != nil {
		return th, err
	}
	if th.conv.Participants, err = s.store.ListParticipants(ctx, teamID, convID); err != nil {
		return th, err
	}
	th.byslug = map[string]agents.Agent{}
	for _, a := range th.active {
		th.byslug[a.Slug] = a
	}
	return th, nil
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
		if from, err = s.agents.GetAgent(ctx, teamID, c.CurrentAgent); err != nil {
			return nil, err
		}
	}
	h, err := s.newHandover(c, from, th.byslug[to], KindReturn, "the user asked to go back to "+to, lastSummary(c))
	if err != nil {
		return nil, err
	}
	return &h, nil
}
