package sessions

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clock"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Store persists sessions and their traces. Every change of a session is
// conditioned on the version read (PutSession) or on the cap it must not
// cross (Charge), so concurrent stages cannot break an invariant.
type Store interface {
	// CreateSession returns ECONFLICT when the id exists. s.Events (its
	// first SessionStatusChanged) are written with it, on its stream.
	CreateSession(ctx context.Context, s Session) error
	// GetSession returns ENOTFOUND for an unknown id or another team's.
	GetSession(ctx context.Context, teamID, id string) (Session, error)
	// PutSession writes s if the stored version is s.Version-1; else
	// ErrChanged. s.Events, numbered up to s.EventSeq (stored as the
	// session's event_seq), are written on its stream in the same write:
	// all of them or, with the change refused, none.
	PutSession(ctx context.Context, s Session) error
	ListSessions(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Session, string, error)
	// Charge adds one model call's cost and tokens if the session's total
	// stays within its cap and it is not exhausted; else it marks the
	// session exhausted and returns ErrBudget.
	Charge(ctx context.Context, teamID, id string, costUSD float64, tokens int) error
	// AppendMessage adds m to the trace (never replaced).
	AppendSessionMessage(ctx context.Context, teamID, id string, m Message) error
	// ListMessages returns the trace in order, Seq numbered from 1.
	ListSessionMessages(ctx context.Context, teamID, id string) ([]Message, error)
	// DueSessions lists unfinished sessions whose deadline is before t
	// (not planning: those are UnstartedSessions').
	DueSessions(ctx context.Context, before time.Time, limit int) ([]Ref, error)
	// UnstartedSessions lists planning sessions last changed before t.
	UnstartedSessions(ctx context.Context, before time.Time, limit int) ([]Ref, error)
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
}

// ErrChanged is a session that changed since it was read.
var ErrChanged = errors.New("the session changed")

// ErrBudget is a charge that would cross the session's cost cap.
var ErrBudget = errors.New("the session's budget is exhausted")

// Publisher puts domain events on the bus.
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// Conversations checks the conversation a session is started from.
type Conversations interface {
	// CheckConversation returns ENOTFOUND unless id is a conversation of
	// the team.
	CheckConversation(ctx context.Context, teamID, id string) error
}

// Notifier tells participants about their session on the collab:<id>
// channel (collab_invite, collab_update).
type Notifier interface {
	Notify(ctx context.Context, s Session, kind, body string) error
}

// Service runs sessions.
type Service struct {
	Store Store
	// Memories adds each stage agent's memories to its prompt (nil: none).
	Memories Memories
	// Tasks records every stage as a task of the task model.
	Tasks Tasks
	Model models.Model
	// Remote runs the stages of agents outside the team (A2A agents) as
	// remote tasks the machine waits for (remote.go); nil: their stages
	// fail as invalid, and a session that ends cancels none.
	Remote agents.RemoteTasks
	// Workflows starts and stops executions (the API function); nil in
	// the step function, which only answers its machine.
	Workflows workflow.Starter
	// Callbacks completes the approval state's task token.
	Callbacks workflow.Callbacks
	Bus       Publisher
	// Conversations checks the conversation a session is started from.
	// Its outcome is posted there when it ends by the result-poster
	// function (SessionStatusChanged → shared/work/results), not here.
	Conversations Conversations
	Notifier      Notifier
	// Enabled is the "sessions" feature flag.
	Enabled bool
	// Region builds the console link of an execution.
	Region string
	Log    *slog.Logger
	Now    clock.Func
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// FlagName is the feature flag that turns sessions on.
const FlagName = "sessions"

func (s *Service) enabled() error {
	if !s.Enabled {
		return apperr.New(apperr.ECONFLICT, "collaboration sessions are turned off in this stage (feature flag %q)", FlagName).
			WithReason("FeatureDisabled").WithDetail("flag", FlagName)
	}
	return nil
}

// Get returns a session of the team.
func (s *Service) Get(ctx context.Context, teamID, id string) (Session, error) {
	if err := s.enabled(); err != nil {
		return Session{}, err
	}
	ses, err := s.Store.GetSession(ctx, teamID, id)
	if err != nil {
		return Session{}, err
	}
	return s.decorate(ses), nil
}

// decorate adds what is derived rather than stored: the console link.
func (s *Service) decorate(ses Session) Session {
	if ses.ExecutionARN != "" {
		ses.ConsoleURL = ConsoleURL(s.Region, ses.ExecutionARN)
	}
	if ses.StageOutputs == nil {
		ses.StageOutputs = []StageOutput{}
	}
	return ses
}

// ConsoleURL is the Step Functions console page of an execution.
func ConsoleURL(region, executionARN string) string {
	if region == "" {
		region = "us-east-1"
	}
	return "https://" + region + ".console.aws.amazon.com/states/home?region=" + region + "#/v2/executions/details/" + executionARN
}

// List returns the team's sessions newest first.
func (s *Service) List(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Session, string, error) {
	if err := s.enabled(); err != nil {
		return nil, "", err
	}
	if f.Status != "" && !contains(Statuses, f.Status) {
		return nil, "", apperr.Invalid("status", "status must be one of planning, active, synthesizing, awaiting_approval, completed, failed, timed_out, cancelled")
	}
	if f.Pattern != "" && !contains(Patterns, f.Pattern) {
		return nil, "", apperr.Invalid("pattern", "pattern must be one of supervisor_worker, pipeline, peer_review, brainstorm, consensus")
	}
	if f.Agent != "" && !agents.ValidSlug(f.Agent) {
		return nil, "", apperr.Invalid("agent", "agent must be an agent slug")
	}
	list, next, err := s.Store.ListSessions(ctx, teamID, f, p)
	for i := range list {
		list[i] = s.decorate(list[i])
	}
	return list, next, err
}

// Trace returns the session's collaboration trace.
func (s *Service) Trace(ctx context.Context, teamID, id string) (Trace, error) {
	ses, err := s.Get(ctx, teamID, id)
	if err != nil {
		return Trace{}, err
	}
	msgs, err := s.Store.ListSessionMessages(ctx, teamID, id)
	if err != nil {
		return Trace{}, err
	}
	t := Trace{
		SessionID: ses.ID, Pattern: ses.Pattern, Status: ses.Status, Participants: ses.Agents(),
		Outcome: ses.Outcome, Convergence: ses.Convergence, ModelCalls: ses.ModelCalls, Tokens: ses.Tokens,
		CostUSD: ses.TotalCostUSD, Messages: msgs, SlotWaits: ses.SlotWaits,
	}
	if t.Outcome == "" {
		t.Outcome = OutcomePending
	}
	for _, m := range msgs {
		if m.Status == MsgRefused {
			t.Refused++
		} else {
			t.TotalTurns++
		}
	}
	if ses.StartedAt != nil {
		end := s.Now.UTC()
		if ses.CompletedAt != nil {
			end = *ses.CompletedAt
		}
		t.DurationMs = end.Sub(*ses.StartedAt).Milliseconds()
	}
	if t.Messages == nil {
		t.Messages = []Message{}
	}
	return t, nil
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
