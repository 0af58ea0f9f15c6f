// Command memory-invalidator is the Lambda function "memory-invalidator" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/memoryinvalidatorfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/memoryinvalidatorfn"
)

func main() { lambdafn.Main("memory-invalidator", memoryinvalidatorfn.Build) }
