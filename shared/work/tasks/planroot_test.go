package tasks_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// A plan is one root task and its steps are its children: a step may be
// any agent, the lead included and twice the same, which a delegation's
// chain would refuse; the root holds no slot (its steps take theirs) and
// no 120 s deadline, and depth and the tree's budget hold for the steps.
func TestAPlanIsARootTaskAndItsSteps(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	root := f.create(t, tasks.CreateInput{Assignee: "kyra", Title: "Plan: review then notes", PlanID: "plan_1"})
	assert.True(t, root.PlanRoot())
	assert.False(t, root.WorkItem(), "a plan's root is agent work")
	assert.Equal(t, 0, f.load(t, "kyra"), "the root takes no slot of the lead's")
	_, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", ParentID: root.ID, Title: "early", PlanID: "plan_1", Execute: ptr(true)}, false)
	requireAppErr(t, err, apperr.ECONFLICT, tasks.ReasonState) // the root is not running yet

	started, err := f.svc.ExecStartPlan(ctx, team, root.ID, "arn:plan:plan_1")
	require.NoError(t, err)
	assert.Nil(t, started.Deadline, "the plan machine bounds the root, not the 120 s of a task")
	again, err := f.svc.ExecStartPlan(ctx, team, root.ID, "arn:plan:plan_1")
	require.NoError(t, err, "a retried start")
	assert.Equal(t, started.Version, again.Version)

	var steps []tasks.Task
	for _, agent := range []string{"luke", "kyra", "luke"} {
		st, err := f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: agent, ParentID: root.ID, Title: "step", PlanID: "plan_1", Execute: ptr(true)}, false)
		require.NoError(t, err, "a step of %s", agent)
		assert.Equal(t, 1, st.Depth)
		assert.True(t, st.PlanStep())
		steps = append(steps, st)
	}
	assert.Equal(t, 2, f.load(t, "luke"))
	_, err = f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", ParentID: root.ID, Title: "other plan", PlanID: "plan_2", Execute: ptr(true)}, false)
	requireAppErr(t, err, apperr.EINVALID, "")
	_, err = f.svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "kyra", ParentID: root.ID, Title: "a plain delegation to self"}, false)
	requireAppErr(t, err, apperr.EINVALID, tasks.ReasonSelf)

	ended, err := f.svc.ExecEndPlan(ctx, team, root.ID, "arn:plan:plan_1", "the synthesis", "")
	require.NoError(t, err)
	assert.Equal(t, tasks.Completed, ended.Status)
	assert.Equal(t, "the synthesis", ended.Result)
	_, err = f.svc.ExecEndPlan(ctx, team, root.ID, "arn:plan:plan_1", "the synthesis", "")
	require.NoError(t, err, "a retried end")
	_, err = f.svc.ExecEndPlan(ctx, team, root.ID, "arn:other", "x", "")
	assert.ErrorIs(t, err, tasks.ErrNotRunnable)
	assert.Len(t, steps, 3)
}
