// Package consultationsfn wires the "consultations" HTTP function: help
// requests between agents, the ExpertGate's choice of specialist (in
// process, over the table: one scoring needs no second function call
// inside a request that already waits for a model), the specialist's
// answer through the model port, loop detection, escalations and metrics.
// It links DynamoDB, EventBridge (ConsultationEscalated, MemoryShared) and
// Bedrock.
package consultationsfn

import (
	"github.com/conclave-ai/conclave/shared/api/consultapi"
	"github.com/conclave-ai/conclave/shared/app/budgetwiring"
	"github.com/conclave-ai/conclave/shared/app/httpfn"
	"github.com/conclave-ai/conclave/shared/consultations"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/dynamo/consultstore"
	"github.com/conclave-ai/conclave/shared/eventbus"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/models/providers"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	consultapi.ConsultationRoutes(rt, Service(d, core, eventbus.FromConfig(d.AWS, d.Config.BusName)))
}

// Service builds the consultation service on store (the chat and task
// tools use the same).
func Service(d lambdafn.Deps, core *dynamo.Store, bus consultations.Publisher) *consultations.Service {
	store := consultstore.New(core.DB, core.Table)
	return consultations.New(store, providers.New(d.Config, d.AWS, store, budgetwiring.Guard(d, core, bus)), bus, d.Config.Tiers, d.Log)
}
