// Command memories is the Lambda function "memories" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/memoriesfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/memoriesfn"
)

func main() { lambdafn.Main("memories", memoriesfn.Build) }
