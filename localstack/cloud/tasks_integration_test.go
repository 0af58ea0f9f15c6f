//go:build integration

// Tasks and delegation against the local cloud: the real table with its
// conditional transactions, the delegation state machine executed by moto
// calling the Go handlers through the edge, the dead-letter queue and the bus.
package cloud_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/events"
	"github.com/conclave-ai/conclave/shared/aws/eventbus"
	"github.com/conclave-ai/conclave/shared/aws/executions"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/activity"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

var user = tasks.Creator{Type: "user", ID: "key_test"}

func taskService(t *testing.T, e env) (*tasks.Service, *sfn.Client) {
	t.Helper()
	c := sfn.NewFromConfig(e.cfg)
	out, err := c.ListStateMachines(context.Background(), &sfn.ListStateMachinesInput{})
	require.NoError(t, err)
	arn := ""
	for _, sm := range out.StateMachines {
		if aws.ToString(sm.Name) == e.names.StateMachine("delegation") {
			arn = aws.ToString(sm.StateMachineArn)
		}
	}
	require.NotEmpty(t, arn, "the delegation state machine is provisioned")
	bus := &eventbus.Bus{Client: eventbridge.NewFromConfig(e.cfg), Name: e.names.Bus()}
	return tasks.NewService(e.db.tasks, &executions.Starter{Client: c, ARNs: map[string]string{workflow.Delegation: arn}}, bus, slog.Default()), c
}

func ptr[T any](v T) *T { return &v }

// waitTask waits until the task is terminal.
func waitTask(t *testing.T, svc *tasks.Service, team, id string, within time.Duration) tasks.Task {
	t.Helper()
	got, err := svc.Wait(context.Background(), team, id, within)
	require.NoError(t, err)
	require.True(t, got.Status.Terminal(), "task %s still %s after %s", id, got.Status, within)
	return got
}

// waitExecution waits until the execution has ended and returns its history.
func waitExecution(t *testing.T, c *sfn.Client, arn string) (*sfn.DescribeExecutionOutput, []sfntypes.HistoryEvent) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		d, err := c.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: &arn})
		require.NoError(t, err)
		if d.Status != sfntypes.ExecutionStatusRunning {
			h, err := c.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: &arn, MaxResults: 1000})
			require.NoError(t, err)
			return d, h.Events
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("execution %s did not end within 60s", arn)
	return nil, nil
}

func statesEntered(history []sfntypes.HistoryEvent) []string {
	var out []string
	for _, h := range history {
		if h.StateEnteredEventDetails != nil {
			out = append(out, aws.ToString(h.StateEnteredEventDetails.Name))
		}
	}
	return out
}

func eventTypes(t tasks.Task) []string {
	var out []string
	for _, e := range t.Events {
		out = append(out, e.Type)
	}
	return out
}

func countEvents(t tasks.Task, typ, message string) int {
	n := 0
	for _, e := range t.Events {
		if e.Type == typ && (message == "" || e.Payload["message"] == message) {
			n++
		}
	}
	return n
}

func load(t *testing.T, svc *tasks.Service, team, slug string) int {
	t.Helper()
	n, err := svc.Load(context.Background(), team, slug)
	require.NoError(t, err)
	return n.Active
}

// holdSlots gives slug n tasks that hold its slots and stay queued: tasks
// delegated (not executed) from a running work item of by's. Work items
// hold no slot, and executed tasks would run and end.
func holdSlots(t *testing.T, svc *tasks.Service, team, by, slug string, n int) []tasks.Task {
	t.Helper()
	ctx := context.Background()
	parent, err := svc.Create(ctx, team, user, tasks.CreateInput{Assignee: by, Title: "coordinate"}, false)
	require.NoError(t, err)
	_, err = svc.Start(ctx, team, parent.ID, "user:key_test")
	require.NoError(t, err)
	out := make([]tasks.Task, n)
	for i := range n {
		out[i], err = svc.Create(ctx, team, user, tasks.CreateInput{Assignee: slug, ParentID: parent.ID, Title: fmt.Sprintf("held %d", i), Execute: ptr(false)}, false)
		require.NoError(t, err, "task %d of %s", i+1, slug)
	}
	return out
}

func executed(team, assignee, title string, timeout int) tasks.CreateInput {
	return tasks.CreateInput{
		Assignee: assignee, Title: title, Instructions: "Review the error handling of the payment handler",
		ExpectedOutput: "a list of findings", Budgets: &tasks.BudgetsInput{TimeoutSeconds: ptr(timeout)}, Execute: ptr(true),
	}
}

