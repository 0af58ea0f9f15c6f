// Package expertgatefn wires the "expert-gate" function: the ExpertGate
// scorer in process, over the team's agents, loads and ratings. It links
// DynamoDB only (read).
package expertgatefn

import (
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/expertgate"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/routing"
)

// Build implements lambdafn.Build. The scorer keeps its per-team index
// cache for the life of the execution environment.
func Build(d lambdafn.Deps) (any, error) {
	store := dynamo.FromConfig(d.AWS, d.Config.TableName)
	gate := &expertgate.Service{Source: store, Tiers: routing.TiersOrDefault(d.Config.Tiers)}
	return gate.Score, nil
}
