// Command a2a is the Lambda function "a2a" of the manifest
// (shared/manifest); its wiring is in shared/app/a2afn.
package main

import (
	"github.com/conclave-ai/conclave/shared/app/a2afn"
	"github.com/conclave-ai/conclave/shared/lambdafn"
)

func main() { lambdafn.Main("a2a", a2afn.Build) }
