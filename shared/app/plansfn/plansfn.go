// Package plansfn wires the "plans" HTTP function: list, read and cancel
// compound plans. It links DynamoDB, EventBridge and Step Functions (a
// cancel stops the plan's execution and its steps').
package plansfn

import (
	"github.com/conclave-ai/conclave/shared/api/planapi"
	"github.com/conclave-ai/conclave/shared/app/httpfn"
	"github.com/conclave-ai/conclave/shared/app/planwiring"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	planapi.PlanRoutes(rt, planwiring.New(d, core, executions.FromConfig(d.AWS, d.Config.StateMachines), executions.CallbacksFromConfig(d.AWS), nil))
}
