// Command tasks is the Lambda function "tasks" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/tasksfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/tasksfn"
)

func main() { lambdafn.Main("tasks", tasksfn.Build) }
