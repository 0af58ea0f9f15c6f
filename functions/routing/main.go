// Command routing is the Lambda function "routing" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/routingfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/routingfn"
)

func main() { lambdafn.Main("routing", routingfn.Build) }
