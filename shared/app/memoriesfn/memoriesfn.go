// Package memoriesfn wires the "memories" HTTP function (the team memory
// bus). It links DynamoDB and EventBridge.
package memoriesfn

import (
	"github.com/conclave-ai/conclave/shared/api/memoryapi"
	"github.com/conclave-ai/conclave/shared/app/httpfn"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/dynamo/memorystore"
	"github.com/conclave-ai/conclave/shared/eventbus"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/memory"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	store := memorystore.New(core.DB, core.Table)
	memoryapi.MemoryRoutes(rt, &memory.Service{Store: store, Dir: store, Bus: eventbus.FromConfig(d.AWS, d.Config.BusName)})
}
