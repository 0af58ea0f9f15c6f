// Package lifecyclefn wires the "task-lifecycle" function: the marking
// steps of the delegation state machine. It links DynamoDB, EventBridge and
// Step Functions, for task tokens only: a task it ends wakes the parent
// execution waiting for it (SendTaskSuccess); it starts and stops nothing.
package lifecyclefn

import (
	"github.com/conclave-ai/conclave/shared/app/taskwiring"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	svc := taskwiring.New(d, dynamo.FromConfig(d.AWS, d.Config.TableName), nil, executions.CallbacksFromConfig(d.AWS)).Tasks
	// One entry per machine whose states call this function; the
	// collaboration machines add theirs here.
	return workflow.Steps{workflow.Delegation: svc.Steps()}.Handle, nil
}
