// Package discoveryfn wires the "discovery" HTTP function: recommendations
// through the ExpertGate function, experts, availability. It links
// DynamoDB and Lambda (to invoke the gate).
package discoveryfn

import (
	"github.com/conclave-ai/conclave/shared/api/discoveryapi"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/routing/discovery"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/expertgatestore"
	"github.com/conclave-ai/conclave/shared/wire/gatewiring"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.NewReadOnly(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	discoveryapi.DiscoveryRoutes(rt, &discovery.Service{Dir: expertgatestore.New(core.DB, core.Table), Gate: gatewiring.Gate(d)})
}
