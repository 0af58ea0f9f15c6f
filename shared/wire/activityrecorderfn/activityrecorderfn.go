// Package activityrecorderfn wires the "activity-recorder" function (bus → rule →
// SQS → the team's activity log). It links DynamoDB, and SQS to dead-letter
// an event whose attempts are used up.
package activityrecorderfn

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/activitystore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/recorder"
	"github.com/conclave-ai/conclave/shared/wire/consumerwiring"
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
