// Package agentsfn wires the "agents" HTTP function. It links DynamoDB only.
package agentsfn

import (
	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/app/httpfn"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, store *dynamo.Store, rt *httpapi.Router) {
	api.AgentRoutes(rt, agents.NewService(store))
}
