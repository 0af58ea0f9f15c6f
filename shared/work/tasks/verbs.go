package tasks

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Start moves a queued task to running, or resumes a blocked one.
func (s *Service) Start(ctx context.Context, teamID, id, by string) (Task, error) {
	return s.transition(ctx, teamID, id, ActStart, by, func(before Task, _ *Task) ([]Event, error) {
		if before.Status == Blocked {
			return []Event{{Type: EvResumed}}, nil
		}
		return []Event{{Type: EvStarted}}, nil
	})
}

// Complete finishes a running task with its text result (an agent's
// answer); CompleteWith also takes a JSON output.
func (s *Service) Complete(ctx context.Context, teamID, id, by string, result string, artifacts []string) (Task, error) {
	return s.CompleteWith(ctx, teamID, id, by, CompleteInput{Result: result, ResultArtifacts: artifacts})
}

// CompleteInput is what completing a task records.
type CompleteInput struct {
	// Result is the text result (at most 20,000 characters).
	Result string `json:"result"`
	// Output is the JSON payload (see Payload). A string output is at
	// most 20,000 characters and is also the result when Result is
	// empty: the route took the text result as a string "output" before
	// payloads existed, and clients that send one keep their result.
	Output          json.RawMessage `json:"output"`
	ResultArtifacts []string        `json:"result_artifacts"`
}

// CompleteWith finishes a running task with its result and output.
// EINVALID names result or output; see transition for the rest.
func (s *Service) CompleteWith(ctx context.Context, teamID, id, by string, in CompleteInput) (Task, error) {
	if utf8.RuneCountInString(in.Result) > maxInstructions {
		return Task{}, apperr.Invalid("result", "result is longer than %d characters", maxInstructions)
	}
	output, err := Payload("output", in.Output)
	if err != nil {
		return Task{}, err
	}
	result := in.Result
	if len(output) > 0 && output[0] == '"' {
		var text string
		if err := json.Unmarshal(output, &text); err != nil {
			return Task{}, apperr.Invalid("output", "output must be valid JSON")
		}
		if utf8.RuneCountInString(text) > maxInstructions {
			return Task{}, apperr.Invalid("output", "output is longer than %d characters", maxInstructions)
		}
		if result == "" {
			result = text
		}
	}
	return s.transition(ctx, teamID, id, ActComplete, by, func(_ Task, after *Task) ([]Event, error) {
		after.Result = result
		after.Output = output
		if in.ResultArtifacts != nil {
			after.ResultArtifacts = in.ResultArtifacts
		}
		payload := map[string]any{"output_chars": utf8.RuneCountInString(result)}
		if output != nil {
			// The timeline records the size, not the payload: the task
			// holds it, and events stay small.
			payload["output_bytes"] = len(output)
		}
		return []Event{{Type: EvCompleted, Payload: payload}}, nil
	})
}

// Fail ends a running task with a reason.
func (s *Service) Fail(ctx context.Context, teamID, id, by, reason string) (Task, error) {
	return s.FailWith(ctx, teamID, id, by, reason, nil)
}

// FailWith ends a running task with a reason and a JSON output (see
// Payload; nil for none). EINVALID names reason or output; see transition
// for the rest.
func (s *Service) FailWith(ctx context.Context, teamID, id, by, reason string, output json.RawMessage) (Task, error) {
	if strings.TrimSpace(reason) == "" {
		return Task{}, apperr.Invalid("reason", "reason is required")
	}
	output, err := Payload("output", output)
	if err != nil {
		return Task{}, err
	}
	return s.transition(ctx, teamID, id, ActFail, by, func(_ Task, after *Task) ([]Event, error) {
		after.Error = reason
		after.Output = output
		payload := map[string]any{"reason": reason}
		if output != nil {
			payload["output_bytes"] = len(output)
		}
		return []Event{{Type: EvFailed, Payload: payload}}, nil
	})
}

// Block pauses a running task (waiting on a person or a dependency); it
// gives its slot back until it resumes.
func (s *Service) Block(ctx context.Context, teamID, id, by, reason string) (Task, error) {
	return s.transition(ctx, teamID, id, ActBlock, by, func(before Task, _ *Task) ([]Event, error) {
		if before.Execute {
			return nil, apperr.New(apperr.ECONFLICT, "a task run by the delegation state machine cannot be blocked; cancel it instead").
				WithReason(ReasonState).WithDetail("status", string(before.Status))
		}
		return []Event{{Type: EvBlocked, Payload: map[string]any{"reason": reason}}}, nil
	})
}

// Cancel ends a task that has not finished; a running execution is stopped.
func (s *Service) Cancel(ctx context.Context, teamID, id, by, reason string) (Task, error) {
	var prev Task
	t, err := s.transition(ctx, teamID, id, ActCancel, by, func(before Task, after *Task) ([]Event, error) {
		prev = before
		after.Error = reason
		return []Event{{Type: EvCanceled, Payload: map[string]any{"reason": reason, "previous_status": string(before.Status)}}}, nil
	})
	if err != nil {
		return Task{}, err
	}
	if prev.Execute {
		s.stop(ctx, prev, "canceled: "+reason)
	}
	return t, nil
}

func (s *Service) stop(ctx context.Context, t Task, cause string) {
	if s.Workflows == nil || t.Runs == 0 {
		return
	}
	arn := s.Workflows.ExecutionARN(workflow.Delegation, executionName(t))
	if err := s.Workflows.Stop(ctx, arn, cause); err != nil {
		s.Log.WarnContext(ctx, "stop execution", "task_id", t.ID, "execution", arn, "error", err.Error())
	}
}

// Reassign gives a task that has not finished to another agent; a running
// task goes back to queued (its execution is stopped, and a task that
// executes runs again for the new assignee). The new assignee must be
// active, below its limit, and not already in the delegation chain.
func (s *Service) Reassign(ctx context.Context, teamID, id, by, assignee string) (Task, error) {
	if !agents.ValidSlug(assignee) {
		return Task{}, apperr.Invalid("assignee", "assignee must be an agent slug")
	}
	var prev Task
	t, err := s.transition(ctx, teamID, id, ActAssign, by, func(before Task, after *Task) ([]Event, error) {
		prev = before
		if assignee == before.Assignee {
			return nil, apperr.Invalid("assignee", "the task is already assigned to %s", assignee)
		}
		if before.CreatedBy.Type == "agent" && before.CreatedBy.ID == assignee {
			return nil, apperr.New(apperr.EINVALID, "an agent cannot delegate a task to itself").WithReason(ReasonSelf)
		}
		if slices.Contains(before.Chain[:len(before.Chain)-1], assignee) {
			return nil, apperr.New(apperr.EREJECTED, "agent %q is already in the delegation chain", assignee).
				WithReason(ReasonCycle).WithDetail("chain", before.Chain)
		}
		after.Assignee = assignee
		after.Chain[len(after.Chain)-1] = assignee
		after.Error = ""
		if before.Execute {
			after.Runs = before.Runs + 1
		}
		return []Event{{Type: EvAssigned, Payload: map[string]any{"from": before.Assignee, "to": assignee, "previous_status": string(before.Status)}}}, nil
	})
	if apperr.Is(err, apperr.ENOTFOUND) && prev.ID != "" {
		return Task{}, apperr.NotFound("agent", assignee)
	}
	if err != nil {
		return Task{}, err
	}
	if prev.Execute {
		s.stop(ctx, prev, "reassigned to "+assignee)
		return s.launch(ctx, t)
	}
	return t, nil
}
