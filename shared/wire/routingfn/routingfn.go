// Package routingfn wires the "routing" HTTP function: the routing
// decision log and its analytics (shared/routing/cascade; it links neither the
// conversations service nor any model), and the team's routing calibration
// (the stored classifier, read), and routing evaluations: created and
// announced here, run by the routing-evaluator. It links DynamoDB and
// EventBridge.
package routingfn

import (
	"github.com/conclave-ai/conclave/shared/api/routingapi"
	"github.com/conclave-ai/conclave/shared/aws/eventbus"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/evaluations"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/store/decisionstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/evaluationstore"
	"github.com/conclave-ai/conclave/shared/store/expertgatestore"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	gate := expertgatestore.New(core.DB, core.Table)
	// An unknown ROUTING_EMBEDDER fails the expert-gate's cold start
	// (and its logs say so); here the report says "off" rather than
	// failing every route.
	id, _ := expertgate.EmbedderID(d.Config.Embedder)
	routingapi.RoutingRoutes(rt, &cascade.Service{Store: decisionstore.New(core.DB, core.Table)},
		&expertgate.Calibrations{Source: gate, Store: gate, Embedder: id})
	// Evaluations are created here and run by the routing-evaluator (no
	// Gate: this function never scores one).
	routingapi.EvaluationRoutes(rt, &evaluations.Service{Store: evaluationstore.New(core.DB, core.Table), Agents: gate,
		Bus: eventbus.FromConfig(d.AWS, d.Config.BusName)})
}
