// Command team is the Lambda function "team" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/teamfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/teamfn"
)

func main() { lambdafn.Main("team", teamfn.Build) }
