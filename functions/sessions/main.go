// Command sessions is the Lambda function "sessions" of the manifest
// (shared/manifest); its wiring is in shared/app/sessionsfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/sessionsfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("sessions", sessionsfn.Build) }
