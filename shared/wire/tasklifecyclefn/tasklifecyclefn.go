// Package tasklifecyclefn wires the "task-lifecycle" function: the marking
// steps of the delegation state machine. It links DynamoDB, EventBridge and
// Step Functions, for task tokens only: a task it ends wakes the parent
// execution waiting for it (SendTaskSuccess); it starts and stops nothing.
package tasklifecyclefn

import (
	"github.com/conclave-ai/conclave/shared/aws/executions"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/approvalstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/wire/taskwiring"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	callbacks := executions.CallbacksFromConfig(d.AWS)
	w := taskwiring.New(d, dynamo.FromConfig(d.AWS, d.Config.TableName), nil, callbacks)
	// The delegation machine's approval states (request and expire an
	// approval) run in the approvals service, the rest in the task's.
	apr := &approvals.Service{Store: approvalstore.New(w.Core.DB, w.Core.Table), Bus: w.Bus, Callbacks: callbacks, Log: d.Log}
	// One entry per machine whose states call this function; the
	// collaboration machines add theirs here.
	return workflow.Steps{workflow.Delegation: apr.Steps(w.Tasks.Steps())}.Handle, nil
}
