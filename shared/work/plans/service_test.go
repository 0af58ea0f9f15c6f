package plans_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

const team = demo.TeamID

// machine records starts and wakes as Step Functions would.
type machine struct {
	mu     sync.Mutex
	starts []string
	woken  map[string]any
}

func (m *machine) Start(_ context.Context, sm, name string, _ any) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.starts = append(m.starts, sm+"/"+name)
	return "arn:" + sm + ":" + name, nil
}
func (m *machine) Stop(context.Context, string, string) error { return nil }
func (m *machine) ExecutionARN(sm, name string) string        { return "arn:" + sm + ":" + name }
func (m *machine) Succeed(_ context.Context, token string, out any) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.woken[token] = out
	return nil
}

type fixture struct {
	clock *memstore.Clock
	store *memstore.Store
	bus   *memstore.Publisher
	m     *machine
	tasks *tasks.Service
	svc   *plans.Service
}

func newFixture(t *testing.T) *fixture {
	store := memstore.New()
	require.NoError(t, demo.Seed(context.Background(), store))
	bus := &memstore.Publisher{}
	m := &machine{woken: map[string]any{}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ts := tasks.NewService(store, nil, bus, log)
	ts.Callbacks = m
	clk := memstore.NewClock(time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC))
	svc := &plans.Service{Store: store, Tasks: ts, Model: localmodelwiring.New(store), Workflows: m, Callbacks: m, Bus: bus, Log: log,
		Now: clk.Now}
	return &fixture{clock: clk, store: store, bus: bus, m: m, tasks: ts, svc: svc}
}

func (f *fixture) step(t *testing.T, in workflow.PlanStepInput) workflow.PlanStepOutput {
	t.Helper()
	in.TeamID = team
	out, err := f.svc.Step(context.Background(), in)
	require.NoError(t, err, "%s %d", in.Action, in.StepID)
	return out
}

// finish runs a started step's task to its end (the delegation machine's
// part), as its agent would.
func (f *fixture) finish(t *testing.T, taskID, result, failure string) {
	t.Helper()
	ctx := context.Background()
	_, err := f.tasks.Start(ctx, team, taskID, "execution")
	require.NoError(t, err)
	if failure != "" {
		_, err = f.tasks.Fail(ctx, team, taskID, "execution", failure)
	} else {
		_, err = f.tasks.Complete(ctx, team, taskID, "execution", result, nil)
	}
	require.NoError(t, err)
}

func threeSteps() plans.ExecutionPlan {
	return plans.ExecutionPlan{IsCompound: true, Reasoning: "review, then notes and a security read", Steps: []plans.Step{
		{StepID: 1, Target: "luke/code_review", SubQuery: "Review the handler for bugs"},
		{StepID: 2, Target: "sage/security_review", SubQuery: "Check the handler for security issues"},
		{StepID: 3, Target: "wren/writing", SubQuery: "Write release notes for the fix", DependsOn: []int{1, 2}},
	}}
}

