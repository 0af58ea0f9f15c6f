// Command plans is the Lambda function "plans" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/plansfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/plansfn"
)

func main() { lambdafn.Main("plans", plansfn.Build) }
