package tasks_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/paging"
	"github.com/conclave-ai/conclave/shared/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// starter records the executions the task model starts and stops.
type starter struct {
	mu      sync.Mutex
	started []string
	stopped []string
	fail    bool
}

func (s *starter) Start(_ context.Context, machine, name string, _ any) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return "", errors.New("throttled")
	}
	s.started = append(s.started, name)
	return s.ExecutionARN(machine, name), nil
}

func (s *starter) Stop(_ context.Context, arn, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = append(s.stopped, arn)
	return nil
}

func (s *starter) ExecutionARN(machine, name string) string {
	return "arn:execution:" + machine + ":" + name
}

func executing(assignee string) tasks.CreateInput {
	yes := true
	return tasks.CreateInput{Assignee: assignee, Title: "run it", Execute: &yes}
}

// An executing task's first execution is named after it and is stopped by
// a cancel; reassigned, it runs again under a new name.
func TestExecutionsAreStartedStoppedAndRenamedOnReassign(t *testing.T) {
	f := newFixture(t)
	st := &starter{}
	f.svc.Workflows = st
	ctx := context.Background()

	tk := f.create(t, executing("luke"))
	assert.Equal(t, []string{tk.ID}, st.started)
	_, err := f.svc.Reassign(ctx, team, tk.ID, "u", "dana")
	require.NoError(t, err)
	assert.Equal(t, []string{tk.ID, tk.ID + "-r2"}, st.started, "a new execution name for the second run")
	assert.Equal(t, []string{st.ExecutionARN(workflow.Delegation, tk.ID)}, st.stopped, "the first run is stopped")

	_, err = f.svc.Cancel(ctx, team, tk.ID, "u", "not needed")
	require.NoError(t, err)
	assert.Equal(t, st.ExecutionARN(workflow.Delegation, tk.ID+"-r2"), st.stopped[1])
}

// A task whose execution cannot start fails at once and gives its slot
// back, instead of sitting queued with nothing to run it.
func TestAnUnstartableTaskFailsAndFreesItsSlot(t *testing.T) {
	f := newFixture(t)
	f.svc.Workflows = &starter{fail: true}
	_, err := f.svc.Create(context.Background(), team, user, executing("luke"), false)
	require.Error(t, err)
	list, _, err := f.svc.List(context.Background(), team, tasks.Filter{Assignee: "luke"}, paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, tasks.Failed, list[0].Status)
	assert.Equal(t, 0, f.load(t, "luke"))
}
