// Command memory-invalidator is the Lambda function "memory-invalidator" of the manifest
// (shared/manifest); its wiring is in shared/app/invalidatorfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/invalidatorfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("memory-invalidator", invalidatorfn.Build) }
