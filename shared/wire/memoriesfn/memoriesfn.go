// Package memoriesfn wires the "memories" HTTP function (the team memory
// bus). It links DynamoDB and EventBridge.
package memoriesfn

import (
	"github.com/conclave-ai/conclave/shared/api/memoriesapi"
	"github.com/conclave-ai/conclave/shared/aws/eventbus"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/memorystore"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	store := memorystore.New(core.DB, core.Table)
	memoriesapi.MemoryRoutes(rt, &memory.Service{Store: store, Dir: store, Bus: eventbus.FromConfig(d.AWS, d.Config.BusName)})
}
