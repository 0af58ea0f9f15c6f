package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// ErrNotRunnable means the task is no longer in a state the execution can
// act on (canceled, reassigned, swept); the execution ends quietly.
var ErrNotRunnable = errors.New("task is not runnable")

// ExecStart marks the task running for the execution executionARN.
// Retried calls for the same execution succeed again.
func (s *Service) ExecStart(ctx context.Context, teamID, id, executionARN string) (Task, error) {
	t, err := s.transition(ctx, teamID, id, ActStart, "execution", func(before Task, after *Task) ([]Event, error) {
		if before.Status != Queued || !before.Execute {
			return nil, ErrNotRunnable
		}
		after.Execution = executionARN
		return []Event{{Type: EvStarted, Payload: map[string]any{"execution_arn": executionARN}}}, nil
	})
	return s.retried(ctx, teamID, id, executionARN, Running, t, err)
}

// retried makes a marking step idempotent for its execution: a change
// refused because the task is already where the step takes it (a retried
// step of the same execution) returns the task as it is; any other refusal
// is ErrNotRunnable (the task is no longer the execution's).
func (s *Service) retried(ctx context.Context, teamID, id, executionARN string, want Status, t Task, err error) (Task, error) {
	if apperr.Code(err) != apperr.ECONFLICT && !errors.Is(err, ErrNotRunnable) {
		return t, err
	}
	cur, gerr := s.Store.GetTask(ctx, teamID, id)
	if gerr == nil && cur.Status == want && cur.Execution == executionARN {
		return cur, nil
	}
	return Task{}, ErrNotRunnable
}

// ExecComplete records the worker's result: its answer and the ids of
// what its tool calls created (result_artifacts; deduplicated and bounded
// again here, as the payload crossed the state machine).
func (s *Service) ExecComplete(ctx context.Context, teamID, id, executionARN string, r workflow.TaskResult) (Task, error) {
	t, err := s.transition(ctx, teamID, id, ActComplete, "execution", func(before Task, after *Task) ([]Event, error) {
		if before.Execution != executionARN {
			return nil, ErrNotRunnable
		}
		after.Result = r.Output
		if arts := workflow.AppendArtifacts(nil, r.ResultArtifacts...); len(arts) > 0 {
			after.ResultArtifacts = arts
		}
		return []Event{{Type: EvCompleted, Payload: map[string]any{"tokens_used": after.TokensUsed, "tool_calls": after.ToolCalls, "cost_usd": after.CostUSD, "model_id": r.ModelID}}}, nil
	})
	if apperr.Code(err) == apperr.ECONFLICT {
		return Task{}, ErrNotRunnable
	}
	return t, err
}

// ExecFail records the final failure after the payload went to the
// dead-letter queue: failed, or timed_out when the deadline passed.
func (s *Service) ExecFail(ctx context.Context, teamID, id, executionARN, errName, cause string) (Task, error) {
	act, evType := ActFail, EvFailed
	if errName == "States.Timeout" || errName == "TaskTimedOut" {
		act, evType = ActTimeout, EvTimedOut
	}
	msg := causeMessage(cause)
	// A task blocked for approval fails from there too (its execution
	// failed while it waited); the board's fail verb stays running-only.
	from := append(slices.Clone(Transitions[act].From), Blocked)
	t, err := s.apply(ctx, teamID, id, from, Transitions[act].To, "execution", func(before Task, after *Task) ([]Event, error) {
		if !slices.Contains(from, before.Status) {
			return nil, apperr.New(apperr.ECONFLICT, "cannot %s a task that is %s", act, before.Status).
				WithReason(ReasonState).WithDetail("status", string(before.Status))
		}
		if before.Execution != executionARN {
			return nil, ErrNotRunnable
		}
		after.Error = errName
		if msg != "" {
			after.Error += ": " + msg
		}
		return []Event{
			{Type: EvDeadLettered, Payload: map[string]any{"error": errName, "cause": msg}},
			{Type: evType, Payload: map[string]any{"error": errName, "cause": msg}},
		}, nil
	})
	if apperr.Code(err) == apperr.ECONFLICT {
		return Task{}, ErrNotRunnable
	}
	return t, err
}

