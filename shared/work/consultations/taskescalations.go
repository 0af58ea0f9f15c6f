package consultations

import (
	"context"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// TaskResolver resolves a task's escalation with the task, in the task's
// own conditional write (tasks.Service.ResolveEscalation).
type TaskResolver interface {
	ResolveEscalation(ctx context.Context, teamID, taskID string, in tasks.EscalationResolution) (tasks.Task, error)
}

// resolveTask resolves a task_overdue escalation: the note on the task's
// timeline and, with an action, the task canceled or requeued, with the
// escalation's listing, in one transaction of the task service. Returns
// the escalation as resolved. EINVALID, ENOTFOUND, ECONFLICT (Resolved,
// InvalidTransition).
func (s *Service) resolveTask(ctx context.Context, e Escalation, in ResolveInput) (Escalation, error) {
	if e.Status != EscalationOpen {
		return Escalation{}, apperr.New(apperr.ECONFLICT, "escalation %s is already resolved", e.ID).WithReason("Resolved")
	}
	if s.Tasks == nil {
		return Escalation{}, apperr.New(apperr.EINTERNAL, "task escalations cannot be resolved here")
	}
	by := strings.TrimSpace(in.ResolvedBy)
	if by == "" {
		by = "human"
	}
	t, err := s.Tasks.ResolveEscalation(ctx, e.TeamID, e.TaskID, tasks.EscalationResolution{
		EscalationID: e.ID, Note: Redact(strings.TrimSpace(in.Answer), map[string]int{}), Action: in.Action, By: by})
	if err != nil {
		return Escalation{}, err
	}
	r := t.Escalation
	e.Status, e.Resolution, e.ResolvedBy, e.Action, e.ResolvedAt = EscalationResolved, r.Resolution, r.ResolvedBy, r.Action, r.ResolvedAt
	return e, nil
}
