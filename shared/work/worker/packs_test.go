package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// packTools offers check_task_status and request_tool_pack, resolves a
// pack "bridging" to two tools, and charges charge tokens per
// summarize_text call to the task's meter.
type packTools struct {
	charge int
	calls  []string
}

func (p *packTools) Specs(agents.Agent) []models.Tool {
	return []models.Tool{{Name: "check_task_status"}, {Name: "request_tool_pack"}}
}

func (p *packTools) PackSpecs(_ context.Context, _ string, _ agents.Agent, packs []string) []models.Tool {
	var out []models.Tool
	for _, pk := range packs {
		if pk == "bridging" {
			out = append(out, models.Tool{Name: "summarize_text"}, models.Tool{Name: "clipboard_get"})
		}
		if pk == "board" {
			out = append(out, models.Tool{Name: "check_task_status"}, models.Tool{Name: "next_task"})
		}
	}
	return out
}

func (p *packTools) Call(ctx context.Context, _ workflow.TaskInput, call models.ToolCall) (string, error) {
	p.calls = append(p.calls, call.Name)
	switch call.Name {
	case "request_tool_pack":
		var in struct{ Pack string }
		_ = json.Unmarshal([]byte(call.Input), &in)
		return "", worker.AddPack{Pack: in.Pack, Output: "added " + in.Pack}
	case "summarize_text":
		worker.MeterFrom(ctx).Charge(p.charge, 0.001)
		return "summary", nil
	}
	return "ok", nil
}

// A task created with a pack sees the pack's tools; the next task, without
// it, does not (the agent is unchanged).
func TestAPackAugmentsOnlyItsTask(t *testing.T) {
	w := newWorker(&packTools{})
	p := payload("ok")
	p.Instructions = "[list-tools] review the parser"
	p.ToolPacks = []string{"bridging", "board"}
	res, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Contains(t, res.Output, "Tools offered: check_task_status, request_tool_pack, summarize_text, clipboard_get, next_task.", "the agent's own, then the packs', each once")

	next := payload("ok")
	next.TaskID, next.Instructions = "task_2", "[list-tools] review the lexer"
	res, err = w.Run(context.Background(), next)
	require.NoError(t, err)
	assert.Contains(t, res.Output, "Tools offered: check_task_status, request_tool_pack.")
}

// request_tool_pack adds the pack's tools from the model's next step, for
// the rest of the task: recorded on its timeline, counted as a tool call,
// and kept in the state a resumed attempt starts from.
func TestRequestToolPackAddsToolsForTheRestOfTheTask(t *testing.T) {
	tools := &packTools{}
	w := newWorker(tools)
	tr := &fakeTracker{running: true}
	w.Tracker = tr
	p := payload("ok")
	p.Instructions = "[request-pack:bridging] review the parser"
	res, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, []string{"request_tool_pack"}, tools.calls)
	assert.Equal(t, 1, res.ToolCalls, "the request is a tool call of the budget")
	assert.Contains(t, res.Output, "Tools offered: check_task_status, request_tool_pack, summarize_text, clipboard_get.")
	assert.Contains(t, tr.events, worker.EvToolPackAdded)

	p.TaskID, p.Instructions = "task_2", "[list-tools] next"
	res, err = newWorker(tools).Run(context.Background(), p)
	require.NoError(t, err)
	assert.Contains(t, res.Output, "Tools offered: check_task_status, request_tool_pack.", "the next task does not get it")
}

// A bridging call's tokens are the task's: added to its usage, and past
// the budget the attempt ends with BudgetExceeded once the call is
// answered.
func TestABridgingCallChargesTheTaskBudget(t *testing.T) {
	tools := &packTools{charge: 700}
	w := newWorker(tools)
	p := payload("tools3")
	p.ToolPacks = []string{"bridging"}
	p.Budgets.MaxTokens = 750
	// tools:3 calls the offered tools in turn: check_task_status,
	// request_tool_pack (no input: nothing added) and summarize_text.
	res, err := w.Run(context.Background(), p)
	var be workflow.BudgetExceeded
	require.ErrorAs(t, err, &be, "%+v", res)
	assert.Contains(t, be.Msg, "summarize_text")
	assert.Greater(t, res.TokensUsed, 750)
	assert.Positive(t, res.CostUSD)

	tools.charge = 10
	p.Budgets.MaxTokens = 0
	res, err = newWorker(tools).Run(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, 3, res.ToolCalls)
	assert.Greater(t, res.TokensUsed, 10)
}

// stepModel asks request_tool_pack, then check_task_status, then answers
// with the tools it was offered.
type stepModel struct{}

func (stepModel) Converse(_ context.Context, req models.Request) (models.Response, error) {
	answered := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			answered++
		}
	}
	resp := models.Response{InputTokens: 10, OutputTokens: 5}
	switch answered {
	case 0:
		resp.ToolCalls = []models.ToolCall{{ID: "c1", Name: "request_tool_pack", Input: `{"pack":"bridging"}`}}
	case 1:
		resp.ToolCalls = []models.ToolCall{{ID: "c2", Name: "check_task_status", Input: `{}`}}
	default:
		var names []string
		for _, t := range req.Tools {
			names = append(names, t.Name)
		}
		resp.Text = "offered: " + strings.Join(names, ",")
	}
	return resp, nil
}

// waitingTools is packTools whose check_task_status waits for a child.
type waitingTools struct{ packTools }

func (w *waitingTools) Call(ctx context.Context, p workflow.TaskInput, call models.ToolCall) (string, error) {
	if call.Name == "check_task_status" {
		return "", worker.WaitFor{ChildTaskID: "task_child"}
	}
	return w.packTools.Call(ctx, p, call)
}

// A pack added before the attempt waited for a delegation is still the
// task's when the resumed attempt runs (its saved state keeps it).
func TestAnAddedPackOutlivesAWait(t *testing.T) {
	w := newWorker(&waitingTools{})
	w.Model = stepModel{}
	p := payload("ok")
	first, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	require.NotNil(t, first.Waiting)
	p.Resume = &workflow.Resume{State: first.Waiting.State, Children: []workflow.ChildOutcome{{TaskID: "task_child", Status: "completed", Summary: "done"}}}
	res, err := w.Run(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, "offered: check_task_status,request_tool_pack,summarize_text,clipboard_get", res.Output)
}