// A task executes through the delegation state machine: marked running by
// the execution named after it, the worker answers, the result, tokens and
// cost are recorded, the slot is released and the change is on the bus.
func TestExecutedTaskCompletes(t *testing.T) {
	e := mustEnv(t)
	team := mustTeam(t, e)
	mustAgent(t, e, team, "luke", nil)
	svc, c := taskService(t, e)
	ctx := context.Background()

	created, err := svc.Create(ctx, team, user, executed(team, "luke", "Review the handler", 30), false)
	require.NoError(t, err)
	done := waitTask(t, svc, team, created.ID, 30*time.Second)
	assert.Equal(t, tasks.Completed, done.Status)
	assert.Contains(t, done.Result, "payment handler")
	assert.Positive(t, done.TokensUsed)
	assert.Equal(t, []string{"created", "started", "progress", "progress", "completed"}, eventTypes(done))
	assert.Zero(t, load(t, svc, team, "luke"), "the slot is released with the terminal transition")

	d, _ := waitExecution(t, c, done.Execution)
	assert.Equal(t, sfntypes.ExecutionStatusSucceeded, d.Status)
	assert.Equal(t, created.ID, aws.ToString(d.Name), "the execution is named after the task")

	en := waitActivity(t, e, team, func(en activity.Entry) bool {
		return en.DetailType == "TaskStatusChanged" && detailField(t, en, "status") == "completed"
	})
	assert.NoError(t, events.Validate(en.DetailType, en.Detail), "published events match their schema")
}

