// Command a2a-push is the Lambda function "a2a-push" of the manifest
// (shared/manifest); its wiring is in shared/app/a2apushfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/a2apushfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("a2a-push", a2apushfn.Build) }
