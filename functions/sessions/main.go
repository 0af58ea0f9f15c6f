// Command sessions is the Lambda function "sessions" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/sessionsfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/sessionsfn"
)

func main() { lambdafn.Main("sessions", sessionsfn.Build) }
