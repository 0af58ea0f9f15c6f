// Command session-steps is the Lambda function "session-steps" of the
// manifest (shared/platform/manifest); its wiring is in shared/wire/sessionstepsfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/sessionstepsfn"
)

func main() { lambdafn.Main("session-steps", sessionstepsfn.Build) }