// A worker that keeps failing: two retries, the full payload in the
// dead-letter queue, the task failed, and its events show each attempt.
func TestFailingWorkerRetriesTwiceThenDeadLetters(t *testing.T) {
	e := mustSerialEnv(t) // it waits on a shared dead-letter queue or the invocation log
	team := mustTeam(t, e)
	mustAgent(t, e, team, "flaky", &agents.Model{Provider: "local", Script: "fail"})
	svc, c := taskService(t, e)

	created, err := svc.Create(context.Background(), team, user, executed(team, "flaky", "Flaky work", 30), false)
	require.NoError(t, err)
	done := waitTask(t, svc, team, created.ID, 40*time.Second)
	assert.Equal(t, tasks.Failed, done.Status)
	assert.Contains(t, done.Error, "ModelFailed")
	assert.Equal(t, 3, countEvents(done, "progress", "attempt started"), "one attempt and two retries")
	assert.Equal(t, 3, countEvents(done, "progress", "attempt failed"))
	assert.Equal(t, 1, countEvents(done, "dead_lettered", ""))
	assert.Equal(t, "failed", done.Events[len(done.Events)-1].Type)
	assert.Zero(t, load(t, svc, team, "flaky"))

	d, history := waitExecution(t, c, done.Execution)
	require.Equal(t, sfntypes.ExecutionStatusFailed, d.Status)
	assert.Equal(t, "TaskFailed", aws.ToString(d.Error))
	attempts := 0
	for _, h := range history {
		if h.Type == sfntypes.HistoryEventTypeTaskFailed && h.TaskFailedEventDetails != nil && aws.ToString(h.TaskFailedEventDetails.Error) == "ModelFailed" {
			attempts++
		}
	}
	assert.Equal(t, 3, attempts, "the state machine ran the worker three times")

	body := waitDeadLetter(t, e, created.ID)
	var got struct {
		workflow.TaskInput
		Error struct{ Error, Cause string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	assert.Equal(t, workflow.TaskInput{
		TeamID: team, TaskID: created.ID, Assignee: "flaky", Title: "Flaky work",
		Instructions: "Review the error handling of the payment handler", ExpectedOutput: "a list of findings",
		RootTaskID: created.ID, // a root task is its own root (the clipboard's scope)
		Budgets:    workflow.Budgets{MaxTokens: 4000, MaxToolCalls: 10, TimeoutSeconds: 30},
		// No model_tier asked: the task's own, by its complexity (auto).
		ModelTier: "tier_0",
	}, got.TaskInput, "the full task payload is in the dead-letter queue")
	assert.Equal(t, "ModelFailed", got.Error.Error)

	en := waitActivity(t, e, team, func(en activity.Entry) bool {
		return en.DetailType == "TaskStatusChanged" && detailField(t, en, "status") == "failed"
	})
	assert.NoError(t, events.Validate(en.DetailType, en.Detail))
}

// A worker that overruns its timeout ends timed_out, without retries.
func TestWorkerOverrunningTimeoutEndsTimedOut(t *testing.T) {
	e := mustSerialEnv(t) // it waits on a shared dead-letter queue or the invocation log
	team := mustTeam(t, e)
	mustAgent(t, e, team, "sloth", &agents.Model{Provider: "local", Script: "timeout"})
	svc, c := taskService(t, e)

	created, err := svc.Create(context.Background(), team, user, executed(team, "sloth", "Slow work", 2), false)
	require.NoError(t, err)
	done := waitTask(t, svc, team, created.ID, 30*time.Second)
	assert.Equal(t, tasks.TimedOut, done.Status)
	assert.Equal(t, 1, countEvents(done, "progress", "attempt started"), "a timeout is final")
	assert.Zero(t, load(t, svc, team, "sloth"))
	d, _ := waitExecution(t, c, done.Execution)
	assert.Equal(t, sfntypes.ExecutionStatusFailed, d.Status)
	body := waitDeadLetter(t, e, created.ID)
	assert.Contains(t, body, created.ID)
}

// A worker that asks for more than 10 tool calls or 4000 tokens is stopped
// at the limit and the task's error says so.
func TestWorkerBudgetsStopTheTask(t *testing.T) {
	e := mustEnv(t)
	team := mustTeam(t, e)
	mustAgent(t, e, team, "tooly", &agents.Model{Provider: "local", Script: "tools:11"})
	mustAgent(t, e, team, "wordy", &agents.Model{Provider: "local", Script: "tokens:5000"})
	mustAgent(t, e, team, "tidy", &agents.Model{Provider: "local", Script: "tools:10"})
	svc, _ := taskService(t, e)
	ctx := context.Background()

	tooly, err := svc.Create(ctx, team, user, executed(team, "tooly", "Many tools", 30), false)
	require.NoError(t, err)
	wordy, err := svc.Create(ctx, team, user, executed(team, "wordy", "Many words", 30), false)
	require.NoError(t, err)
	tidy, err := svc.Create(ctx, team, user, executed(team, "tidy", "Exactly ten tools", 30), false)
	require.NoError(t, err)

	got := waitTask(t, svc, team, tooly.ID, 30*time.Second)
	assert.Equal(t, tasks.Failed, got.Status)
	assert.Contains(t, got.Error, "BudgetExceeded: tool call budget exceeded")
	assert.Equal(t, 10, got.ToolCalls, "stopped at the limit, not after it")
	assert.Equal(t, 10, countEvents(got, "tool_call", ""))
	assert.Equal(t, 1, countEvents(got, "progress", "attempt started"), "a budget error is not retried")

	got = waitTask(t, svc, team, wordy.ID, 30*time.Second)
	assert.Equal(t, tasks.Failed, got.Status)
	assert.Contains(t, got.Error, "BudgetExceeded: token budget exceeded")
	assert.Greater(t, got.TokensUsed, 4000, "the tokens spent are recorded")

	got = waitTask(t, svc, team, tidy.ID, 30*time.Second)
	assert.Equal(t, tasks.Completed, got.Status, "ten tool calls are within the budget")
	assert.Equal(t, 10, got.ToolCalls)
}

// Cancel during a running task ends canceled and stops the execution.
func TestCancelStopsTheExecution(t *testing.T) {
	e := mustEnv(t)
	team := mustTeam(t, e)
	mustAgent(t, e, team, "sloth", &agents.Model{Provider: "local", Script: "timeout"})
	svc, c := taskService(t, e)
	ctx := context.Background()

	created, err := svc.Create(ctx, team, user, executed(team, "sloth", "Long work", 60), false)
	require.NoError(t, err)
	var running tasks.Task
	require.Eventually(t, func() bool {
		running, err = svc.Get(ctx, team, created.ID)
		return err == nil && running.Status == tasks.Running && countEvents(running, "progress", "attempt started") == 1
	}, 20*time.Second, 100*time.Millisecond, "the worker is running")

	canceled, err := svc.Cancel(ctx, team, created.ID, "user:key_test", "no longer needed")
	require.NoError(t, err)
	assert.Equal(t, tasks.Canceled, canceled.Status)
	assert.Zero(t, load(t, svc, team, "sloth"))

	// The cancel stops the execution: in AWS it ends ABORTED at once;
	// moto lets the state under way finish and then ends the stopped
	// execution FAILED, with the stop's error or the worker's own
	// (TaskNotRunnable: it noticed the cancel). If the
	// stop raced the worker noticing the cancel (within a second), the
	// execution may instead end on its Superseded state. In every case it
	// never marks the task.
	d, history := waitExecution(t, c, canceled.Execution)
	switch d.Status {
	case sfntypes.ExecutionStatusAborted:
	case sfntypes.ExecutionStatusFailed:
		assert.Contains(t, []string{"Canceled", "TaskNotRunnable"}, aws.ToString(d.Error), "stopped by the cancel")
	default:
		assert.Equal(t, sfntypes.ExecutionStatusSucceeded, d.Status)
		assert.Equal(t, []string{"MarkRunning", "RunTask", "Superseded"}, statesEntered(history), "the execution ended without marking the task")
	}
	assert.NotContains(t, statesEntered(history), "MarkCompleted")
	assert.NotContains(t, statesEntered(history), "MarkFailed")
	require.NotNil(t, d.StopDate)
	assert.True(t, d.StopDate.Before(*running.Deadline), "the work stopped on cancel, not at the task's deadline")
	final, err := svc.Get(ctx, team, created.ID)
	require.NoError(t, err)
	assert.Equal(t, tasks.Canceled, final.Status, "nothing changes a canceled task afterwards")
	en := waitActivity(t, e, team, func(en activity.Entry) bool {
		return en.DetailType == "TaskStatusChanged" && detailField(t, en, "status") == "canceled"
	})
	assert.Equal(t, "sloth", detailField(t, en, "assignee"), "the assignee is notified")
}

// An execution that ends without its Catch running (stopped here; a timed
// out execution is the same) leaves the task running: the sweeper ends it
// timed_out once its deadline has passed, and releases the slot.
func TestSweeperEndsTasksWhoseExecutionIsGone(t *testing.T) {
	e := mustSerialEnv(t)
	team := mustTeam(t, e)
	mustAgent(t, e, team, "sloth", &agents.Model{Provider: "local", Script: "timeout"})
	svc, c := taskService(t, e)
	ctx := context.Background()

	// The sweeper runs on a clock moved past the deadline, so the real
	// deadline can be far enough away that the worker is still blocked
	// while the test looks.
	created, err := svc.Create(ctx, team, user, executed(team, "sloth", "Orphaned work", 10), false)
	require.NoError(t, err)
	var running tasks.Task
	require.Eventually(t, func() bool {
		running, err = svc.Get(ctx, team, created.ID)
		return err == nil && running.Status == tasks.Running
	}, 20*time.Second, 50*time.Millisecond)
	_, err = c.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(running.Execution)})
	require.NoError(t, err)

	// Before the deadline (plus grace) the sweeper leaves it alone.
	svc.Now = func() time.Time { return running.Deadline.Add(tasks.SweepGrace - time.Second) }
	_, err = svc.Sweep(ctx)
	require.NoError(t, err)
	got, err := svc.Get(ctx, team, created.ID)
	require.NoError(t, err)
	assert.Equal(t, tasks.Running, got.Status)

	svc.Now = func() time.Time { return running.Deadline.Add(tasks.SweepGrace + time.Second) }
	_, err = svc.Sweep(ctx)
	require.NoError(t, err)
	got, err = svc.Get(ctx, team, created.ID)
	require.NoError(t, err)
	assert.Equal(t, tasks.TimedOut, got.Status)
	assert.Zero(t, load(t, svc, team, "sloth"))
}

