// Package discoveryfn wires the "discovery" HTTP function: recommendations
// through the ExpertGate function, experts, availability. It links
// DynamoDB and Lambda (to invoke the gate).
package discoveryfn

import (
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/conclave-ai/conclave/shared/api/discoveryapi"
	"github.com/conclave-ai/conclave/shared/app/httpfn"
	"github.com/conclave-ai/conclave/shared/discovery"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/dynamo/gatestore"
	"github.com/conclave-ai/conclave/shared/expertgate"
	"github.com/conclave-ai/conclave/shared/expertgate/gateclient"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.NewReadOnly(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	var gate expertgate.Gate
	if fn := d.Config.Functions["expert-gate"]; fn != "" {
		gate = &gateclient.Client{Lambda: lambda.NewFromConfig(d.AWS), FunctionName: fn}
	}
	discoveryapi.DiscoveryRoutes(rt, &discovery.Service{Dir: gatestore.New(core.DB, core.Table), Gate: gate})
}
