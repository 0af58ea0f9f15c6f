// Package workerfn wires the "task-worker" function: one agent on one task
// through the model port, with the collaboration tools. It links DynamoDB,
// EventBridge, Step Functions (sub-delegations start executions) and
// Bedrock.
package workerfn

import (
	"github.com/conclave-ai/conclave/shared/app/taskwiring"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/messaging"
	"github.com/conclave-ai/conclave/shared/models/providers"
	"github.com/conclave-ai/conclave/shared/tasktools"
	"github.com/conclave-ai/conclave/shared/worker"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	w := taskwiring.New(d, dynamo.FromConfig(d.AWS, d.Config.TableName), executions.FromConfig(d.AWS, d.Config.StateMachines), nil)
	msgs := &messaging.Service{Store: w.Store, Dir: w.Store, Bus: w.Bus}
	run := &worker.Worker{Agents: w.Store, Model: providers.New(d.Config, d.AWS, w.Store),
		Tools: &tasktools.Tools{Tasks: w.Tasks, Messages: msgs}, Tracker: tasktools.Tracker{Tasks: w.Tasks}}
	return run.Run, nil
}
