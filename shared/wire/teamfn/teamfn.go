// Package teamfn wires the "team" HTTP function (the team, its keys, its
// identity provider, its activity log, its budget and usage). It links
// DynamoDB only.
package teamfn

import (
	"time"

	"github.com/conclave-ai/conclave/shared/api/teamapi"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/activitystore"
	"github.com/conclave-ai/conclave/shared/store/budgetstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/identitystore"
	"github.com/conclave-ai/conclave/shared/store/teamstore"
	"github.com/conclave-ai/conclave/shared/team/budget"
	"github.com/conclave-ai/conclave/shared/team/identity"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	teamapi.TeamRoutes(rt, teams.NewService(teamstore.New(core.DB, core.Table)), activitystore.New(core.DB, core.Table))
	policy := toolpacks.NetPolicy{LoopbackOnly: d.Config.MCPLoopbackOnly}
	teamapi.IdentityRoutes(rt, &identity.Service{Store: identitystore.New(core.DB, core.Table), Now: time.Now, CheckURL: policy.CheckURL})
	teamapi.BudgetRoutes(rt, &budget.Service{Store: budgetstore.New(core.DB, core.Table)})
}
