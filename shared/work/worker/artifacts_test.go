package worker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// makingTools create things as agenttools' do, telling the worker what
// they made (worker.Produced): share_memory a memory, delegate_task a
// sub-task it waits for, broken a memory before it fails.
type makingTools struct{}

func (makingTools) Specs(agents.Agent) []models.Tool {
	return []models.Tool{{Name: "share_memory"}, {Name: "delegate_task"}, {Name: "broken"}}
}

func (makingTools) Call(ctx context.Context, _ workflow.TaskInput, call models.ToolCall) (string, error) {
	switch call.Name {
	case "share_memory":
		worker.Produced(ctx, "mem_1")
		return "shared memory mem_1 with the team", nil
	case "delegate_task":
		worker.Produced(ctx, "task_child")
		return "", worker.WaitFor{ChildTaskID: "task_child"}
	}
	worker.Produced(ctx, "mem_lost")
	return "", errors.New("the store is down")
}

// makingModel saves a memory and calls the broken tool, then delegates
// and waits; resumed, it saves the same memory again and answers.
type makingModel struct{}

func (makingModel) Converse(_ context.Context, req models.Request) (models.Response, error) {
	done := len(toolAnswers(req)) // the calls' ids are unique
	resp := models.Response{InputTokens: 10, OutputTokens: 10}
	call := func(names ...string) models.Response {
		for i, n := range names {
			resp.ToolCalls = append(resp.ToolCalls, models.ToolCall{ID: fmt.Sprintf("call-%d-%d", done, i), Name: n, Input: "{}"})
		}
		return resp
	}
	switch done {
	case 0:
		return call("share_memory", "broken"), nil
	case 2:
		return call("delegate_task"), nil
	case 3:
		return call("share_memory"), nil
	}
	resp.Text = "done"
	return resp, nil
}

// What a task's tool calls created is its result: the attempt collects
// the ids the calls that succeeded made (in order, each once), keeps them
// across the wait for its sub-task, and the resumed attempt answers with
// the memory and the sub-task; the failed call's id is not among them.
func TestAnExecutedTaskResultListsWhatItsCallsMade(t *testing.T) {
	w := newWorker(makingTools{})
	w.Model = makingModel{}
	tr := &fakeTracker{running: true}
	w.Tracker = tr
	p := payload("ok")

	first, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	require.NotNil(t, first.Waiting, "waiting for its sub-task")
	assert.Equal(t, []string{"mem_1", "task_child"}, first.ResultArtifacts)

	p.Resume = &workflow.Resume{State: first.Waiting.State,
		Children: []workflow.ChildOutcome{{TaskID: "task_child", Status: "completed", Summary: "task task_child by luke completed: fine"}}}
	second, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	require.Nil(t, second.Waiting)
	assert.Equal(t, "done", second.Output)
	assert.Equal(t, []string{"mem_1", "task_child"}, second.ResultArtifacts, "the saved ones, and the memory saved again once")
	assert.Equal(t, 4, second.ToolCalls)
}

// Outside a task's call (a chat reply) nothing collects ids: Produced does
// nothing.
func TestProducedOutsideATaskDoesNothing(t *testing.T) {
	assert.NotPanics(t, func() { worker.Produced(context.Background(), "mem_1") })
	a := &worker.Artifacts{}
	worker.Produced(worker.WithArtifacts(context.Background(), a), "mem_1", "task_2")
	assert.Equal(t, []string{"mem_1", "task_2"}, a.IDs())
}
