// Package authorizerfn wires the "authorizer" function: the team store and
// the API-key check. It links DynamoDB only.
package authorizerfn

import (
	"github.com/conclave-ai/conclave/shared/authorizer"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/teams"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	store := dynamo.FromConfig(d.AWS, d.Config.TableName)
	h := &authorizer.Handler{Teams: teams.NewService(store), Log: d.Log}
	if d.Config.TeamRateLimit > 0 {
		h.Rate = &authorizer.RateLimit{PerSecond: d.Config.TeamRateLimit, Counter: store}
	}
	return h.Handle, nil
}
