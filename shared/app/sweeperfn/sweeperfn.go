// Package sweeperfn wires the "task-sweeper" function (every minute): it
// ends running tasks past their deadline and stops their executions. It
// links DynamoDB, EventBridge and Step Functions.
package sweeperfn

import (
	"context"

	"github.com/conclave-ai/conclave/shared/app/taskwiring"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	svc := taskwiring.New(d, dynamo.FromConfig(d.AWS, d.Config.TableName), executions.FromConfig(d.AWS, d.Config.StateMachines), executions.CallbacksFromConfig(d.AWS)).Tasks
	return func(ctx context.Context) (map[string]int, error) {
		n, err := svc.Sweep(ctx)
		return map[string]int{"timed_out": n}, err
	}, nil
}
