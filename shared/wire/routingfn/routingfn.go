// Package routingfn wires the "routing" HTTP function: the routing
// decision log and its analytics (shared/routing/cascade; it links neither the
// conversations service nor any model), and the team's routing calibration
// (the stored classifier, read). It links DynamoDB only (read).
package routingfn

import (
	"github.com/conclave-ai/conclave/shared/api/routingapi"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/store/decisionstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/expertgatestore"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.NewReadOnly(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	gate := expertgatestore.New(core.DB, core.Table)
	// An unknown ROUTING_EMBEDDER fails the expert-gate's cold start
	// (and its logs say so); here the report says "off" rather than
	// failing every route.
	id, _ := expertgate.EmbedderID(d.Config.Embedder)
	routingapi.RoutingRoutes(rt, &cascade.Service{Store: decisionstore.New(core.DB, core.Table)},
		&expertgate.Calibrations{Source: gate, Store: gate, Embedder: id})
}
