package agenttools_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// rememberAndDelegate shares a memory and delegates (waiting for the
// result) in one response, then answers once resumed.
type rememberAndDelegate struct{}

func (rememberAndDelegate) Converse(_ context.Context, req models.Request) (models.Response, error) {
	resp := models.Response{InputTokens: 20, OutputTokens: 20}
	if len(req.Messages) > 1 {
		resp.Text = "Audited; the expiry check is with luke."
		return resp, nil
	}
	resp.ToolCalls = []models.ToolCall{
		{ID: "call-1", Name: "share_memory", Input: `{"content":"The auth module signs its tokens with RS256"}`},
		{ID: "call-2", Name: "delegate_task", Input: `{"to_agent":"luke","instructions":"Check the token expiry handling"}`},
	}
	return resp, nil
}

// An executed task that saved a memory and delegated a sub-task, run by
// the worker with the real tools on the task record, completes with both
// ids in result_artifacts: the memory's and the sub-task's, in the order
// they were made; the memory's call shows its id on the timeline too.
func TestAnExecutedTaskCompletesWithWhatItMade(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.tools.Memories = &memory.Service{Store: f.store, Dir: f.store, Bus: f.bus, Now: time.Now}
	w := &worker.Worker{Agents: f.store, Model: rememberAndDelegate{}, Tools: f.tools, Tracker: agenttools.Tracker{Tasks: f.tasks}}

	tk, err := f.tasks.Create(ctx, team, tasks.Creator{Type: "user", ID: "key_test"},
		tasks.CreateInput{Assignee: "kyra", Title: "Audit the auth module", ToolPacks: []string{"memory"}}, true)
	require.NoError(t, err)
	arn := "arn:execution:delegation:" + tk.ID
	_, err = f.tasks.ExecStart(ctx, team, tk.ID, arn)
	require.NoError(t, err)
	p := workflow.TaskInput{TeamID: team, TaskID: tk.ID, Assignee: "kyra", Title: tk.Title, Instructions: tk.Instructions,
		ToolPacks: tk.ToolPacks, RootTaskID: tk.RootID, ModelTier: tk.ModelTier}

	first, err := w.Run(ctx, p)
	require.NoError(t, err)
	require.NotNil(t, first.Waiting, "waiting for the sub-task")
	require.Len(t, first.ResultArtifacts, 2, "%v", first.ResultArtifacts)
	mem, child := first.ResultArtifacts[0], first.ResultArtifacts[1]
	assert.True(t, ids.Valid("mem", mem), mem)
	assert.Equal(t, []string{child}, first.Waiting.ChildTaskIDs, "the sub-task waited for")
	sub, err := f.tasks.Get(ctx, team, child)
	require.NoError(t, err)
	assert.Equal(t, tk.ID, sub.ParentID)
	visible, err := f.tools.Memories.Visible(ctx, team, "luke")
	require.NoError(t, err)
	require.NotEmpty(t, visible)
	assert.Equal(t, mem, visible[0].ID, "the memory shared with the team")

	p.Resume = &workflow.Resume{State: first.Waiting.State,
		Children: []workflow.ChildOutcome{{TaskID: child, Status: "completed", Summary: "task " + child + " by luke completed: the expiry is checked"}}}
	second, err := w.Run(ctx, p)
	require.NoError(t, err)
	require.Nil(t, second.Waiting)
	done, err := f.tasks.ExecComplete(ctx, team, tk.ID, arn, second)
	require.NoError(t, err)
	assert.Equal(t, tasks.Completed, done.Status)
	assert.Equal(t, []string{mem, child}, done.ResultArtifacts)
	got, err := f.tasks.Get(ctx, team, tk.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{mem, child}, got.ResultArtifacts, "stored")
	var shown any
	for _, ev := range got.Events {
		if ev.Type == tasks.EvToolResult && ev.Payload["tool"] == "share_memory" {
			shown = ev.Payload["artifacts"]
		}
	}
	assert.Equal(t, []any{mem}, shown, "the call's tool_result names what it made")
}

// delegate_task takes model_tier: a tier is the sub-task's, auto (and
// none) is the one its complexity picks, and a value past the set
// (tier_3) is the tool's error naming model_tier, with no sub-task. The
// schema the model receives lists the four values.
func TestDelegateTaskTakesAModelTier(t *testing.T) {
	f := newFixture(t)
	p := f.working(t, "kyra")
	for _, tc := range []struct{ tier, want string }{{"tier_0", "tier_0"}, {"tier_1", "tier_1"}, {"tier_2", "tier_2"}, {"auto", "tier_0"}, {"", "tier_0"}} {
		in := map[string]any{"to_agent": "luke", "title": "Help", "instructions": "Say hello to the team", "wait_for_result": false}
		if tc.tier != "" {
			in["model_tier"] = tc.tier
		}
		id := delegatedRE.FindStringSubmatch(f.call(t, p, "delegate_task", in))
		require.NotNil(t, id, tc.tier)
		sub, err := f.tasks.Get(context.Background(), team, id[1])
		require.NoError(t, err)
		assert.Equal(t, tc.want, sub.ModelTier, "%q", tc.tier)
	}
	var got agenttools.InvalidArguments
	out := f.call(t, p, "delegate_task", `{"to_agent":"dana","instructions":"x","model_tier":"tier_3"}`)
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.Equal(t, "model_tier", got.Field, out)
	subs, _, err := f.tasks.List(context.Background(), team, tasks.Filter{Assignee: "dana"}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, subs, "no sub-task for a refused tier")

	var enum any
	for _, s := range f.tools.Specs(agents.Agent{Slug: "kyra"}) {
		if s.Name == "delegate_task" {
			enum = s.InputSchema()["properties"].(map[string]any)["model_tier"].(map[string]any)["enum"]
		}
	}
	assert.Equal(t, []any{"tier_0", "tier_1", "tier_2", "auto"}, enum)
}
