// Package messagesfn wires the "messages" HTTP function (agent messaging).
// It links DynamoDB and EventBridge.
package messagesfn

import (
	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/eventbus"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/messaging"
)

// Router is the function's router (tests read its route keys).
func Router(d lambdafn.Deps) *httpapi.Router {
	store := dynamo.FromConfig(d.AWS, d.Config.TableName)
	rt := httpapi.NewRouter(d.Log, store)
	api.MessageRoutes(rt, &messaging.Service{Store: store, Dir: store, Bus: eventbus.FromConfig(d.AWS, d.Config.BusName)})
	return rt
}

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) { return Router(d).Serve, nil }
