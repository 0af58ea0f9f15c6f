package agenttools

import (
	"context"
	"errors"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Tracker connects the worker to the task record (worker.Tracker). It
// lives here, beside the tools, so that tasks never imports the worker
// and the worker never imports tasks.
type Tracker struct{ Tasks *tasks.Service }

var _ worker.Tracker = Tracker{}

// Begin implements worker.Tracker: the task must be running for the
// payload's assignee; its deadline bounds the attempt.
func (tr Tracker) Begin(ctx context.Context, p workflow.TaskInput) (time.Time, error) {
	d, err := tr.Tasks.RunningDeadline(ctx, p.TeamID, p.TaskID, p.Assignee)
	if apperr.Is(err, apperr.ENOTFOUND) {
		return time.Time{}, workflow.InvalidTask{Msg: "task " + p.TaskID + " not found"}
	}
	return d, notRunning(err)
}

// Record implements worker.Tracker: one conditional append, only while the
// task is running.
func (tr Tracker) Record(ctx context.Context, p workflow.TaskInput, u worker.Usage, evs ...worker.TrackEvent) error {
	out := make([]tasks.Event, len(evs))
	for i, e := range evs {
		out[i] = tasks.Event{Type: e.Type, Payload: e.Payload}
	}
	err := tr.Tasks.RecordAttempt(ctx, p.TeamID, p.TaskID, p.Assignee, tasks.Usage{Tokens: u.Tokens, ToolCalls: u.ToolCalls, CostUSD: u.CostUSD}, out)
	return notRunning(err)
}

// StillRunning implements worker.Tracker.
func (tr Tracker) StillRunning(ctx context.Context, p workflow.TaskInput) (bool, error) {
	_, err := tr.Tasks.RunningDeadline(ctx, p.TeamID, p.TaskID, p.Assignee)
	if errors.Is(err, tasks.ErrNotRunnable) {
		return false, nil
	}
	return err == nil, err
}

// notRunning translates the task model's sentinel into the worker's.
func notRunning(err error) error {
	if errors.Is(err, tasks.ErrNotRunnable) {
		return worker.ErrNotRunnable
	}
	return err
}
