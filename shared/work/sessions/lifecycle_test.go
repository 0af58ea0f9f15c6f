package sessions_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// starter records the executions sessions start and stop, and the task
// tokens they complete.
type starter struct {
	mu      sync.Mutex
	started []string
	stopped []string
	tokens  map[string]any
	fail    bool
	// failStart: Step Functions does not take the start.
	failStart bool
}

func (s *starter) Start(_ context.Context, machine, name string, _ any) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failStart {
		return "", errors.New("states: context deadline exceeded")
	}
	s.started = append(s.started, name)
	return s.ExecutionARN(machine, name), nil
}

func (s *starter) Stop(_ context.Context, arn, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = append(s.stopped, arn)
	return nil
}

func (s *starter) ExecutionARN(machine, name string) string { return "arn:" + machine + ":" + name }

func (s *starter) Succeed(_ context.Context, token string, out any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("throttled")
	}
	if s.tokens == nil {
		s.tokens = map[string]any{}
	}
	s.tokens[token] = out
	return nil
}

func withStarter(f *fixture) *starter {
	st := &starter{}
	f.svc.Workflows, f.svc.Callbacks = st, st
	return st
}

func brainstorm(f *fixture, tb testing.TB, extra func(*sessions.CreateInput)) sessions.Session {
	in := sessions.CreateInput{Pattern: sessions.Brainstorm, Lead: "kyra", Goal: "Ideas", Participants: parts("contributor", "luke", "archie")}
	if extra != nil {
		extra(&in)
	}
	return f.create(tb, in)
}

func TestCreateStartsTheExecutionNamedBySessionID(t *testing.T) {
	f := newFixture(t)
	st := withStarter(f)
	s := brainstorm(f, t, nil)
	assert.Equal(t, []string{s.ID}, st.started)
	assert.Equal(t, "arn:brainstorm:"+s.ID, s.ExecutionARN)
	assert.Contains(t, s.ConsoleURL, s.ExecutionARN)
}

func TestCancelStopsTheExecutionOnce(t *testing.T) {
	f := newFixture(t)
	st := withStarter(f)
	s := brainstorm(f, t, nil)
	c, err := f.svc.Cancel(context.Background(), team, s.ID, "user:k")
	require.NoError(t, err)
	assert.Equal(t, sessions.Cancelled, c.Status)
	assert.Equal(t, []string{"arn:brainstorm:" + s.ID}, st.stopped)
	_, err = f.svc.Cancel(context.Background(), team, s.ID, "user:k")
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(err))
	_, err = f.step(s, workflow.SessionStage, workflow.SessionItem{Agent: "luke", Kind: "contribution"})
	assert.IsType(t, workflow.SessionNotRunnable{}, err, "the machine ends quietly")
}

func TestApprovalHandsTheDecisionToTheWaitingExecution(t *testing.T) {
	f := newFixture(t)
	st := withStarter(f)
	s := brainstorm(f, t, func(in *sessions.CreateInput) { in.Approval = sessions.ApprovalFinal })
	_, err := f.svc.Approve(context.Background(), team, s.ID, "user:k", sessions.ApproveInput{Decision: "approve"})
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(err), "not awaiting approval yet")
	require.NoError(t, f.flowUntilApproval(s))
	_, err = f.svc.Step(context.Background(), workflow.SessionStepInput{Action: workflow.SessionAwait, TeamID: team, SessionID: s.ID, Run: 1, TaskToken: "tok-1"})
	require.NoError(t, err)
	got, _ := f.svc.Get(context.Background(), team, s.ID)
	assert.Equal(t, sessions.AwaitingApproval, got.Status)

	st.fail = true
	_, err = f.svc.Approve(context.Background(), team, s.ID, "user:k", sessions.ApproveInput{Decision: "reject"})
	require.Error(t, err)
	got, _ = f.svc.Get(context.Background(), team, s.ID)
	assert.Equal(t, sessions.AwaitingApproval, got.Status, "a decision that did not reach the execution can be sent again")

	st.fail = false
	_, err = f.svc.Approve(context.Background(), team, s.ID, "user:k", sessions.ApproveInput{Decision: "reject", Comment: "not yet"})
	require.NoError(t, err)
	d := st.tokens["tok-1"].(sessions.Decision)
	assert.Equal(t, "reject", d.Decision)
	raw, _ := json.Marshal(d)
	_, err = f.svc.Step(context.Background(), workflow.SessionStepInput{Action: workflow.SessionComplete, TeamID: team, SessionID: s.ID, Run: 1, Decision: raw})
	require.NoError(t, err)
	got, _ = f.svc.Get(context.Background(), team, s.ID)
	assert.Equal(t, sessions.Failed, got.Status)
	assert.Equal(t, sessions.ReasonRejected, got.StatusReason)
}

// flowUntilApproval runs a brainstorm up to its synthesis.
func (f *fixture) flowUntilApproval(s sessions.Session) error {
	out, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	if err != nil {
		return err
	}
	if err := f.each(s, out.Items); err != nil {
		return err
	}
	_, err = f.step(s, workflow.SessionSynthesize, workflow.SessionItem{})
	return err
}

