// Command routing is the Lambda function "routing" of the manifest
// (shared/manifest); its wiring is in shared/app/routingfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/routingfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("routing", routingfn.Build) }
