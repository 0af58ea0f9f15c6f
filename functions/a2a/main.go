// Command a2a is the Lambda function "a2a" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/a2afn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/a2afn"
)

func main() { lambdafn.Main("a2a", a2afn.Build) }
