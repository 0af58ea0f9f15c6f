// Command health is the Lambda function "health" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/healthfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/healthfn"
)

func main() { lambdafn.Main("health", healthfn.Build) }
