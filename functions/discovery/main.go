// Command discovery is the Lambda function "discovery" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/discoveryfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/discoveryfn"
)

func main() { lambdafn.Main("discovery", discoveryfn.Build) }
