package worker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

type agentMap map[string]agents.Agent

func (m agentMap) GetAgent(_ context.Context, team, slug string) (agents.Agent, error) {
	a, ok := m[team+"/"+slug]
	if !ok {
		return agents.Agent{}, apperr.NotFound("agent", slug)
	}
	return a, nil
}

type echoTools struct{ calls int }

func (e *echoTools) Specs(agents.Agent) []models.Tool {
	return []models.Tool{{Name: "check_task_status", Description: "status of a task"}}
}
func (e *echoTools) Call(context.Context, workflow.TaskInput, models.ToolCall) (string, error) {
	e.calls++
	return "running", nil
}

func agent(slug, script string, status string) agents.Agent {
	return agents.Agent{TeamID: "t", Slug: slug, Name: slug, Status: status, Model: &agents.Model{Provider: "local", Script: script},
		Skills: []agents.Skill{{Name: "code-review", Description: "x"}}}
}

func newWorker(tools worker.Tools) *worker.Worker {
	dir := agentMap{
		"t/ok":      agent("ok", "", agents.StatusActive),
		"t/fail":    agent("fail", "fail", agents.StatusActive),
		"t/tools3":  agent("tools3", "tools:3", agents.StatusActive),
		"t/tools11": agent("tools11", "tools:11", agents.StatusActive),
		"t/verbose": agent("verbose", "tokens:5000", agents.StatusActive),
		"t/slow":    agent("slow", "timeout", agents.StatusActive),
		"t/paused":  agent("paused", "", agents.StatusPaused),
	}
	// The local model reads each agent's script from the same directory.
	return &worker.Worker{Model: localmodelwiring.New(dir), Tools: tools, Agents: dir}
}

func payload(assignee string) workflow.TaskInput {
	return workflow.TaskInput{TeamID: "t", TaskID: "task_1", Assignee: assignee, Title: "t", Instructions: "review the parser"}
}

func TestRunAnswersWithinBudgets(t *testing.T) {
	res, err := newWorker(nil).Run(context.Background(), payload("ok"))
	require.NoError(t, err)
	assert.Equal(t, "task_1", res.TaskID)
	assert.Contains(t, res.Output, "review the parser")
	assert.Positive(t, res.TokensUsed)
	assert.LessOrEqual(t, res.TokensUsed, workflow.MaxTaskTokens)
}

func TestToolCallsWithinTheLimitRun(t *testing.T) {
	tools := &echoTools{}
	res, err := newWorker(tools).Run(context.Background(), payload("tools3"))
	require.NoError(t, err)
	assert.Equal(t, 3, res.ToolCalls)
	assert.Equal(t, 3, tools.calls)
}

func TestTheEleventhToolCallIsRefused(t *testing.T) {
	tools := &echoTools{}
	res, err := newWorker(tools).Run(context.Background(), payload("tools11"))
	var be workflow.BudgetExceeded
	require.ErrorAs(t, err, &be)
	assert.Contains(t, be.Msg, "more than 10 tool calls")
	assert.Equal(t, 10, tools.calls, "exactly the budget ran")
	assert.Equal(t, 10, res.ToolCalls)
}

func TestABudgetAboveTheCapIsClamped(t *testing.T) {
	tools := &echoTools{}
	p := payload("tools11")
	p.Budgets.MaxToolCalls = 50
	_, err := newWorker(tools).Run(context.Background(), p)
	require.ErrorAs(t, err, new(workflow.BudgetExceeded))
	assert.Equal(t, 10, tools.calls)
}

func TestTokensOverTheBudgetStopTheTask(t *testing.T) {
	_, err := newWorker(nil).Run(context.Background(), payload("verbose"))
	var be workflow.BudgetExceeded
	require.ErrorAs(t, err, &be)
	assert.Contains(t, be.Msg, "of 4000 tokens")

	p := payload("ok")
	p.Budgets.MaxTokens = 10
	_, err = newWorker(nil).Run(context.Background(), p)
	require.ErrorAs(t, err, &be, "a smaller task budget is honoured")
}

func TestFailuresAreTyped(t *testing.T) {
	_, err := newWorker(nil).Run(context.Background(), payload("fail"))
	assert.ErrorAs(t, err, new(workflow.ModelFailed))
	_, err = newWorker(nil).Run(context.Background(), payload("paused"))
	assert.ErrorAs(t, err, new(workflow.InvalidTask))
	_, err = newWorker(nil).Run(context.Background(), payload("ghost"))
	assert.ErrorAs(t, err, new(workflow.InvalidTask))
	p := payload("ok")
	p.Instructions = " "
	_, err = newWorker(nil).Run(context.Background(), p)
	assert.ErrorAs(t, err, new(workflow.InvalidTask))
}

func TestDeadlineEndsAHangingModel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := newWorker(nil).Run(ctx, payload("slow"))
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
}

