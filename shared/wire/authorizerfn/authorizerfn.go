// Package authorizerfn wires the "authorizer" function: the team store and
// the API-key check. It links DynamoDB only.
package authorizerfn

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/teamstore"
	"github.com/conclave-ai/conclave/shared/team/authorizer"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	// The team store for the key check; the rate counter is generic
	// (the core), so the function links the teams domain only.
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	h := &authorizer.Handler{Teams: teams.NewService(teamstore.New(core.DB, core.Table)), Log: d.Log}
	if d.Config.TeamRateLimit > 0 {
		h.Rate = &authorizer.RateLimit{PerSecond: d.Config.TeamRateLimit, Counter: core}
	}
	return h.Event, nil
}
