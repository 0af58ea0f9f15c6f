package sessions

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/streams"
)

// SessionStatusChanged is published on every status change of a session.
type SessionStatusChanged struct {
	TeamID         string  `json:"team_id"`
	SessionID      string  `json:"session_id"`
	Pattern        Pattern `json:"pattern"`
	Lead           string  `json:"lead"`
	Status         Status  `json:"status"`
	PreviousStatus Status  `json:"previous_status,omitempty"`
	Reason         string  `json:"status_reason,omitempty"`
	TotalCostUSD   float64 `json:"total_cost_usd"`
	Rounds         int     `json:"rounds"`
	ExecutionARN   string  `json:"execution_arn,omitempty"`
	// ConversationID is the conversation the session's outcome is posted
	// into when it ends (the result-poster function).
	ConversationID string `json:"conversation_id,omitempty"`
}

// SessionStageCompleted is published when a stage's output is stored.
type SessionStageCompleted struct {
	TeamID          string  `json:"team_id"`
	SessionID       string  `json:"session_id"`
	Pattern         Pattern `json:"pattern"`
	Stage           int     `json:"stage"`
	Round           int     `json:"round,omitempty"`
	Kind            string  `json:"kind"`
	Agent           string  `json:"agent"`
	TaskID          string  `json:"task_id,omitempty"`
	Tokens          int     `json:"tokens"`
	CostUSD         float64 `json:"cost_usd"`
	DurationSeconds float64 `json:"duration_seconds"`
}

// Detail types.
const (
	EventStatusChanged  = "SessionStatusChanged"
	EventStageCompleted = "SessionStageCompleted"
)

// statusChanged is the SessionStatusChanged detail of ses reaching its
// status from prev: what the bus gets and the session's stream stores.
func statusChanged(ses Session, prev Status) SessionStatusChanged {
	return SessionStatusChanged{TeamID: ses.TeamID, SessionID: ses.ID, Pattern: ses.Pattern, Lead: ses.Lead, Status: ses.Status,
		PreviousStatus: prev, Reason: ses.StatusReason, TotalCostUSD: ses.TotalCostUSD, Rounds: ses.Rounds, ExecutionARN: ses.ExecutionARN,
		ConversationID: ses.ConversationID}
}

// stageCompleted is the SessionStageCompleted detail of o stored on ses.
func stageCompleted(ses Session, o StageOutput) SessionStageCompleted {
	return SessionStageCompleted{TeamID: ses.TeamID, SessionID: ses.ID, Pattern: ses.Pattern, Stage: o.Stage, Round: o.Round, Kind: o.Kind,
		Agent: o.Agent, TaskID: o.TaskID, Tokens: o.Tokens, CostUSD: o.CostUSD, DurationSeconds: o.DurationSeconds}
}

// changeEvents are the events of the session's stream (streams.Session)
// that the change from before to after tells of, in the order they
// happened: each stage output it adds (SessionStageCompleted), then its
// status change (SessionStatusChanged), with the details the bus gets.
//
// A session's approval is its status: the execution waits for a human by
// moving the session to awaiting_approval (await), and no approval record
// (shared/work/approvals, whose ApprovalRequested is a tool call's) is written
// with the session's change. So the SessionStatusChanged to
// awaiting_approval is the stream's "approval requested".
func changeEvents(before, after Session, at time.Time) *streams.Batch {
	b := &streams.Batch{At: at}
	for _, o := range after.StageOutputs {
		if _, ok := before.Output(o.Key); !ok {
			b.Add(EventStageCompleted, stageCompleted(after, o))
		}
	}
	if after.Status != before.Status {
		b.Add(EventStatusChanged, statusChanged(after, before.Status))
	}
	return b
}

// WithEvents sets on after the events of the change from before
// (changeEvents; before is the zero Session for a new one), numbered after
// before's last, and after.EventSeq to the stream's new last number: what
// every write of a session stores with it (updateFrom, Create). Exported
// for the stores' contract (shared/testkit/storetest), which writes changes as the
// service does.
func WithEvents(before Session, after *Session, at time.Time) (err error) {
	after.Events, after.EventSeq, err = changeEvents(before, *after, at).Numbered(before.EventSeq)
	return err
}

// publishStatus announces a status change; the change is committed, so a
// failed publish is logged, not undone.
func (s *Service) publishStatus(ctx context.Context, ses Session, prev Status) {
	if s.Bus == nil {
		return
	}
	if err := s.Bus.Publish(ctx, EventStatusChanged, statusChanged(ses, prev)); err != nil {
		s.log().ErrorContext(ctx, "publish "+EventStatusChanged, "session_id", ses.ID, "error", err.Error())
	}
}

func (s *Service) publishStage(ctx context.Context, ses Session, o StageOutput) {
	if s.Bus != nil {
		if err := s.Bus.Publish(ctx, EventStageCompleted, stageCompleted(ses, o)); err != nil {
			s.log().ErrorContext(ctx, "publish "+EventStageCompleted, "session_id", ses.ID, "error", err.Error())
		}
	}
	s.notify(ctx, ses, "collab_update", o.Agent+" completed "+o.Kind+" (stage "+itoa(o.Stage)+")")
}

func (s *Service) notify(ctx context.Context, ses Session, kind, body string) {
	if s.Notifier == nil {
		return
	}
	if err := s.Notifier.Notify(ctx, ses, kind, body); err != nil {
		s.log().WarnContext(ctx, "notify participants", "session_id", ses.ID, "kind", kind, "error", err.Error())
	}
}