func BenchmarkRunLocalModel(b *testing.B) {
	w := newWorker(nil)
	p := payload("ok")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Run(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// fakeTracker stands in for the task record: it says whether the task is
// running and collects what the worker records.
type fakeTracker struct {
	mu       sync.Mutex
	running  bool
	deadline time.Time
	events   []string
	usage    worker.Usage
	stopAt   string // tool_call: the task is canceled when the first tool is called
}

func (f *fakeTracker) Begin(context.Context, workflow.TaskInput) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.running {
		return time.Time{}, worker.ErrNotRunnable
	}
	return f.deadline, nil
}

func (f *fakeTracker) Record(_ context.Context, _ workflow.TaskInput, u worker.Usage, evs ...worker.TrackEvent) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.running {
		return worker.ErrNotRunnable
	}
	for _, e := range evs {
		f.events = append(f.events, e.Type)
		if e.Type == f.stopAt {
			f.running = false
		}
	}
	f.usage.Tokens += u.Tokens
	f.usage.ToolCalls += u.ToolCalls
	return nil
}

func (f *fakeTracker) StillRunning(context.Context, workflow.TaskInput) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running, nil
}

func (f *fakeTracker) cancel() {
	f.mu.Lock()
	f.running = false
	f.mu.Unlock()
}

func TestRunRecordsAttemptsAndToolCalls(t *testing.T) {
	tr := &fakeTracker{running: true}
	w := newWorker(&echoTools{})
	w.Tracker = tr
	res, err := w.Run(context.Background(), payload("tools3"))
	require.NoError(t, err)
	assert.Equal(t, []string{"progress", "tool_call", "tool_result", "tool_call", "tool_result", "tool_call", "tool_result", "progress"}, tr.events)
	assert.Equal(t, res.TokensUsed, tr.usage.Tokens, "the attempt's usage is recorded once")
	assert.Equal(t, 3, tr.usage.ToolCalls)
}

func TestRunRefusesATaskThatIsNotRunning(t *testing.T) {
	w := newWorker(nil)
	w.Tracker = &fakeTracker{running: false}
	_, err := w.Run(context.Background(), payload("ok"))
	var nr workflow.TaskNotRunnable
	require.ErrorAs(t, err, &nr)
}

func TestRunStopsAtTheNextStepAfterCancel(t *testing.T) {
	tr := &fakeTracker{running: true, stopAt: "tool_call"}
	w := newWorker(&echoTools{})
	w.Tracker = tr
	_, err := w.Run(context.Background(), payload("tools3"))
	var nr workflow.TaskNotRunnable
	require.ErrorAs(t, err, &nr)
	assert.Equal(t, []string{"progress", "tool_call"}, tr.events, "nothing runs after the cancel is seen")
}

func TestRunStopsAModelCallWhenTheTaskIsCanceled(t *testing.T) {
	tr := &fakeTracker{running: true, deadline: time.Now().Add(time.Minute)}
	w := newWorker(nil)
	w.Tracker = tr
	go func() { time.Sleep(50 * time.Millisecond); tr.cancel() }()
	_, err := w.Run(context.Background(), payload("slow"))
	var nr workflow.TaskNotRunnable
	require.ErrorAs(t, err, &nr, "the watcher ends a blocked model call instead of waiting for the deadline")
}

func TestRunEndsAtTheTaskDeadline(t *testing.T) {
	tr := &fakeTracker{running: true, deadline: time.Now().Add(100 * time.Millisecond)}
	w := newWorker(nil)
	w.Tracker = tr
	p := payload("slow")
	p.Budgets.TimeoutSeconds = 1
	_, err := w.Run(context.Background(), p)
	var to workflow.TaskTimedOut
	require.ErrorAs(t, err, &to)
	assert.Equal(t, "progress", tr.events[len(tr.events)-1], "the failed attempt is recorded after the deadline")
}

// delegating is a delegate_task that waits: it asks the worker to stop.
type delegating struct{}

func (delegating) Specs(agents.Agent) []models.Tool {
	return []models.Tool{{Name: "delegate_task", Description: "delegate and wait"}}
}
func (delegating) Call(context.Context, workflow.TaskInput, models.ToolCall) (string, error) {
	return "", worker.WaitFor{ChildTaskID: "task_child"}
}

// A tool that waits for a delegated task stops the attempt with its saved
// conversation (nothing polls); the resumed attempt gets the child's
// outcome as the tool's answer and keeps counting the task's budgets.
func TestWaitingForADelegatedTaskSuspendsAndResumes(t *testing.T) {
	w := newWorker(delegating{})
	w.Agents.(agentMap)["t/boss"] = agent("boss", "delegate:luke", agents.StatusActive)
	p := payload("boss")

	first, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	require.NotNil(t, first.Waiting, "the worker stopped to wait")
	assert.Equal(t, "task_child", first.Waiting.ChildTaskID)
	assert.Empty(t, first.Output)
	assert.Equal(t, 1, first.ToolCalls)
	assert.Positive(t, first.TokensUsed)

	p.Resume = &workflow.Resume{State: first.Waiting.State,
		Child: workflow.ChildOutcome{TaskID: "task_child", Status: "completed", Summary: "task task_child by luke completed: two issues"}}
	second, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Nil(t, second.Waiting)
	assert.Contains(t, second.Output, "Delegated work: task task_child by luke completed: two issues")
	assert.Equal(t, 1, second.ToolCalls, "the resumed attempt does not call the tool again")
	assert.Greater(t, second.TokensUsed, first.TokensUsed, "usage spans both attempts")

	p.Resume.State = []byte(`{}`)
	_, err = w.Run(context.Background(), p)
	assert.IsType(t, workflow.InvalidTask{}, err, "a resume without its saved state cannot run")
}