// The sweeper runs as its own function; invoking it through the edge works.
func TestSweeperFunctionRuns(t *testing.T) {
	e := mustEnv(t)
	out, err := invokeFunction(t, e, "task-sweeper", `{"source":"aws.events","detail-type":"Scheduled Event"}`)
	require.NoError(t, err)
	assert.Contains(t, out, "timed_out")
}

// A→B→C→D succeeds and D→E is rejected; A→B→A is a cycle; self-delegation
// is rejected. The rules are conditions of the create transaction.
func TestDelegationDepthCycleAndSelf(t *testing.T) {
	e := mustEnv(t)
	team := mustTeam(t, e)
	for _, s := range []string{"ann", "bob", "cat", "dan", "eve"} {
		mustAgent(t, e, team, s, nil)
	}
	svc, _ := taskService(t, e)
	ctx := context.Background()
	board := func(assignee, parent, creator string) (tasks.Task, error) {
		return svc.Create(ctx, team, user, tasks.CreateInput{Assignee: assignee, ParentID: parent, CreatedByAgent: creator, Title: "step"}, false)
	}
	start := func(tk tasks.Task) {
		_, err := svc.Start(ctx, team, tk.ID, "user:key_test")
		require.NoError(t, err)
	}

	ab, err := board("bob", "", "ann")
	require.NoError(t, err)
	start(ab)
	bc, err := board("cat", ab.ID, "")
	require.NoError(t, err)
	start(bc)
	cd, err := board("dan", bc.ID, "")
	require.NoError(t, err)
	assert.Equal(t, 3, cd.Depth)
	assert.Equal(t, []string{"ann", "bob", "cat", "dan"}, cd.Chain)
	start(cd)

	_, err = board("eve", cd.ID, "")
	assertReason(t, err, apperr.EREJECTED, tasks.ReasonDepth)
	_, err = board("ann", ab.ID, "")
	assertReason(t, err, apperr.EREJECTED, tasks.ReasonCycle)
	_, err = board("ann", bc.ID, "")
	assertReason(t, err, apperr.EREJECTED, tasks.ReasonCycle)
	_, err = board("bob", ab.ID, "")
	assertReason(t, err, apperr.EINVALID, tasks.ReasonSelf)
	_, err = board("ann", "", "ann")
	assertReason(t, err, apperr.EINVALID, tasks.ReasonSelf)

	for _, s := range []string{"ann", "bob", "cat", "dan", "eve"} {
		// bob's task is a work item (no parent, not executed): no slot.
		want := map[string]int{"cat": 1, "dan": 1}[s]
		assert.Equal(t, want, load(t, svc, team, s), "rejected delegations took no slot from %s", s)
	}
	subs, _, err := svc.List(ctx, team, tasks.Filter{Parent: ab.ID}, pageOf(100))
	require.NoError(t, err)
	assert.Len(t, subs, 1, "rejected delegations wrote nothing")
}

