package conversationsfn_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/wire/conversationsfn"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// The open_tasks loader's source lists the agent's unfinished tasks, as
// the prompt prints them, and none of another agent's or a finished one.
func TestTheOpenTasksAreTheAgentsUnfinishedOnes(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	require.NoError(t, demo.Seed(ctx, store))
	at := time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)
	for _, tk := range []tasks.Task{
		{ID: "task_open1", Assignee: "luke", Title: "Fix the parser", Status: tasks.Queued, Priority: "high"},
		{ID: "task_done1", Assignee: "luke", Title: "Ship the fix", Status: tasks.Completed, Priority: "normal"},
		{ID: "task_dana1", Assignee: "dana", Title: "Plot the trend", Status: tasks.Running, Priority: "low"},
	} {
		tk.TeamID, tk.RootID, tk.CreatedBy, tk.CreatedAt, tk.UpdatedAt = demo.TeamID, tk.ID, tasks.Creator{Type: "user", ID: "u"}, at, at
		require.NoError(t, store.CreateTask(ctx, tk, nil, nil))
	}

	got, err := conversationsfn.Tasks{Store: store}.OpenTasks(ctx, demo.TeamID, "luke")
	require.NoError(t, err)
	assert.Equal(t, []prompts.OpenTask{{ID: "task_open1", Title: "Fix the parser", Status: "queued", Priority: "high"}}, got)
}

type brokenTasks struct{}

func (brokenTasks) ListTasks(context.Context, string, tasks.Filter, paging.Page) ([]tasks.Task, string, error) {
	return nil, "", errors.New("down")
}

// A list that cannot be read is the loader's error: the agent answers
// without it.
func TestUnreadableTasksAreTheLoadersError(t *testing.T) {
	got, err := conversationsfn.Tasks{Store: brokenTasks{}}.OpenTasks(context.Background(), demo.TeamID, "luke")
	assert.EqualError(t, err, "down")
	assert.Nil(t, got)
}
