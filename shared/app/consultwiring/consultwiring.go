// Package consultwiring builds the consultation service the consultations
// function and the chat's and tasks' tools share. It is apart from
// consultationsfn so the tools do not link what only the consultations
// function wires (the task service with Step Functions, for the
// resolution of tasks' escalations).
package consultwiring

import (
	"github.com/conclave-ai/conclave/shared/app/budgetwiring"
	"github.com/conclave-ai/conclave/shared/consultations"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/dynamo/consultstore"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/models/providers"
)

// Service builds the consultation service on store.
func Service(d lambdafn.Deps, core *dynamo.Store, bus consultations.Publisher) *consultations.Service {
	store := consultstore.New(core.DB, core.Table)
	return consultations.New(store, providers.New(d.Config, d.AWS, store, budgetwiring.Guard(d, core, bus)), bus, d.Config.Tiers, d.Log)
}
