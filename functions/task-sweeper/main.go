// Command task-sweeper is the Lambda function "task-sweeper" of the manifest
// (shared/manifest); its wiring is in shared/app/sweeperfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/sweeperfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("task-sweeper", sweeperfn.Build) }
