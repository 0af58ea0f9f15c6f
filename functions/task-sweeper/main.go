// Command task-sweeper is the Lambda function "task-sweeper" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/tasksweeperfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/tasksweeperfn"
)

func main() { lambdafn.Main("task-sweeper", tasksweeperfn.Build) }
