package sessions

import "context"

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

// publishStatus announces a status change; the change is committed, so a
// failed publish is logged, not undone.
func (s *Service) publishStatus(ctx context.Context, ses Session, prev Status) {
	if s.Bus == nil {
		return
	}
	ev := SessionStatusChanged{TeamID: ses.TeamID, SessionID: ses.ID, Pattern: ses.Pattern, Lead: ses.Lead, Status: ses.Status,
		PreviousStatus: prev, Reason: ses.StatusReason, TotalCostUSD: ses.TotalCostUSD, Rounds: ses.Rounds, ExecutionARN: ses.ExecutionARN,
		ConversationID: ses.ConversationID}
	if err := s.Bus.Publish(ctx, EventStatusChanged, ev); err != nil {
		s.log().ErrorContext(ctx, "publish "+EventStatusChanged, "session_id", ses.ID, "error", err.Error())
	}
}

func (s *Service) publishStage(ctx context.Context, ses Session, o StageOutput) {
	if s.Bus != nil {
		ev := SessionStageCompleted{TeamID: ses.TeamID, SessionID: ses.ID, Pattern: ses.Pattern, Stage: o.Stage, Round: o.Round, Kind: o.Kind,
			Agent: o.Agent, TaskID: o.TaskID, Tokens: o.Tokens, CostUSD: o.CostUSD, DurationSeconds: o.DurationSeconds}
		if err := s.Bus.Publish(ctx, EventStageCompleted, ev); err != nil {
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
