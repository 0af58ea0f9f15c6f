// Package tasksfn wires the "tasks" HTTP function: the task board,
// delegation and the lifecycle verbs, and the approvals of tasks' tool
// calls. It links DynamoDB, EventBridge and
// Step Functions (to start and stop task executions).
package tasksfn

import (
	"github.com/conclave-ai/conclave/shared/api/approvalapi"
	"github.com/conclave-ai/conclave/shared/api/taskapi"
	"github.com/conclave-ai/conclave/shared/app/httpfn"
	"github.com/conclave-ai/conclave/shared/app/taskwiring"
	"github.com/conclave-ai/conclave/shared/approvals"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/dynamo/approvalstore"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/tasktools"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	w := taskwiring.New(d, core, executions.FromConfig(d.AWS, d.Config.StateMachines), executions.CallbacksFromConfig(d.AWS))
	taskapi.TaskRoutes(rt, w.Tasks)
	// Approvals of tasks' tool calls: a decision is handed to the waiting
	// execution through its task token; edited arguments are checked
	// against the tool's schema (the one its model receives).
	approvalapi.ApprovalRoutes(rt, &approvals.Service{Store: approvalstore.New(core.DB, core.Table), Bus: w.Bus, Callbacks: executions.CallbacksFromConfig(d.AWS),
		Validate: tasktools.ValidateArguments, Log: d.Log})
}
