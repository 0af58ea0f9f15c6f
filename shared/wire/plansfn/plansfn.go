// Package plansfn wires the "plans" HTTP function: list, read and cancel
// compound plans. It links DynamoDB, EventBridge and Step Functions (a
// cancel stops the plan's execution and its steps').
package plansfn

import (
	"github.com/conclave-ai/conclave/shared/api/plansapi"
	"github.com/conclave-ai/conclave/shared/aws/executions"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
	"github.com/conclave-ai/conclave/shared/wire/planwiring"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	plansapi.PlanRoutes(rt, planwiring.New(d, core, executions.FromConfig(d.AWS, d.Config.StateMachines), executions.CallbacksFromConfig(d.AWS), nil))
}
