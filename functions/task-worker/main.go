// Command task-worker is the Lambda function "task-worker" of the manifest
// (shared/manifest); its wiring is in shared/app/workerfn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/workerfn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("task-worker", workerfn.Build) }
