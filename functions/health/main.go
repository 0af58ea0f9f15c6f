// Command health is the Lambda function "health" of the manifest
// (shared/manifest); its wiring is in shared/app/healthfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/healthfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("health", healthfn.Build) }
