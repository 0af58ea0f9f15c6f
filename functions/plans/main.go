// Command plans is the Lambda function "plans" of the manifest
// (shared/manifest); its wiring is in shared/app/plansfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/plansfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("plans", plansfn.Build) }
