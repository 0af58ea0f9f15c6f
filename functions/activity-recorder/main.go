// Command activity-recorder is the Lambda function "activity-recorder" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/activityrecorderfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/activityrecorderfn"
)

func main() { lambdafn.Main("activity-recorder", activityrecorderfn.Build) }
