// Command expert-gate is the Lambda function "expert-gate" of the manifest
// (shared/manifest); its wiring is in shared/app/expertgatefn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/expertgatefn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("expert-gate", expertgatefn.Build) }
