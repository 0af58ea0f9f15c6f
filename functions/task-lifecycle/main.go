// Command task-lifecycle is the Lambda function "task-lifecycle" of the manifest
// (shared/manifest); its wiring is in shared/app/lifecyclefn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/lifecyclefn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("task-lifecycle", lifecyclefn.Build) }
