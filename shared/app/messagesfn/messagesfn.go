// Package messagesfn wires the "messages" HTTP function (agent messaging).
// It links DynamoDB and EventBridge.
package messagesfn

import (
	"github.com/conclave-ai/conclave/shared/api/messageapi"
	"github.com/conclave-ai/conclave/shared/app/httpfn"
	"github.com/conclave-ai/conclave/shared/app/messagingwiring"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/eventbus"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	messageapi.MessageRoutes(rt, messagingwiring.Service(core, eventbus.FromConfig(d.AWS, d.Config.BusName)))
}
