package tasks_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// due makes a board task for luke due at at.
func (f *fixture) due(tb testing.TB, at time.Time) tasks.Task {
	tb.Helper()
	return f.create(tb, tasks.CreateInput{Assignee: "luke", Title: "ship the report", DueAt: &at})
}

func (f *fixture) policy(tb testing.TB, escalate bool) {
	tb.Helper()
	_, err := f.svc.SetBoardPolicy(context.Background(), team, tasks.BoardPolicyInput{EscalateOverdue: &escalate})
	require.NoError(tb, err)
}

func appErr(tb testing.TB, err error) *apperr.Error {
	tb.Helper()
	var e *apperr.Error
	require.ErrorAs(tb, err, &e)
	return e
}

func timelineOf(t tasks.Task) []string {
	var out []string
	for _, e := range t.Events {
		out = append(out, e.Type)
	}
	return out
}

func TestPastDueDateIsAcceptedAndOverdueAtOnce(t *testing.T) {
	f := newFixture(t)
	// The representation reads the wall clock; the fixture's is in 2030.
	task := f.due(t, time.Now().Add(-time.Hour))
	assert.True(t, task.IsOverdue(time.Now()))
	b, err := json.Marshal(task)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"overdue":true`)
	assert.Nil(t, task.OverdueAt, "flagged by the sweeper, not at create")

	later := f.due(t, time.Now().Add(time.Hour))
	b, err = json.Marshal(later)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"overdue":false`)
}

