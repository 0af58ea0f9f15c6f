// Package consultationswiring builds the consultation service the consultations
// function and the chat's and tasks' tools share. It is apart from
// consultationsfn so the tools do not link what only the consultations
// function wires (the task service with Step Functions, for the
// resolution of tasks' escalations).
package consultationswiring

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/consultationstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/wire/budgetwiring"
	"github.com/conclave-ai/conclave/shared/wire/gatewiring"
	"github.com/conclave-ai/conclave/shared/wire/providers"
	"github.com/conclave-ai/conclave/shared/work/consultations"
)

// Service builds the consultation service on store; it fails on a model
// provider it cannot build (providers.New).
func Service(d lambdafn.Deps, core *dynamo.Store, bus consultations.Publisher) (*consultations.Service, error) {
	store := consultationstore.New(core.DB, core.Table)
	model, err := providers.New(d.Config, d.AWS, store, budgetwiring.Guard(d, core, bus))
	if err != nil {
		return nil, err
	}
	return consultations.New(store, gatewiring.Gate(d), model, bus, d.Config.Tiers, d.Log), nil
}
