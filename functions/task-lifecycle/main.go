// Command task-lifecycle is the Lambda function "task-lifecycle" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/tasklifecyclefn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/tasklifecyclefn"
)

func main() { lambdafn.Main("task-lifecycle", tasklifecyclefn.Build) }
