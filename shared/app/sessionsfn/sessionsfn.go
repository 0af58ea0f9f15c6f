// Package sessionsfn wires the "sessions" HTTP function: create, list,
// read, trace, cancel, approve and resume collaboration sessions. It links
// DynamoDB, EventBridge and Step Functions (to start and stop executions
// and to hand a human's decision to the waiting one).
package sessionsfn

import (
	"github.com/conclave-ai/conclave/shared/api/sessionapi"
	"github.com/conclave-ai/conclave/shared/app/httpfn"
	"github.com/conclave-ai/conclave/shared/app/sessionwiring"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	svc := sessionwiring.New(d, core, executions.FromConfig(d.AWS, d.Config.StateMachines), executions.CallbacksFromConfig(d.AWS), nil)
	sessionapi.SessionRoutes(rt, svc)
}
