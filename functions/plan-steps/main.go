// Command plan-steps is the Lambda function "plan-steps" of the manifest
// (shared/manifest); its wiring is in shared/app/planstepsfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/planstepsfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("plan-steps", planstepsfn.Build) }
