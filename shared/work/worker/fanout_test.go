package worker_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// fanTools delegates to each colleague and waits, except to those it
// refuses (a limit): those calls are answered at once with the refusal,
// as agenttools answers a refused create.
type fanTools struct {
	refuse map[string]bool
	mu     sync.Mutex
	calls  []string
}

func (*fanTools) Specs(agents.Agent) []models.Tool {
	return []models.Tool{{Name: "delegate_task", Description: "delegate and wait"}}
}

func (f *fanTools) Call(_ context.Context, _ workflow.TaskInput, call models.ToolCall) (string, error) {
	var in struct {
		ToAgent string `json:"to_agent"`
	}
	if err := json.Unmarshal([]byte(call.Input), &in); err != nil {
		return "", err
	}
	f.mu.Lock()
	f.calls = append(f.calls, in.ToAgent)
	f.mu.Unlock()
	if f.refuse[in.ToAgent] {
		return "rejected (ConcurrencyLimit): agent \"" + in.ToAgent + "\" already has 5 running or queued tasks", nil
	}
	return "", worker.WaitFor{ChildTaskID: "task_" + in.ToAgent}
}

// fanRequests keeps every request the model was sent.
type fanRequests struct {
	models.Model
	mu   sync.Mutex
	reqs []models.Request
}

func (r *fanRequests) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Model.Converse(ctx, req)
}

func (r *fanRequests) last() models.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[len(r.reqs)-1]
}

// toolAnswers maps each tool result of a request to the call it answers.
func toolAnswers(req models.Request) map[string]string {
	out := map[string]string{}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

func fanWorker(tools worker.Tools) (*worker.Worker, *fanRequests) {
	w := newWorker(tools)
	w.Agents.(agentMap)["t/kyra"] = agent("kyra", "delegate2:luke,dana", agents.StatusActive)
	rec := &fanRequests{Model: w.Model}
	w.Model = rec
	return w, rec
}

// Two delegate_task calls in one response both run; the attempt stops
// once, waiting for both children; resumed with both outcomes (in any
// order), each call is answered with its own child's result, matched by
// its toolUse id, in one assistant turn and its answers.
func TestFanOutWaitsForEveryChildAndAnswersEachCall(t *testing.T) {
	tools := &fanTools{}
	w, rec := fanWorker(tools)
	tr := &fakeTracker{running: true}
	w.Tracker = tr
	p := payload("kyra")

	first, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, []string{"luke", "dana"}, tools.calls, "both calls ran")
	require.NotNil(t, first.Waiting)
	assert.Equal(t, []string{"task_luke", "task_dana"}, first.Waiting.ChildTaskIDs, "one wait for both children, in the calls' order")
	assert.Equal(t, "task_luke", first.Waiting.ChildTaskID)
	assert.Equal(t, 2, first.ToolCalls)
	assert.Equal(t, 2, countOf(tr.events, "tool_call"))
	assert.Zero(t, countOf(tr.events, "tool_result"), "no answer yet")

	// The Map's output: one outcome per child, here dana's first.
	p.Resume = &workflow.Resume{State: first.Waiting.State, Children: []workflow.ChildOutcome{
		{TaskID: "task_dana", Status: "completed", Summary: "task task_dana by dana completed: the schema is fine"},
		{TaskID: "task_luke", Status: "failed", Summary: "task task_luke by luke ended failed: ModelFailed"},
	}}
	second, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Nil(t, second.Waiting)
	assert.Len(t, tools.calls, 2, "the resumed attempt calls no tool again")
	assert.Equal(t, 2, second.ToolCalls)
	assert.Contains(t, second.Output, "the schema is fine")
	assert.Contains(t, second.Output, "ModelFailed")
	assert.Equal(t, 2, countOf(tr.events, "tool_result"), "each child's result recorded once")

	req := rec.last()
	assert.Equal(t, map[string]string{
		"call-1": "task task_luke by luke ended failed: ModelFailed",
		"call-2": "task task_dana by dana completed: the schema is fine",
	}, toolAnswers(req))
	// One assistant turn carries both calls; their answers follow it.
	n := len(req.Messages)
	require.GreaterOrEqual(t, n, 3)
	assert.Equal(t, "assistant", req.Messages[n-3].Role)
	assert.Len(t, req.Messages[n-3].ToolCalls, 2)
	assert.Equal(t, "call-1", req.Messages[n-2].ToolCallID)
	assert.Equal(t, "call-2", req.Messages[n-1].ToolCallID)
}

// A child refused at a limit is that call's tool error; the other child
// is waited for, and the resumed model sees both answers.
func TestFanOutARefusedChildIsThatCallsErrorOnly(t *testing.T) {
	tools := &fanTools{refuse: map[string]bool{"dana": true}}
	w, rec := fanWorker(tools)
	p := payload("kyra")

	first, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	require.NotNil(t, first.Waiting)
	assert.Equal(t, []string{"task_luke"}, first.Waiting.ChildTaskIDs, "only the created child is waited for")

	p.Resume = &workflow.Resume{State: first.Waiting.State, Children: []workflow.ChildOutcome{
		{TaskID: "task_luke", Status: "completed", Summary: "task task_luke by luke completed: two issues"},
	}}
	second, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	got := toolAnswers(rec.last())
	assert.Equal(t, "task task_luke by luke completed: two issues", got["call-1"])
	assert.Contains(t, got["call-2"], "ConcurrencyLimit")
	assert.Contains(t, second.Output, "two issues")
	assert.Contains(t, second.Output, "ConcurrencyLimit")
}

// Every child refused: nothing to wait for, the model is answered at once.
func TestFanOutAllRefusedDoesNotWait(t *testing.T) {
	tools := &fanTools{refuse: map[string]bool{"luke": true, "dana": true}}
	w, _ := fanWorker(tools)
	res, err := w.Run(context.Background(), payload("kyra"))
	require.NoError(t, err)
	assert.Nil(t, res.Waiting)
	assert.Contains(t, res.Output, "ConcurrencyLimit")
}

// The tool-call budget counts the whole response before any call runs: a
// fan-out over it starts no child.
func TestFanOutOverTheToolCallBudgetStartsNothing(t *testing.T) {
	tools := &fanTools{}
	w, _ := fanWorker(tools)
	p := payload("kyra")
	p.Budgets.MaxToolCalls = 1
	_, err := w.Run(context.Background(), p)
	var be workflow.BudgetExceeded
	require.ErrorAs(t, err, &be)
	assert.Empty(t, tools.calls)
}

// An outcome that did not come (an execution of the single-child
// definition resumes with the first child only) answers its call with
// where to look, never a missing toolResult.
func TestFanOutResumedWithTheFirstOutcomeOnly(t *testing.T) {
	w, rec := fanWorker(&fanTools{})
	p := payload("kyra")
	first, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	p.Resume = &workflow.Resume{State: first.Waiting.State, Child: workflow.ChildOutcome{TaskID: "task_luke", Status: "completed", Summary: "done"}}
	_, err = w.Run(context.Background(), p)
	require.NoError(t, err)
	got := toolAnswers(rec.last())
	assert.Equal(t, "done", got["call-1"])
	assert.Contains(t, got["call-2"], "check_task_status")
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}