// causeMessage extracts the message of a Lambda error cause
// ({"errorMessage": …, "errorType": …}); other causes pass through.
func causeMessage(cause string) string {
	var c struct {
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal([]byte(cause), &c) == nil && c.ErrorMessage != "" {
		return c.ErrorMessage
	}
	return cause
}

// Sweep ends every running task more than SweepGrace past its deadline as
// timed_out and stops its execution. It covers what the state machine
// cannot: an execution that timed out or was stopped, or a delegated
// board task nobody finished. A work item has no deadline (its due_at
// says when it is late); one stored with a deadline before work items
// lost theirs has it cleared, not ended. Returns how many tasks it ended.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	refs, err := s.Store.DueTasks(ctx, s.Now.UTC().Add(-SweepGrace), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range refs {
		// Each task's lines say whose it is (shared/platform/logctx).
		ctx := logctx.With(ctx, "team_id", r.TeamID, "task_id", r.ID)
		var prev Task
		_, err := s.transition(ctx, r.TeamID, r.ID, ActTimeout, "sweeper", func(before Task, after *Task) ([]Event, error) {
			if before.WorkItem() {
				return nil, errWorkItem
			}
			if before.Deadline == nil || before.Deadline.After(s.Now.UTC().Add(-SweepGrace)) {
				return nil, ErrNotRunnable // resumed or re-read with a later deadline
			}
			prev = before
			after.Error = "TaskTimedOut: the task was still running past its deadline"
			return []Event{{Type: EvTimedOut, Payload: map[string]any{"deadline": before.Deadline, "swept": true}}}, nil
		})
		if errors.Is(err, errWorkItem) {
			// Any write of a work item drops its deadline (applyFrom), and
			// with it the sweeper's index entry; no event, nothing changed
			// that a person would see.
			_, err = s.apply(ctx, r.TeamID, r.ID, []Status{Running}, "", "sweeper", func(Task, *Task) ([]Event, error) { return nil, nil })
			if err == nil {
				continue
			}
		}
		if err != nil {
			if !errors.Is(err, ErrNotRunnable) && apperr.Code(err) != apperr.ECONFLICT {
				s.Log.ErrorContext(ctx, "sweep", "error", err.Error())
			}
			continue
		}
		n++
		if prev.Execute {
			s.stop(ctx, prev, "deadline passed")
		}
	}
	return n, nil
}

// errWorkItem: the sweeper read a work item (see Sweep).
var errWorkItem = errors.New("a work item has no deadline")

// RunningDeadline is the deadline of a task its assignee is running: the
// worker's attempt runs inside it. Returns ErrNotRunnable when the task is
// not running for assignee, ENOTFOUND when it does not exist.
func (s *Service) RunningDeadline(ctx context.Context, teamID, id, assignee string) (time.Time, error) {
	t, err := s.Store.GetTask(ctx, teamID, id)
	if err != nil {
		return time.Time{}, err
	}
	if t.Status != Running || t.Assignee != assignee {
		return time.Time{}, ErrNotRunnable
	}
	if t.Deadline == nil {
		return time.Time{}, nil
	}
	return *t.Deadline, nil
}

// Usage is what an attempt consumed since it last recorded.
type Usage struct {
	Tokens    int
	ToolCalls int
	CostUSD   float64
}

// RecordAttempt appends timeline events and adds usage to a task its
// assignee is running: one conditional write, only while it runs (else
// ErrNotRunnable, which stops the worker at its next step).
func (s *Service) RecordAttempt(ctx context.Context, teamID, id, assignee string, u Usage, evs []Event) error {
	_, err := s.apply(ctx, teamID, id, []Status{Running}, "", "agent:"+assignee, func(before Task, after *Task) ([]Event, error) {
		if before.Status != Running || before.Assignee != assignee {
			return nil, ErrNotRunnable
		}
		after.TokensUsed += u.Tokens
		after.ToolCalls += u.ToolCalls
		after.CostUSD += u.CostUSD
		return evs, nil
	})
	return err
}

// ExecBlockForApproval blocks the task its execution runs while tool calls
// wait for a human: it gives its agent's slot back and its deadline is
// cleared (the 120 s clock pauses), in the same conditional write. A retry
// for the same execution finds it blocked and succeeds again.
func (s *Service) ExecBlockForApproval(ctx context.Context, teamID, id, executionARN string, approvalIDs []string) (Task, error) {
	t, err := s.transition(ctx, teamID, id, ActBlock, "execution", func(before Task, after *Task) ([]Event, error) {
		if before.Execution != executionARN {
			return nil, ErrNotRunnable
		}
		after.StatusReason = ReasonAwaitingApproval
		after.ApprovalIDs = slices.Clone(approvalIDs)
		return []Event{{Type: EvBlocked, Payload: map[string]any{"reason": ReasonAwaitingApproval, "approval_ids": approvalIDs}}}, nil
	})
	t, err = s.retried(ctx, teamID, id, executionARN, Blocked, t, err)
	if err == nil {
		s.blockAncestors(ctx, t)
	}
	return t, err
}

// errNotWaiting stops blockAncestors at an ancestor that is not running.
var errNotWaiting = errors.New("the parent is not running")

// blockAncestors blocks, for approval, each ancestor whose execution
// waits on the blocked task t (t.Waiter: its parent's AwaitChild has
// registered), and upward while each waits on the one below: a parent
// that waits on a task waiting for a human waits for that human too. It
// gives its slot back and its clock pauses, as t's did; it runs again,
// with a fresh deadline, when its execution resumes it (the delegation
// machine's ResumeAfterChildren, once every child it waits for ended).
// The walk stops at an ancestor that is not running (already blocked by
// another child, or ended). Each ancestor is its own conditional write:
// one that fails is logged and keeps running on its own deadline, as
// before this existed; a registration that comes after the block is
// caught by Await, which blocks the parent then.
func (s *Service) blockAncestors(ctx context.Context, t Task) {
	for cur := t; cur.ParentID != "" && cur.Waiter != ""; {
		p, err := s.transition(ctx, cur.TeamID, cur.ParentID, ActBlock, "execution", func(before Task, after *Task) ([]Event, error) {
			if before.Status != Running || before.PlanRoot() {
				// A plan's root holds no slot and no deadline: its
				// machine waits for the step, and it stays running.
				return nil, errNotWaiting
			}
			after.StatusReason = ReasonAwaitingApproval
			return []Event{{Type: EvBlocked, Payload: map[string]any{"reason": ReasonAwaitingApproval, "waiting_on": t.ID}}}, nil
		})
		if errors.Is(err, errNotWaiting) || apperr.Code(err) == apperr.ECONFLICT {
			return
		}
		if err != nil {
			s.Log.WarnContext(ctx, "blocking a parent that waits for approval failed; it keeps its deadline", "task_id", cur.ParentID, "waiting_on", t.ID, "error", err.Error())
			return
		}
		cur = p
	}
}

