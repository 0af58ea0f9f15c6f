// Package teamfn wires the "team" HTTP function (the team, its keys, its
// activity log, its budget and usage). It links DynamoDB only.
package teamfn

import (
	"github.com/conclave-ai/conclave/shared/api/teamapi"
	"github.com/conclave-ai/conclave/shared/app/httpfn"
	"github.com/conclave-ai/conclave/shared/budget"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/dynamo/activitystore"
	"github.com/conclave-ai/conclave/shared/dynamo/budgetstore"
	"github.com/conclave-ai/conclave/shared/dynamo/teamstore"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/teams"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	teamapi.TeamRoutes(rt, teams.NewService(teamstore.New(core.DB, core.Table)), activitystore.New(core.DB, core.Table))
	teamapi.BudgetRoutes(rt, &budget.Service{Store: budgetstore.New(core.DB, core.Table)})
}