// The collaboration's budget: once the tree's spend reaches the root's cost
// cap, delegation is rejected with BudgetExhausted.
func TestDelegationStopsWhenTheBudgetIsSpent(t *testing.T) {
	e := mustEnv(t)
	team := mustTeam(t, e)
	mustAgent(t, e, team, "lead", nil)
	mustAgent(t, e, team, "helper", &agents.Model{Provider: "local", ID: "anthropic.claude-3-5-sonnet-20240620-v1:0"})
	mustAgent(t, e, team, "other", nil)
	svc, _ := taskService(t, e)
	ctx := context.Background()

	root, err := svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "lead", Title: "Lead the review", CostCapUSD: ptr(0.0001)}, false)
	require.NoError(t, err)
	_, err = svc.Start(ctx, team, root.ID, "user:key_test")
	require.NoError(t, err)
	child, err := svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "helper", ParentID: root.ID, Title: "Help", Execute: ptr(true)}, false)
	require.NoError(t, err)
	done := waitTask(t, svc, team, child.ID, 30*time.Second)
	require.Equal(t, tasks.Completed, done.Status)
	require.Positive(t, done.CostUSD)

	r, err := svc.Get(ctx, team, root.ID)
	require.NoError(t, err)
	assert.InDelta(t, done.CostUSD, r.TreeCostUSD, 1e-12, "the child's spend is charged to the collaboration")
	if r.TreeCostUSD >= r.CostCapUSD {
		_, err = svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "other", ParentID: root.ID, Title: "More help"}, false)
		assertReason(t, err, apperr.EREJECTED, tasks.ReasonBudget)
	} else {
		t.Fatalf("the helper's answer cost %.6f, below the cap %.6f: the test needs a cheaper cap", r.TreeCostUSD, r.CostCapUSD)
	}
}

// 50 concurrent delegations to one agent: exactly 5 accepted, the rest
// ConcurrencyLimit, in each of ten rounds (a fresh agent each round); after
// they finish the counters are back to 0.
func TestConcurrentDelegationsHonourTheLimit(t *testing.T) {
	e := mustEnv(t)
	team := mustTeam(t, e)
	mustAgent(t, e, team, "lead", nil)
	svc, _ := taskService(t, e)
	ctx := context.Background()
	root, err := svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "lead", Title: "Fan out"}, false)
	require.NoError(t, err)
	_, err = svc.Start(ctx, team, root.ID, "user:key_test")
	require.NoError(t, err)

	const rounds, n = 10, 50
	var accepted []tasks.Task
	var busy []string
	for r := range rounds {
		slug := fmt.Sprintf("busy-%d", r)
		mustAgent(t, e, team, slug, &agents.Model{Provider: "local", Script: "timeout"})
		busy = append(busy, slug)
		got := delegateConcurrently(t, svc, team, root.ID, slug, n)
		require.Len(t, got, tasks.MaxActivePerAgent, "round %d", r)
		assert.Equal(t, tasks.MaxActivePerAgent, load(t, svc, team, slug))
		accepted = append(accepted, got...)
	}

	for _, a := range accepted {
		got := waitTask(t, svc, team, a.ID, 60*time.Second)
		assert.Equal(t, tasks.TimedOut, got.Status)
	}
	for _, slug := range busy {
		assert.Zero(t, load(t, svc, team, slug), "every slot of %s is released when the tasks finish", slug)
	}
}

// delegateConcurrently sends n delegations to slug at once and returns the
// accepted ones; every refusal must be ConcurrencyLimit.
func delegateConcurrently(t *testing.T, svc *tasks.Service, team, parent, slug string, n int) []tasks.Task {
	ctx := context.Background()
	var wg sync.WaitGroup
	results := make([]tasks.Task, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = svc.Create(ctx, team, user, tasks.CreateInput{
				Assignee: slug, ParentID: parent, Title: fmt.Sprintf("part %d", i),
				Budgets: &tasks.BudgetsInput{TimeoutSeconds: ptr(3)}, Execute: ptr(true),
			}, false)
		}()
	}
	wg.Wait()
	var accepted []tasks.Task
	limited := 0
	for i, err := range errs {
		if err == nil {
			accepted = append(accepted, results[i])
			continue
		}
		if ae, ok := apperr.As(err); ok && ae.Reason == tasks.ReasonConcurrency {
			limited++
			continue
		}
		t.Errorf("unexpected error: %v", err)
	}
	assert.Equal(t, n-len(accepted), limited)
	return accepted
}

