// Package agentsfn wires the "agents" HTTP function. It links DynamoDB only.
package agentsfn

import (
	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

// Router is the function's router (tests read its route keys).
func Router(d lambdafn.Deps) *httpapi.Router {
	store := dynamo.FromConfig(d.AWS, d.Config.TableName)
	rt := httpapi.NewRouter(d.Log, store)
	api.AgentRoutes(rt, agents.NewService(store))
	return rt
}

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) { return Router(d).Serve, nil }
