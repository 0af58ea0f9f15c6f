// Command task-worker is the Lambda function "task-worker" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/taskworkerfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/taskworkerfn"
)

func main() { lambdafn.Main("task-worker", taskworkerfn.Build) }
