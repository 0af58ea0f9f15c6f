// Package reportsfn wires the "reports" HTTP function: the report
// templates, report requests (each creates and starts its task through the
// task service) and reads. It links DynamoDB, EventBridge (the task's
// status changes) and Step Functions (to start the task's execution, and
// stop it if its report cannot be recorded).
package reportsfn

import (
	"github.com/conclave-ai/conclave/shared/api/reportsapi"
	"github.com/conclave-ai/conclave/shared/aws/executions"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/conversationstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/reportstore"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
	"github.com/conclave-ai/conclave/shared/wire/taskwiring"
	"github.com/conclave-ai/conclave/shared/work/reports"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	// No callbacks: a report's task is new, so nothing waits on it when
	// this function cancels it.
	w := taskwiring.New(d, core, executions.FromConfig(d.AWS, d.Config.StateMachines), nil)
	reportsapi.ReportRoutes(rt, &reports.Service{Store: reportstore.New(core.DB, core.Table), Tasks: w.Tasks, Conversations: conversationstore.New(core.DB, core.Table), Bus: w.Bus, Log: d.Log})
}
