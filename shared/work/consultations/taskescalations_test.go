package consultations_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	ct "github.com/conclave-ai/conclave/shared/testkit/consultationstest"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// A task's overdue escalation is listed beside the consultations' and
// resolved through the task service: the note on the task, the action
// taken. An action on a consultation's escalation, or an unknown one, is
// refused naming action, with nothing changed.
func TestATaskEscalationIsResolvedThroughTheTaskService(t *testing.T) {
	svc, store, _ := fixture(t)
	ctx := context.Background()
	taskSvc := tasks.NewService(store, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	yes := true
	_, err := taskSvc.SetBoardPolicy(ctx, team, tasks.BoardPolicyInput{EscalateOverdue: &yes})
	require.NoError(t, err)
	due := time.Now().Add(-time.Minute)
	tk, err := taskSvc.Create(ctx, team, tasks.Creator{Type: "user", ID: "key_1"}, tasks.CreateInput{Assignee: "backend", Title: "Index the users table", DueAt: &due}, false)
	require.NoError(t, err)
	_, err = taskSvc.SweepOverdue(ctx)
	require.NoError(t, err)

	open, _, err := svc.Escalations(ctx, team, consultations.EscalationOpen, paging.Page{})
	require.NoError(t, err)
	require.Len(t, open, 1)
	e := open[0]
	assert.Equal(t, tasks.EscalationTypeOverdue, e.Type)
	assert.Equal(t, tk.ID, e.TaskID)

	_, err = svc.Resolve(ctx, team, e.ID, consultations.ResolveInput{Answer: "drop it", Action: "cancel"})
	assert.Equal(t, apperr.EINTERNAL, apperr.Code(err), "no task service wired: nothing resolved")
	svc.Tasks = taskSvc
	_, err = svc.Resolve(ctx, team, e.ID, consultations.ResolveInput{Answer: "drop it", Action: "archive"})
	assert.Equal(t, "action", field(err))

	got, err := svc.Resolve(ctx, team, e.ID, consultations.ResolveInput{Answer: "drop it", Action: "cancel", ResolvedBy: "ana"})
	require.NoError(t, err)
	assert.Equal(t, consultations.EscalationResolved, got.Status)
	assert.Equal(t, "cancel", got.Action)
	assert.Equal(t, "ana", got.ResolvedBy)
	after, err := taskSvc.Get(ctx, team, tk.ID)
	require.NoError(t, err)
	assert.Equal(t, tasks.Canceled, after.Status)
	_, err = svc.Resolve(ctx, team, e.ID, consultations.ResolveInput{Answer: "again"})
	assert.Equal(t, "Resolved", ct.Reason(err))
}

func TestAnActionOnAConsultationEscalationIsRefused(t *testing.T) {
	svc, st, _ := fixture(t)
	ctx := context.Background()
	svc.Model = failing{}
	c, err := svc.Request(ctx, team, ask("frontend", "What fields does the User model API return?"))
	require.NoError(t, err)
	require.Equal(t, consultations.Escalated, c.Status)
	_, err = svc.Resolve(ctx, team, c.EscalationID, consultations.ResolveInput{Answer: "id and email", Action: "cancel"})
	assert.Equal(t, "action", field(err))
	e, err := st.GetEscalation(ctx, team, c.EscalationID)
	require.NoError(t, err)
	assert.Equal(t, consultations.EscalationOpen, e.Status, "nothing changed")
}

// field is the field an invalid-input error names.
func field(err error) string {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}
