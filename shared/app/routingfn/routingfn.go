// Package routingfn wires the "routing" HTTP function: the routing
// decision log and its analytics. It links DynamoDB only (read).
package routingfn

import (
	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

// Router is the function's router (tests read its route keys).
func Router(d lambdafn.Deps) *httpapi.Router {
	store := dynamo.FromConfig(d.AWS, d.Config.TableName)
	rt := httpapi.NewRouter(d.Log, store)
	api.RoutingRoutes(rt, &conversations.Service{Store: store, Agents: store, Log: d.Log})
	return rt
}

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) { return Router(d).Serve, nil }
