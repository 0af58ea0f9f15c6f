// Command team is the Lambda function "team" of the manifest
// (shared/manifest); its wiring is in shared/app/teamfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/teamfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("team", teamfn.Build) }