func TestResumeReusesDoneStagesUnderANewExecution(t *testing.T) {
	f := newFixture(t)
	st := withStarter(f)
	f.script(t, "archie", "fail")
	s := f.create(t, sessions.CreateInput{Pattern: sessions.Pipeline, Lead: "kyra", Goal: "Review", Participants: parts("worker", "luke", "archie", "sage")})
	failed := f.drive(t, s)
	require.Equal(t, sessions.Failed, failed.Status)
	calls := failed.ModelCalls

	a, err := f.store.GetAgent(context.Background(), team, "archie")
	require.NoError(t, err)
	a.Model, a.Version = nil, a.Version+1
	require.NoError(t, f.store.UpdateAgent(context.Background(), a))
	r, err := f.svc.Resume(context.Background(), team, s.ID)
	require.NoError(t, err)
	assert.Equal(t, 2, r.Runs)
	assert.Equal(t, []string{s.ID, s.ID + "-r1"}, st.started)
	_, err = f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	assert.IsType(t, workflow.SessionNotRunnable{}, err, "the first run's execution cannot touch the resumed session")

	in := func(action string, it *workflow.SessionItem) workflow.SessionStepInput {
		return workflow.SessionStepInput{Action: action, TeamID: team, SessionID: s.ID, Run: 2, ExecutionARN: r.ExecutionARN, Item: it}
	}
	out, err := f.svc.Step(context.Background(), in(workflow.SessionBegin, nil))
	require.NoError(t, err)
	for _, it := range out.Items {
		_, err := f.svc.Step(context.Background(), in(workflow.SessionStage, &it))
		require.NoError(t, err)
	}
	for _, a := range []string{workflow.SessionSynthesize, workflow.SessionComplete} {
		_, err := f.svc.Step(context.Background(), in(a, nil))
		require.NoError(t, err)
	}
	done, err := f.svc.Get(context.Background(), team, s.ID)
	require.NoError(t, err)
	assert.Equal(t, sessions.Completed, done.Status)
	assert.Equal(t, calls+2, done.ModelCalls, "no model call for stage 1")
	assert.Equal(t, failed.StageOutputs[0], done.StageOutputs[0])
	_, err = f.svc.Resume(context.Background(), team, s.ID)
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(err))
}

