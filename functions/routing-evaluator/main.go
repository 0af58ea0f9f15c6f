// Command routing-evaluator is the Lambda function "routing-evaluator" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/routingevaluatorfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/routingevaluatorfn"
)

func main() { lambdafn.Main("routing-evaluator", routingevaluatorfn.Build) }
