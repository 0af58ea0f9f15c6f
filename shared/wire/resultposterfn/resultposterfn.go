// Package resultposterfn wires the "result-poster" function: the end of a task,
// a report or a session linked to a conversation (TaskStatusChanged,
// ReportFinished, SessionStatusChanged: bus → rule → SQS) posts its
// result into the conversation, once (shared/work/results). It links DynamoDB,
// and SQS to dead-letter an event whose attempts are used up.
package resultposterfn

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/consumers"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/resultstore"
	"github.com/conclave-ai/conclave/shared/wire/consumerwiring"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/results"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	// No Bus: posting publishes nothing, and the function has no bus grant.
	p := &results.Poster{Store: resultstore.New(core.DB, core.Table), Log: d.Log}
	retry, err := consumerwiring.Retry(d, core)
	if err != nil {
		return nil, err
	}
	logged := func(ctx context.Context, kind, id string, out results.Outcome, err error) error {
		if err == nil && out != results.Skipped {
			d.Log.InfoContext(ctx, "result "+string(out), "work", kind, "work_id", id)
		}
		return err
	}
	h := consumers.For("TaskStatusChanged", d.Log, func(ev tasks.TaskStatusChanged) bool { return ev.TeamID != "" && ev.TaskID != "" },
		func(ctx context.Context, ev tasks.TaskStatusChanged) error {
			out, err := p.TaskEnded(ctx, ev)
			return logged(ctx, results.WorkTask, ev.TaskID, out, err)
		})
	consumers.On(h, reports.DetailType, func(ev reports.Finished) bool { return ev.TeamID != "" && ev.ReportID != "" },
		func(ctx context.Context, ev reports.Finished) error {
			out, err := p.ReportEnded(ctx, ev)
			return logged(ctx, results.WorkReport, ev.ReportID, out, err)
		})
	consumers.On(h, sessions.EventStatusChanged, func(ev sessions.SessionStatusChanged) bool { return ev.TeamID != "" && ev.SessionID != "" },
		func(ctx context.Context, ev sessions.SessionStatusChanged) error {
			out, err := p.SessionEnded(ctx, ev)
			return logged(ctx, results.WorkSession, ev.SessionID, out, err)
		})
	consumers.On(h, "PlanCompleted", func(ev plans.Event) bool { return ev.TeamID != "" && ev.PlanID != "" },
		func(ctx context.Context, ev plans.Event) error {
			out, err := p.PlanEnded(ctx, ev)
			return logged(ctx, results.WorkPlan, ev.PlanID, out, err)
		})
	h.Retry = retry
	return h.Handle, nil
}