// A worker sub-delegates with the delegate_task tool: the child links to
// the parent, runs in its own execution, and its result comes back into the
// parent's answer within the parent's deadline.
func TestWorkerSubDelegatesThroughItsTool(t *testing.T) {
	e := mustEnv(t)
	team := mustTeam(t, e)
	mustAgent(t, e, team, "kyra", &agents.Model{Provider: "local", Script: "delegate:luke"})
	mustAgent(t, e, team, "luke", nil)
	svc, _ := taskService(t, e)
	ctx := context.Background()

	parent, err := svc.Create(ctx, team, user, executed(team, "kyra", "Audit the auth module", 60), false)
	require.NoError(t, err)
	done := waitTask(t, svc, team, parent.ID, 60*time.Second)
	require.Equal(t, tasks.Completed, done.Status, done.Error)
	subs, _, err := svc.List(ctx, team, tasks.Filter{Parent: parent.ID}, pageOf(10))
	require.NoError(t, err)
	require.Len(t, subs, 1)
	child := subs[0]
	assert.Equal(t, "luke", child.Assignee)
	assert.Equal(t, tasks.Creator{Type: "agent", ID: "kyra"}, child.CreatedBy)
	assert.Equal(t, 1, child.Depth)
	assert.Equal(t, tasks.Completed, child.Status)
	assert.Contains(t, done.Result, child.ID, "the parent's answer carries the delegated result")
	assert.Equal(t, 1, countEvents(done, "tool_call", ""))
	// The parent's worker did not poll: it stopped, the execution waited
	// for the child with a task token, and a second attempt resumed it.
	assert.Equal(t, 2, countEvents(done, "progress", "attempt started"))
	assert.Equal(t, 1, countEvents(done, "progress", "attempt waiting for a delegated task"))
	assert.Equal(t, 1, countEvents(done, "progress", "attempt finished"))
	assert.Equal(t, 1, countEvents(done, "tool_result", ""))
	got, err := svc.Get(ctx, team, child.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, countEvents(got, "awaited", ""), "the child carried the parent's task token")
	// Usage is counted once across both attempts: the final summary's
	// cumulative figure is what the task holds.
	var last map[string]any
	for _, ev := range done.Events {
		if ev.Type == "progress" && ev.Payload["message"] == "attempt finished" {
			last = ev.Payload
		}
	}
	require.NotNil(t, last)
	assert.EqualValues(t, done.TokensUsed, last["tokens_used"])
}

// Property-style: random sequences of lifecycle verbs on board tasks. Every
// verb the lifecycle forbids is a conflict that changes nothing; allowed
// ones land in the target state; terminal states never change; the timeline
// is ordered with one event per change; the agent's slot counter always
// equals its tasks in queued or running.
func TestRandomTransitionSequencesKeepTheInvariants(t *testing.T) {
	e := mustEnv(t)
	team := mustTeam(t, e)
	mustAgent(t, e, team, "pea", nil)
	mustAgent(t, e, team, "pod", nil)
	svc, _ := taskService(t, e)
	ctx := context.Background()
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)

	actions := []tasks.Action{tasks.ActStart, tasks.ActComplete, tasks.ActFail, tasks.ActBlock, tasks.ActCancel, tasks.ActAssign}
	for round := range 6 {
		tk, err := svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "pea", Title: fmt.Sprintf("round %d", round)}, false)
		require.NoError(t, err)
		for step := range 12 {
			before, err := svc.Get(ctx, team, tk.ID)
			require.NoError(t, err)
			act := actions[rng.Intn(len(actions))]
			var after tasks.Task
			switch act {
			case tasks.ActStart:
				after, err = svc.Start(ctx, team, tk.ID, "user:p")
			case tasks.ActComplete:
				after, err = svc.Complete(ctx, team, tk.ID, "user:p", "done", nil)
			case tasks.ActFail:
				after, err = svc.Fail(ctx, team, tk.ID, "user:p", "broken")
			case tasks.ActBlock:
				after, err = svc.Block(ctx, team, tk.ID, "user:p", "waiting")
			case tasks.ActCancel:
				after, err = svc.Cancel(ctx, team, tk.ID, "user:p", "stop")
			case tasks.ActAssign:
				other := map[string]string{"pea": "pod", "pod": "pea"}[before.Assignee]
				after, err = svc.Reassign(ctx, team, tk.ID, "user:p", other)
			}
			cur, gerr := svc.Get(ctx, team, tk.ID)
			require.NoError(t, gerr)
			if tasks.Allowed(act, before.Status) {
				require.NoError(t, err, "round %d step %d: %s from %s", round, step, act, before.Status)
				assert.Equal(t, tasks.Transitions[act].To, cur.Status)
				assert.Equal(t, after.Version, cur.Version)
				assert.Len(t, cur.Events, len(before.Events)+1, "one event per change")
			} else {
				require.Error(t, err, "round %d step %d: %s from %s must be refused", round, step, act, before.Status)
				ae, _ := apperr.As(err)
				require.NotNil(t, ae)
				assert.Equal(t, apperr.ECONFLICT, ae.Code)
				assert.Equal(t, string(before.Status), ae.Details["status"], "the error names the current status")
				before.Events, cur.Events = nil, nil
				assert.Equal(t, before, cur, "a refused transition changes nothing")
			}
			for i, ev := range cur.Events {
				assert.Equal(t, i+1, ev.Seq, "events are ordered without gaps")
			}
			holding, queued := map[string]int{}, map[string]int{}
			all, _, err := svc.List(ctx, team, tasks.Filter{}, pageOf(100))
			require.NoError(t, err)
			for _, x := range all {
				if x.HoldsSlot() {
					holding[x.Assignee]++
				}
				if x.InQueue() {
					queued[x.Assignee]++
				}
			}
			for _, s := range []string{"pea", "pod"} {
				n, err := svc.Load(ctx, team, s)
				require.NoError(t, err)
				assert.Equal(t, tasks.Load{Active: holding[s], Queued: queued[s]}, n, "counters of %s", s)
			}
		}
	}
	// Terminal states accept nothing.
	all, _, err := svc.List(ctx, team, tasks.Filter{}, pageOf(100))
	require.NoError(t, err)
	for _, x := range all {
		if !x.Status.Terminal() {
			continue
		}
		for _, act := range actions {
			assert.False(t, tasks.Allowed(act, x.Status))
		}
		_, err := svc.Start(ctx, team, x.ID, "user:p")
		assert.Equal(t, apperr.ECONFLICT, apperr.Code(err))
	}
	assert.True(t, slices.ContainsFunc(all, func(x tasks.Task) bool { return x.Status.Terminal() }), "some sequences reached a terminal state")
}

