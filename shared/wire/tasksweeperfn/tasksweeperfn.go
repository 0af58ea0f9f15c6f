// Package tasksweeperfn wires the "task-sweeper" function (every minute): it
// ends running tasks past their deadline and collaboration sessions past
// theirs (plus a grace), and stops their executions; it fails compound
// plans whose machine was lost; it flags tasks past
// their due date (TaskOverdue, escalated under the board policy); it fetches
// external A2A agents' cards again when due. It links DynamoDB,
// EventBridge, Step Functions and Secrets Manager.
package tasksweeperfn

import (
	"context"
	"errors"

	"github.com/conclave-ai/conclave/shared/aws/eventbus"

	"github.com/conclave-ai/conclave/shared/a2a/remote"
	"github.com/conclave-ai/conclave/shared/aws/executions"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/tools/secretstore"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/wire/planwiring"
	"github.com/conclave-ai/conclave/shared/wire/sessionwiring"
	"github.com/conclave-ai/conclave/shared/wire/taskwiring"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	starter, callbacks := executions.FromConfig(d.AWS, d.Config.StateMachines), executions.CallbacksFromConfig(d.AWS)
	svc := taskwiring.New(d, core, starter, callbacks).Tasks
	ses := sessionwiring.New(d, core, starter, callbacks, nil)
	pl := planwiring.New(d, core, starter, callbacks, nil)
	// External A2A agents' cards (agents.CardRefreshEvery): fetched under
	// the stage's network policy with each agent's credential.
	cardStore := agentstore.New(core.DB, core.Table)
	policy, secrets := toolpacks.NetPolicy{LoopbackOnly: d.Config.MCPLoopbackOnly}, secretstore.New(d.AWS)
	cards := agents.NewService(cardStore)
	cards.Cards, cards.Secrets = &remote.Client{Policy: policy}, secrets
	// A card checked again is a new agent version (its skills may have
	// changed): announced as every agent write is, so the team's routing
	// classifier is fitted again (the fitter skips it when nothing it
	// reads changed).
	cards.Bus = eventbus.FromConfig(d.AWS, d.Config.BusName)
	// A swept session's stages waiting for A2A agents cancel their remote
	// tasks (sessions/remote.go).
	ses.Remote = &remote.Client{Policy: policy, Agents: cardStore, Secrets: secrets}
	return func(ctx context.Context) (map[string]int, error) {
		n, err := svc.Sweep(ctx)
		m, serr := ses.Sweep(ctx)
		// Sessions left planning (their start lost): started by name.
		st, rerr := ses.Reconcile(ctx)
		// Due dates ride the same schedule: every minute, so a task is
		// flagged overdue within a minute of its due_at.
		o, oerr := svc.SweepOverdue(ctx)
		// Plans whose machine was lost (past their backstop).
		p, perr := pl.Sweep(ctx)
		c, cerr := cards.RefreshDue(ctx, cardStore)
		return map[string]int{"timed_out": n, "sessions_timed_out": m, "overdue": o, "plans_failed": p, "cards_fetched": c, "sessions_started": st}, errors.Join(err, serr, rerr, oerr, perr, cerr)
	}, nil
}
