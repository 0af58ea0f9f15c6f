package tasks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// payloadStarter keeps the payloads of the executions it starts.
type payloadStarter struct {
	starter
	inputs []workflow.TaskInput
}

func (s *payloadStarter) Start(ctx context.Context, machine, name string, in any) (string, error) {
	if p, ok := in.(workflow.TaskInput); ok {
		s.inputs = append(s.inputs, p)
	}
	return s.starter.Start(ctx, machine, name, in)
}

// A task's tool packs are checked when it is created (400 naming
// tool_packs, nothing written), kept on the task, and carried to its
// worker with its root (the clipboard's scope); its sub-tasks do not
// inherit them.
func TestToolPacksAreValidatedAndCarriedToTheWorker(t *testing.T) {
	f := newFixture(t)
	for _, bad := range [][]string{{"capture"}, {"memory", "memory"}} {
		in := executing("luke")
		in.ToolPacks = bad
		_, err := f.svc.Create(context.Background(), team, user, in, false)
		ae := requireAppErr(t, err, apperr.EINVALID, "")
		assert.Equal(t, "tool_packs", ae.Field, "%v", bad)
	}
	assert.Zero(t, f.load(t, "luke"), "nothing written")

	st := &payloadStarter{}
	f.svc.Workflows = st
	in := executing("luke")
	in.ToolPacks = []string{"bridging", "memory"}
	parent, err := f.svc.Create(context.Background(), team, user, in, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"bridging", "memory"}, parent.ToolPacks)
	assert.Equal(t, []string{"bridging", "memory"}, f.get(t, parent.ID).ToolPacks)
	require.Len(t, st.inputs, 1)
	assert.Equal(t, []string{"bridging", "memory"}, st.inputs[0].ToolPacks)
	assert.Equal(t, parent.ID, st.inputs[0].RootTaskID)

	_, err = f.svc.Start(context.Background(), team, parent.ID, "u")
	require.NoError(t, err)
	sub := executing("sage")
	sub.ParentID = parent.ID
	child, err := f.svc.Create(context.Background(), team, user, sub, false)
	require.NoError(t, err)
	assert.Empty(t, child.ToolPacks, "a sub-task gets no pack of its parent's")
	last := st.inputs[len(st.inputs)-1]
	assert.Equal(t, child.ID, last.TaskID)
	assert.Empty(t, last.ToolPacks)
	assert.Equal(t, parent.ID, last.RootTaskID, "the plan's clipboard")
}

var _ = tasks.Queued
