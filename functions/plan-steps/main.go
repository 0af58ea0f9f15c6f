// Command plan-steps is the Lambda function "plan-steps" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/planstepsfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/planstepsfn"
)

func main() { lambdafn.Main("plan-steps", planstepsfn.Build) }
