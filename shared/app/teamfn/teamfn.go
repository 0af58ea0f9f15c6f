// Package teamfn wires the "team" HTTP function (the team, its keys, its
// activity log). It links DynamoDB only.
package teamfn

import (
	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/teams"
)

// Router is the function's router (tests read its route keys).
func Router(d lambdafn.Deps) *httpapi.Router {
	store := dynamo.FromConfig(d.AWS, d.Config.TableName)
	rt := httpapi.NewRouter(d.Log, store)
	api.TeamRoutes(rt, teams.NewService(store), store)
	return rt
}

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) { return Router(d).Serve, nil }
