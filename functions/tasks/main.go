// Command tasks is the Lambda function "tasks" of the manifest
// (shared/manifest); its wiring is in shared/app/tasksfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/tasksfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("tasks", tasksfn.Build) }
