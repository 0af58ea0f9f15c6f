// Package messagesfn wires the "messages" HTTP function (agent messaging).
// It links DynamoDB and EventBridge.
package messagesfn

import (
	"github.com/conclave-ai/conclave/shared/api/messagesapi"
	"github.com/conclave-ai/conclave/shared/aws/eventbus"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
	"github.com/conclave-ai/conclave/shared/wire/messagingwiring"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	messagesapi.MessageRoutes(rt, messagingwiring.Service(core, eventbus.FromConfig(d.AWS, d.Config.BusName)))
}
