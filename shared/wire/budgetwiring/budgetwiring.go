// Package budgetwiring builds the team's CostGuard for the functions that
// call models (providers.New wraps their model port in it): the budget
// store on the function's table and its bus for the warning.
package budgetwiring

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/budgetstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/budget"
)

// Guard returns the CostGuard of d's function on core, publishing on bus.
func Guard(d lambdafn.Deps, core *dynamo.Store, bus budget.Publisher) budget.Guard {
	return budget.Guard{Store: budgetstore.New(core.DB, core.Table), Bus: bus, Log: d.Log}
}
