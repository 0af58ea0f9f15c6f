package agenttools_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// The tracker ties the worker to the task record: an attempt begins only
// on a task running for its assignee, records usage and events on it, and
// learns of a cancel as worker.ErrNotRunnable.
func TestTrackerFollowsTheTask(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tr := agenttools.Tracker{Tasks: f.tasks}
	p := f.working(t, "luke")

	deadline, err := tr.Begin(ctx, p)
	require.NoError(t, err)
	assert.False(t, deadline.IsZero(), "a running task has a deadline")
	require.NoError(t, tr.Record(ctx, p, worker.Usage{Tokens: 120, ToolCalls: 1, CostUSD: 0.01},
		worker.TrackEvent{Type: "tool_call", Payload: map[string]any{"tool": "check_task_status"}}))
	got, err := f.tasks.Get(ctx, team, p.TaskID)
	require.NoError(t, err)
	assert.Equal(t, 120, got.TokensUsed)
	assert.Equal(t, 1, got.ToolCalls)
	assert.Equal(t, "tool_call", got.Events[len(got.Events)-1].Type)

	running, err := tr.StillRunning(ctx, p)
	require.NoError(t, err)
	assert.True(t, running)

	other := p
	other.Assignee = "dana"
	_, err = tr.Begin(ctx, other)
	assert.ErrorIs(t, err, worker.ErrNotRunnable, "not this assignee's task")

	_, err = f.tasks.Cancel(ctx, team, p.TaskID, "u", "changed plans")
	require.NoError(t, err)
	running, err = tr.StillRunning(ctx, p)
	require.NoError(t, err)
	assert.False(t, running)
	assert.ErrorIs(t, tr.Record(ctx, p, worker.Usage{Tokens: 1}), worker.ErrNotRunnable)

	missing := p
	missing.TaskID = "task_missing"
	_, err = tr.Begin(ctx, missing)
	assert.IsType(t, workflow.InvalidTask{}, err, "a task that does not exist cannot run")
}
