package conversations

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clock"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
)

// A service is built once, at the door: Store, Agents and Router are
// required and New refuses a Config without one; every other part is
// optional, and what the service does without it is its zero value's
// documented meaning, decided in New. A part whose absence is "do
// nothing" (no bus, no replays, no context sources, no inbox, no result
// poster, no planner, no tail, no work listing) is replaced there by one that does
// nothing, so the turn never asks whether it is there. Four stay nil and
// are asked in one place each: the model (Post refuses a turn), the tools
// (execute offers none), the handoff memories (newHandover writes none)
// and the synthesizer (routing.Aggregate merges deterministically).

// Config is what New builds a Service from.
type Config struct {
	// Store keeps conversations, their messages and turns. Required.
	Store Store
	// Agents is the team's agent directory. Required.
	Agents AgentDirectory
	// Router decides who answers each turn (the flags, the ExpertGate).
	// Required: &cascade.Router{} is direct dispatch, every flag off.
	Router *cascade.Router

	// Model answers the turns. Zero: the service keeps conversations and
	// routes messages (Choose) but answers no turn: Post is EINTERNAL
	// and reads nothing. The A2A function's service is one: it routes,
	// and links no model it would never call (decision 7).
	Model models.Model
	// Synth synthesizes ENSEMBLE replies with the tier-1 model. Zero:
	// replies are merged deterministically.
	Synth *routing.Synthesizer
	// Planner is the compound planner (planner.go). Zero: no turn is
	// planned; every message is dispatched.
	Planner Planner
	// Tools are the tools agents may call while answering (tools.go).
	// Zero: replies have no tools, and kind skills answer as chat skills.
	Tools Tools
	// Context is where an agent's prompt finds what the conversation
	// does not hold: its inbox, memories and open tasks (context.go).
	// Zero: the prompt holds none of them.
	Context ContextSources
	// Inbox marks read, once a turn commits, the inbox messages its kept
	// replies were shown (inbox.go). Zero: none is marked. Give it with
	// the Context that shows them, or they are shown on every turn.
	Inbox Inboxes
	// Memories builds the episodic memory a handoff or return writes.
	// Zero: handoffs and returns write none.
	Memories HandoffMemories
	// Bus publishes committed handoffs and rejoined participants. Zero:
	// nothing is published.
	Bus Publisher
	// Results posts the result of work a reply waited for and carried
	// when that reply is not stored. Zero: such a result is only logged.
	Results ResultPoster
	// ReportParameters fills a report's parameters from the message a
	// report:<type> skill answers (reports.ParametersFrom; kinds.go).
	// Zero: none are sent.
	ReportParameters func(reportType, message string) map[string]any
	// Tail reads a conversation's messages after one (the long-poll of
	// GET …/messages?after=; wait.go). Zero: the long-poll is EINTERNAL.
	Tail MessageTail
	// Replays reads back a turn stored under an Idempotency-Key
	// (replay.go). Zero: a repeated key is caught by the commit alone,
	// after the agents answered again.
	Replays Replays
	// Work lists the work each conversation started (GET …/work;
	// work.go). Zero: that listing is EINTERNAL.
	Work WorkLister
	// Budget is the time a turn may spend on model calls. Zero (or
	// less): DefaultBudget.
	Budget time.Duration
	// CommitReserve is the least time left before the context's deadline
	// for a turn or handoff to attempt its commit; it also sets how long
	// the after-commit effects may take (deadline.go). Zero (or less):
	// DefaultCommitReserve.
	CommitReserve time.Duration
	// Now is the service's clock. Zero: the system clock.
	Now clock.Func
	// Log receives what the service logs. Zero: slog.Default().
	Log *slog.Logger
}

// New builds the service cfg describes. It returns an error naming the
// first required part cfg lacks.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("conversations: the Store is required")
	case cfg.Agents == nil:
		return nil, errors.New("conversations: the agent directory (Agents) is required")
	case cfg.Router == nil:
		return nil, errors.New("conversations: the Router is required (&cascade.Router{} dispatches directly)")
	}
	s := &Service{store: cfg.Store, agents: cfg.Agents, router: cfg.Router, model: cfg.Model, synth: cfg.Synth, tools: cfg.Tools,
		memories: cfg.Memories, reportParameters: cfg.ReportParameters, budget: cfg.Budget, commitReserve: cfg.CommitReserve, now: cfg.Now, log: cfg.Log,
		planner: cfg.Planner, sources: cfg.Context, inbox: cfg.Inbox, bus: cfg.Bus, results: cfg.Results, tail: cfg.Tail, replays: cfg.Replays,
		work: cfg.Work}
	s.fillOff()
	return s, nil
}

// MustNew is New for wiring whose required parts are built beside it (a
// function's cold start): a missing one is a bug of that wiring, and
// MustNew panics with New's error.
func MustNew(cfg Config) *Service {
	s, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return s
}

// fillOff gives every optional part left out its "off": a part that does
// nothing, or the default of a setting.
func (s *Service) fillOff() {
	if s.planner == nil {
		s.planner = noPlanner{}
	}
	if s.sources == nil {
		s.sources = Sources{}
	}
	if s.inbox == nil {
		s.inbox = noInbox{}
	}
	if s.bus == nil {
		s.bus = noBus{}
	}
	if s.results == nil {
		s.results = noResults{}
	}
	if s.reportParameters == nil {
		s.reportParameters = func(string, string) map[string]any { return nil }
	}
	if s.tail == nil {
		s.tail = noTail{}
	}
	if s.replays == nil {
		s.replays = noReplays{}
	}
	if s.work == nil {
		s.work = noWork{}
	}
	if s.budget <= 0 {
		s.budget = DefaultBudget
	}
	if s.commitReserve <= 0 {
		s.commitReserve = DefaultCommitReserve
	}
	if s.log == nil {
		s.log = slog.Default()
	}
}

// noPlanner plans no turn: every message is dispatched as usual.
type noPlanner struct{}

func (noPlanner) Plan(context.Context, PlanRequest) (PlanResult, error) { return PlanResult{}, nil }

// noInbox marks nothing read.
type noInbox struct{}

func (noInbox) Acknowledge(context.Context, string, string, []string) (int, error) { return 0, nil }

// noBus publishes nothing: the events feed the activity log only.
type noBus struct{}

func (noBus) Publish(context.Context, string, any) error { return nil }

// errNoPoster is why a result is not posted without a poster: each is
// logged, with its work id, as a failed post is.
var errNoPoster = errors.New("no result poster")

// noResults posts no result.
type noResults struct{}

func (noResults) PostUndelivered(context.Context, string, string, WorkRef) error { return errNoPoster }

// noTail cannot read a conversation's tail: the long-poll is a server
// fault, not a client's.
type noTail struct{}

func (noTail) ListMessagesAfter(context.Context, string, string, string, paging.Page) ([]Message, string, error) {
	return nil, "", apperr.New(apperr.EINTERNAL, "the message tail is not wired")
}

// noReplays finds no turn stored under a key; a turn replayed because
// its commit was refused (Replayed) is answered with its decision's id
// alone.
type noReplays struct{}

func (noReplays) TurnOf(context.Context, string, string) ([]string, error) { return nil, nil }

func (noReplays) GetDecision(_ context.Context, _, id string) (cascade.Decision, error) {
	return cascade.Decision{ID: id}, nil
}
