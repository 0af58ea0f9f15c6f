// Package gatewiring is the ExpertGate as every function but the gate's
// own reaches it: the expert-gate function's client (gateclient, Lambda
// Invoke), so a chat turn, a recommendation, a consultation and an A2A
// message are ranked by one gate, with one embedder and one calibration.
package gatewiring

import (
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/routing/expertgate/gateclient"
)

// Gate is the expert-gate function's client, or nil when the stage names
// no expert-gate function.
func Gate(d lambdafn.Deps) expertgate.Gate {
	if fn := d.Config.Functions["expert-gate"]; fn != "" {
		return &gateclient.Client{Lambda: lambda.NewFromConfig(d.AWS), FunctionName: fn}
	}
	return nil
}
