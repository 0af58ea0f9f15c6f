package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/backoff"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// A delegated task that its parent waits for (delegate_task with
// wait_for_result) is waited for by the parent's execution, not by its
// worker: the worker returns workflow.TaskResult.Waiting with every child
// of the model's response, the machine's AwaitChildren Map runs one
// AwaitChild per child, each calling Await with its own task token and
// waiting (nothing runs), and whichever change ends a child sends its
// token the child's outcome. The Map ends with the last child, which
// resumes the parent's worker once with every outcome (docs/delegation.md).

// errEnded is Await's mutation finding the child already ended.
var errEnded = errors.New("the child task already ended")

// Await registers token on child so that the child's end wakes the
// execution executionARN of parent. The parent must still be running for
// that execution (else ErrNotRunnable); a child that already ended wakes it
// at once. The token is written conditioned on the child's version, as
// every end of a task is, so an end and a registration never miss each
// other.
func (s *Service) Await(ctx context.Context, teamID, parentID, executionARN, childID, token string) error {
	parent, err := s.Store.GetTask(ctx, teamID, parentID)
	if err != nil {
		return err
	}
	// A parent blocked because another child it waits for waits for a
	// human (blockAncestors) still registers its waits.
	if parent.Status != Running && !parent.blockedBelow() || parent.Execution != executionARN {
		return ErrNotRunnable
	}
	child, err := s.apply(ctx, teamID, childID, []Status{Queued, Running, Blocked}, "", "execution", func(before Task, after *Task) ([]Event, error) {
		if before.ParentID != parentID {
			return nil, apperr.Invalid("child_task_id", "task %s was not delegated by %s", childID, parentID)
		}
		if before.Status.Terminal() {
			return nil, errEnded
		}
		after.Waiter = token
		return []Event{{Type: EvAwaited, Payload: map[string]any{"parent_task_id": parentID}}}, nil
	})
	if err == nil && child.Status == Blocked && child.StatusReason == ReasonAwaitingApproval {
		// The child blocked for approval before this wait registered:
		// its block found no waiter, so the parent is blocked now.
		s.blockAncestors(ctx, child)
	}
	if errors.Is(err, errEnded) {
		child, err = s.Store.GetTask(ctx, teamID, childID)
		if err != nil {
			return err
		}
		child.Waiter = token
		// A failed send fails the step, so the machine's retry (a new
		// token) tries again.
		return s.wake(ctx, child)
	}
	return err
}

// wakeAttempts bounds the sends of one wake (throttling, a network blip).
const wakeAttempts = 3

// wake sends a waiting parent's token the outcome of its child, retrying
// a failed send with a short backoff. The child is already ended and
// recorded; if every send fails the parent ends at its own deadline (that
// child's AwaitChild times out), so the failure is logged, not undone.
func (s *Service) wake(ctx context.Context, child Task) error {
	if s.Callbacks == nil {
		s.Log.WarnContext(ctx, "a parent waits for this task but this function cannot wake it", "task_id", child.ID)
		return nil
	}
	out := workflow.ChildOutcome{TaskID: child.ID, Status: string(child.Status), Assignee: child.Assignee, Summary: child.Outcome()}
	err := backoff.Retry(ctx, wakeAttempts, func(ctx context.Context) error {
		return s.Callbacks.Succeed(ctx, child.Waiter, out)
	})
	if err == nil {
		return nil
	}
	s.Log.WarnContext(ctx, "waking the waiting parent failed", "task_id", child.ID, "parent_task_id", child.ParentID, "error", err.Error())
	return err
}

// Outcome is the task's state as a delegating agent reads it: the result
// of a completed task, the error of one that ended otherwise, or where it
// stands.
func (t Task) Outcome() string {
	switch t.Status {
	case Completed:
		if t.ConsultationID != "" {
			return fmt.Sprintf("consultation %s answered by %s (task %s): %s", t.ConsultationID, t.Assignee, t.ID, t.Result)
		}
		return fmt.Sprintf("task %s by %s completed: %s", t.ID, t.Assignee, t.Result)
	case Failed, TimedOut, Canceled:
		return fmt.Sprintf("task %s by %s ended %s: %s", t.ID, t.Assignee, t.Status, t.Error)
	}
	return fmt.Sprintf("task %s by %s is %s", t.ID, t.Assignee, t.Status)
}