// A plan runs as its machine would: the first round's two steps in
// parallel as children of the root, the third after them with their
// results bridged into its context, the lead's synthesis naming each
// contributor, and the root completed with it.
func TestAPlanRunsItsStepsInRoundsAndSynthesizes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, err := f.svc.Start(ctx, team, "", "kyra", "Review the handler, then write release notes", "a multi-step request", threeSteps())
	require.NoError(t, err)
	assert.Equal(t, []string{"plan/" + p.ID}, f.m.starts, "the execution is named by the plan id")
	arn := "arn:plan:" + p.ID

	out := f.step(t, workflow.PlanStepInput{Action: workflow.PlanBegin, PlanID: p.ID, ExecutionARN: arn})
	assert.Equal(t, []workflow.PlanItem{{StepID: 1}, {StepID: 2}}, out.Ready, "1 and 2 depend on nothing: one round")
	results := map[int]string{1: "two bugs: a nil map and a leaked file", 2: "one issue: the token is logged"}
	for _, id := range []int{1, 2} {
		started := f.step(t, workflow.PlanStepInput{Action: workflow.PlanStartStep, PlanID: p.ID, StepID: id})
		again := f.step(t, workflow.PlanStepInput{Action: workflow.PlanStartStep, PlanID: p.ID, StepID: id})
		assert.Equal(t, started.TaskID, again.TaskID, "a retried start creates no second task")
		child, err := f.tasks.Get(ctx, team, started.TaskID)
		require.NoError(t, err)
		assert.Equal(t, p.RootTaskID, child.ParentID)
		assert.Equal(t, 1, child.Depth)
		f.step(t, workflow.PlanStepInput{Action: workflow.PlanAwaitStep, PlanID: p.ID, StepID: id, TaskToken: "tok-" + started.TaskID})
		f.finish(t, started.TaskID, results[id], "")
		assert.Contains(t, f.m.woken, "tok-"+started.TaskID, "the step's end wakes its waiting state")
		f.step(t, workflow.PlanStepInput{Action: workflow.PlanEndStep, PlanID: p.ID, StepID: id})
	}
	out = f.step(t, workflow.PlanStepInput{Action: workflow.PlanNext, PlanID: p.ID})
	assert.Equal(t, []workflow.PlanItem{{StepID: 3}}, out.Ready)
	third := f.step(t, workflow.PlanStepInput{Action: workflow.PlanStartStep, PlanID: p.ID, StepID: 3})
	child, err := f.tasks.Get(ctx, team, third.TaskID)
	require.NoError(t, err)
	assert.Contains(t, child.Context, "prior_step_1_response: "+results[1])
	assert.Contains(t, child.Context, "prior_step_2_response: "+results[2])
	f.step(t, workflow.PlanStepInput{Action: workflow.PlanAwaitStep, PlanID: p.ID, StepID: 3, TaskToken: "tok-3"})
	f.finish(t, third.TaskID, "Release notes: fixed two bugs and a logged token.", "")
	f.step(t, workflow.PlanStepInput{Action: workflow.PlanEndStep, PlanID: p.ID, StepID: 3})
	out = f.step(t, workflow.PlanStepInput{Action: workflow.PlanNext, PlanID: p.ID})
	assert.False(t, out.More)

	f.step(t, workflow.PlanStepInput{Action: workflow.PlanSynthesize, PlanID: p.ID})
	done := f.step(t, workflow.PlanStepInput{Action: workflow.PlanComplete, PlanID: p.ID})
	assert.Equal(t, "completed", done.Status)
	got, err := f.svc.Get(ctx, team, p.ID)
	require.NoError(t, err)
	assert.NotEmpty(t, got.Synthesis)
	root, err := f.tasks.Get(ctx, team, p.RootTaskID)
	require.NoError(t, err)
	assert.Equal(t, tasks.Completed, root.Status)
	assert.Equal(t, got.Synthesis, root.Result)
	assert.Len(t, f.bus.OfType("PlanCompleted"), 1)
	assert.Len(t, f.bus.OfType("PlanStepCompleted"), 3)
	for _, s := range got.Steps {
		assert.Equal(t, plans.StepCompleted, s.Status)
	}
}

// A failed step fails the steps that depend on it; the others run and
// the plan ends partial with what succeeded.
func TestAFailedStepEndsThePlanPartial(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, err := f.svc.Start(ctx, team, "", "kyra", "x", "t", threeSteps())
	require.NoError(t, err)
	arn := "arn:plan:" + p.ID
	f.step(t, workflow.PlanStepInput{Action: workflow.PlanBegin, PlanID: p.ID, ExecutionARN: arn})
	for id, failure := range map[int]string{1: "", 2: "the agent gave up"} {
		st := f.step(t, workflow.PlanStepInput{Action: workflow.PlanStartStep, PlanID: p.ID, StepID: id})
		f.finish(t, st.TaskID, "fine", failure)
		f.step(t, workflow.PlanStepInput{Action: workflow.PlanEndStep, PlanID: p.ID, StepID: id})
	}
	out := f.step(t, workflow.PlanStepInput{Action: workflow.PlanNext, PlanID: p.ID})
	assert.Empty(t, out.Ready, "step 3 depends on the failed step 2")
	f.step(t, workflow.PlanStepInput{Action: workflow.PlanSynthesize, PlanID: p.ID})
	done := f.step(t, workflow.PlanStepInput{Action: workflow.PlanComplete, PlanID: p.ID})
	assert.Equal(t, "partial", done.Status)
	got, err := f.svc.Get(ctx, team, p.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{plans.StepCompleted, plans.StepFailed, plans.StepSkipped}, []string{got.Steps[0].Status, got.Steps[1].Status, got.Steps[2].Status})
	assert.Contains(t, got.Steps[2].Error, "step 2")
}

