// Package routingfn wires the "routing" HTTP function: the routing
// decision log and its analytics (shared/dispatch; it links neither the
// conversations service nor any model). It links DynamoDB only (read).
package routingfn

import (
	"github.com/conclave-ai/conclave/shared/api/routingapi"
	"github.com/conclave-ai/conclave/shared/app/httpfn"
	"github.com/conclave-ai/conclave/shared/dispatch"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/dynamo/decisionstore"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.NewReadOnly(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	routingapi.RoutingRoutes(rt, &dispatch.Service{Store: decisionstore.New(core.DB, core.Table)})
}