func TestSweepFlagsOverdueOnceAndPublishesTaskOverdue(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	past := f.due(t, f.clock.Now().Add(-time.Minute))
	future := f.due(t, f.clock.Now().Add(time.Hour))
	none := f.create(t, tasks.CreateInput{Assignee: "luke", Title: "no due date"})

	n, err := f.svc.SweepOverdue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	got, err := f.svc.Get(ctx, team, past.ID)
	require.NoError(t, err)
	require.NotNil(t, got.OverdueAt)
	assert.Equal(t, []string{tasks.EvCreated, tasks.EvOverdue}, timelineOf(got))
	assert.Nil(t, got.Escalation, "the policy is off by default")
	evs := f.bus.OfType(tasks.DetailTypeOverdue)
	require.Len(t, evs, 1)
	ev := evs[0].Detail.(tasks.TaskOverdue)
	assert.Equal(t, past.ID, ev.TaskID)
	assert.Equal(t, tasks.Queued, ev.Status)
	assert.Empty(t, ev.EscalationID)

	// Again: nothing more, however often it runs.
	n, err = f.svc.SweepOverdue(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Len(t, f.bus.OfType(tasks.DetailTypeOverdue), 1)

	// The other task comes due an hour later; one that ended is not flagged.
	_, err = f.svc.Cancel(ctx, team, none.ID, "user:key_test", "not needed")
	require.NoError(t, err)
	f.clock.Advance(2 * time.Hour)
	n, err = f.svc.SweepOverdue(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	got, err = f.svc.Get(ctx, team, future.ID)
	require.NoError(t, err)
	assert.NotNil(t, got.OverdueAt)
}

func TestEndedTaskIsNeverOverdue(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	task := f.due(t, f.clock.Now().Add(time.Minute))
	_, err := f.svc.Cancel(ctx, team, task.ID, "user:key_test", "done elsewhere")
	require.NoError(t, err)
	f.clock.Advance(time.Hour)
	n, err := f.svc.SweepOverdue(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	got, err := f.svc.Get(ctx, team, task.ID)
	require.NoError(t, err)
	assert.False(t, got.IsOverdue(f.clock.Now()))
	assert.Empty(t, f.bus.OfType(tasks.DetailTypeOverdue))
}

func TestConcurrentSweepsFlagAndPublishOnce(t *testing.T) {
	f := newFixture(t)
	f.policy(t, true)
	var ids []string
	for range 4 {
		ids = append(ids, f.due(t, f.clock.Now().Add(-time.Second)).ID)
	}
	var wg sync.WaitGroup
	total := make([]int, 8)
	for i := range total {
		wg.Go(func() {
			n, err := f.svc.SweepOverdue(context.Background())
			assert.NoError(t, err)
			total[i] = n
		})
	}
	wg.Wait()
	sum := 0
	for _, n := range total {
		sum += n
	}
	assert.Equal(t, len(ids), sum, "each task flagged by exactly one sweep")
	assert.Len(t, f.bus.OfType(tasks.DetailTypeOverdue), len(ids))
	for _, id := range ids {
		got, err := f.svc.Get(context.Background(), team, id)
		require.NoError(t, err)
		assert.Equal(t, []string{tasks.EvCreated, tasks.EvOverdue, tasks.EvEscalated}, timelineOf(got))
	}
	open, _, err := f.store.ListEscalations(context.Background(), team, consultations.EscalationOpen, paging.Page{Limit: 50})
	require.NoError(t, err)
	assert.Len(t, open, len(ids), "one escalation per task")
}

func TestPolicyEscalatesAndEscalationIsListedBesideConsultations(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, err := f.svc.BoardPolicy(ctx, team)
	require.NoError(t, err)
	assert.False(t, p.EscalateOverdue, "default")
	f.policy(t, true)
	task := f.due(t, f.clock.Now().Add(-time.Minute))
	_, err = f.svc.SweepOverdue(ctx)
	require.NoError(t, err)

	got, err := f.svc.Get(ctx, team, task.ID)
	require.NoError(t, err)
	require.NotNil(t, got.Escalation)
	assert.Equal(t, tasks.EscalationOpen, got.Escalation.Status)
	esc := got.Events[len(got.Events)-1]
	assert.Equal(t, tasks.EvEscalated, esc.Type)
	assert.Equal(t, got.Escalation.ID, esc.Payload["escalation_id"])
	assert.Equal(t, got.Escalation.ID, f.bus.OfType(tasks.DetailTypeOverdue)[0].Detail.(tasks.TaskOverdue).EscalationID)

	e, err := f.store.GetEscalation(ctx, team, got.Escalation.ID)
	require.NoError(t, err)
	assert.Equal(t, tasks.EscalationTypeOverdue, e.Type)
	assert.Equal(t, task.ID, e.TaskID)
	assert.Equal(t, consultations.EscalationOpen, e.Status)
	assert.Empty(t, e.ConsultationID)
	assert.Equal(t, "luke", e.Evidence["assignee"])
}

// overdueEscalated makes an escalated overdue task (running when
// running is set) and returns it with its escalation id.
func (f *fixture) overdueEscalated(tb testing.TB, running bool) (tasks.Task, string) {
	tb.Helper()
	f.policy(tb, true)
	task := f.due(tb, f.clock.Now().Add(-time.Minute))
	ctx := context.Background()
	if running {
		_, err := f.svc.Start(ctx, team, task.ID, "agent:luke")
		require.NoError(tb, err)
	}
	_, err := f.svc.SweepOverdue(ctx)
	require.NoError(tb, err)
	got, err := f.svc.Get(ctx, team, task.ID)
	require.NoError(tb, err)
	require.NotNil(tb, got.Escalation)
	return got, got.Escalation.ID
}

func TestResolveWithCancelCancelsAndRecordsTheNote(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	task, esc := f.overdueEscalated(t, true)
	got, err := f.svc.ResolveEscalation(ctx, team, task.ID, tasks.EscalationResolution{EscalationID: esc, Note: "drop it", Action: tasks.ResolveCancel, By: "ana"})
	require.NoError(t, err)
	assert.Equal(t, tasks.Canceled, got.Status)
	assert.Equal(t, tasks.EscalationResolved, got.Escalation.Status)
	got, err = f.svc.Get(ctx, team, task.ID)
	require.NoError(t, err)
	n := len(got.Events)
	assert.Equal(t, []string{tasks.EvEscalationResolved, tasks.EvCanceled}, timelineOf(got)[n-2:])
	assert.Equal(t, "drop it", got.Events[n-2].Payload["note"])
	e, err := f.store.GetEscalation(ctx, team, esc)
	require.NoError(t, err)
	assert.Equal(t, consultations.EscalationResolved, e.Status)
	assert.Equal(t, "drop it", e.Resolution)
	assert.Equal(t, tasks.ResolveCancel, e.Action)
	load, err := f.svc.Load(ctx, team, "luke")
	require.NoError(t, err)
	assert.Zero(t, load, "the slot is given back")

	_, err = f.svc.ResolveEscalation(ctx, team, task.ID, tasks.EscalationResolution{EscalationID: esc, Note: "again", By: "ana"})
	assert.Equal(t, "Resolved", appErr(t, err).Reason)
}

func TestResolveWithRequeueQueuesAgain(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	task, esc := f.overdueEscalated(t, true)
	got, err := f.svc.ResolveEscalation(ctx, team, task.ID, tasks.EscalationResolution{EscalationID: esc, Note: "try again", Action: tasks.ResolveRequeue, By: "ana"})
	require.NoError(t, err)
	assert.Equal(t, tasks.Queued, got.Status)
	assert.Equal(t, "luke", got.Assignee)
	got, err = f.svc.Get(ctx, team, task.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{tasks.EvEscalationResolved, tasks.EvAssigned}, timelineOf(got)[len(got.Events)-2:])
	// Flagged once: requeued, it is not flagged or escalated again.
	n, err := f.svc.SweepOverdue(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestResolveRefusesBadInputAndChangesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	task, esc := f.overdueEscalated(t, false)
	for _, c := range []struct {
		in    tasks.EscalationResolution
		field string
	}{
		{tasks.EscalationResolution{EscalationID: esc, Note: "x", Action: "delete"}, "action"},
		{tasks.EscalationResolution{EscalationID: esc, Note: "  ", Action: tasks.ResolveCancel}, "answer"},
	} {
		_, err := f.svc.ResolveEscalation(ctx, team, task.ID, c.in)
		assert.Equal(t, apperr.EINVALID, apperr.Code(err))
		assert.Equal(t, c.field, appErr(t, err).Field)
	}
	_, err := f.svc.ResolveEscalation(ctx, team, task.ID, tasks.EscalationResolution{EscalationID: "esc_other", Note: "x"})
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
	got, err := f.svc.Get(ctx, team, task.ID)
	require.NoError(t, err)
	assert.Equal(t, task.Version, got.Version)
	assert.Equal(t, tasks.EscalationOpen, got.Escalation.Status)
}

func TestResolveActionOnAnEndedTaskIsRefusedButANoteIsRecorded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	task, esc := f.overdueEscalated(t, true)
	_, err := f.svc.Complete(ctx, team, task.ID, "agent:luke", "done late", nil)
	require.NoError(t, err)
	before, err := f.svc.Get(ctx, team, task.ID)
	require.NoError(t, err)
	for _, action := range tasks.ResolveActions {
		_, err = f.svc.ResolveEscalation(ctx, team, task.ID, tasks.EscalationResolution{EscalationID: esc, Note: "x", Action: action})
		assert.Equal(t, tasks.ReasonState, appErr(t, err).Reason, action)
	}
	got, err := f.svc.Get(ctx, team, task.ID)
	require.NoError(t, err)
	assert.Equal(t, before.Version, got.Version, "nothing changed")
	got, err = f.svc.ResolveEscalation(ctx, team, task.ID, tasks.EscalationResolution{EscalationID: esc, Note: "finished late, fine", By: "ana"})
	require.NoError(t, err)
	assert.Equal(t, tasks.Completed, got.Status)
	assert.Equal(t, tasks.EscalationResolved, got.Escalation.Status)
}

// The board policy escalates only when told to: absent and false both
// leave overdue tasks unescalated.
func TestTheBoardPolicyEscalatesOnlyWhenAskedTo(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	yes, no := true, false
	for _, c := range []struct {
		in   *bool
		want bool
	}{{nil, false}, {&no, false}, {&yes, true}} {
		p, err := f.svc.SetBoardPolicy(ctx, team, tasks.BoardPolicyInput{EscalateOverdue: c.in})
		require.NoError(t, err)
		assert.Equal(t, c.want, p.EscalateOverdue)
		stored, err := f.svc.BoardPolicy(ctx, team)
		require.NoError(t, err)
		assert.Equal(t, c.want, stored.EscalateOverdue)
	}
}

// An escalation's evidence names the due date and when the task was found
// overdue when it has them, and nothing in their place when it has not.
func TestAnEscalationsEvidenceHasItsDates(t *testing.T) {
	due := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	found := due.Add(time.Hour)
	tk := tasks.Task{ID: "task_1", Title: "ship", Assignee: "luke", DueAt: &due, OverdueAt: &found, Escalation: &tasks.Escalation{ID: "esc_1"}}
	ev := tk.EscalationRecord().Evidence
	assert.Equal(t, "2026-11-01T09:00:00Z", ev["due_at"])
	assert.Equal(t, "2026-11-01T10:00:00Z", ev["overdue_at"])
	tk.DueAt, tk.OverdueAt = nil, nil
	ev = tk.EscalationRecord().Evidence
	assert.NotContains(t, ev, "due_at")
	assert.NotContains(t, ev, "overdue_at")
}

// An executing task's escalation resolved with an action stops its
// execution (a cancel ends the work; a requeue starts it afresh); one
// resolved with a note alone leaves the execution running.
func TestResolvingAnExecutingTasksEscalationStopsItsExecution(t *testing.T) {
	for _, c := range []struct {
		action  string
		stopped bool
	}{{tasks.ResolveCancel, true}, {"", false}} {
		f := newFixture(t)
		wf := &starter{}
		f.svc.Workflows = wf
		ctx := context.Background()
		f.policy(t, true)
		due, yes := f.clock.Now().Add(time.Minute), true
		task, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "ship", DueAt: &due, Execute: &yes}, false)
		require.NoError(t, err)
		arn := "arn:execution:delegation:" + task.ID
		_, err = f.svc.ExecStart(ctx, team, task.ID, arn)
		require.NoError(t, err)
		f.clock.Advance(2 * time.Minute)
		_, err = f.svc.SweepOverdue(ctx)
		require.NoError(t, err)
		got, err := f.svc.Get(ctx, team, task.ID)
		require.NoError(t, err)
		require.NotNil(t, got.Escalation, c.action)
		_, err = f.svc.ResolveEscalation(ctx, team, task.ID, tasks.EscalationResolution{EscalationID: got.Escalation.ID, Note: "seen", Action: c.action, By: "ana"})
		require.NoError(t, err, c.action)
		assert.Equal(t, c.stopped, slices.Contains(wf.stopped, arn), "action %q", c.action)
	}
}
