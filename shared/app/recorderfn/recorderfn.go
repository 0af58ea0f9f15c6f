// Package recorderfn wires the "activity-recorder" function (bus → rule →
// SQS → the team's activity log). It links DynamoDB, and SQS to dead-letter
// an event whose attempts are used up.
package recorderfn

import (
	"github.com/conclave-ai/conclave/shared/app/consumerwiring"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/dynamo/activitystore"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/recorder"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	retry, err := consumerwiring.Retry(d, core)
	if err != nil {
		return nil, err
	}
	return (&recorder.Handler{Store: activitystore.New(core.DB, core.Table), Log: d.Log, Retry: retry}).Handle, nil
}