// No task of one team is visible to, or assignable from, another.
func TestTasksAreIsolatedBetweenTeams(t *testing.T) {
	e := mustEnv(t)
	mine, theirs := mustTeam(t, e), mustTeam(t, e)
	mustAgent(t, e, mine, "luke", nil)
	mustAgent(t, e, theirs, "dana", nil)
	svc, _ := taskService(t, e)
	ctx := context.Background()
	tk, err := svc.Create(ctx, mine, user, tasks.CreateInput{Assignee: "luke", Title: "mine"}, false)
	require.NoError(t, err)

	_, err = svc.Get(ctx, theirs, tk.ID)
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
	_, err = svc.Cancel(ctx, theirs, tk.ID, "user:x", "x")
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
	_, err = svc.Create(ctx, mine, user, tasks.CreateInput{Assignee: "dana", Title: "cross-team"}, false)
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err), "another team's agent does not exist here")
	_, err = svc.Reassign(ctx, mine, tk.ID, "user:x", "dana")
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
	list, _, err := svc.List(ctx, theirs, tasks.Filter{}, pageOf(100))
	require.NoError(t, err)
	assert.Empty(t, list)
}

func assertReason(t *testing.T, err error, code, reason string) {
	t.Helper()
	require.Error(t, err)
	ae, ok := apperr.As(err)
	require.True(t, ok, "typed error, got %v", err)
	assert.Equal(t, code, ae.Code, ae.Message)
	assert.Equal(t, reason, ae.Reason, ae.Message)
}

func pageOf(n int) paging.Page { return paging.Page{Limit: n} }

// invokeFunction calls the Lambda Invoke API of the edge, as the AWS CLI
// or an EventBridge schedule would.
func invokeFunction(t *testing.T, e env, name, payload string) (string, error) {
	t.Helper()
	url := os.Getenv("CONCLAVE_EDGE_URL") + "/2015-03-31/functions/" + e.names.Function(name) + "/invocations"
	resp, err := http.Post(url, "application/json", strings.NewReader(payload))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Amz-Function-Error") != "" {
		return "", fmt.Errorf("invoke %s: %d %s", name, resp.StatusCode, b)
	}
	return string(b), err
}