// ErrAgentBusy is a blocked task that cannot take its agent's slot back:
// the agent holds MaxActivePerAgent other tasks (it took them while the
// task waited). The machine retries.
var ErrAgentBusy = errors.New("the agent has no free slot")

// ExecResumeApproved takes a task blocked for approval back: running for
// its execution, with a slot of its agent (the limit holds: ErrAgentBusy
// when none is free) and a fresh deadline. A retry for the same execution
// finds it running and succeeds again.
func (s *Service) ExecResumeApproved(ctx context.Context, teamID, id, executionARN string) (Task, error) {
	t, err := s.transition(ctx, teamID, id, ActStart, "execution", func(before Task, after *Task) ([]Event, error) {
		if before.Status != Blocked || before.Execution != executionARN {
			return nil, ErrNotRunnable
		}
		return []Event{{Type: EvResumed, Payload: map[string]any{"reason": "approvals decided"}}}, nil
	})
	return s.resumed(ctx, teamID, id, executionARN, t, err)
}

// resumed ends a resume of a blocked task: no slot, or the agent paused
// meanwhile, is ErrAgentBusy (the machine retries until it can run); a
// retried resume finds the task running and succeeds again.
func (s *Service) resumed(ctx context.Context, teamID, id, executionARN string, t Task, err error) (Task, error) {
	var ae *apperr.Error
	if errors.As(err, &ae) && (ae.Reason == ReasonConcurrency || ae.Reason == ReasonUnavailable) {
		return Task{}, ErrAgentBusy
	}
	return s.retried(ctx, teamID, id, executionARN, Running, t, err)
}

// BlockedRecheckSeconds is how long a parent blocked while a task below
// it waits for approval waits for its child before the machine asks
// again (ExecRecheckWait): the wait is re-armed hourly, for up to the
// machine's own timeout.
const BlockedRecheckSeconds = 3600

// ExecRecheckWait answers a child's wait that reached what was the
// parent's deadline when it began: the seconds to wait again, or 0 when
// the parent, running, is past its deadline (it times out). A parent
// blocked because a task below it waits for a human waits on
// (BlockedRecheckSeconds); one running on a later deadline (resumed
// meanwhile) waits until that one.
func (s *Service) ExecRecheckWait(ctx context.Context, teamID, id, executionARN string) (int, error) {
	t, err := s.Store.GetTask(ctx, teamID, id)
	if err != nil {
		return 0, err
	}
	switch {
	case t.Execution != executionARN || t.Status.Terminal():
		return 0, ErrNotRunnable
	case t.blockedBelow():
		return BlockedRecheckSeconds, nil
	case t.Status == Running && t.Deadline != nil:
		if left := t.Deadline.Sub(s.Now.UTC()); left > 0 {
			return max(1, int(math.Ceil(left.Seconds()))), nil
		}
	}
	return 0, nil
}

// blockedBelow reports a task blocked because a task it waits for waits
// for approval (blockAncestors), not for approvals of its own.
func (t Task) blockedBelow() bool {
	return t.Status == Blocked && t.StatusReason == ReasonAwaitingApproval && len(t.ApprovalIDs) == 0
}

// ExecResumeWaiting takes a parent whose children have all ended back to
// running when it was blocked while one of them waited for approval:
// with a slot of its agent (ErrAgentBusy while none is free) and a fresh
// deadline. A parent that kept running is returned as it is (one read).
func (s *Service) ExecResumeWaiting(ctx context.Context, teamID, id, executionARN string) (Task, error) {
	cur, err := s.Store.GetTask(ctx, teamID, id)
	if err != nil {
		return Task{}, err
	}
	if cur.Execution != executionARN {
		return Task{}, ErrNotRunnable
	}
	if cur.Status == Running {
		return cur, nil
	}
	if !cur.blockedBelow() {
		return Task{}, ErrNotRunnable
	}
	t, err := s.transition(ctx, teamID, id, ActStart, "execution", func(before Task, after *Task) ([]Event, error) {
		if !before.blockedBelow() || before.Execution != executionARN {
			return nil, ErrNotRunnable
		}
		return []Event{{Type: EvResumed, Payload: map[string]any{"reason": "the tasks it waited for ended"}}}, nil
	})
	return s.resumed(ctx, teamID, id, executionARN, t, err)
}