func TestSweepEndsSessionsPastTheirDeadlineAndGrace(t *testing.T) {
	f := newFixture(t)
	st := withStarter(f)
	s := brainstorm(f, t, func(in *sessions.CreateInput) { in.MaxDurationSeconds = ptr(5) })
	_, err := f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	cur, _ := f.svc.Get(context.Background(), team, s.ID)
	f.svc.Now = func() time.Time { return cur.Deadline.Add(sessions.SweepGrace - time.Second) }
	n, err := f.svc.Sweep(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n)
	f.svc.Now = func() time.Time { return cur.Deadline.Add(sessions.SweepGrace + time.Second) }
	n, err = f.svc.Sweep(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	got, _ := f.svc.Get(context.Background(), team, s.ID)
	assert.Equal(t, sessions.TimedOut, got.Status)
	assert.Contains(t, st.stopped, "arn:brainstorm:"+s.ID)
	n, _ = f.svc.Sweep(context.Background())
	assert.Zero(t, n, "an ended session is not swept again")
}

// The first run's execution, ending late (its Catch path, with or without
// its run number), fails nothing of a session resumed under a new one.
func TestAnOldExecutionsFailureDoesNotEndTheResumedSession(t *testing.T) {
	f := newFixture(t)
	withStarter(f)
	f.script(t, "archie", "fail")
	s := f.create(t, sessions.CreateInput{Pattern: sessions.Pipeline, Lead: "kyra", Goal: "Review", Participants: parts("worker", "luke", "archie", "sage")})
	require.Equal(t, sessions.Failed, f.drive(t, s).Status)
	r, err := f.svc.Resume(context.Background(), team, s.ID)
	require.NoError(t, err)
	old := "arn:" + s.ID // the first run's execution, as drive began it
	require.NotEqual(t, old, r.ExecutionARN)
	_, err = f.svc.Step(context.Background(), workflow.SessionStepInput{Action: workflow.SessionBegin, TeamID: team, SessionID: s.ID, Run: 2, ExecutionARN: r.ExecutionARN})
	require.NoError(t, err)

	for _, run := range []int{1, 0} {
		_, err = f.svc.Step(context.Background(), workflow.SessionStepInput{Action: workflow.SessionFail, TeamID: team, SessionID: s.ID, Run: run,
			ExecutionARN: old, Error: workflow.StepError{Error: "States.TaskFailed", Cause: "late"}})
		assert.IsType(t, workflow.SessionNotRunnable{}, err, "run %d", run)
		got, err := f.svc.Get(context.Background(), team, s.ID)
		require.NoError(t, err)
		assert.Equal(t, sessions.Active, got.Status, "run %d: the resumed session is untouched", run)
	}
	// Its own execution's failure still ends it.
	_, err = f.svc.Step(context.Background(), workflow.SessionStepInput{Action: workflow.SessionFail, TeamID: team, SessionID: s.ID, Run: 2,
		ExecutionARN: r.ExecutionARN, Error: workflow.StepError{Error: "States.TaskFailed", Cause: "now"}})
	require.NoError(t, err)
	got, err := f.svc.Get(context.Background(), team, s.ID)
	require.NoError(t, err)
	assert.Equal(t, sessions.Failed, got.Status)
}

// A failed session resumes while some of its budget is left, a cent
// included; with the budget exactly spent it cannot.
func TestResumeNeedsBudgetLeft(t *testing.T) {
	for _, c := range []struct {
		spent float64
		ok    bool
	}{{0.39, true}, {0.40, false}} {
		f := newFixture(t)
		withStarter(f)
		f.script(t, "luke", "fail")
		cap := 0.40
		s := f.create(t, sessions.CreateInput{Pattern: sessions.Brainstorm, Lead: "kyra", Goal: "Ideas", Participants: parts("contributor", "luke", "archie"), MaxCostUSD: &cap})
		require.Equal(t, sessions.Failed, f.drive(t, s).Status)
		stored, err := f.store.GetSession(context.Background(), team, s.ID)
		require.NoError(t, err)
		stored.TotalCostUSD, stored.BudgetExhausted = c.spent, false
		stored.Version++
		require.NoError(t, f.store.PutSession(context.Background(), stored))

		_, err = f.svc.Resume(context.Background(), team, s.ID)
		if c.ok {
			assert.NoError(t, err, "$%.2f of $0.40 spent", c.spent)
			continue
		}
		ae, isApp := apperr.As(err)
		require.True(t, isApp, "$%.2f of $0.40 spent: %v", c.spent, err)
		assert.Equal(t, apperr.EREJECTED, ae.Code)
		assert.Equal(t, sessions.ReasonBudget, ae.Reason)
	}
}

// A create whose execution did not start is answered as created
// (planning): the reconciler starts it, by the same name, once it has
// been planning for more than StartGrace (not at exactly StartGrace), and
// looks at it again only after another StartGrace; a started session is
// left alone.
func TestACreateWhoseStartFailedIsStartedByTheReconciler(t *testing.T) {
	f := newFixture(t)
	st := withStarter(f)
	now := time.Now().UTC()
	f.svc.Now = func() time.Time { return now }
	st.failStart = true
	s := brainstorm(f, t, nil)
	assert.Equal(t, sessions.Planning, s.Status, "stored, answered as created")
	assert.Empty(t, s.ExecutionARN)
	st.failStart = false

	now = s.CreatedAt.Add(sessions.StartGrace)
	n, err := f.svc.Reconcile(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "exactly StartGrace: a create may still be running")
	now = now.Add(time.Second)
	n, err = f.svc.Reconcile(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{s.ID}, st.started, "by the run's name")
	n, err = f.svc.Reconcile(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "touched: not started again at the next sweep")

	_, err = f.step(s, workflow.SessionBegin, workflow.SessionItem{})
	require.NoError(t, err)
	now = now.Add(2 * sessions.StartGrace)
	n, err = f.svc.Reconcile(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "an active session is not the reconciler's")
	assert.Len(t, st.started, 1)
}

// A session whose execution never starts ends timed_out at the
// reconciler's first look after its deadline (the reconciler's, since a planning session is not in the sweep's
// index); a resume whose start failed is started like a create.
func TestASessionThatNeverStartsTimesOutAndAResumeIsReconciled(t *testing.T) {
	f := newFixture(t)
	st := withStarter(f)
	now := time.Now().UTC()
	f.svc.Now = func() time.Time { return now }
	st.failStart = true
	s := brainstorm(f, t, func(in *sessions.CreateInput) { in.MaxDurationSeconds = ptr(60) })
	for range 2 {
		now = now.Add(sessions.StartGrace + time.Second)
		_, err := f.svc.Reconcile(context.Background())
		require.NoError(t, err)
	}
	got, _ := f.svc.Get(context.Background(), team, s.ID)
	assert.Equal(t, sessions.Planning, got.Status, "42 s: tried again, before its 60 s deadline")
	// The first look after the deadline (the last touch + StartGrace).
	now = s.Deadline.Add(sessions.StartGrace)
	_, err := f.svc.Reconcile(context.Background())
	require.NoError(t, err)
	got, _ = f.svc.Get(context.Background(), team, s.ID)
	assert.Equal(t, sessions.TimedOut, got.Status)
	assert.Equal(t, sessions.ReasonTimeout, got.StatusReason)

	r, err := f.svc.Resume(context.Background(), team, s.ID)
	require.NoError(t, err)
	assert.Equal(t, sessions.Planning, r.Status)
	st.failStart = false
	now = now.Add(sessions.StartGrace + time.Second)
	n, err := f.svc.Reconcile(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{sessions.ExecutionName(s.ID, 2)}, st.started)
}
