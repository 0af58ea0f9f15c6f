// Command console is the Lambda function "console" of the manifest
// (shared/platform/manifest); its wiring is in shared/wire/consolefn.
package main

import (
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/wire/consolefn"
)

func main() { lambdafn.Main("console", consolefn.Build) }
