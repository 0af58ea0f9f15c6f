package tasks

import (
	"context"
)

// ExecStartPlan marks a plan's root task running for the plan machine's
// execution executionARN, so its steps (children) can be created and
// waited for (Await checks the parent's execution). A retried call for
// the same execution succeeds again.
func (s *Service) ExecStartPlan(ctx context.Context, teamID, id, executionARN string) (Task, error) {
	t, err := s.transition(ctx, teamID, id, ActStart, "plan", func(before Task, after *Task) ([]Event, error) {
		if before.Status != Queued || !before.PlanRoot() {
			return nil, ErrNotRunnable
		}
		after.Execution = executionARN
		return []Event{{Type: EvStarted, Payload: map[string]any{"execution_arn": executionARN, "plan_id": before.PlanID}}}, nil
	})
	return s.retried(ctx, teamID, id, executionARN, Running, t, err)
}

// ExecEndPlan ends a plan's root task for its execution: completed with
// the plan's answer, or failed with failure. A retried call finds it ended
// and succeeds again; a root that is not the execution's is ErrNotRunnable.
func (s *Service) ExecEndPlan(ctx context.Context, teamID, id, executionARN, result, failure string) (Task, error) {
	act, ev := ActComplete, EvCompleted
	if failure != "" {
		act, ev = ActFail, EvFailed
	}
	t, err := s.transition(ctx, teamID, id, act, "plan", func(before Task, after *Task) ([]Event, error) {
		if before.Execution != executionARN || !before.PlanRoot() {
			return nil, ErrNotRunnable
		}
		after.Result, after.Error = result, failure
		return []Event{{Type: ev, Payload: map[string]any{"plan_id": before.PlanID}}}, nil
	})
	want := Transitions[act].To
	return s.retried(ctx, teamID, id, executionARN, want, t, err)
}
