// Package discoveryfn wires the "discovery" HTTP function: recommendations
// through the ExpertGate function, experts, availability. It links
// DynamoDB and Lambda (to invoke the gate).
package discoveryfn

import (
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/conclave-ai/conclave/shared/api/discoveryapi"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/routing/discovery"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/routing/expertgate/gateclient"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/expertgatestore"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.NewReadOnly(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	var gate expertgate.Gate
	if fn := d.Config.Functions["expert-gate"]; fn != "" {
		gate = &gateclient.Client{Lambda: lambda.NewFromConfig(d.AWS), FunctionName: fn}
	}
	discoveryapi.DiscoveryRoutes(rt, &discovery.Service{Dir: expertgatestore.New(core.DB, core.Table), Gate: gate})
}
