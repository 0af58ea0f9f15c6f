// Package recorderfn wires the "activity-recorder" function (bus → rule →
// SQS → the team's activity log). It links DynamoDB only.
package recorderfn

import (
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/recorder"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	store := dynamo.FromConfig(d.AWS, d.Config.TableName)
	return (&recorder.Handler{Store: store, Log: d.Log}).Handle, nil
}
