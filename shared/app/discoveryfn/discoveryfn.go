// Package discoveryfn wires the "discovery" HTTP function: recommendations
// through the ExpertGate function, experts, availability. It links
// DynamoDB and Lambda (to invoke the gate).
package discoveryfn

import (
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/discovery"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/expertgate"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

// Router is the function's router (tests read its route keys).
func Router(d lambdafn.Deps) *httpapi.Router {
	store := dynamo.FromConfig(d.AWS, d.Config.TableName)
	rt := httpapi.NewRouter(d.Log, store)
	var gate expertgate.Gate
	if fn := d.Config.Functions["expert-gate"]; fn != "" {
		gate = &expertgate.Client{Lambda: lambda.NewFromConfig(d.AWS), FunctionName: fn}
	}
	api.DiscoveryRoutes(rt, &discovery.Service{Dir: store, Gate: gate})
	return rt
}

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) { return Router(d).Serve, nil }
