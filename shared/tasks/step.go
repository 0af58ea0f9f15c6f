package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/conclave-ai/conclave/shared/worker"
)

// StepInput is what the delegation state machine sends the task-lifecycle
// function at each of its marking steps.
type StepInput struct {
	Action       string        `json:"action"` // start | complete | fail
	TeamID       string        `json:"team_id"`
	TaskID       string        `json:"task_id"`
	ExecutionARN string        `json:"execution_arn"`
	Result       worker.Result `json:"result"`
	Error        struct {
		Error string `json:"Error"`
		Cause string `json:"Cause"`
	} `json:"error"`
}

// StepOutput reports the task after the step.
type StepOutput struct {
	TaskID   string     `json:"task_id"`
	Status   Status     `json:"status"`
	Deadline *time.Time `json:"deadline,omitempty"`
}

// Step is the task-lifecycle function's handler. A task that is no longer
// the execution's to act on (canceled, reassigned, swept) is reported as
// worker.TaskNotRunnable, which the state machine catches and ends on.
func (s *Service) Step(ctx context.Context, in StepInput) (StepOutput, error) {
	var t Task
	var err error
	switch in.Action {
	case "start":
		t, err = s.ExecStart(ctx, in.TeamID, in.TaskID, in.ExecutionARN)
	case "complete":
		t, err = s.ExecComplete(ctx, in.TeamID, in.TaskID, in.ExecutionARN, in.Result)
	case "fail":
		t, err = s.ExecFail(ctx, in.TeamID, in.TaskID, in.ExecutionARN, in.Error.Error, in.Error.Cause)
	default:
		return StepOutput{}, worker.InvalidTask{Msg: fmt.Sprintf("unknown action %q", in.Action)}
	}
	if errors.Is(err, ErrNotRunnable) {
		return StepOutput{}, worker.TaskNotRunnable{Msg: fmt.Sprintf("task %s is no longer this execution's to %s", in.TaskID, in.Action)}
	}
	if err != nil {
		return StepOutput{}, err
	}
	return StepOutput{TaskID: t.ID, Status: t.Status, Deadline: t.Deadline}, nil
}
