package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Steps is the delegation machine's entry in the task-lifecycle function's
// step table: it decodes the marking state's payload and runs Step.
func (s *Service) Steps() workflow.Step {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in workflow.LifecycleInput
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, workflow.InvalidTask{Msg: "unreadable lifecycle payload: " + err.Error()}
		}
		return s.Step(ctx, in)
	}
}

// Step runs one marking state of the delegation machine. A task that is no
// longer the execution's to act on (canceled, reassigned, swept) is
// reported as workflow.TaskNotRunnable, which the machine catches and ends
// on; an unknown action is workflow.InvalidTask.
func (s *Service) Step(ctx context.Context, in workflow.LifecycleInput) (workflow.LifecycleOutput, error) {
	ctx = logctx.With(ctx, "team_id", in.TeamID, "task_id", in.TaskID, "step", in.Action)
	var t Task
	var err error
	switch in.Action {
	case workflow.ActionStart:
		t, err = s.ExecStart(ctx, in.TeamID, in.TaskID, in.ExecutionARN)
	case workflow.ActionComplete:
		t, err = s.ExecComplete(ctx, in.TeamID, in.TaskID, in.ExecutionARN, in.Result)
	case workflow.ActionFail:
		t, err = s.ExecFail(ctx, in.TeamID, in.TaskID, in.ExecutionARN, in.Error.Error, in.Error.Cause)
	case workflow.ActionAwait:
		return s.awaitStep(ctx, in)
	case workflow.ActionBlockForApproval:
		t, err = s.ExecBlockForApproval(ctx, in.TeamID, in.TaskID, in.ExecutionARN, in.ApprovalIDs)
	case workflow.ActionRecheckWait:
		secs, err := s.ExecRecheckWait(ctx, in.TeamID, in.TaskID, in.ExecutionARN)
		if errors.Is(err, ErrNotRunnable) {
			return workflow.LifecycleOutput{}, workflow.TaskNotRunnable{Msg: fmt.Sprintf("task %s is no longer this execution's to wait on", in.TaskID)}
		}
		return workflow.LifecycleOutput{TaskID: in.TaskID, WaitSeconds: secs}, err
	case workflow.ActionResumeApproved, workflow.ActionResumeWaiting:
		if in.Action == workflow.ActionResumeApproved {
			t, err = s.ExecResumeApproved(ctx, in.TeamID, in.TaskID, in.ExecutionARN)
		} else {
			t, err = s.ExecResumeWaiting(ctx, in.TeamID, in.TaskID, in.ExecutionARN)
		}
		if errors.Is(err, ErrAgentBusy) {
			return workflow.LifecycleOutput{}, workflow.AgentBusy{Msg: fmt.Sprintf("agent of task %s has no free slot yet", in.TaskID)}
		}
	default:
		return workflow.LifecycleOutput{}, workflow.InvalidTask{Msg: fmt.Sprintf("unknown action %q", in.Action)}
	}
	if errors.Is(err, ErrNotRunnable) {
		return workflow.LifecycleOutput{}, workflow.TaskNotRunnable{Msg: fmt.Sprintf("task %s is no longer this execution's to %s", in.TaskID, in.Action)}
	}
	if err != nil {
		return workflow.LifecycleOutput{}, err
	}
	return workflow.LifecycleOutput{TaskID: t.ID, Status: string(t.Status), Deadline: t.Deadline}, nil
}

// awaitStep registers the execution's task token on the child. Its output
// is ignored (the state waits for the token); a child that does not exist
// or is not this task's is an invalid payload, not retried.
func (s *Service) awaitStep(ctx context.Context, in workflow.LifecycleInput) (workflow.LifecycleOutput, error) {
	if in.ChildTaskID == "" || in.TaskToken == "" {
		return workflow.LifecycleOutput{}, workflow.InvalidTask{Msg: "await needs child_task_id and task_token"}
	}
	err := s.Await(ctx, in.TeamID, in.TaskID, in.ExecutionARN, in.ChildTaskID, in.TaskToken)
	switch {
	case errors.Is(err, ErrNotRunnable):
		return workflow.LifecycleOutput{}, workflow.TaskNotRunnable{Msg: fmt.Sprintf("task %s is no longer this execution's to wait on", in.TaskID)}
	case apperr.Is(err, apperr.ENOTFOUND), apperr.Is(err, apperr.EINVALID):
		return workflow.LifecycleOutput{}, workflow.InvalidTask{Msg: err.Error()}
	case err != nil:
		return workflow.LifecycleOutput{}, err
	}
	return workflow.LifecycleOutput{TaskID: in.TaskID, Status: string(Running)}, nil
}
