// Command session-steps is the Lambda function "session-steps" of the
// manifest (shared/manifest); its wiring is in shared/app/sessionstepsfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/sessionstepsfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("session-steps", sessionstepsfn.Build) }
