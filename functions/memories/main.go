// Command memories is the Lambda function "memories" of the manifest
// (shared/manifest); its wiring is in shared/app/memoriesfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/memoriesfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("memories", memoriesfn.Build) }
