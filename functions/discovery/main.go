// Command discovery is the Lambda function "discovery" of the manifest
// (shared/manifest); its wiring is in shared/app/discoveryfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/discoveryfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("discovery", discoveryfn.Build) }