// A plan whose machine was lost is failed by the sweeper once past its
// backstop (the machine's timeout and a grace), not a second before; no
// task of it stays open and the conversation is told.
func TestTheSweeperFailsAPlanWhoseMachineWasLost(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, err := f.svc.Start(ctx, team, "", "kyra", "x", "t", threeSteps())
	require.NoError(t, err)
	f.step(t, workflow.PlanStepInput{Action: workflow.PlanBegin, PlanID: p.ID, ExecutionARN: "arn:plan:" + p.ID})
	st := f.step(t, workflow.PlanStepInput{Action: workflow.PlanStartStep, PlanID: p.ID, StepID: 1})

	f.clock.Advance(workflow.PlanMaxSeconds*time.Second + plans.SweepGrace)
	n, err := f.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "exactly at the backstop: not yet")
	f.clock.Advance(time.Second)
	n, err = f.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	got, err := f.svc.Get(ctx, team, p.ID)
	require.NoError(t, err)
	assert.Equal(t, plans.Failed, got.Status)
	assert.Contains(t, got.Error, "PlanTimedOut")
	step, err := f.tasks.Get(ctx, team, st.TaskID)
	require.NoError(t, err)
	assert.Equal(t, tasks.Canceled, step.Status, "its running step is cancelled")
	root, err := f.tasks.Get(ctx, team, p.RootTaskID)
	require.NoError(t, err)
	assert.True(t, root.Status.Terminal(), "its root ended: %s", root.Status)
	assert.Len(t, f.bus.OfType("PlanCompleted"), 1)
	n, err = f.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a failed plan is not swept again")
}

// failingStart's StartExecution fails (Step Functions stalled or down).
type failingStart struct{ *machine }

func (failingStart) Start(context.Context, string, string, any) (string, error) {
	return "", errors.New("states: connection reset")
}

// A plan whose StartExecution failed is answered as started and left
// running; the sweep starts its execution, by the plan's id, once
// StartGrace has passed (not at it), and again each sweep until its
// machine begins; once begun, its backstop is the sweep's bound again.
func TestTheSweepStartsAPlanWhoseExecutionDidNotStart(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.svc.Workflows = failingStart{f.m}
	p, err := f.svc.Start(ctx, team, "", "kyra", "x", "t", threeSteps())
	require.NoError(t, err, "stored: the sweep starts it")
	assert.Equal(t, plans.Running, p.Status)
	assert.Empty(t, f.m.starts)
	f.svc.Workflows = f.m

	f.clock.Advance(plans.StartGrace)
	_, err = f.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Empty(t, f.m.starts, "exactly at the grace: not yet")
	f.clock.Advance(time.Second)
	n, err := f.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "started, not ended")
	assert.Equal(t, []string{"plan/" + p.ID}, f.m.starts, "started by the plan's id")
	f.clock.Advance(time.Minute)
	_, err = f.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Len(t, f.m.starts, 2, "not begun yet: started again (the same name answers the same execution)")

	f.step(t, workflow.PlanStepInput{Action: workflow.PlanBegin, PlanID: p.ID, ExecutionARN: "arn:plan:" + p.ID})
	f.clock.Advance(time.Minute)
	_, err = f.svc.Sweep(ctx)
	require.NoError(t, err)
	assert.Len(t, f.m.starts, 2, "begun: left to its machine")
	got, err := f.svc.Get(ctx, team, p.ID)
	require.NoError(t, err)
	assert.Equal(t, plans.Running, got.Status)
}

// A plan a person's turn starts works for them: the plan, its root task
// and each step's task record the user id.
func TestAPlanRecordsThePersonItWorksFor(t *testing.T) {
	f := newFixture(t)
	ctx := authctx.WithCaller(context.Background(), authctx.Caller{UserID: "alice", Role: authctx.RoleMember})
	p, err := f.svc.Start(ctx, team, "", "kyra", "x", "t", threeSteps())
	require.NoError(t, err)
	got, err := f.svc.Get(context.Background(), team, p.ID)
	require.NoError(t, err)
	assert.Equal(t, "alice", got.UserID)
	root, err := f.tasks.Get(context.Background(), team, p.RootTaskID)
	require.NoError(t, err)
	assert.Equal(t, "alice", root.UserID)
	f.step(t, workflow.PlanStepInput{Action: workflow.PlanBegin, PlanID: p.ID, ExecutionARN: "arn:plan:" + p.ID})
	started := f.step(t, workflow.PlanStepInput{Action: workflow.PlanStartStep, PlanID: p.ID, StepID: 1})
	step, err := f.tasks.Get(context.Background(), team, started.TaskID)
	require.NoError(t, err)
	assert.Equal(t, "alice", step.UserID, "a step's task, started by the machine, works for the same person")
}
