// Command activity-recorder is the Lambda function "activity-recorder" of the manifest
// (shared/manifest); its wiring is in shared/app/recorderfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/recorderfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("activity-recorder", recorderfn.Build) }
