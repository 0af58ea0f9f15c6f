// Package lifecyclefn wires the "task-lifecycle" function: the marking
// steps of the delegation state machine. It links DynamoDB and EventBridge;
// it never starts or stops executions, so it links no Step Functions client.
package lifecyclefn

import (
	"github.com/conclave-ai/conclave/shared/app/taskwiring"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	svc := taskwiring.New(d, dynamo.FromConfig(d.AWS, d.Config.TableName), nil).Tasks
	// One entry per machine whose states call this function; the
	// collaboration machines add theirs here.
	return workflow.Steps{workflow.Delegation: svc.Steps()}.Handle, nil
}
