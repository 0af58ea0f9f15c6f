// Package routingevaluatorfn wires the "routing-evaluator" function:
// RoutingEvaluationRequested (bus → rule → SQS) runs the team's routing
// evaluation, each labelled message scored by the expert-gate function
// (gatewiring) as a new conversation's first turn, and records the
// result (shared/routing/evaluations); RoutingCorrected, from the same
// queue, keeps a user's correction of the router as a suggested example
// of the agent they chose, under the skill the gate ranks best for it
// (shared/routing/suggestions). It links DynamoDB, Lambda (the gate) and
// SQS to dead-letter an event whose attempts are used up.
package routingevaluatorfn

import (
	"context"
	"errors"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/consumers"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/routing/evaluations"
	"github.com/conclave-ai/conclave/shared/routing/suggestions"
	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/decisionstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/evaluationstore"
	"github.com/conclave-ai/conclave/shared/store/suggestionstore"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/wire/consumerwiring"
	"github.com/conclave-ai/conclave/shared/wire/gatewiring"
)

// finishMargin is the time kept, out of the invocation's, to write an
// evaluation's end.
const finishMargin = 10 * time.Second

// Build implements lambdafn.Build. A stage without the expert-gate
// function fails the cold start: there is nothing to evaluate with.
func Build(d lambdafn.Deps) (any, error) {
	gate := gatewiring.Gate(d)
	if gate == nil {
		return nil, errors.New("routing-evaluator: FUNCTION_NAMES names no expert-gate function")
	}
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	svc := &evaluations.Service{Store: evaluationstore.New(core.DB, core.Table), Agents: agentstore.New(core.DB, core.Table), Gate: gate}
	valid := func(ev evaluations.RequestedEvent) bool { return ev.TeamID != "" && ev.EvaluationID != "" }
	retry, err := consumerwiring.Retry(d, core)
	if err != nil {
		return nil, err
	}
	h := consumers.For(evaluations.DetailType, d.Log, valid, func(ctx context.Context, ev evaluations.RequestedEvent) error {
		// The scoring stops finishMargin before the invocation's end, so
		// the evaluation's end (failed, if it ran out) is always written.
		if deadline, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline.Add(-finishMargin))
			defer cancel()
		}
		return svc.Run(ctx, ev.TeamID, ev.EvaluationID)
	})
	sugg := &suggestions.Service{Store: suggestionstore.New(core.DB, core.Table), Decisions: decisionstore.New(core.DB, core.Table),
		Agents: agents.NewService(agentstore.New(core.DB, core.Table)), Gate: gate}
	corrected := func(c suggestions.Correction) bool { return c.TeamID != "" && c.MessageID != "" && c.ChosenAgent != "" }
	consumers.On(h, suggestions.DetailType, corrected, func(ctx context.Context, c suggestions.Correction) error {
		_, _, err := sugg.Suggest(ctx, c)
		return err
	})
	h.Retry = retry
	return h.Handle, nil
}
