// Package sweeperfn wires the "task-sweeper" function (every minute): it
// ends running tasks past their deadline and collaboration sessions past
// theirs (plus a grace), and stops their executions; it fails compound
// plans whose machine was lost; it flags tasks past
// their due date (TaskOverdue, escalated under the board policy). It links DynamoDB,
// EventBridge and Step Functions.
package sweeperfn

import (
	"context"
	"errors"

	"github.com/conclave-ai/conclave/shared/app/planwiring"
	"github.com/conclave-ai/conclave/shared/app/sessionwiring"
	"github.com/conclave-ai/conclave/shared/app/taskwiring"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	starter, callbacks := executions.FromConfig(d.AWS, d.Config.StateMachines), executions.CallbacksFromConfig(d.AWS)
	svc := taskwiring.New(d, core, starter, callbacks).Tasks
	ses := sessionwiring.New(d, core, starter, callbacks, nil)
	pl := planwiring.New(d, core, starter, callbacks, nil)
	return func(ctx context.Context) (map[string]int, error) {
		n, err := svc.Sweep(ctx)
		m, serr := ses.Sweep(ctx)
		// Due dates ride the same schedule: every minute, so a task is
		// flagged overdue within a minute of its due_at.
		o, oerr := svc.SweepOverdue(ctx)
		// Plans whose machine was lost (past their backstop).
		p, perr := pl.Sweep(ctx)
		return map[string]int{"timed_out": n, "sessions_timed_out": m, "overdue": o, "plans_failed": p}, errors.Join(err, serr, oerr, perr)
	}, nil
}
