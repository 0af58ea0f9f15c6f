// Package tasksfn wires the "tasks" HTTP function: the task board,
// delegation and the lifecycle verbs, and the approvals of tasks' tool
// calls. It links DynamoDB, EventBridge and
// Step Functions (to start and stop task executions).
package tasksfn

import (
	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/api/approvalsapi"
	"github.com/conclave-ai/conclave/shared/api/tasksapi"
	"github.com/conclave-ai/conclave/shared/aws/executions"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/approvalstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
	"github.com/conclave-ai/conclave/shared/wire/taskwiring"
	"github.com/conclave-ai/conclave/shared/work/approvals"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	w := taskwiring.New(d, core, executions.FromConfig(d.AWS, d.Config.StateMachines), executions.CallbacksFromConfig(d.AWS))
	tasksapi.TaskRoutes(rt, w.Tasks)
	// Approvals of tasks' tool calls: a decision is handed to the waiting
	// execution through its task token; edited arguments are checked
	// against the tool's schema (the one its model receives).
	approvalsapi.ApprovalRoutes(rt, &approvals.Service{Store: approvalstore.New(core.DB, core.Table), Bus: w.Bus, Callbacks: executions.CallbacksFromConfig(d.AWS),
		Validate: agenttools.ValidateArguments, Log: d.Log})
}
