// Command a2a-push is the Lambda function "a2a-push" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/a2apushfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/a2apushfn"
)

func main() { lambdafn.Main("a2a-push", a2apushfn.Build) }
