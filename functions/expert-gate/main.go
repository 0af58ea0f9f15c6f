// Command expert-gate is the Lambda function "expert-gate" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/expertgatefn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/expertgatefn"
)

func main() { lambdafn.Main("expert-gate", expertgatefn.Build) }
