// Package workerfn wires the "task-worker" function: one agent on one task
// through the model port, with the collaboration tools. It links DynamoDB,
// EventBridge, Step Functions (sub-delegations start executions) and
// Bedrock.
package workerfn

import (
	"github.com/conclave-ai/conclave/shared/app/sessionwiring"
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
	starter := executions.FromConfig(d.AWS, d.Config.StateMachines)
	w := taskwiring.New(d, dynamo.FromConfig(d.AWS, d.Config.TableName), starter, nil)
	msgs := &messaging.Service{Store: w.Store, Dir: w.Store, Bus: w.Bus}
	tools := &tasktools.Tools{Tasks: w.Tasks, Messages: msgs}
	if d.Config.Flags.Sessions {
		tools.Sessions = sessionwiring.New(d, w.Store, starter, nil, nil)
	}
	run := &worker.Worker{Agents: w.Store, Model: providers.New(d.Config, d.AWS, w.Store),
		Tools: tools, Tracker: tasktools.Tracker{Tasks: w.Tasks}}
	return run.Run, nil
}