// model_tier and result_artifacts over HTTP (issue 43, item 6): a task
// created with tier_2 is stored with it (the item in the table too), and
// another team neither reads nor lists it; tier_3 is 400 naming
// model_tier with nothing written. Executed tasks complete with the ids
// of what their tool calls made: one shares a memory (the memory pack,
// the local model's [call:…] marker) on its tier_2 model, one delegates
// a sub-task and waits for it.
func TestModelTierAndResultArtifactsOverHTTP(t *testing.T) {
	e := mustEnv(t)
	d, other := mustDemoTeam(t, e), mustDemoTeam(t, e)
	st, tk := d.call("POST", "/v1/tasks", map[string]any{"assignee": "luke", "title": "Review the handler", "model_tier": "tier_2"})
	require.Equal(t, 201, st, tk)
	assert.Equal(t, "tier_2", tk["model_tier"])
	id := tk["id"].(string)
	st, got := d.call("GET", "/v1/tasks/"+id, nil)
	require.Equal(t, 200, st, got)
	assert.Equal(t, "tier_2", got["model_tier"])
	item, err := e.db.tasks.GetTask(context.Background(), d.id, id)
	require.NoError(t, err)
	assert.Equal(t, "tier_2", item.ModelTier, "stored on the task item")

	st, theirs := other.call("GET", "/v1/tasks/"+id, nil)
	assert.Equal(t, 404, st, "another team's task is not found: %v", theirs)
	assert.NotContains(t, theirs, "model_tier")
	st, list := other.call("GET", "/v1/tasks", nil)
	require.Equal(t, 200, st, list)
	assert.Empty(t, list["items"], "nor listed")

	// Sent twice with one Idempotency-Key: the first response, one task.
	body := map[string]any{"assignee": "luke", "title": "Review the handler again", "model_tier": "tier_1"}
	first := d.do("POST", "/v1/tasks", body, "Idempotency-Key", "tier-once")
	require.Equal(t, 201, first.Status, string(first.Body))
	again := d.do("POST", "/v1/tasks", body, "Idempotency-Key", "tier-once")
	assert.Equal(t, 201, again.Status, string(again.Body))
	assert.Equal(t, first.Body, again.Body, "the first response")
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, "tier_1", first.JSON(t)["model_tier"])
	st, list = d.call("GET", "/v1/tasks?assignee=luke", nil)
	require.Equal(t, 200, st, list)
	assert.Len(t, list["items"], 2, "one task for the two requests")

	st, bad := d.call("POST", "/v1/tasks", map[string]any{"assignee": "luke", "title": "Review the handler", "model_tier": "tier_3"})
	require.Equal(t, 400, st, bad)
	assert.Equal(t, "model_tier", bad["error"].(map[string]any)["field"], bad)
	st, list = d.call("GET", "/v1/tasks?assignee=luke", nil)
	require.Equal(t, 200, st, list)
	assert.Len(t, list["items"], 2, "the refused create wrote nothing")

	st, res := d.call("POST", "/v1/agents", map[string]any{"slug": "keeper", "name": "Keeper",
		"skills": []any{map[string]any{"name": "notes", "description": "keeps the team's notes"}}})
	require.Equal(t, 201, st, res)
	run := func(body map[string]any) map[string]any {
		t.Helper()
		body["assignee"], body["execute"] = "keeper", true
		st, tk := d.call("POST", "/v1/tasks", body)
		require.Equal(t, 201, st, tk)
		done := d.awaitTask(tk["id"].(string))
		require.Equal(t, "completed", done["status"], done)
		return done
	}

	saved := run(map[string]any{"title": "Note the signing key", "model_tier": "tier_2", "tool_packs": []any{"memory"},
		"instructions": `[call:share_memory {"content":"The auth module signs its tokens with RS256"}]`})
	assert.Equal(t, "tier_2", saved["model_tier"])
	arts := strs(saved["result_artifacts"])
	require.Len(t, arts, 1, "%v", saved)
	assert.True(t, strings.HasPrefix(arts[0], "mem_"), arts)
	assert.Contains(t, saved["result"], arts[0], "the memory the call shared")
	st, mems := d.call("GET", "/v1/agents/kyra/memories", nil)
	require.Equal(t, 200, st, mems)
	assert.Contains(t, fmt.Sprint(mems), arts[0], "shared with the team")
	var model any
	for _, ev := range saved["events"].([]any) {
		if m := ev.(map[string]any); m["type"] == "completed" {
			model = m["payload"].(map[string]any)["model_id"]
		}
	}
	assert.Equal(t, routing.DefaultTierModels[routing.Tier2], model, "the worker asked the tier's model")

	delegated := run(map[string]any{"title": "Check the expiry",
		"instructions": `[call:delegate_task {"to_agent":"luke","instructions":"Check the token expiry handling"}]`})
	arts = strs(delegated["result_artifacts"])
	require.Len(t, arts, 1, "%v", delegated)
	st, subs := d.call("GET", "/v1/tasks?parent_task_id="+delegated["id"].(string), nil)
	require.Equal(t, 200, st, subs)
	require.Len(t, subs["items"], 1)
	sub := subs["items"].([]any)[0].(map[string]any)
	assert.Equal(t, sub["id"], arts[0], "the sub-task it delegated")
	assert.Equal(t, "completed", sub["status"])
	assert.Equal(t, []any{}, got["result_artifacts"], "a board task has made nothing")
}
